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

The matching is split into small matchers, one per piece of the chain, in `attention_matching`
(the constants behind scales and masks in `attention_constants`); this module composes them and
rewrites.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern
from xdsl.traits import Pure

from dialects import aten
from dialects.aten_schema import ArgKind, to_attribute
from dialects.shapes import static_shape
from dialects.torch_types import dtype_of
from forge.patterns import ForgePattern, PatternStats, apply_patterns
from forge.transforms.attention_constants import Constants
from forge.transforms.attention_matching import (
    Plan,
    Probabilities,
    Scores,
    match_operands,
    match_probabilities,
    match_scores,
    output_roots,
)
from forge.transforms.ir_queries import element_of
from forge.weights import WeightStore, weights_of

__all__ = ["FuseAttentionPass", "FuseAttentionPattern", "fuse_attention", "fused_count"]


@dataclass
class _Attention:
    """A matched attention block: what the rewrite replaces, and the sdpa that replaces it."""

    pv: Operation
    """The `·V` product the match is anchored on."""
    probs: Probabilities
    scores: Scores
    root: SSAValue
    """The value the sdpa replaces (the product's result, or the view that unflattens it)."""
    root_ops: list[Operation]
    plan: Plan
    asserts: list[Operation]
    """Statically true metadata checks on the chain, erased with it."""


class FuseAttentionPattern(ForgePattern):
    """Q·Kᵀ → scale → mask → softmax → dropout → ·V  ⇒  aten.scaled_dot_product_attention."""

    ROOTS = (aten.MatmulOp, aten.BmmOp)

    def __init__(self, weights: WeightStore | None = None):
        super().__init__()
        self.constants = Constants(weights)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.MatmulOp | aten.BmmOp, rewriter: PatternRewriter) -> None:
        found = self.match(op)
        if isinstance(found, str):
            return self.fail(op, found)
        _rewrite(rewriter, found)

    def match(self, pv: Operation) -> _Attention | str:
        """The attention block whose `·V` product is `pv`, or why there is none."""
        asserts: list[Operation] = []
        probs = match_probabilities(pv, asserts)
        if isinstance(probs, str):
            return probs
        scores = match_scores(probs.softmax, self.constants, asserts)
        if isinstance(scores, str):
            return scores
        score_shape = static_shape(scores.qk.results[0])
        if len(score_shape) < 2 or len(static_shape(pv.results[0])) < 2:
            return "vector-matrix products are not attention (scores of rank < 2)"
        L, S = score_shape[-2], score_shape[-1]

        roots = output_roots(pv)
        reasons: list[str] = []
        for root, root_ops in roots:
            plan = match_operands(pv, scores, root, L, S, self.constants)
            if isinstance(plan, str):
                reasons.append(plan)
                continue
            return _Attention(pv, probs, scores, root, root_ops, plan, asserts)
        if len(reasons) == 1:
            return reasons[0]
        shapes = [list(static_shape(root)[:-2]) for root, _ in roots]
        return "; ".join(f"at batch shape {b}: {r}" for b, r in zip(shapes, reasons, strict=True))


# --- rewriting ---------------------------------------------------------------------------------------


def _rewrite(rewriter: PatternRewriter, match: _Attention) -> None:
    """Insert the sdpa (and the ops preparing its mask) before the product, use it, erase the chain."""
    new_ops, mask = _sdpa_mask(match.plan, match.root)
    sdpa = _sdpa(match.plan, mask, match.root, match.probs.softmax.location)
    rewriter.insert([*new_ops, sdpa])
    sdpa.results[0].name_hint = "sdpa"
    rewriter.replace_all_uses_with(match.root, sdpa.results[0])
    _erase_chain(rewriter, match)


