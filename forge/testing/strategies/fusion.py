"""Motifs for fuse-ops and layout: linear layers with their activation, SwiGLU, RMSNorm, and the
transposes, permutes and views around matmuls."""

from __future__ import annotations

import math

from hypothesis import strategies as st
from xdsl.ir import SSAValue

from dialects import aten
from forge.testing.strategies.builder import F32, GraphBuilder
from forge.testing.strategies.random_ops import UNARY_OPS, factor_splits

_ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "gelu_tanh_poly", "gelu_erf_poly", "silu", "sigmoid")


def activation(b: GraphBuilder, x: SSAValue, kind: str) -> SSAValue:
    """Apply an activation the way models write it (poly forms are GPT-2's and BERT's own code)."""
    if kind == "none":
        return x
    if kind == "relu":
        return b.op(aten.ReluOp, x)
    if kind == "gelu":
        return b.op(aten.GeluOp, x)
    if kind == "gelu_tanh":
        return b.op(aten.GeluOp, x, approximate="tanh")
    if kind == "silu":
        return b.op(aten.SiluOp, x)
    if kind == "sigmoid":
        return b.op(aten.SigmoidOp, x)
    if kind == "gelu_tanh_poly":  # 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))
        half = b.op(aten.MulScalarOp, x, 0.5)
        cube = b.op(aten.PowTensorScalarOp, x, 3.0)
        inner = b.op(aten.AddTensorOp, x, b.op(aten.MulScalarOp, cube, 0.044715))
        t = b.op(aten.TanhOp, b.op(aten.MulScalarOp, inner, math.sqrt(2.0 / math.pi)))
        return b.op(aten.MulTensorOp, half, b.op(aten.AddScalarOp, t, 1.0))
    if kind == "gelu_erf_poly":  # x*0.5*(1+erf(x/sqrt(2)))
        half = b.op(aten.MulScalarOp, x, 0.5)
        e = b.op(aten.ErfOp, b.op(aten.DivScalarOp, x, math.sqrt(2.0)))
        return b.op(aten.MulTensorOp, half, b.op(aten.AddScalarOp, e, 1.0))
    raise ValueError(kind)


def transpose_2d(b: GraphBuilder, w: SSAValue) -> SSAValue:
    how = b.choice(["t", "transpose", "permute"])
    if how == "t":
        return b.op(aten.TOp, w)
    if how == "transpose":
        return b.op(aten.TransposeIntOp, w, 0, 1)
    return b.op(aten.PermuteOp, w, [1, 0])


def as_2d(b: GraphBuilder, x: SSAValue) -> SSAValue:
    shape = b.shape_of(x)
    return x if len(shape) == 2 else b.reshape(x, [-1, shape[-1]])


def linear_act(b: GraphBuilder, *, form: str | None = None, act: str | None = None) -> None:
    """A linear layer and its activation: ``linear``, ``addmm`` (bias, x, Wᵀ) with the 2-d views
    export adds, ``mm`` + add, ``matmul`` + bias; then relu / gelu / gelu(tanh) / GPT-2's
    written-out tanh polynomial / BERT's erf form / silu / sigmoid (or none)."""
    x = b.pick_rank(1, 4)
    shape = b.shape_of(x)
    k, n = shape[-1], b.dim()
    form = form or b.choice(["linear", "addmm", "mm_add", "matmul_bias", "addmm_conv1d"])
    act = act or b.choice(_ACTIVATIONS)
    bias = b.weight((n,), "fc.bias", kind="bias")
    if form == "linear":
        y = b.op(aten.LinearOp, x, b.weight((n, k), "fc.weight"), bias if b.chance(75) else None)
    elif form == "matmul_bias":
        h = b.op(aten.MatmulOp, x, b.weight((k, n), "fc.weight"))
        y = b.op(aten.AddTensorOp, *((h, bias) if b.chance(70) else (bias, h)))
    else:
        x2 = as_2d(b, x)
        if form == "addmm_conv1d":  # GPT-2's Conv1D stores the weight as [in, out]
            wt = b.weight((k, n), "c_fc.weight")
        else:
            wt = transpose_2d(b, b.weight((n, k), "fc.weight"))
        if form == "mm_add":
            y = b.op(aten.AddTensorOp, b.op(aten.MmOp, x2, wt), bias)
        else:
            y = b.op(aten.AddmmOp, bias, x2, wt)
        if len(shape) != 2:
            y = b.reshape(y, [*shape[:-1], n])
    b.to_pool(activation(b, y, act))
    b.note(f"linear_act[{form}+{act}]", "linear_act", f"linear_act:{form}", f"linear_act:{act}")


