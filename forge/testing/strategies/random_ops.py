"""Random ops over the builder's pool of live values: one step each (an elementwise, scalar or
unary op, a reduction, a view, a transpose, a matmul, softmax, layer_norm, or a small bool or
integer side graph); `aten_graphs` draws up to `max_ops` of them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from hypothesis import strategies as st

from dialects import aten
from forge.testing.strategies.builder import I64, MAX_DIM, GraphBuilder

UNARY_OPS = (aten.ReluOp, aten.NegOp, aten.SigmoidOp, aten.TanhOp, aten.GeluOp, aten.SiluOp, aten.AbsOp,
          aten.SinOp, aten.CosOp, aten.ErfOp)
BINARY_OPS = (aten.AddTensorOp, aten.SubTensorOp, aten.MulTensorOp, aten.MaximumOp, aten.MinimumOp)
SCALAR_BINARY_OPS = (aten.AddScalarOp, aten.SubScalarOp, aten.MulScalarOp, aten.DivScalarOp, aten.RsubScalarOp)
COMPARE_OPS = (aten.GtTensorOp, aten.LtTensorOp, aten.GeTensorOp, aten.LeTensorOp, aten.EqTensorOp, aten.NeTensorOp)


def broadcastable(a: Sequence[int], b: Sequence[int]) -> bool:
    try:
        torch.broadcast_shapes(tuple(a), tuple(b))
    except RuntimeError:
        return False
    return True


def _partner_shape(b: GraphBuilder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape`: equal, a suffix, or with some dims set to 1."""
    how = b.choice(["same", "suffix", "ones", "scalar_dim"])
    if how == "same" or not shape:
        return shape
    if how == "suffix":
        return shape[b.integer(0, len(shape) - 1):]
    if how == "ones":
        return tuple(1 if b.chance(50) else d for d in shape)
    return (1,) * b.integer(1, len(shape))


def step_binary(b: GraphBuilder) -> None:
    """An elementwise binary op (with broadcasting) on a pool value and a partner."""
    x = b.pick()
    sx = b.shape_of(x)
    others = [v for v in b.pool if v is not x and broadcastable(sx, b.shape_of(v))
              and len(torch.broadcast_shapes(sx, b.shape_of(v))) <= 4]
    if others and b.chance(60):
        y = b.choice(others)
    else:
        pshape = _partner_shape(b, sx)
        y = b.weight(pshape, "bias", kind="bias") if b.chance(40) else b.input(pshape)
    if b.chance(50):
        x, y = y, x
    cls = b.choice(BINARY_OPS + (aten.DivTensorOp,))
    if cls is aten.DivTensorOp:  # divide by something safely away from zero
        y = b.op(aten.AddScalarOp, b.op(aten.AbsOp, y), 1.0)
    kwargs = {"alpha": b.choice([2, 0.5])} if cls in (aten.AddTensorOp, aten.SubTensorOp) and b.chance(15) else {}
    b.to_pool(b.op(cls, x, y, **kwargs))


def step_scalar(b: GraphBuilder) -> None:
    """``x <op> number`` (the Scalar overloads torch.export produces for Python numbers)."""
    x = b.pick()
    cls = b.choice(SCALAR_BINARY_OPS + (aten.PowTensorScalarOp,))
    if cls is aten.PowTensorScalarOp:
        b.to_pool(b.op(cls, x, b.choice([2, 3, 2.0, 0.5]) if b.t(x).min() > 0 else b.choice([2, 3])))
    elif cls is aten.DivScalarOp:
        b.to_pool(b.op(cls, x, b.choice([2.0, 8.0, 0.125, 3])))
    else:
        b.to_pool(b.op(cls, x, b.choice([1.0, 2, 0.5, -3.0])))


def step_unary(b: GraphBuilder) -> None:
    """An activation or elementwise math op (rsqrt/exp/log only where defined and tame)."""
    x = b.pick()
    t = b.t(x)
    options: list[Any] = list(UNARY_OPS)
    if t.numel() and t.abs().max() < 20:
        options.append(aten.ExpOp)
    if t.numel() and t.min() > 1e-2:
        options += [aten.RsqrtOp, aten.SqrtOp, aten.LogOp, aten.ReciprocalOp]
    cls = b.choice(options)
    if cls is aten.GeluOp and b.chance(40):
        b.to_pool(b.op(cls, x, approximate="tanh"))
    else:
        b.to_pool(b.op(cls, x))


