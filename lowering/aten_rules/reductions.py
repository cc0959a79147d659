"""Rules for reductions, cumsum/diff, softmax and log_softmax, the norms, attention and selection.

Reductions take sorted, normalized axes (none: every axis); log_softmax is composed in its stable
form, diff (n == 1) from a concat and two slices; layer_norm, add_layer_norm (the norm of
input + residual), rms_norm and sdpa map to their npuir kernels with the affine operands
converted to the result type. `linalg_vector_norm` is composed from abs/mul/pow and a reduction
(in f32 for half-precision inputs, as torch accumulates), variance from a mean and a sum of
squares. `topk` is an npuir topk (the indices) and a gather_elements (the values); argmax/argmin
and the indices of max.dim/min.dim are a topk of one (of the negation for a float minimum: NaN is
the extreme there too), their values a reduction. Integer means,
boolean sums, norms of non-float tensors, `native_layer_norm` whose mean/rstd are used and sdpa
with dropout use the fallback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import TensorType, f32, i1
from xdsl.ir import Attribute, SSAValue

from dialects import aten
from dialects import npuir as N
from dialects.torch_types import DTYPE_NAMES, FLOAT_EPS
from lowering.function_lowering import (
    REDUCE,
    Fallback,
    FunctionLowering,
    Rule,
    as_float_type,
    f64_attr,
    fits,
    i64_attr,
    ints_attr,
    is_float,
    normalize_dim,
    out_type,
    register_family,
    rule,
    same_elements,
    tensor_type,
    type_of,
)

# --- reductions ---------------------------------------------------------------------------------


def _reduce(
    L: FunctionLowering, kind: N.ReduceKind, x: SSAValue, dims: Sequence[int] | None, keepdim: bool, out: TensorType
) -> SSAValue:
    x = L.convert(x, out.element_type)
    rank = len(type_of(x).get_shape())
    axes = tuple(range(rank)) if not dims else tuple(sorted({normalize_dim(d, rank) for d in dims}))
    if not axes:  # a 0-dim tensor: nothing to reduce, but torch's sum starts from +0.0 (-0.0 + 0.0 = +0.0)
        if kind in (N.ReduceKind.SUM, N.ReduceKind.MEAN) and is_float(out.element_type):
            return L.binary(N.BinaryKind.ADD, x, L.const(0.0, out.element_type), out)
        return x
    props: dict[str, Attribute] = {"kind": REDUCE[kind], "axes": ints_attr(axes)}
    if keepdim:
        props["keepdims"] = N.TRUE
    return L.emit(N.ReduceOp, [x], out, props)


def _reduce_rule(kind: N.ReduceKind, has_dims: bool) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        dims = op.arg("dim") if has_dims else None
        keep = bool(op.arg("keepdim")) if has_dims else False
        if kind is N.ReduceKind.MEAN and not is_float(out.element_type):
            raise Fallback
        if out.element_type == i1 and kind is N.ReduceKind.SUM:
            raise Fallback
        x = L.vmap[op.operands[0]]
        if kind is N.ReduceKind.MEAN and not is_float(type_of(x).element_type) and out.element_type != f32:
            # torch's mean of integers into a half type accumulates in float32 (a sum does not):
            # int64 extremes cast to float16 first would be inf - inf
            wide = _reduce(L, kind, x, dims, keep, TensorType(f32, out.get_shape()))
            L.bind(op.results[0], L.convert(wide, out.element_type))
            return
        L.bind(op.results[0], _reduce(L, kind, x, dims, keep, out))

    return lower


register_family(
    _reduce_rule,
    {
        "aten.mean.dim": (N.ReduceKind.MEAN, True),
        "aten.mean": (N.ReduceKind.MEAN, False),
        "aten.sum.dim_IntList": (N.ReduceKind.SUM, True),
        "aten.sum": (N.ReduceKind.SUM, False),
        "aten.amax": (N.ReduceKind.MAX, True),
    },
)


def _along_dim(L: FunctionLowering, op: aten.AtenOp, cls: type[N.NpuirOp]) -> None:
    """`cls` along the op's `dim`, on its input converted to the result type (cumsum, softmax)."""
    out = out_type(op)
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    axis = normalize_dim(op.arg("dim"), len(out.get_shape()))
    L.bind(op.results[0], L.emit(cls, [x], out, {"axis": i64_attr(axis)}))


