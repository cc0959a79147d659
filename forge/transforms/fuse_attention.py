"""`fuse-attention`: one `aten.scaled_dot_product_attention` for each decomposed attention block.

What is recognised (anchored on the `·V` matmul, one sweep over the module)::

    scores = Q · Kᵀ                          aten.matmul / aten.bmm (also view→bmm→view)
    scores = scores * s | scores / s          scalar scale(s): Python scalars or 1-element constants;
                                              also √s on Q and √s on K (before or after the transpose)
    scores = scores + mask                    additive float mask (optional, at most one mask), or
           | where(keep, scores, -inf)        boolean "keep" mask, or
           | masked_fill(scores, drop, -inf)  boolean "drop" mask (→ logical_not)
    probs  = softmax(scores, dim=-1)          aten.softmax.int / aten._softmax
    probs  = dropout(probs, p, train=False)   inactive dropout (optional)
    out    = probs · V                        → sdpa(Q, K, V, attn_mask, is_causal, scale, enable_gqa)

Identity ops between the steps are looked through: same-type `to`/`_to_copy`, `clone`, `contiguous`,
`alias`, `detach`, inactive `dropout`, same-shape `expand`/`view`, and *batch views* (views that only
regroup the leading dims, as `matmul`'s decomposition into view→bmm→view does). The pass does not
rely on dce/cse/fold having run; it erases the `_assert_tensor_metadata` checks that torch.export
leaves on the intermediates (after checking they hold statically) and the chain itself.

Kᵀ must be a swap of exactly the last two dims of K (`transpose(-2, -1)`, `transpose(2, 3)` on rank 4,
`permute` that swaps only the last two dims, `t`); K repeated for grouped-query attention
(`unsqueeze → expand → reshape` of `repeat_kv`, or an `expand` of a single KV head) fuses to the
un-repeated K/V with `enable_gqa = true` when K and V are repeated alike.

Masks: an additive float mask passes through as a float `attn_mask`; `where(keep, s, -inf)` gives
`attn_mask = keep`, `masked_fill(s, drop, -inf)` gives `attn_mask = logical_not(drop)`. A finite fill
is accepted only when it is at most half the dtype's minimum (HF's `finfo.min`): then an equivalent
additive float mask `where(keep, 0, fill)` is built, which keeps fully-masked rows uniform exactly as
the decomposed form does. A mask of rank < 2 gets leading unit dims (sdpa's kernels need rank 2).

Constant masks: the pass evaluates the small input-free subgraph behind a mask (an `aten.constant`,
a weight, or arange/compare/where code that `fold` would fold; each value once per run), so it does
not depend on fold having run. A lower-triangular keep pattern over the score's last two dims
(top-left aligned, exactly sdpa's) becomes `is_causal = true`, a mask that keeps everything is
dropped, and a mask that hides every key of some query with -inf is *not* fused (the decomposed
form gives NaN there, sdpa 0).

Deliberately not fused (`forge-opt --explain-pattern FuseAttentionPattern` prints the reason):
softmax not on the last dim or with a dtype change; scores or probabilities with another user
(including being a graph output); a right operand of Q·K that is not exactly Kᵀ; a per-element
(non-scalar) or non-constant scale; an additive mask that is scaled afterwards; a mask that broadcasts
the scores to a larger shape; two masks; active dropout; dtype-changing casts in the chain; a scale
or other op on the probabilities.

One known semantic refinement, for masks only known at run time: a query whose every key is masked
with -inf gives NaN in the decomposed form and zeros in sdpa (torch ≥ 2.5 uses a safe softmax).

Statistics: each fused block is one fire of `FuseAttentionPattern` (forge.patterns), so the
instrumentation reports it; `fused_count(stats)` reads it back and `fuse_attention(module)` returns it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern
from xdsl.traits import Pure

from dialects import aten
from dialects.aten_schema import ArgKind, i1, to_attribute
from dialects.torch_types import dtype_of
from forge.patterns import ForgePattern, PatternStats
from forge.weights import WeightStore, weights_of

__all__ = ["FuseAttentionPass", "FuseAttentionPattern", "fuse_attention", "fused_count"]


class _NoMatch(Exception):
    """Raised inside the matcher with the reason the candidate does not fuse."""


# --- small helpers on values ---------------------------------------------------------------------


def _shape(value: SSAValue) -> tuple[int, ...]:
    ty = value.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape())


def _owner(value: SSAValue) -> Operation | None:
    owner = value.owner
    return owner if isinstance(owner, Operation) else None


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _ty(value: SSAValue) -> str:
    return str(value.type)


_EVAL_LIMIT = 1 << 20
"""Largest value (in elements) the pass evaluates when it looks for constant masks and scales."""

_IDENTITY_CASTS = (aten.ToDtypeOp, aten.ToDtypeLayoutOp, aten.ToCopyOp, aten.ToDeviceOp)
_IDENTITY_OPS = (aten.CloneOp, aten.ContiguousOp, aten.AliasOp, aten.DetachOp, aten.LiftFreshCopyOp)
_VIEWS = (aten.ViewOp, aten.ReshapeOp, aten.UnsafeViewOp)


def _dropout_active(op: aten.DropoutOp) -> bool:
    return bool(op.arg("train")) and float(op.arg("p")) > 0.0


def _identity_source(op: Operation) -> SSAValue | None:
    """The operand `op` passes through unchanged (same type, same values), else None."""
    if isinstance(op, _IDENTITY_OPS):
        return op.operands[0]
    if isinstance(op, _IDENTITY_CASTS + (aten.ExpandOp,) + _VIEWS):
        src = op.operands[0]
        return src if src.type == op.results[0].type else None
    if isinstance(op, aten.DropoutOp) and not _dropout_active(op):
        return op.input
    return None


def _batch_view_source(op: Operation) -> SSAValue | None:
    """The input of a view that only regroups leading (batch) dims, keeping the last two."""
    if not isinstance(op, _VIEWS):
        return None
    src = op.operands[0]
    if src.type.element_type != op.results[0].type.element_type:  # type: ignore[attr-defined]
        return None
    a, b = _shape(src), _shape(op.results[0])
    if len(a) < 2 or len(b) < 2 or a[-2:] != b[-2:] or _numel(a[:-2]) != _numel(b[:-2]):
        return None
    return src


def _swaps_last_two(op: Operation) -> SSAValue | None:
    """The input of a transpose/permute that swaps exactly the last two dims (and nothing else)."""
    if isinstance(op, aten.TransposeIntOp):
        rank = len(_shape(op.input))
        if rank < 2:
            return None
        dims = {op.arg("dim0") % rank, op.arg("dim1") % rank}
        return op.input if dims == {rank - 2, rank - 1} else None
    if isinstance(op, aten.PermuteOp):
        rank = len(_shape(op.input))
        if rank < 2:
            return None
        dims = [d % rank for d in op.arg("dims")]
        want = [*range(rank - 2), rank - 1, rank - 2]
        return op.input if dims == want else None
    if isinstance(op, aten.TOp) and len(_shape(op.input)) == 2:
        return op.input
    return None


@dataclass
class _Origin:
    """A value reached by looking up from a use through ops that do not change it (up to scale)."""

    value: SSAValue
    factor: float
    """Product of the scalar factors applied between this value and the use."""
    transposed: bool
    """Whether an odd number of last-two-dims swaps lies between this value and the use."""
    depth: int
    """How many ops of the trace lie between this value and the use."""


@dataclass
class _Trace:
    origins: list[_Origin]
    ops: list[Operation]
    """The ops looked through, user first (`ops[:origin.depth]` lie between the use and origin)."""
    stop: Operation | None
    """The op where the trace stopped (None at a block argument)."""

    def furthest(self, batch: tuple[int, ...], *, transposed: bool = False) -> _Origin | None:
        for origin in reversed(self.origins):
            if origin.transposed == transposed and _shape(origin.value)[:-2] == batch:
                return origin
        return None


# --- the pattern ---------------------------------------------------------------------------------


@dataclass
class _Mask:
    """The mask step of the score chain."""

    op: Operation
    kind: str
    """'additive' (float, added), 'keep' (bool, True = attend) or 'drop' (bool, True = masked)."""
    value: SSAValue
    fill: float | None
    """The value a bool mask writes into masked scores (None for additive masks)."""
    batch: tuple[int, ...]
    """Batch shape of the scores where the mask is applied."""
    scaled_after: float
    """Product of the scalar factors applied to the scores after the mask."""


@dataclass
class _Scores:
    ops: list[Operation]  # score chain ops from the softmax input up, user first (excluding qk)
    qk: Operation
    factor: float
    mask: _Mask | None


class FuseAttentionPattern(ForgePattern):
    """Q·Kᵀ → scale → mask → softmax → dropout → ·V  ⇒  aten.scaled_dot_product_attention."""

    def __init__(self, weights: WeightStore | None = None):
        super().__init__()
        self.weights = weights
        self.fused = 0
        self._constants: dict[SSAValue, torch.Tensor | None] = {}
        self._mask_kinds: dict[tuple, str] = {}

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.MatmulOp | aten.BmmOp, rewriter: PatternRewriter) -> None:
        try:
            self._fuse(op, rewriter)
        except _NoMatch as no:
            return self.fail(op, str(no))

    # -- matching ----------------------------------------------------------------------------

    def _fuse(self, pv: Operation, rewriter: PatternRewriter) -> None:
        asserts: list[Operation] = []
        probs = self._trace(pv.operands[0], scales=False, transposes=False)
        softmax = probs.stop
        if isinstance(softmax, aten.DropoutOp):
            raise _NoMatch(f"the dropout on the probabilities is active (p = {softmax.arg('p')}, train = true)")
        if not isinstance(softmax, (aten.SoftmaxIntOp, aten.SoftmaxOp)):
            what = softmax.name if softmax is not None else "a block argument"
            raise _NoMatch(f"the left operand is produced by {what}, not by a softmax")
        self._check_softmax(softmax)
        chain = [pv.operands[0], *(o.value for o in probs.origins[1:])]
        users = [pv, *probs.ops]
        for value, user in zip(chain, users):
            self._require_single_use(value, user, "the probabilities", asserts)

        scores = self._scores(softmax, asserts)
        qk = scores.qk
        score_shape = _shape(qk.results[0])
        if len(score_shape) < 2 or len(_shape(pv.results[0])) < 2:
            raise _NoMatch("vector-matrix products are not attention (scores of rank < 2)")
        L, S = score_shape[-2], score_shape[-1]

        reasons: list[str] = []
        for root, root_ops in self._roots(pv):
            try:
                plan = self._resolve(pv, qk, scores, root, L, S)
            except _NoMatch as no:
                reasons.append(str(no))
                continue
            self._rewrite(rewriter, pv, softmax, probs, scores, root, root_ops, plan, asserts)
            return
        if len(reasons) == 1:
            raise _NoMatch(reasons[0])
        shapes = [list(_shape(root)[:-2]) for root, _ in self._roots(pv)]
        raise _NoMatch("; ".join(f"at batch shape {b}: {r}" for b, r in zip(shapes, reasons)))

    def _check_softmax(self, softmax: Operation) -> None:
        rank = len(_shape(softmax.operands[0]))
        dim = softmax.arg("dim")
        if rank == 0 or dim % rank != rank - 1:
            raise _NoMatch(f"softmax is over dim {dim}, not the last dim of a rank-{rank} score")
        if isinstance(softmax, aten.SoftmaxOp) and softmax.arg("half_to_float"):
            raise _NoMatch("_softmax with half_to_float changes the dtype")
        if softmax.results[0].type != softmax.operands[0].type:
            raise _NoMatch("softmax changes the dtype of the scores")

    def _require_single_use(self, value: SSAValue, user: Operation, what: str, asserts: list[Operation]) -> None:
        count = 0
        for use in value.uses:
            op = use.operation
            if isinstance(op, aten.AssertTensorMetadataOp) and _assert_holds(op):
                asserts.append(op)
                continue
            if op is not user:
                raise _NoMatch(f"{what} (%{value.name_hint or '?'}) have another user: {op.name}")
            count += 1
        if count != 1:
            raise _NoMatch(f"{what} (%{value.name_hint or '?'}) are used {count} times by {user.name}")

    def _scores(self, softmax: Operation, asserts: list[Operation]) -> _Scores:
        """Walk up from the softmax input through scales, one mask and identities to Q·K."""
        value = softmax.operands[0]
        user = softmax
        ops: list[Operation] = []
        factor = 1.0
        mask: _Mask | None = None
        while True:
            self._require_single_use(value, user, "the attention scores", asserts)
            op = _owner(value)
            if op is None:
                raise _NoMatch("the scores are a function argument, not Q·Kᵀ")
            if isinstance(op, (aten.MatmulOp, aten.BmmOp)):
                return _Scores(ops, op, factor, mask)
            src = _identity_source(op) or _batch_view_source(op)
            if src is None and (step := self._scale_step(op)) is not None:
                src, f = step
                factor *= f
            elif src is None:
                found = self._mask_step(op, factor)
                if found is None:
                    if isinstance(op, aten.DropoutOp):
                        raise _NoMatch("an active dropout sits on the scores")
                    if isinstance(op, (aten.MulTensorOp, aten.DivTensorOp)):
                        raise _NoMatch(_tensor_scale_reason(op))
                    raise _NoMatch(f"the scores come from {op.name}, not from Q·Kᵀ")
                if mask is not None:
                    raise _NoMatch("more than one mask is applied to the scores")
                src, mask = found
            ops.append(op)
            value, user = src, op

    # -- scores: scales and masks ------------------------------------------------------------

    def _scale_step(self, op: Operation) -> tuple[SSAValue, float] | None:
        """(scaled operand, factor) if `op` multiplies or divides by a constant scalar."""
        result = op.results[0] if len(op.results) == 1 else None
        factor: float | None = None
        src: SSAValue | None = None
        if isinstance(op, (aten.MulScalarOp, aten.DivScalarOp)):
            other = op.arg("other")
            if isinstance(other, bool) or not isinstance(other, (int, float)):
                return None
            src = op.input
            if isinstance(op, aten.MulScalarOp):
                factor = float(other)
            elif other != 0:
                factor = 1.0 / float(other)
        elif isinstance(op, aten.MulTensorOp):
            for a, b in ((op.input, op.other), (op.other, op.input)):
                if a.type == result.type and (c := self._scalar_value(b)) is not None:
                    src, factor = a, c
                    break
        elif isinstance(op, aten.DivTensorOp):
            if op.input.type == result.type and (c := self._scalar_value(op.other)):
                src, factor = op.input, 1.0 / c
        if src is None or factor is None or not math.isfinite(factor):
            return None
        if src.type != result.type:
            return None
        return src, factor

    def _mask_step(self, op: Operation, scaled_after: float) -> tuple[SSAValue, _Mask] | None:
        """(scores operand, mask) if `op` applies a mask to the scores; None if it is no mask op."""
        if len(op.results) != 1:
            return None
        result = op.results[0]
        batch = _shape(result)[:-2]
        if isinstance(op, aten.AddTensorOp):
            if op.arg("alpha") != 1:
                return None
            pairs = [(x, m) for x, m in ((op.input, op.other), (op.other, op.input)) if x.type == result.type]
            if not pairs:
                raise _NoMatch("the mask broadcasts the scores to a larger shape")
            if len(pairs) == 2 and not self._reaches_qk(pairs[0][0]) and self._reaches_qk(pairs[1][0]):
                pairs.reverse()
            scores, mask = pairs[0]
            if mask.type.element_type != result.type.element_type:  # type: ignore[attr-defined]
                raise _NoMatch(f"the additive mask has type {_ty(mask)}, not the scores' element type")
            if scaled_after != 1.0:
                raise _NoMatch("the additive mask is scaled after being added (sdpa adds the mask after scaling)")
            return scores, _Mask(op, "additive", mask, None, batch, scaled_after)

        kind: str
        if isinstance(op, aten.WhereScalarOtherOp):
            cond, scores, kind, fill = op.condition, op.input, "keep", op.arg("other")
        elif isinstance(op, aten.WhereScalarSelfOp):
            cond, scores, kind, fill = op.condition, op.other, "drop", op.arg("self")
        elif isinstance(op, aten.WhereSelfOp):
            if (fill := self._scalar_value(op.other)) is not None:
                cond, scores, kind = op.condition, op.input, "keep"
            elif (fill := self._scalar_value(op.input)) is not None:
                cond, scores, kind = op.condition, op.other, "drop"
            else:
                return None
        elif isinstance(op, aten.MaskedFillScalarOp):
            cond, scores, kind, fill = op.mask, op.input, "drop", op.arg("value")
        elif isinstance(op, aten.MaskedFillTensorOp):
            fill = self._scalar_value(op.value)
            if fill is None:
                return None
            cond, scores, kind = op.mask, op.input, "drop"
        else:
            return None
        if scores.type != result.type:
            raise _NoMatch("the mask broadcasts the scores to a larger shape")
        not_op = _owner(cond)
        if kind == "drop" and isinstance(not_op, (aten.LogicalNotOp, aten.BitwiseNotOp)):
            if not_op.input.type == cond.type:  # masked_fill(s, not keep, fill) keeps `keep`
                cond, kind = not_op.input, "keep"
        if cond.type.element_type != i1:  # type: ignore[attr-defined]
            raise _NoMatch(f"the {op.name} condition has type {_ty(cond)}, not a boolean mask")
        if isinstance(fill, bool) or not isinstance(fill, (int, float)):
            raise _NoMatch(f"the {op.name} fill value {fill!r} is not a number")
        if scaled_after <= 0:
            raise _NoMatch("the masked scores are scaled by a non-positive factor after masking")
        fill = float(fill) * scaled_after
        if not _fill_masks_out(fill, dtype_of(result.type)):
            raise _NoMatch(
                f"the mask fill value {fill} is neither -inf nor below half the dtype minimum: "
                "sdpa would not reproduce the masked scores exactly"
            )
        return scores, _Mask(op, kind, cond, fill, batch, scaled_after)

    def _reaches_qk(self, value: SSAValue, limit: int = 16) -> bool:
        for _ in range(limit):
            op = _owner(value)
            if op is None:
                return False
            if isinstance(op, (aten.MatmulOp, aten.BmmOp)):
                return True
            src = _identity_source(op) or _batch_view_source(op)
            if src is None and (step := self._scale_step(op)) is not None:
                src = step[0]
            if src is None:
                return False
            value = src
        return False

    # -- constants ---------------------------------------------------------------------------

    def _scalar_value(self, value: SSAValue) -> float | None:
        """The value of a one-element constant tensor (0-d or all dims 1), else None."""
        if not isinstance(value.type, TensorType) or _numel(_shape(value)) != 1:
            return None
        tensor = self._constant(value)
        if tensor is None or tensor.dtype == torch.bool:
            return None
        return float(tensor.reshape(-1)[0].item())

    def _constant(self, value: SSAValue) -> torch.Tensor | None:
        """The compile-time value of `value`, when it is a constant (cached per value)."""
        if value in self._constants:
            return self._constants[value]
        return self._compute_constant(value)

    def _compute_constant(self, value: SSAValue) -> torch.Tensor | None:
        """Evaluate the input-free subgraph behind `value` (what `fold` would produce).

        Iterative post-order walk; every visited value is cached, so each op is evaluated at most
        once per pass run. Only small values (≤ _EVAL_LIMIT elements) and pure single-result ops
        are evaluated; anything reaching a function argument is not constant.
        """
        stack = [value]
        while stack:
            top = stack[-1]
            if top in self._constants:
                stack.pop()
                continue
            op = _owner(top)
            if op is None or _numel(_shape(top)) > _EVAL_LIMIT:
                self._constants[top] = None
                stack.pop()
                continue
            if isinstance(op, aten.ConstantOp):
                self._constants[top] = op.to_tensor()
                stack.pop()
                continue
            if isinstance(op, aten.WeightOp):
                name = op.weight_name.data
                known = self.weights is not None and name in self.weights
                self._constants[top] = self.weights[name] if known else None  # type: ignore[index]
                stack.pop()
                continue
            if not isinstance(op, aten.AtenOp) or len(op.results) != 1 or not op.has_trait(Pure):
                self._constants[top] = None
                stack.pop()
                continue
            pending = [v for v in op.operands if v not in self._constants]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            args = [self._constants[v] for v in op.operands]
            if any(a is None for a in args):
                self._constants[top] = None
                continue
            try:
                out = op.call(args)
            except Exception:  # an op the evaluator cannot run: simply not a known constant
                out = None
            self._constants[top] = out if isinstance(out, torch.Tensor) else None
        return self._constants[value]

    # -- Q, K, V -----------------------------------------------------------------------------

    def _trace(self, value: SSAValue, *, scales: bool, transposes: bool) -> _Trace:
        origins = [_Origin(value, 1.0, False, 0)]
        ops: list[Operation] = []
        factor, transposed = 1.0, False
        while True:
            op = _owner(value)
            if op is None:
                return _Trace(origins, ops, None)
            src = _identity_source(op) or _batch_view_source(op)
            swap, f = False, 1.0
            if src is None and transposes and (src := _swaps_last_two(op)) is not None:
                swap = True
            if src is None and scales and (step := self._scale_step(op)) is not None:
                src, f = step
            if src is None:
                return _Trace(origins, ops, op)
            ops.append(op)
            factor *= f
            transposed ^= swap
            value = src
            origins.append(_Origin(value, factor, transposed, len(ops)))

    @staticmethod
    def _roots(pv: Operation) -> list[tuple[SSAValue, list[Operation]]]:
        """Where the output can be taken: after a batch-unflattening view of a bmm, or the matmul."""
        result = pv.results[0]
        roots: list[tuple[SSAValue, list[Operation]]] = []
        use = result.get_unique_use()
        if use is not None:
            view = use.operation
            if _batch_view_source(view) is result and view.results[0].type != result.type:
                roots.append((view.results[0], [view]))
        roots.append((result, []))
        return roots

    def _resolve(self, pv: Operation, qk: Operation, scores: _Scores, root: SSAValue, L: int, S: int) -> _Plan:
        batch = _shape(root)[:-2]
        q_trace = self._trace(qk.operands[0], scales=True, transposes=False)
        q = q_trace.furthest(batch)
        k_trace = self._trace(qk.operands[1], scales=True, transposes=True)
        k = k_trace.furthest(batch, transposed=True)
        if k is None:
            if not any(o.transposed for o in k_trace.origins):
                stop = k_trace.stop.name if k_trace.stop is not None else "a function argument"
                raise _NoMatch(
                    f"the right operand of Q·K is not Kᵀ: it comes from {stop}, which does not swap "
                    "exactly the last two dims of K"
                )
            raise _NoMatch(f"K is not available with batch shape {list(batch)}")
        v_trace = self._trace(pv.operands[1], scales=False, transposes=False)
        v = v_trace.furthest(batch)
        if q is None or v is None:
            which = "Q" if q is None else "V"
            raise _NoMatch(f"{which} is not available with batch shape {list(batch)}")

        qs, ks, vs, out = _shape(q.value), _shape(k.value), _shape(v.value), _shape(root)
        if min(len(qs), len(ks), len(vs), len(out)) < 2:
            raise _NoMatch("Q, K, V and the output must have rank >= 2")
        if qs[-2] != L or ks[-2] != S or ks[-1] != qs[-1] or vs[-2] != S or out != (*batch, L, vs[-1]):
            raise _NoMatch(f"shapes do not line up: Q {list(qs)}, K {list(ks)}, V {list(vs)}, out {list(out)}")
        element = root.type.element_type  # type: ignore[attr-defined]
        for value in (q.value, k.value, v.value, qk.results[0]):
            if value.type.element_type != element:  # type: ignore[attr-defined]
                raise _NoMatch(f"mixed element types: {_ty(value)} vs {root.type}")
        if not dtype_of(root.type).is_floating_point:
            raise _NoMatch(f"attention on non-float type {root.type}")

        scale = scores.factor * q.factor * k.factor
        if not math.isfinite(scale):
            raise _NoMatch(f"the combined scale {scale} is not finite")

        traced = [*q_trace.ops[: q.depth], *k_trace.ops[: k.depth], *v_trace.ops[: v.depth]]
        key, value, gqa = k.value, v.value, False
        if len(batch) >= 1:
            k_un, v_un = _unrepeat(k.value), _unrepeat(v.value)
            if k_un is not None and v_un is not None and _shape(k_un[0])[:-2] == _shape(v_un[0])[:-2]:
                key, value = k_un[0], v_un[0]
                gqa = _shape(key)[-3] != batch[-1]
                traced += [*k_un[1], *v_un[1]]

        plan = _Plan(key, value, q.value, scale, gqa, traced)
        if scores.mask is not None:
            self._plan_mask(plan, scores.mask, batch, L, S)
        return plan

    def _plan_mask(self, plan: _Plan, mask: _Mask, batch: tuple[int, ...], L: int, S: int) -> None:
        mshape = _shape(mask.value)
        if mask.batch != batch:
            # Applied where the batch dims are grouped differently (row-major regrouping of the
            # same batch): fine if the mask does not vary over them (then only its rank may need
            # trimming: the dropped leading dims are all 1) or spans them fully (then it regroups
            # like the scores). A partial broadcast would need an expand: not fused.
            mbatch = (1,) * (len(mask.batch) + 2 - len(mshape)) + mshape[:-2]
            if all(d == 1 for d in mbatch):
                if len(mshape) > len(batch) + 2:
                    plan.mask_shape = mshape[len(mshape) - len(batch) - 2 :]
            elif mbatch == mask.batch:
                plan.mask_shape = (*batch, *mshape[-2:])
            else:
                raise _NoMatch(
                    f"the mask {list(mshape)} is broadcast over part of batch shape "
                    f"{list(mask.batch)}, attention runs at {list(batch)}"
                )
        key = (mask.value, mask.kind, mask.fill, L, S)
        if key not in self._mask_kinds:  # layers share one mask: analyse it once
            self._mask_kinds[key] = self._classify_mask(mask, L, S)
        verdict = self._mask_kinds[key]
        if verdict == "keeps-all":
            return  # keeps every score: no mask at all
        if verdict == "causal":
            plan.is_causal = True
            return
        if verdict == "nan-rows":
            raise _NoMatch(
                "the constant mask masks every key of some query with -inf: the decomposed form "
                "gives NaN there, sdpa gives 0"
            )
        plan.mask_kind = mask.kind
        plan.mask_value = mask.value
        plan.fill = mask.fill

    def _classify_mask(self, mask: _Mask, L: int, S: int) -> str:
        """'keeps-all', 'causal', 'nan-rows' for constant masks; 'runtime' otherwise."""
        tensor = self._constant(mask.value)
        if tensor is None:
            return "runtime"
        keep = _keep_pattern(tensor, mask.kind)
        if keep is not None:
            if bool(keep.all()):
                return "keeps-all"
            if tensor.dim() >= 2 and tuple(tensor.shape[-2:]) == (L, S):
                if bool((keep == _causal_pattern(L, S)).all()):
                    return "causal"
        if _has_nan_rows(tensor, mask.kind, mask.fill):
            return "nan-rows"
        return "constant"

    # -- rewriting ---------------------------------------------------------------------------

    def _rewrite(
        self,
        rewriter: PatternRewriter,
        pv: Operation,
        softmax: Operation,
        probs: _Trace,
        scores: _Scores,
        root: SSAValue,
        root_ops: list[Operation],
        plan: _Plan,
        asserts: list[Operation],
    ) -> None:
        new_ops: list[Operation] = []
        mask = plan.mask_value
        if mask is not None and plan.mask_kind != "additive":
            if plan.fill == -math.inf and plan.mask_kind == "keep":
                pass  # sdpa's bool mask: True = attend
            elif plan.fill == -math.inf:
                new_ops.append(aten.LogicalNotOp.build_op([[mask]], {}, [mask.type]))
            else:  # finite fill: an equivalent additive float mask, where(keep, 0, fill)
                zero = aten.ConstantOp.from_tensor(torch.zeros((), dtype=dtype_of(root.type)))
                float_type = TensorType(root.type.element_type, _shape(mask))  # type: ignore[attr-defined]
                fill = to_attribute(ArgKind.SCALAR, float(plan.fill))  # type: ignore[arg-type]
                if plan.mask_kind == "keep":
                    where = aten.WhereScalarOtherOp.build_op([[mask], [zero.result]], {"other": fill}, [float_type])
                else:
                    where = aten.WhereScalarSelfOp.build_op([[mask], [zero.result]], {"self": fill}, [float_type])
                new_ops += [zero, where]
            if new_ops:
                mask = new_ops[-1].results[0]
                mask.name_hint = "attn_mask"
                if len(new_ops) == 2:
                    new_ops[0].results[0].name_hint = "zero"

        if mask is not None and plan.mask_shape is not None:
            ty = TensorType(mask.type.element_type, plan.mask_shape)  # type: ignore[attr-defined]
            size = to_attribute(ArgKind.INT_LIST, plan.mask_shape)
            reshape = aten.ReshapeOp.build_op([[mask]], {"shape": size}, [ty])
            new_ops.append(reshape)
            mask = reshape.results[0]
            mask.name_hint = "attn_mask"
        while mask is not None and len(_shape(mask)) < 2:
            # sdpa's kernels index the mask's dims -2 and -1: give a 0/1-d mask leading unit dims.
            ty = TensorType(mask.type.element_type, (1, *_shape(mask)))  # type: ignore[attr-defined]
            unsqueeze = aten.UnsqueezeOp.build_op([[mask]], {"dim": to_attribute(ArgKind.INT, 0)}, [ty])
            new_ops.append(unsqueeze)
            mask = unsqueeze.results[0]
            mask.name_hint = "attn_mask"

        properties: dict[str, Attribute] = {"scale": to_attribute(ArgKind.FLOAT, plan.scale)}
        if plan.is_causal:
            properties["is_causal"] = to_attribute(ArgKind.BOOL, True)
        if plan.gqa:
            properties["enable_gqa"] = to_attribute(ArgKind.BOOL, True)
        sdpa = aten.ScaledDotProductAttentionOp.build_op(
            [[plan.query], [plan.key], [plan.value], [mask] if mask is not None else []],
            properties,
            [root.type],
            location=softmax.location,
        )
        rewriter.insert([*new_ops, sdpa])
        sdpa.results[0].name_hint = "sdpa"
        rewriter.replace_all_uses_with(root, sdpa.results[0])

        dead = [*asserts, *root_ops, pv, *probs.ops, softmax, *scores.ops, scores.qk, *plan.traced]
        erased: set[int] = set()
        for op in dead:
            if id(op) in erased or any(r.first_use is not None for r in op.results):
                continue
            if op.has_trait(Pure) or isinstance(op, (aten.DropoutOp, aten.AssertTensorMetadataOp)):
                rewriter.erase(op)
                erased.add(id(op))
        self.fused += 1


@dataclass
class _Plan:
    key: SSAValue
    value: SSAValue
    query: SSAValue
    scale: float
    gqa: bool
    traced: list[Operation]
    """Q/K/V look-through and repeat ops (user first): erased when the fusion leaves them dead."""
    is_causal: bool = False
    mask_kind: str | None = None
    mask_value: SSAValue | None = None
    fill: float | None = None
    mask_shape: tuple[int, ...] | None = None
    """A shape to reshape the mask to (dropping leading unit dims), when it needs one."""


def _tensor_scale_reason(op: Operation) -> str:
    factors = [v for v in op.operands if v.type != op.results[0].type or _numel(_shape(v)) == 1]
    if factors and all(_numel(_shape(v)) == 1 for v in factors):
        return f"the scores are scaled by {op.name} with a scalar that is not a compile-time constant"
    return f"the scores are scaled by {op.name} with a per-element tensor, not a scalar"


def _fill_masks_out(fill: float, dtype: torch.dtype) -> bool:
    """Whether a score set to `fill` is exactly out of the softmax (and absorbs any added score)."""
    if math.isnan(fill):
        return False
    if fill == -math.inf:
        return True
    return dtype.is_floating_point and fill <= torch.finfo(dtype).min / 2


@functools.cache
def _causal_pattern(L: int, S: int) -> torch.Tensor:
    """sdpa's is_causal keep pattern: query i sees keys j <= i (top-left aligned, like tril)."""
    return torch.arange(S).unsqueeze(0) <= torch.arange(L).unsqueeze(1)