def step_reduce(b: GraphBuilder) -> None:
    """mean / sum / amax over one or two dims, usually keepdim (as norms write them)."""
    x = b.pick(lambda t: t.dim() >= 2)
    rank = len(b.shape_of(x))
    dims = [b.choice([-1, *range(rank)])]
    if b.chance(20):
        other = b.integer(0, rank - 1)
        if other % rank != dims[0] % rank:
            dims.append(other)
    keepdim = not b.chance(30)
    cls = b.choice([aten.MeanDimOp, aten.SumDimIntListOp, aten.AmaxOp])
    b.to_pool(b.op(cls, x, dims, keepdim))


def factor_splits(n: int) -> list[tuple[int, int]]:
    return [(a, n // a) for a in range(2, n) if n % a == 0]


def step_reshape(b: GraphBuilder) -> None:
    """view/reshape merging two adjacent dims, splitting one, flattening, or (un)squeezing."""
    x = b.pick(lambda t: t.dim() >= 1)
    shape = list(b.shape_of(x))
    how = b.choice(["merge", "split", "flatten", "unsqueeze", "squeeze", "minus_one"])
    if how == "merge" and len(shape) >= 2:
        i = b.integer(0, len(shape) - 2)
        new = shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:]
        if new[i] > 64:
            new = shape
    elif how == "split" and any(factor_splits(d) for d in shape):
        i = b.choice([i for i, d in enumerate(shape) if factor_splits(d)])
        f = b.choice(factor_splits(shape[i]))
        new = shape[:i] + list(f) + shape[i + 1:]
        if len(new) > 4:
            new = shape
    elif how == "flatten" and len(shape) >= 2:
        start = b.integer(0, len(shape) - 2)
        b.to_pool(b.op(aten.FlattenUsingIntsOp, x, start, -1))
        return
    elif how == "unsqueeze" and len(shape) < 4:
        b.to_pool(b.op(aten.UnsqueezeOp, x, b.integer(-len(shape) - 1, len(shape))))
        return
    elif how == "squeeze" and 1 in shape and len(shape) >= 2:
        b.to_pool(b.op(aten.SqueezeDimOp, x, shape.index(1)))
        return
    elif how == "minus_one" and len(shape) >= 2:
        new = [-1] + shape[1:]
    else:
        new = shape[::-1] if len(shape) > 1 else shape
    b.to_pool(b.reshape(x, new))


def step_transpose(b: GraphBuilder) -> None:
    """transpose.int / permute / t on a pool value."""
    x = b.pick(lambda t: t.dim() >= 2)
    rank = len(b.shape_of(x))
    how = b.choice(["transpose", "permute", "t"] if rank == 2 else ["transpose", "permute"])
    if how == "transpose":
        d0 = b.integer(-rank, rank - 1)
        d1 = b.integer(-rank, rank - 1)
        b.to_pool(b.op(aten.TransposeIntOp, x, d0, d1))
    elif how == "t":
        b.to_pool(b.op(aten.TOp, x))
    else:
        perm = b.draw(st.permutations(list(range(rank))))
        b.to_pool(b.op(aten.PermuteOp, x, list(perm)))


def step_matmul(b: GraphBuilder) -> None:
    """matmul with a weight or another value, linear, mm or bmm."""
    x = b.pick(lambda t: t.dim() >= 1)
    sx = b.shape_of(x)
    k = sx[-1]
    n = b.dim()
    how = b.choice(["linear", "matmul_weight", "matmul_value", "mm", "bmm"])
    if how == "linear":
        bias = b.weight((n,), "bias", kind="bias") if b.chance(60) else None
        b.to_pool(b.op(aten.LinearOp, x, b.weight((n, k), "linear.weight"), bias))
    elif how == "mm" and len(sx) == 2:
        b.to_pool(b.op(aten.MmOp, x, b.weight((k, n), "mm.weight")))
    elif how == "bmm" and len(sx) == 3:
        y = b.pick(lambda t: t.dim() == 3 and t.shape[0] == sx[0] and t.shape[1] == k,
                   lambda: b.input((sx[0], k, n)))
        b.to_pool(b.op(aten.BmmOp, x, y))
    elif how == "matmul_value" and len(sx) >= 2:
        batch = sx[:-2]
        y = b.pick(lambda t: t.dim() >= 2 and t.shape[-2] == k and broadcastable(batch, t.shape[:-2])
                   and t.dim() <= 4, lambda: b.input((*batch[len(batch) - b.integer(0, len(batch)):], k, n)))
        b.to_pool(b.op(aten.MatmulOp, x, y))
    else:
        b.to_pool(b.op(aten.MatmulOp, x, b.weight((k, n), "matmul.weight")))


def step_softmax(b: GraphBuilder) -> None:
    x = b.pick()
    rank = len(b.shape_of(x))
    dim = b.choice([-1, *range(rank)])
    cls = b.choice([aten.SoftmaxIntOp, aten.LogSoftmaxIntOp])
    b.to_pool(b.op(cls, x, dim))


def step_layer_norm(b: GraphBuilder) -> None:
    x = b.pick()
    d = b.shape_of(x)[-1]
    affine = b.chance(70)
    w = b.weight((d,), "ln.weight", kind="norm") if affine else None
    bias = b.weight((d,), "ln.bias", kind="bias") if affine and b.chance(70) else None
    b.to_pool(b.op(aten.LayerNormOp, x, [d], w, bias, b.choice([1e-5, 1e-6, 1e-12])))


def step_where(b: GraphBuilder) -> None:
    """An i1 side graph: compare two values, then select with where / masked_fill."""
    x = b.pick()
    sx = b.shape_of(x)
    if b.chance(50):
        mask = b.op(b.choice([aten.GtScalarOp, aten.LtScalarOp, aten.GeScalarOp]), x, b.choice([0.0, 0.5, -1]))
    else:
        y = b.input(_partner_shape(b, sx))
        mask = b.op(b.choice(COMPARE_OPS), x, y)
    if b.chance(30):
        mask = b.op(b.choice([aten.LogicalNotOp, aten.BitwiseNotOp]), mask)
    how = b.choice(["where", "masked_fill", "where_scalar"])
    if how == "where":
        other = b.pick(lambda t: broadcastable(t.shape, sx) and t.dim() <= len(sx), lambda: b.input(sx))
        b.to_pool(b.op(aten.WhereSelfOp, mask, x, other))
    elif how == "masked_fill":
        b.to_pool(b.op(aten.MaskedFillScalarOp, x, mask, b.choice([0.0, -1.0, 100.0])))
    else:
        b.to_pool(b.op(aten.WhereScalarOtherOp, mask, x, 0.0))


def step_cat_slice(b: GraphBuilder) -> None:
    x = b.pick(lambda t: t.dim() >= 1)
    shape = b.shape_of(x)
    dim = b.integer(0, len(shape) - 1)
    if b.chance(50) and shape[dim] * 2 <= 2 * MAX_DIM:
        others = [v for v in b.pool if b.shape_of(v)[:dim] + b.shape_of(v)[dim + 1:] == shape[:dim] + shape[dim + 1:]
                  and len(b.shape_of(v)) == len(shape) and shape[dim] + b.shape_of(v)[dim] <= 2 * MAX_DIM]
        y = b.choice(others) if others else x
        b.to_pool(b.op(aten.CatOp, [x, y], dim))
    elif shape[dim] >= 2:
        start = b.integer(0, shape[dim] - 1)
        b.to_pool(b.op(aten.SliceTensorOp, x, dim, start, b.integer(start + 1, shape[dim])))
    else:
        b.to_pool(b.op(aten.SelectIntOp, x, dim, 0)) if len(shape) > 1 else b.to_pool(b.op(aten.CloneOp, x))


def step_embedding(b: GraphBuilder) -> None:
    """An i64 side graph: token ids (an input) looking up an embedding table weight."""
    vocab, d = b.dim(2), b.dim()
    ids = b.input(b.shape(min_rank=1, max_rank=2), I64, name="input_ids",
                  value=torch.randint(0, vocab, b.shape(min_rank=1, max_rank=2), generator=b.gen), pool=False)
    b.to_pool(b.op(aten.EmbeddingOp, b.weight((vocab, d), "embed.weight", kind="bias"), ids))


RANDOM_STEPS: dict[str, Callable[[GraphBuilder], None]] = {
    "binary": step_binary,
    "unary": step_unary,
    "scalar": step_scalar,
    "reduce": step_reduce,
    "reshape": step_reshape,
    "transpose": step_transpose,
    "matmul": step_matmul,
    "softmax": step_softmax,
    "layer_norm": step_layer_norm,
    "where": step_where,
    "cat_slice": step_cat_slice,
    "embedding": step_embedding,
}
"""One random op (or a tiny side graph) each; `aten_graphs` draws `max_ops` of them at most."""
