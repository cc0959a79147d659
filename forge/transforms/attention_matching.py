"""Matching decomposed attention one piece at a time (not a pass: `fuse-attention` drives it).

Each matcher reads one part of `Q·Kᵀ → [scale] → [mask] → softmax → [dropout] → ·V`, looking up
from the `·V` product, and returns what it found or, as a string, why the candidate does not fuse
(the reasons `forge-opt --explain-pattern FuseAttentionPattern` prints):

- `match_probabilities`: the softmax whose probabilities the `·V` product reads;
- `match_scores`: Q·Kᵀ behind the softmax, through scalar scales (`match_scale`) and at most one
  mask (`match_mask`);
- `output_roots`: where the output may be taken (after a bmm's batch-unflattening view, or at the
  product itself);
- `match_operands`: Q, K and V at the output's batch shape, the combined scale, and K/V repeated for
  grouped-query attention un-repeated (`match_repeat_kv`);
- `plan_mask`: what sdpa gets for the mask (a constant mask may become `is_causal`, or nothing).

Identity ops between the steps are looked through (`identity_source`, `batch_view_source`);
`_assert_tensor_metadata` checks that hold statically do not count as users and are collected for
erasure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, TensorType
from xdsl.ir import Operation, SSAValue

from dialects import aten
from dialects.aten_schema import i1
from dialects.shapes import static_shape
from dialects.torch_types import dtype_of
from forge.transforms.attention_constants import Constants, fill_masks_out
from forge.transforms.ir_queries import element_of, producer

# --- looking through identities ----------------------------------------------------------------------

_IDENTITY_CASTS = (aten.ToDtypeOp, aten.ToDtypeLayoutOp, aten.ToCopyOp, aten.ToDeviceOp)
_IDENTITY_OPS = (aten.CloneOp, aten.ContiguousOp, aten.AliasOp, aten.DetachOp, aten.LiftFreshCopyOp)
_VIEWS = (aten.ViewOp, aten.ReshapeOp, aten.UnsafeViewOp)
_MATMULS = (aten.MatmulOp, aten.BmmOp)


def _dropout_active(op: aten.DropoutOp) -> bool:
    return bool(op.arg("train")) and float(op.arg("p")) > 0.0


def identity_source(op: Operation) -> SSAValue | None:
    """The operand `op` passes through unchanged (same type, same values), else None."""
    if isinstance(op, _IDENTITY_OPS):
        return op.operands[0]
    if isinstance(op, _IDENTITY_CASTS + (aten.ExpandOp,) + _VIEWS):
        src = op.operands[0]
        return src if src.type == op.results[0].type else None
    if isinstance(op, aten.DropoutOp) and not _dropout_active(op):
        return op.input
    return None


def batch_view_source(op: Operation) -> SSAValue | None:
    """The input of a view that only regroups leading (batch) dims, keeping the last two."""
    if not isinstance(op, _VIEWS):
        return None
    src = op.operands[0]
    if element_of(src) != element_of(op.results[0]):
        return None
    a, b = static_shape(src), static_shape(op.results[0])
    if len(a) < 2 or len(b) < 2 or a[-2:] != b[-2:] or math.prod(a[:-2]) != math.prod(b[:-2]):
        return None
    return src


def _swaps_last_two(op: Operation) -> SSAValue | None:
    """The input of a transpose/permute that swaps exactly the last two dims (and nothing else)."""
    if isinstance(op, aten.TransposeIntOp):
        rank = len(static_shape(op.input))
        if rank < 2:
            return None
        dims = {op.arg("dim0") % rank, op.arg("dim1") % rank}
        return op.input if dims == {rank - 2, rank - 1} else None
    if isinstance(op, aten.PermuteOp):
        rank = len(static_shape(op.input))
        if rank < 2:
            return None
        dims = [d % rank for d in op.arg("dims")]
        want = [*range(rank - 2), rank - 1, rank - 2]
        return op.input if dims == want else None
    if isinstance(op, aten.TOp) and len(static_shape(op.input)) == 2:
        return op.input
    return None


def _skip_identities(value: SSAValue, ops: list[Operation]) -> SSAValue:
    while (op := producer(value)) is not None and (src := identity_source(op)) is not None:
        ops.append(op)
        value = src
    return value


@dataclass
class Origin:
    """A value reached by looking up from a use through ops that do not change it (up to scale)."""

    value: SSAValue
    factor: float
    """Product of the scalar factors applied between this value and the use."""
    transposed: bool
    """Whether an odd number of last-two-dims swaps lies between this value and the use."""
    depth: int
    """How many ops of the trace lie between this value and the use."""


@dataclass
class Trace:
    origins: list[Origin]
    ops: list[Operation]
    """The ops looked through, user first (`ops[:origin.depth]` lie between the use and origin)."""
    stop: Operation | None
    """The op where the trace stopped (None at a block argument)."""

    def furthest(self, batch: tuple[int, ...], *, transposed: bool = False) -> Origin | None:
        for origin in reversed(self.origins):
            if origin.transposed == transposed and static_shape(origin.value)[:-2] == batch:
                return origin
        return None


def trace(value: SSAValue, *, scales: Constants | None = None, transposes: bool = False) -> Trace:
    """Look up from `value` through identities and batch views, recording every value passed; also
    through constant scalar scales (`scales`: what evaluates them) and last-two-dims swaps."""
    origins = [Origin(value, 1.0, False, 0)]
    ops: list[Operation] = []
    factor, transposed = 1.0, False
    while True:
        op = producer(value)
        if op is None:
            return Trace(origins, ops, None)
        src = identity_source(op) or batch_view_source(op)
        swap, f = False, 1.0
        if src is None and transposes and (src := _swaps_last_two(op)) is not None:
            swap = True
        if src is None and scales is not None and (step := match_scale(op, scales)) is not None:
            src, f = step
        if src is None:
            return Trace(origins, ops, op)
        ops.append(op)
        factor *= f
        transposed ^= swap
        value = src
        origins.append(Origin(value, factor, transposed, len(ops)))


# --- single uses ---------------------------------------------------------------------------------------


def assert_holds(op: aten.AssertTensorMetadataOp) -> bool:
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


def _single_use_reason(value: SSAValue, user: Operation, what: str, asserts: list[Operation]) -> str | None:
    """Why `user` is not the only user of `value` (None when it is). Checks that hold statically
    do not count; they are added to `asserts`, to be erased with the chain."""
    count = 0
    for use in value.uses:
        op = use.operation
        if isinstance(op, aten.AssertTensorMetadataOp) and assert_holds(op):
            asserts.append(op)
            continue
        if op is not user:
            return f"{what} (%{value.name_hint or '?'}) have another user: {op.name}"
        count += 1
    if count != 1:
        return f"{what} (%{value.name_hint or '?'}) are used {count} times by {user.name}"
    return None


# --- the softmax -------------------------------------------------------------------------------------


@dataclass
class Probabilities:
    """The softmax whose probabilities the `·V` product reads, and the identities in between."""

    softmax: Operation
    trace: Trace
    """From the product's left operand up to the softmax (`trace.ops`: the identities)."""