def swiglu(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """Llama's MLP: ``down(silu(x·Wg) * (x·Wu))`` with linear (or matmul) projections.
    Negative variant: the silu is applied to the input, not to a projection (tag ``swiglu:negative``)."""
    x = b.pick_rank(1, 4)
    e, f = b.shape_of(x)[-1], b.dim()
    negative = b.chance(15) if negative is None else negative
    use_matmul = b.chance(25)

    def proj(v: SSAValue, out: int, inp: int, prefix: str) -> SSAValue:
        if use_matmul:
            return b.op(aten.MatmulOp, v, b.weight((inp, out), prefix))
        return b.op(aten.LinearOp, v, b.weight((out, inp), prefix))

    gate = proj(x, f, e, "mlp.gate_proj.weight")
    up = proj(x, f, e, "mlp.up_proj.weight")
    if negative:
        gate = b.op(aten.SumDimIntListOp, b.op(aten.SiluOp, x), [-1], True)
        act = gate
    else:
        act = b.op(aten.SiluOp, gate)
    h = b.op(aten.MulTensorOp, *((act, up) if b.chance(70) else (up, act)))
    if b.chance(70):
        h = proj(h, e, f, "mlp.down_proj.weight")
    b.to_pool(h)
    tags = ["swiglu"] + (["swiglu:negative"] if negative else [])
    b.note(f"swiglu[{'matmul' if use_matmul else 'linear'}{', NEGATIVE silu(x)' if negative else ''}]", *tags)


def rmsnorm(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """Llama's RMSNorm: ``w * (x * rsqrt(mean(x**2, -1, keepdim) + eps))`` with the ``to.dtype``
    float32 casts it adds; variants use x*x, 1/sqrt, eps as a tensor.  Negative variant: the mean
    runs over another dim (tag ``rmsnorm:negative``)."""
    x = b.pick_rank(1, 4)
    rank = len(b.shape_of(x))
    e = b.shape_of(x)[-1]
    negative = (b.chance(15) if negative is None else negative) and rank >= 2
    casts = b.chance(60)
    h = b.op(aten.ToDtypeOp, x, F32) if casts else x
    sq = b.op(aten.PowTensorScalarOp, h, 2) if b.chance(70) else b.op(aten.MulTensorOp, h, h)
    var = b.op(aten.MeanDimOp, sq, [-2 if negative else -1], True)
    eps = b.choice([1e-6, 1e-5])
    var = b.op(aten.AddScalarOp, var, eps) if b.chance(75) else b.op(aten.AddTensorOp, var, b.const(eps, F32))
    r = b.op(aten.RsqrtOp, var) if b.chance(75) else b.op(aten.ReciprocalOp, b.op(aten.SqrtOp, var))
    h = b.op(aten.MulTensorOp, h, r)
    if casts:
        h = b.op(aten.ToDtypeOp, h, F32)
    if b.chance(90):
        w = b.weight((e,), "norm.weight", kind="norm")
        h = b.op(aten.MulTensorOp, *((w, h) if b.chance(70) else (h, w)))
    b.to_pool(h)
    tags = ["rmsnorm"] + (["rmsnorm:negative"] if negative else [])
    b.note(f"rmsnorm[eps={eps}{', casts' if casts else ''}{', NEGATIVE mean(-2)' if negative else ''}]", *tags)


def layout(b: GraphBuilder) -> None:
    """What the layout pass targets: transposes/permutes feeding matmul on either side, a
    transposed weight feeding matmul, inverse permute pairs around elementwise ops, chains of
    views/reshapes, and transpose → contiguous → view (GPT-2's merge-heads)."""
    kinds = []
    for _ in range(b.integer(1, 2)):
        kind = b.choice(["weight_t", "transpose_rhs", "transpose_lhs", "inverse_permute", "view_chain",
                         "merge_heads", "transpose_both"])
        kinds.append(kind)
        if kind == "weight_t":
            x = b.pick_rank(1, 4)
            k, n = b.shape_of(x)[-1], b.dim()
            wt = transpose_2d(b, b.weight((n, k), "proj.weight"))
            b.to_pool(b.op(aten.MatmulOp, x, wt) if len(b.shape_of(x)) > 2 or b.chance(50)
                      else b.op(aten.MmOp, as_2d(b, x), wt))
        elif kind in ("transpose_rhs", "transpose_lhs", "transpose_both"):
            batch = b.shape(min_rank=0, max_rank=2)
            m, k, n = b.dim(), b.dim(), b.dim()
            lhs = b.input((*batch, k, m) if kind != "transpose_rhs" else (*batch, m, k))
            rhs = b.input((*batch, n, k) if kind != "transpose_lhs" else (*batch, k, n))
            if kind != "transpose_rhs":
                lhs = b.op(aten.TransposeIntOp, lhs, -2, -1)
            if kind != "transpose_lhs":
                rank = len(batch) + 2
                rhs = b.op(aten.TransposeIntOp, rhs, -2, -1) if b.chance(60) else \
                    b.op(aten.PermuteOp, rhs, [*range(rank - 2), rank - 1, rank - 2])
            b.to_pool(b.op(aten.MatmulOp, lhs, rhs))
        elif kind == "inverse_permute":
            x = b.pick_rank(2, 4)
            rank = len(b.shape_of(x))
            perm = list(b.draw(st.permutations(list(range(rank)))))
            y = b.op(aten.PermuteOp, x, perm)
            if b.chance(60):
                y = b.op(b.choice(UNARY_OPS), y)
            b.to_pool(b.op(aten.PermuteOp, y, [perm.index(i) for i in range(rank)]))
        elif kind == "view_chain":
            x = b.pick_rank(1, 4)
            shape = list(b.shape_of(x))
            numel = math.prod(shape)
            y = b.reshape(x, [numel])
            splits = factor_splits(numel)
            if splits and b.chance(70):
                y = b.reshape(y, list(b.choice(splits)))
            if b.chance(50):
                y = b.op(aten.ReshapeOp, y, [1, numel])
            b.to_pool(b.reshape(y, shape))
        elif kind == "merge_heads":
            bsz, heads, s, d = b.dim(1, 2), b.dim(1, 4), b.dim(), b.dim()
            x = b.input((bsz, heads, s, d))
            y = b.op(aten.TransposeIntOp, x, 1, 2)
            if b.chance(70):
                y = b.op(aten.ContiguousOp, y)
            b.to_pool(b.reshape(y, [bsz, s, heads * d]))
    b.note(f"layout[{','.join(kinds)}]", "layout")