@rule("aten.cumsum")
def _cumsum(L: FunctionLowering, op: aten.AtenOp) -> None:
    if out_type(op).element_type == i1:
        raise Fallback
    _along_dim(L, op, N.CumsumOp)


@rule("aten.diff")
def _diff(L: FunctionLowering, op: aten.AtenOp) -> None:
    """n == 1: y = z[1:] - z[:-1] with z = cat(prepend, x, append) along dim."""
    out = out_type(op)
    if op.arg("n") != 1 or out.element_type == i1:
        raise Fallback
    x = L.arg(op, "self")
    assert x is not None
    rank = len(type_of(x).get_shape())
    axis = normalize_dim(op.arg("dim"), rank)
    parts = [v for v in (L.arg(op, "prepend"), x, L.arg(op, "append")) if v is not None]
    parts = [L.convert(v, out.element_type) for v in parts]
    length = sum(type_of(v).get_shape()[axis] for v in parts)
    zshape = list(type_of(x).get_shape())
    zshape[axis] = length
    z = L.concat(parts, axis, tensor_type(out.element_type, tuple(zshape)))
    hi, lo = L.slice(z, axis, 1, length), L.slice(z, axis, 0, length - 1)
    L.bind(op.results[0], L.binary(N.BinaryKind.SUB, hi, lo, out))


# --- softmax ------------------------------------------------------------------------------------


@rule("aten.softmax.int", "aten._softmax")
def _softmax(L: FunctionLowering, op: aten.AtenOp) -> None:
    if not is_float(out_type(op).element_type):
        raise Fallback
    _along_dim(L, op, N.SoftmaxOp)


@rule("aten.log_softmax.int")
def _log_softmax(L: FunctionLowering, op: aten.AtenOp) -> None:
    """s = x - max(x); s - log(sum(exp(s))) (the stable form)."""
    out = out_type(op)
    if not is_float(out.element_type):
        raise Fallback
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    shape = out.get_shape()
    axis = normalize_dim(op.arg("dim"), len(shape))
    kept = tensor_type(out.element_type, tuple(1 if i == axis else d for i, d in enumerate(shape)))
    axes = ints_attr((axis,))
    m = L.emit(N.ReduceOp, [x], kept, {"kind": REDUCE[N.ReduceKind.MAX], "axes": axes, "keepdims": N.TRUE})
    s = L.binary(N.BinaryKind.SUB, x, m, out)
    e = L.unary(N.UnaryKind.EXP, s, out)
    z = L.emit(N.ReduceOp, [e], kept, {"kind": REDUCE[N.ReduceKind.SUM], "axes": axes, "keepdims": N.TRUE})
    lz = L.unary(N.UnaryKind.LOG, z, kept)
    L.bind(op.results[0], L.binary(N.BinaryKind.SUB, s, lz, out))


# --- normalization and attention ------------------------------------------------------------------


def _norm(
    L: FunctionLowering, op: aten.AtenOp, cls: type[N.NpuirOp], result: SSAValue, eps: float, *, residual: bool = False
) -> None:
    x = L.arg(op, "input")
    assert x is not None
    out = type_of(result)
    if not is_float(out.element_type):
        raise Fallback
    x = L.convert(x, out.element_type)
    if residual:  # add_layer_norm: the norm of input + residual
        x = L.binary(N.BinaryKind.ADD, x, L.convert(L.arg(op, "residual"), out.element_type), out)
    shape = out.get_shape()
    normalized = tuple(op.arg("normalized_shape"))
    axis = len(shape) - len(normalized)
    if axis < 0 or axis >= len(shape) or shape[axis:] != normalized:
        raise Fallback
    w = L.arg(op, "weight")
    b = L.arg(op, "bias") if cls is N.LayerNormOp else None
    if b is not None and w is None:
        w = L.const(1.0, out.element_type, normalized)
    affine = [L.convert(v, out.element_type) for v in (w, b) if v is not None]
    props = {"axis": i64_attr(axis), "eps": f64_attr(float(eps))}
    L.bind(result, L.emit(cls, [x, *affine], out, props))