def match_probabilities(pv: Operation, asserts: list[Operation]) -> Probabilities | str:
    """The softmax feeding the left operand of `pv`, each value on the way used only once."""
    probs = trace(pv.operands[0])
    softmax = probs.stop
    if isinstance(softmax, aten.DropoutOp):
        return f"the dropout on the probabilities is active (p = {softmax.arg('p')}, train = true)"
    if not isinstance(softmax, (aten.SoftmaxIntOp, aten.SoftmaxOp)):
        what = softmax.name if softmax is not None else "a block argument"
        return f"the left operand is produced by {what}, not by a softmax"
    if (reason := _softmax_reason(softmax)) is not None:
        return reason
    chain = [pv.operands[0], *(o.value for o in probs.origins[1:])]
    users = [pv, *probs.ops]
    for value, user in zip(chain, users, strict=True):
        if (reason := _single_use_reason(value, user, "the probabilities", asserts)) is not None:
            return reason
    return Probabilities(softmax, probs)


def _softmax_reason(softmax: Operation) -> str | None:
    """Why `softmax` is not sdpa's (over the last dim, keeping the dtype), or None."""
    rank = len(static_shape(softmax.operands[0]))
    dim = softmax.arg("dim")
    if rank == 0 or dim % rank != rank - 1:
        return f"softmax is over dim {dim}, not the last dim of a rank-{rank} score"
    if isinstance(softmax, aten.SoftmaxOp) and softmax.arg("half_to_float"):
        return "_softmax with half_to_float changes the dtype"
    if softmax.results[0].type != softmax.operands[0].type:
        return "softmax changes the dtype of the scores"
    return None


# --- the scores: Q·Kᵀ, scales, one mask ---------------------------------------------------------------