def _sdpa_mask(plan: Plan, root: SSAValue) -> tuple[list[Operation], SSAValue | None]:
    """The new ops computing sdpa's `attn_mask` from the matched mask, and that mask (or None)."""
    new_ops: list[Operation] = []
    mask = plan.mask_value
    if mask is not None and plan.mask_kind != "additive":
        new_ops = _bool_mask_ops(plan, mask, root)
        if new_ops:
            mask = new_ops[-1].results[0]
            mask.name_hint = "attn_mask"
            if len(new_ops) == 2:
                new_ops[0].results[0].name_hint = "zero"

    if mask is not None and plan.mask_shape is not None:
        ty = TensorType(element_of(mask), plan.mask_shape)
        size = to_attribute(ArgKind.INT_LIST, plan.mask_shape)
        reshape = aten.ReshapeOp.build_op([[mask]], {"shape": size}, [ty])
        new_ops.append(reshape)
        mask = reshape.results[0]
        mask.name_hint = "attn_mask"
    while mask is not None and len(static_shape(mask)) < 2:
        # sdpa's kernels index the mask's dims -2 and -1: give a 0/1-d mask leading unit dims.
        ty = TensorType(element_of(mask), (1, *static_shape(mask)))
        unsqueeze = aten.UnsqueezeOp.build_op([[mask]], {"dim": to_attribute(ArgKind.INT, 0)}, [ty])
        new_ops.append(unsqueeze)
        mask = unsqueeze.results[0]
        mask.name_hint = "attn_mask"
    return new_ops, mask


def _bool_mask_ops(plan: Plan, mask: SSAValue, root: SSAValue) -> list[Operation]:
    """Ops turning a boolean keep/drop mask into one sdpa reads the same way (none if it already
    does): `logical_not` of a drop mask; with a finite fill, the additive `where(keep, 0, fill)`."""
    import torch

    fill = plan.fill
    assert fill is not None
    if fill == -math.inf and plan.mask_kind == "keep":
        return []  # sdpa's bool mask: True = attend
    if fill == -math.inf:
        return [aten.LogicalNotOp.build_op([[mask]], {}, [mask.type])]
    # finite fill: an equivalent additive float mask, where(keep, 0, fill)
    zero = aten.ConstantOp.from_tensor(torch.zeros((), dtype=dtype_of(root.type)))
    float_type = TensorType(element_of(root), static_shape(mask))
    fill_attr = to_attribute(ArgKind.SCALAR, float(fill))
    if plan.mask_kind == "keep":
        where = aten.WhereScalarOtherOp.build_op([[mask], [zero.result]], {"other": fill_attr}, [float_type])
    else:
        where = aten.WhereScalarSelfOp.build_op([[mask], [zero.result]], {"self": fill_attr}, [float_type])
    return [zero, where]


def _sdpa(plan: Plan, mask: SSAValue | None, root: SSAValue, location: Any) -> Operation:
    properties: dict[str, Attribute] = {"scale": to_attribute(ArgKind.FLOAT, plan.scale)}
    if plan.is_causal:
        properties["is_causal"] = to_attribute(ArgKind.BOOL, True)
    if plan.gqa:
        properties["enable_gqa"] = to_attribute(ArgKind.BOOL, True)
    return aten.ScaledDotProductAttentionOp.build_op(
        [[plan.query], [plan.key], [plan.value], [mask] if mask is not None else []],
        properties,
        [root.type],
        location=location,
    )


def _erase_chain(rewriter: PatternRewriter, match: _Attention) -> None:
    """Erase the ops of the matched chain that the sdpa left dead (pure ones, dropouts, asserts)."""
    scores = match.scores
    dead = [*match.asserts, *match.root_ops, match.pv, *match.probs.trace.ops, match.probs.softmax,
            *scores.ops, scores.qk, *match.plan.traced]
    erased: set[int] = set()
    for op in dead:
        if id(op) in erased or any(r.first_use is not None for r in op.results):
            continue
        if op.has_trait(Pure) or isinstance(op, (aten.DropoutOp, aten.AssertTensorMetadataOp)):
            rewriter.erase(op)
            erased.add(id(op))


# --- the pass ------------------------------------------------------------------------------------


def fuse_attention(module: ModuleOp, weights: WeightStore | None = None) -> int:
    """Fuse every recognised attention block of `module` in one sweep; returns how many fused."""
    pattern = FuseAttentionPattern(weights if weights is not None else weights_of(module))
    return apply_patterns(module, [pattern])


def fused_count(stats: PatternStats | Any) -> int:
    """How many attention blocks `fuse-attention` fused, from the statistics of a pass run.

    Accepts anything with a `fired` counter: `forge.patterns.PatternStats` or a
    `forge.pass_runner.PassRecord`.
    """
    return stats.fired[FuseAttentionPattern.__name__]


@dataclass(frozen=True)
class FuseAttentionPass(ModulePass):
    """Replace decomposed attention (Q·Kᵀ, scale, mask, softmax, ·V) by scaled_dot_product_attention."""

    name = "fuse-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        fuse_attention(op)