def _has_nan_rows(tensor: torch.Tensor, kind: str, fill: float | None) -> bool:
    """Whether some query row of a constant mask is all -inf (the softmax of that row is NaN)."""
    if kind == "additive":
        masked = tensor == -math.inf
    elif fill == -math.inf:
        keep = _keep_pattern(tensor, kind)
        assert keep is not None
        masked = ~keep
    else:
        return False
    if masked.dim() == 0:
        return bool(masked)
    return bool(masked.all(dim=-1).any())


def _keep_pattern(tensor: torch.Tensor, kind: str) -> torch.Tensor | None:
    """Which scores a constant mask keeps (bool tensor), or None if it does not just keep/mask."""
    if kind == "keep":
        return tensor.to(torch.bool)
    if kind == "drop":
        return ~tensor.to(torch.bool)
    if not tensor.dtype.is_floating_point:
        return None
    keep = tensor == 0
    masked_out = (tensor == -math.inf) | (tensor <= torch.finfo(tensor.dtype).min / 2)
    return keep if bool((keep | masked_out).all()) else None


def _unrepeat(value: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """The un-repeated K/V and the repeat ops (user first), if `value` is K/V repeated per head.

    Recognises `repeat_kv` (unsqueeze at the head dim + 1 → expand → reshape/view), which repeats
    each KV head n_rep times in place (= sdpa's enable_gqa), and an expand of a single KV head.
    """
    ops: list[Operation] = []
    shape = _shape(value)
    if len(shape) < 3:
        return None
    prefix, heads, tail = shape[:-3], shape[-3], shape[-2:]
    value = _skip_identities(value, ops)
    op = _owner(value)
    if isinstance(op, aten.ExpandOp):
        if _shape(op.input) == (*prefix, 1, *tail) and heads > 1:
            return op.input, [*ops, op]
        return None
    if not isinstance(op, _VIEWS):
        return None
    ops.append(op)
    expanded = _skip_identities(op.operands[0], ops)
    xs = _shape(expanded)
    n = len(prefix)
    if len(xs) != len(shape) + 1 or xs[:n] != prefix or xs[-2:] != tail or xs[n] * xs[n + 1] != heads:
        return None
    expand = _owner(expanded)
    if not isinstance(expand, aten.ExpandOp) or _shape(expand.input) != (*prefix, xs[n], 1, *tail):
        return None
    ops.append(expand)
    unsqueezed = _skip_identities(expand.input, ops)
    unsqueeze = _owner(unsqueezed)
    if not isinstance(unsqueeze, aten.UnsqueezeOp) or unsqueeze.arg("dim") % len(xs) != n + 1:
        return None
    ops.append(unsqueeze)
    return unsqueeze.input, ops


def _skip_identities(value: SSAValue, ops: list[Operation]) -> SSAValue:
    while (op := _owner(value)) is not None and (src := _identity_source(op)) is not None:
        ops.append(op)
        value = src
    return value


def _assert_holds(op: aten.AssertTensorMetadataOp) -> bool:
    """Whether a `_assert_tensor_metadata` check is statically true (so it may be dropped).

    Reads the stored properties directly (absent = not checked): dtype and size must match the
    static type, the device must be the CPU, the layout strided; a stride check is never dropped.
    """
    props = op.properties
    ty = op.operands[0].type
    assert isinstance(ty, TensorType)
    if "stride" in props:
        return False
    dtype = props.get("dtype")
    if dtype is not None and dtype != ty.element_type:
        return False
    size = props.get("size")
    if size is not None and (not isinstance(size, DenseArrayBase) or tuple(size.get_values()) != tuple(ty.get_shape())):
        return False
    device = props.get("device")
    if device is not None and not (isinstance(device, StringAttr) and device.data.split(":")[0] == "cpu"):
        return False
    layout = props.get("layout")
    return layout is None or (isinstance(layout, StringAttr) and layout.data == "strided")


# --- the pass ------------------------------------------------------------------------------------


def fuse_attention(module: ModuleOp, weights: WeightStore | None = None) -> int:
    """Fuse every recognised attention block of `module` in one sweep; returns how many fused."""
    pattern = FuseAttentionPattern(weights if weights is not None else weights_of(module))
    # One sweep over the candidate anchors (the ·V matmul/bmm) in program order, the same as a
    # non-recursive PatternRewriteWalker but without visiting (and resetting a rewriter for)
    # every other op. A fusion only erases ops before its anchor, but check anyway.
    anchors = [op for op in module.walk() if isinstance(op, (aten.MatmulOp, aten.BmmOp))]
    for op in anchors:
        if op.parent is not None:
            pattern.match_and_rewrite(op, PatternRewriter(op))
    return pattern.fused


def fused_count(stats: PatternStats | Any) -> int:
    """How many attention blocks `fuse-attention` fused, from the statistics of a pass run.

    Accepts anything with a `fired` counter: `forge.patterns.PatternStats` or a
    `forge.pipeline.PassRecord`.
    """
    return stats.fired[FuseAttentionPattern.__name__]


@dataclass(frozen=True)
class FuseAttentionPass(ModulePass):
    """Replace decomposed attention (Q·Kᵀ, scale, mask, softmax, ·V) by scaled_dot_product_attention."""

    name = "fuse-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_attention(op)
