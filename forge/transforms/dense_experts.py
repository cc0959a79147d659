"""Mixture-of-experts layers computed densely: the `dense_experts` family of `fuse-ops` (not a pass).

transformers' static MoE routing (`experts_implementation="batched_mm"`) gives every (token, picked
expert) pair its own copy of the expert's weights and a matrix-vector product:

    bmm(index(W[E, O, I], [ids[S]]), X[S, I, N])          S = tokens x k picks

`DenseExperts` rewrites it as every expert applied to every input column, then the picked one:

    Y = matmul(W, C)                                        C [I, P]: X's columns, P = S x N
    result[s, :, n] = Y[ids[s], :, column(s, n)]            one gather_elements along the experts

and when X repeats each token's row k times (`reshape(expand(h[T, 1, I]))`, how `batched_mm` feeds
the first projection) C is the T token rows, not the S copies. The dense form does E x P x O x I
multiply-adds and moves each weight once; the gathered one does S x O x I multiply-adds but writes
and reads S copies of an expert's weights. Measured (`python -m bench.moe_routing`, OpenVINO CPU,
f32, 2 cores): on the zoo's Mixtral and Qwen2-MoE (8 experts, top 2) this rewrite runs 1.6-2.0x
faster at the small size and 2.4-3.1x at the default widths (128 tokens: 183 -> 59 ms and 202 ->
84 ms for two layers), within 15-20% of the dense masked formulation written in the model.

The pattern rewrites when E x P <= `DENSE_BOUND` x S: the cost model's CPU figures (200 GFLOPS,
50 GB/s) put the break-even at E x P = 16 x S (the NPU's, 2 TFLOPS over 60 GB/s, at ~130 x S), so
it goes dense only where dense wins on both devices (8 experts, 128 tokens, top 2: E x P = 1024 <=
16 x 256; 64 experts with per-sample columns: E x P = 64 x S stays gathered).
"""

from __future__ import annotations

import math

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern

from dialects import aten
from dialects.aten_builder import build
from dialects.shapes import static_shape
from forge.patterns import ForgePattern
from forge.transforms.ir_queries import erase_dead, producer, single_use
from forge.transforms.linear_layers import RESHAPES, is_constant

DENSE_BOUND = 16
"""Rewrite when experts x columns <= DENSE_BOUND x samples (see the module docstring)."""

_RESHAPES = (*RESHAPES, aten.UnsqueezeOp, aten.CloneOp, aten.ContiguousOp, aten.AliasOp)
"""What keeps the values of a tensor (reshapes and copies): looked through back to the expand."""


class DenseExperts(ForgePattern):
    """bmm(W[ids], X) of a 3-D weight gathered per sample -> matmul(W, columns of X), then a
    gather_elements of each sample's expert."""

    ROOTS = (aten.BmmOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.BmmOp, rewriter: PatternRewriter) -> None:
        gathered, x = op.operands
        index = producer(gathered)
        if not isinstance(index, aten.IndexTensorOp) or index.present_mask() != [1] or not single_use(gathered):
            return self.fail(op, "its left operand is not W[ids], used only here")
        weight, ids = index.operands
        if not is_constant(weight) or len(static_shape(weight)) != 3 or len(static_shape(ids)) != 1:
            return self.fail(op, "the gathered operand is not a 3-D weight indexed by a 1-D tensor")
        experts, out_features, in_features = static_shape(weight)
        samples, _, n = static_shape(x)
        tokens = _repeated_rows(x, samples)
        columns = tokens[1] if tokens is not None else samples * n
        if experts * columns > DENSE_BOUND * samples:
            return self.fail(op, f"{experts} experts x {columns} columns exceed {DENSE_BOUND} x {samples} samples")
        loc = op.location
        ops: list[Operation] = []

        def add(new: Operation) -> SSAValue:
            ops.append(new)
            return new.results[0]

        if tokens is not None:  # X repeats each of T token rows k times: the rows themselves
            rows, count = tokens
            k = samples // count
            cols = add(build(aten.TransposeIntOp, add(build(aten.ReshapeOp, rows, [count, in_features], location=loc)),
                             0, 1, location=loc))  # [I, T]
            dense = add(build(aten.MatmulOp, weight, cols, location=loc))  # [E, O, T]
            pick = add(build(aten.PermuteOp, add(build(aten.ReshapeOp, ids, [count, k], location=loc)), [1, 0],
                             location=loc))  # [k, T]
            pick = add(build(aten.ExpandOp, add(build(aten.ReshapeOp, pick, [k, 1, count], location=loc)),
                             [k, out_features, count], location=loc))
            picked = add(build(aten.GatherOp, dense, 0, pick, location=loc))  # [k, O, T]
            picked = add(build(aten.PermuteOp, picked, [2, 0, 1], location=loc))  # [T, k, O]
            result = add(build(aten.ReshapeOp, picked, [samples, out_features, 1], location=loc))
        else:
            cols = add(build(aten.ReshapeOp, add(build(aten.PermuteOp, x, [1, 0, 2], location=loc)),
                             [in_features, samples * n], location=loc))  # [I, S * N]
            dense = add(build(aten.MatmulOp, weight, cols, location=loc))  # [E, O, S * N]
            dense = add(build(aten.ReshapeOp, dense, [experts, out_features, samples, n], location=loc))
            pick = add(build(aten.ExpandOp, add(build(aten.ReshapeOp, ids, [1, 1, samples, 1], location=loc)),
                             [1, out_features, samples, n], location=loc))
            picked = add(build(aten.GatherOp, dense, 0, pick, location=loc))  # [1, O, S, N]
            picked = add(build(aten.ReshapeOp, picked, [out_features, samples, n], location=loc))
            result = add(build(aten.PermuteOp, picked, [1, 0, 2], location=loc))  # [S, O, N]
        rewriter.replace(op, ops, [result])
        erase_dead(rewriter, [index, *(_chain(x) if tokens is not None else [])])


def _repeated_rows(x: SSAValue, samples: int) -> tuple[SSAValue, int] | None:
    """(h, T) when x [S, I, 1] is a reshape of expand(h [T, 1, I] -> [T, k, I]): each token row k times."""
    shape = static_shape(x)
    chain = _chain(x)
    expand = chain[-1] if chain else None
    if shape[2] != 1 or not isinstance(expand, aten.ExpandOp):
        return None
    source = expand.operands[0]
    before, expanded = tuple(static_shape(source)), tuple(static_shape(expand.results[0]))
    if len(before) != 3 or len(expanded) != 3 or before[1] != 1 or (before[0], before[2]) != (expanded[0], expanded[2]):
        return None
    t = before[0]
    if t * expanded[1] != samples or math.prod(expanded) != math.prod(shape):
        return None
    return source, t


def _chain(x: SSAValue) -> list[Operation]:
    """The reshapes that make x, back to (and with) the op before them."""
    chain: list[Operation] = []
    op = producer(x)
    while isinstance(op, _RESHAPES):
        chain.append(op)
        op = producer(op.operands[0])
    return [*chain, op] if op is not None and chain else chain