@dataclass
class Mask:
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
class Scores:
    ops: list[Operation]
    """The score chain's ops from the softmax input up, user first (Q·K excluded)."""
    qk: Operation
    factor: float
    mask: Mask | None


def match_scores(softmax: Operation, constants: Constants, asserts: list[Operation]) -> Scores | str:
    """Walk up from the softmax input through scales, one mask and identities to Q·K."""
    value = softmax.operands[0]
    user = softmax
    ops: list[Operation] = []
    factor = 1.0
    mask: Mask | None = None
    while True:
        if (reason := _single_use_reason(value, user, "the attention scores", asserts)) is not None:
            return reason
        op = producer(value)
        if op is None:
            return "the scores are a function argument, not Q·Kᵀ"
        if isinstance(op, _MATMULS):
            return Scores(ops, op, factor, mask)
        src = identity_source(op) or batch_view_source(op)
        if src is None and (step := match_scale(op, constants)) is not None:
            src, f = step
            factor *= f
        elif src is None:
            found = match_mask(op, factor, constants)
            if found is None:
                return _not_scores_reason(op)
            if isinstance(found, str):
                return found
            if mask is not None:
                return "more than one mask is applied to the scores"
            src, mask = found
        ops.append(op)
        value, user = src, op


def _not_scores_reason(op: Operation) -> str:
    """Why the op met on the way up from the softmax is neither Q·K nor a step of the chain."""
    if isinstance(op, aten.DropoutOp):
        return "an active dropout sits on the scores"
    if isinstance(op, (aten.MulTensorOp, aten.DivTensorOp)):
        factors = [v for v in op.operands if v.type != op.results[0].type or math.prod(static_shape(v)) == 1]
        if factors and all(math.prod(static_shape(v)) == 1 for v in factors):
            return f"the scores are scaled by {op.name} with a scalar that is not a compile-time constant"
        return f"the scores are scaled by {op.name} with a per-element tensor, not a scalar"
    return f"the scores come from {op.name}, not from Q·Kᵀ"


def match_scale(op: Operation, constants: Constants) -> tuple[SSAValue, float] | None:
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
            if a.type == result.type and (c := constants.scalar(b)) is not None:
                src, factor = a, c
                break
    elif isinstance(op, aten.DivTensorOp):
        if op.input.type == result.type and (c := constants.scalar(op.other)):
            src, factor = op.input, 1.0 / c
    if src is None or factor is None or not math.isfinite(factor):
        return None
    if src.type != result.type:
        return None
    return src, factor


def match_mask(op: Operation, scaled_after: float, constants: Constants) -> tuple[SSAValue, Mask] | str | None:
    """(scores operand, mask) if `op` applies a mask to the scores; None if it is no mask op; why
    not, if it is a mask that sdpa cannot take."""
    if len(op.results) != 1:
        return None
    if isinstance(op, aten.AddTensorOp):
        return _additive_mask(op, scaled_after, constants)
    found = _bool_mask_operands(op, constants)
    if found is None:
        return None
    cond, scores, kind, fill = found
    result = op.results[0]
    if scores.type != result.type:
        return "the mask broadcasts the scores to a larger shape"
    not_op = producer(cond)
    if kind == "drop" and isinstance(not_op, (aten.LogicalNotOp, aten.BitwiseNotOp)):
        if not_op.input.type == cond.type:  # masked_fill(s, not keep, fill) keeps `keep`
            cond, kind = not_op.input, "keep"
    if element_of(cond) != i1:
        return f"the {op.name} condition has type {cond.type}, not a boolean mask"
    if isinstance(fill, bool) or not isinstance(fill, (int, float)):
        return f"the {op.name} fill value {fill!r} is not a number"
    if scaled_after <= 0:
        return "the masked scores are scaled by a non-positive factor after masking"
    fill = float(fill) * scaled_after
    if not fill_masks_out(fill, dtype_of(result.type)):
        return (
            f"the mask fill value {fill} is neither -inf nor below half the dtype minimum: "
            "sdpa would not reproduce the masked scores exactly"
        )
    return scores, Mask(op, kind, cond, fill, static_shape(result)[:-2], scaled_after)