@rule("aten.layer_norm")
def _layer_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    _norm(L, op, N.LayerNormOp, op.results[0], op.arg("eps"))


@rule("aten.add_layer_norm")
def _add_layer_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    _norm(L, op, N.LayerNormOp, op.results[0], op.arg("eps"), residual=True)


@rule("aten.native_layer_norm")
def _native_layer_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    if L.used(op.results[1]) or L.used(op.results[2]):
        raise Fallback  # mean and rstd: the host computes all three
    _norm(L, op, N.LayerNormOp, op.results[0], op.arg("eps"))


@rule("aten.rms_norm")
def _rms_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    eps = op.arg("eps")
    if eps is None:
        elt = out_type(op).element_type
        eps = FLOAT_EPS[DTYPE_NAMES[elt]] if is_float(elt) else 0.0
    _norm(L, op, N.RmsNormOp, op.results[0], eps)


@rule("aten.scaled_dot_product_attention")
def _sdpa(L: FunctionLowering, op: aten.AtenOp) -> None:
    q, k, v, mask = (L.arg(op, n) for n in ("query", "key", "value", "attn_mask"))
    assert q is not None and k is not None and v is not None
    out = out_type(op)
    if op.arg("dropout_p") > 0 or len(out.get_shape()) < 3 or not same_elements(q, k, v):
        raise Fallback
    props: dict[str, Attribute] = {}
    if op.arg("is_causal"):
        props["is_causal"] = N.TRUE
    if (scale := op.arg("scale")) is not None:
        props["scale"] = f64_attr(float(scale))
    operands = [q, k, v]
    if mask is not None:
        if type_of(mask).element_type != i1:
            mask = L.convert(mask, out.element_type)
        operands.append(mask)
    L.bind(op.results[0], L.emit(N.SdpaOp, operands, out, props))


# --- vector norms and variance ------------------------------------------------------------------------

_REDUCED_PRECISION = ("float16", "bfloat16")


def _accumulation_type(out: TensorType) -> Attribute:
    """f32 for a half-precision result (torch accumulates these in f32), else the result's type."""
    return f32 if DTYPE_NAMES[out.element_type] in _REDUCED_PRECISION else out.element_type


def _reduced_type(x: SSAValue, axes: tuple[int, ...], keepdim: bool, elt: Attribute) -> TensorType:
    shape = type_of(x).get_shape()
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape)) if keepdim else tuple(
        d for i, d in enumerate(shape) if i not in axes
    )
    return tensor_type(elt, kept)


def _axes(x: SSAValue, dims: Sequence[int] | None) -> tuple[int, ...]:
    rank = len(type_of(x).get_shape())
    return tuple(range(rank)) if not dims else tuple(sorted({normalize_dim(d, rank) for d in dims}))


@rule("aten.linalg_vector_norm")
def _vector_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    """ord 2: sqrt(sum(x * x)); 1: sum(|x|); inf / -inf: max / min of |x|; 0: the count of nonzeros;
    any other p: sum(|x| ** p) ** (1 / p); a norm of one element: |x| (as torch's kernel, for any ord
    but 0)."""
    out = out_type(op)
    x = L.arg(op, "self")
    assert x is not None
    if not is_float(out.element_type) or not is_float(type_of(x).element_type):
        raise Fallback
    acc = _accumulation_type(out)
    x = L.convert(x, acc)
    xt = type_of(x)
    axes = _axes(x, op.arg("dim"))
    keep = bool(op.arg("keepdim"))
    reduced = _reduced_type(x, axes, keep, acc)
    p = float(op.arg("ord"))

    def reduce(kind: N.ReduceKind, v: SSAValue) -> SSAValue:
        return _reduce(L, kind, v, axes, keep, reduced) if axes else v

    if p != 0 and math.prod(xt.get_shape()[a] for a in axes) == 1:
        # one element per norm: torch's kernel gives |x| for every ord (NaN included), no pow round trip
        norm = L.reshape(L.unary(N.UnaryKind.ABS, x, xt), reduced.get_shape())
    elif p == 2:
        norm = L.unary(N.UnaryKind.SQRT, reduce(N.ReduceKind.SUM, L.binary(N.BinaryKind.MUL, x, x, xt)), reduced)
    elif p == 0:
        nonzero = L.compare(N.CompareKind.NE, x, L.const(0, acc), tensor_type(i1, xt.get_shape()))
        norm = reduce(N.ReduceKind.SUM, L.convert(nonzero, acc))
    else:
        magnitude = L.unary(N.UnaryKind.ABS, x, xt)
        if math.isinf(p):
            norm = reduce(N.ReduceKind.MAX if p > 0 else N.ReduceKind.MIN, magnitude)
        elif p == 1:
            norm = reduce(N.ReduceKind.SUM, magnitude)
        else:
            # torch's kernel holds ord and 1 / ord in the accumulation type: an f32 subnormal ord has the
            # reciprocal +inf (packing the Python 1e40 as an f32 constant failed), 1e-50 is 0 there, 1e39 inf
            p_acc = as_float_type(p, acc)
            inverse = as_float_type(1.0 / p_acc if p_acc else math.copysign(math.inf, p_acc), acc)
            powered = L.binary(N.BinaryKind.POW, magnitude, L.const(p_acc, acc), xt)
            norm = L.binary(N.BinaryKind.POW, reduce(N.ReduceKind.SUM, powered), L.const(inverse, acc), reduced)
    L.bind(op.results[0], L.convert(norm, out.element_type))


def _variance(L: FunctionLowering, x: SSAValue, dims: Sequence[int] | None, correction: float, keepdim: bool,
              out: TensorType) -> tuple[SSAValue, Callable[[], SSAValue]]:
    """(var, mean): sum((x - mean)^2) / max(0, n - correction) over `dims`, in the accumulation type;
    the mean is made (reshaped and converted) only when asked for."""
    acc = _accumulation_type(out)
    x = L.convert(x, acc)
    axes = _axes(x, dims)
    shape = type_of(x).get_shape()
    n = math.prod(shape[a] for a in axes)
    kept = _reduced_type(x, axes, True, acc)
    mean = _reduce(L, N.ReduceKind.MEAN, x, axes, True, kept) if axes else x
    centred = L.binary(N.BinaryKind.SUB, x, mean, type_of(x))
    squares = L.binary(N.BinaryKind.MUL, centred, centred, type_of(x))
    reduced = _reduced_type(x, axes, keepdim, acc)
    total = _reduce(L, N.ReduceKind.SUM, squares, axes, keepdim, reduced) if axes else squares
    divisor = max(0.0, n - correction)
    if not fits(divisor, acc):
        raise Fallback  # torch divides by it in double (correction=-1e40: 2e-40, not 2 / inf); packing it failed
    var = L.binary(N.BinaryKind.DIV, total, L.const(divisor, acc), reduced)
    return L.convert(var, out.element_type), lambda: L.convert(L.reshape(mean, reduced.get_shape()), out.element_type)


def _correction(op: aten.AtenOp) -> float:
    if "unbiased" in {a.name for a in op.SIGNATURE.args}:
        return 1.0 if op.arg("unbiased") else 0.0
    c = op.arg("correction")
    return 1.0 if c is None else float(c)


@rule("aten.var.dim", "aten.var.correction", "aten.var_mean.correction")
def _var(L: FunctionLowering, op: aten.AtenOp) -> None:
    """var_mean's mean is the mean: torch's Welford updates make it NaN when an infinity precedes
    another number (tests/compiler/test_npu_placement.py pins the difference)."""
    out = out_type(op)
    x = L.arg(op, "self")
    assert x is not None
    if not is_float(out.element_type) or not is_float(type_of(x).element_type):
        raise Fallback
    var, mean = _variance(L, x, op.arg("dim"), _correction(op), bool(op.arg("keepdim")), out)
    L.bind(op.results[0], var)
    if len(op.results) > 1 and L.used(op.results[1]):
        L.bind(op.results[1], mean())