def _additive_mask(op: aten.AddTensorOp, scaled_after: float,
                   constants: Constants) -> tuple[SSAValue, Mask] | str | None:
    """`scores + mask` (alpha 1): the operand that is the scores, and the float mask."""
    if op.arg("alpha") != 1:
        return None
    result = op.results[0]
    pairs = [(x, m) for x, m in ((op.input, op.other), (op.other, op.input)) if x.type == result.type]
    if not pairs:
        return "the mask broadcasts the scores to a larger shape"
    if len(pairs) == 2 and not _reaches_qk(pairs[0][0], constants) and _reaches_qk(pairs[1][0], constants):
        pairs.reverse()
    scores, mask = pairs[0]
    if element_of(mask) != element_of(result):
        return f"the additive mask has type {mask.type}, not the scores' element type"
    if scaled_after != 1.0:
        return "the additive mask is scaled after being added (sdpa adds the mask after scaling)"
    return scores, Mask(op, "additive", mask, None, static_shape(result)[:-2], scaled_after)


def _bool_mask_operands(op: Operation, constants: Constants) -> tuple[SSAValue, SSAValue, str, object] | None:
    """(condition, scores, 'keep' or 'drop', fill) of a where/masked_fill; None for other ops."""
    if isinstance(op, aten.WhereScalarOtherOp):
        return op.condition, op.input, "keep", op.arg("other")
    if isinstance(op, aten.WhereScalarSelfOp):
        return op.condition, op.other, "drop", op.arg("self")
    if isinstance(op, aten.WhereSelfOp):
        if (fill := constants.scalar(op.other)) is not None:
            return op.condition, op.input, "keep", fill
        if (fill := constants.scalar(op.input)) is not None:
            return op.condition, op.other, "drop", fill
        return None
    if isinstance(op, aten.MaskedFillScalarOp):
        return op.mask, op.input, "drop", op.arg("value")
    if isinstance(op, aten.MaskedFillTensorOp):
        fill = constants.scalar(op.value)
        return None if fill is None else (op.mask, op.input, "drop", fill)
    return None


def _reaches_qk(value: SSAValue, constants: Constants, limit: int = 16) -> bool:
    for _ in range(limit):
        op = producer(value)
        if op is None:
            return False
        if isinstance(op, _MATMULS):
            return True
        src = identity_source(op) or batch_view_source(op)
        if src is None and (step := match_scale(op, constants)) is not None:
            src = step[0]
        if src is None:
            return False
        value = src
    return False


# --- the output, Q, K and V ------------------------------------------------------------------------


def output_roots(pv: Operation) -> list[tuple[SSAValue, list[Operation]]]:
    """Where the output can be taken: after a batch-unflattening view of a bmm, or the matmul."""
    result = pv.results[0]
    roots: list[tuple[SSAValue, list[Operation]]] = []
    use = result.get_unique_use()
    if use is not None:
        view = use.operation
        if batch_view_source(view) is result and view.results[0].type != result.type:
            roots.append((view.results[0], [view]))
    roots.append((result, []))
    return roots


@dataclass
class Plan:
    """The operands and flags of the sdpa that replaces the chain."""

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


def match_operands(pv: Operation, scores: Scores, root: SSAValue, L: int, S: int,
                   constants: Constants) -> Plan | str:
    """Q, K and V at the batch shape of the output `root`, with the combined scale and GQA."""
    batch = static_shape(root)[:-2]
    qk = scores.qk
    q_trace = trace(qk.operands[0], scales=constants)
    q = q_trace.furthest(batch)
    k_trace = trace(qk.operands[1], scales=constants, transposes=True)
    k = k_trace.furthest(batch, transposed=True)
    if k is None:
        if not any(o.transposed for o in k_trace.origins):
            stop = k_trace.stop.name if k_trace.stop is not None else "a function argument"
            return (
                f"the right operand of Q·K is not Kᵀ: it comes from {stop}, which does not swap "
                "exactly the last two dims of K"
            )
        return f"K is not available with batch shape {list(batch)}"
    v_trace = trace(pv.operands[1])
    v = v_trace.furthest(batch)
    if q is None or v is None:
        which = "Q" if q is None else "V"
        return f"{which} is not available with batch shape {list(batch)}"
    if (reason := _operands_reason(q.value, k.value, v.value, qk, root, batch, L, S)) is not None:
        return reason

    scale = scores.factor * q.factor * k.factor
    if not math.isfinite(scale):
        return f"the combined scale {scale} is not finite"

    traced = [*q_trace.ops[: q.depth], *k_trace.ops[: k.depth], *v_trace.ops[: v.depth]]
    key, value, gqa = k.value, v.value, False
    if len(batch) >= 1:
        k_un, v_un = match_repeat_kv(k.value), match_repeat_kv(v.value)
        if k_un is not None and v_un is not None and static_shape(k_un[0])[:-2] == static_shape(v_un[0])[:-2]:
            key, value = k_un[0], v_un[0]
            gqa = static_shape(key)[-3] != batch[-1]
            traced += [*k_un[1], *v_un[1]]

    plan = Plan(key, value, q.value, scale, gqa, traced)
    if scores.mask is not None and (reason := plan_mask(plan, scores.mask, batch, L, S, constants)) is not None:
        return reason
    return plan