# --- selection: topk, argmax, max.dim -------------------------------------------------------------------


def _topk(L: FunctionLowering, x: SSAValue, k: int, axis: int, largest: bool, index_type: TensorType) -> SSAValue:
    if type_of(x).element_type == i1:
        raise Fallback  # torch has no boolean topk (max.dim of booleans: the host)
    props = {"k": i64_attr(k), "axis": i64_attr(axis), "largest": N.TRUE if largest else N.FALSE}
    return L.emit(N.TopkOp, [x], index_type, props)


@rule("aten.topk")
def _topk_rule(L: FunctionLowering, op: aten.AtenOp) -> None:
    """The indices from an npuir topk, the values gathered at them (torch's sorted order; an
    unsorted topk may return any order, this one too)."""
    x = L.vmap[op.operands[0]]
    shape = type_of(x).get_shape()
    if not shape:
        raise Fallback
    axis = normalize_dim(op.arg("dim"), len(shape))
    values, indices = op.results
    picked = _topk(L, x, op.arg("k"), axis, bool(op.arg("largest")), indices.type)
    if L.used(indices):
        L.bind(indices, picked)
    if L.used(values):
        L.bind(values, L.emit(N.GatherElementsOp, [x, picked], values.type, {"axis": i64_attr(axis)}))


def _first_extreme(L: FunctionLowering, x: SSAValue, axis: int, largest: bool, index_type: TensorType) -> SSAValue:
    """The index of the first maximum (minimum) along `axis`, keeping the axis: a topk of one. A NaN
    is the extreme either way (torch's max and min propagate it): the smallest float is the largest
    of its negation (NaN stays NaN there); integers have no NaN and no safe negation."""
    if largest or not is_float(type_of(x).element_type):
        return _topk(L, x, 1, axis, largest, index_type)
    return _topk(L, L.unary(N.UnaryKind.NEG, x, type_of(x)), 1, axis, True, index_type)


def _extreme_dim(largest: bool) -> Rule:
    """max.dim / min.dim: the values a reduction, the indices the first extreme's."""

    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        x = L.vmap[op.operands[0]]
        shape = type_of(x).get_shape()
        if not shape:
            raise Fallback
        axis = normalize_dim(op.arg("dim"), len(shape))
        keep = bool(op.arg("keepdim"))
        values, indices = op.results
        if L.used(values):
            kind = N.ReduceKind.MAX if largest else N.ReduceKind.MIN
            L.bind(values, _reduce(L, kind, x, (axis,), keep, values.type))
        if L.used(indices):
            kept = tensor_type(indices.type.element_type, tuple(1 if i == axis else d for i, d in enumerate(shape)))
            L.bind(indices, L.reshape(_first_extreme(L, x, axis, largest, kept), indices.type.get_shape()))

    return lower


def _arg_extreme(largest: bool) -> Rule:
    """argmax / argmin: the first extreme's index (dim None: over the flattened tensor)."""

    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        x = L.vmap[op.operands[0]]
        dim = op.arg("dim")
        if dim is None or not type_of(x).get_shape():
            x = L.reshape(x, (math.prod(type_of(x).get_shape()),))
            dim = 0
        shape = type_of(x).get_shape()
        axis = normalize_dim(dim, len(shape))
        kept = tensor_type(out.element_type, tuple(1 if i == axis else d for i, d in enumerate(shape)))
        L.bind(op.results[0], L.reshape(_first_extreme(L, x, axis, largest, kept), out.get_shape()))

    return lower


register_family(_extreme_dim, {"aten.max.dim": (True,), "aten.min.dim": (False,)})
register_family(_arg_extreme, {"aten.argmax": (True,), "aten.argmin": (False,)})