def _operands_reason(q: SSAValue, k: SSAValue, v: SSAValue, qk: Operation, root: SSAValue,
                     batch: tuple[int, ...], L: int, S: int) -> str | None:
    """Why Q, K, V and the output do not form one attention (shapes, element types), or None."""
    qs, ks, vs, out = static_shape(q), static_shape(k), static_shape(v), static_shape(root)
    if min(len(qs), len(ks), len(vs), len(out)) < 2:
        return "Q, K, V and the output must have rank >= 2"
    if qs[-2] != L or ks[-2] != S or ks[-1] != qs[-1] or vs[-2] != S or out != (*batch, L, vs[-1]):
        return f"shapes do not line up: Q {list(qs)}, K {list(ks)}, V {list(vs)}, out {list(out)}"
    element = element_of(root)
    for value in (q, k, v, qk.results[0]):
        if element_of(value) != element:
            return f"mixed element types: {value.type} vs {root.type}"
    if not dtype_of(root.type).is_floating_point:
        return f"attention on non-float type {root.type}"
    return None


def match_repeat_kv(value: SSAValue) -> tuple[SSAValue, list[Operation]] | None:
    """The un-repeated K/V and the repeat ops (user first), if `value` is K/V repeated per head.

    Recognises `repeat_kv` (unsqueeze at the head dim + 1 → expand → reshape/view), which repeats
    each KV head n_rep times in place (= sdpa's enable_gqa), and an expand of a single KV head.
    """
    ops: list[Operation] = []
    shape = static_shape(value)
    if len(shape) < 3:
        return None
    prefix, heads, tail = shape[:-3], shape[-3], shape[-2:]
    value = _skip_identities(value, ops)
    op = producer(value)
    if isinstance(op, aten.ExpandOp):
        if static_shape(op.input) == (*prefix, 1, *tail) and heads > 1:
            return op.input, [*ops, op]
        return None
    if not isinstance(op, _VIEWS):
        return None
    ops.append(op)
    expanded = _skip_identities(op.operands[0], ops)
    xs = static_shape(expanded)
    n = len(prefix)
    if len(xs) != len(shape) + 1 or xs[:n] != prefix or xs[-2:] != tail or xs[n] * xs[n + 1] != heads:
        return None
    expand = producer(expanded)
    if not isinstance(expand, aten.ExpandOp) or static_shape(expand.input) != (*prefix, xs[n], 1, *tail):
        return None
    ops.append(expand)
    unsqueezed = _skip_identities(expand.input, ops)
    unsqueeze = producer(unsqueezed)
    if not isinstance(unsqueeze, aten.UnsqueezeOp) or unsqueeze.arg("dim") % len(xs) != n + 1:
        return None
    ops.append(unsqueeze)
    return unsqueeze.input, ops


# --- the mask sdpa gets ------------------------------------------------------------------------------


def plan_mask(plan: Plan, mask: Mask, batch: tuple[int, ...], L: int, S: int, constants: Constants) -> str | None:
    """Set the mask of `plan` (none, `is_causal`, or the mask, reshaped when its batch dims are
    grouped otherwise than at the output); returns why the mask cannot be fused, or None."""
    mshape = static_shape(mask.value)
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
            return (
                f"the mask {list(mshape)} is broadcast over part of batch shape "
                f"{list(mask.batch)}, attention runs at {list(batch)}"
            )
    verdict = constants.mask_verdict(mask.value, mask.kind, mask.fill, L, S)
    if verdict == "keeps-all":
        return None  # keeps every score: no mask at all
    if verdict == "causal":
        plan.is_causal = True
        return None
    if verdict == "nan-rows":
        return (
            "the constant mask masks every key of some query with -inf: the decomposed form "
            "gives NaN there, sdpa gives 0"
        )
    plan.mask_kind = mask.kind
    plan.mask_value = mask.value
    plan.fill = mask.fill
    return None
