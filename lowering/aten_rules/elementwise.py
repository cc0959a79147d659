"""Rules for elementwise ops: arithmetic, unary functions, logic, comparisons, selection, triu/tril.

Scalar operands become rank-0 constants, torch's type promotion becomes explicit `convert`s,
`alpha` factors become multiplies, and boolean arithmetic becomes logic (`add` is `or`, `mul` is
`and`). Composites cover what has no single family: `rsub`, `clamp`, `bitwise_not` on integers,
`logical_*`, `masked_fill`, triu/tril (a mask from two iota constants). `div` with a rounding mode
and boolean unary math use the fallback.
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import TensorType, f32, i1
from xdsl.ir import SSAValue

from dialects import aten
from dialects import npuir as N
from dialects.shapes import broadcast_shapes
from lowering.function_lowering import (
    BINARY,
    UNARY,
    Fallback,
    FunctionLowering,
    Rule,
    as_float_type,
    fits,
    is_float,
    out_type,
    promote,
    register_family,
    rule,
    tensor_type,
    type_of,
)

# --- arithmetic ---------------------------------------------------------------------------------


def _tensor_binary(kind: N.BinaryKind) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        a, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
        L.bind(op.results[0], L.binary(kind, a, b, out))

    return lower


def _scalar_binary(kind: N.BinaryKind, value_arg: str) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        a = L.vmap[op.operands[0]]
        L.bind(op.results[0], L.binary(kind, a, L.number(op.arg(value_arg), out.element_type), out))

    return lower


register_family(
    _tensor_binary,
    {
        "aten.mul.Tensor": (N.BinaryKind.MUL,),
        "aten.div.Tensor": (N.BinaryKind.DIV,),
        "aten.pow.Tensor_Tensor": (N.BinaryKind.POW,),
        "aten.maximum": (N.BinaryKind.MAX,),
        "aten.minimum": (N.BinaryKind.MIN,),
        "aten.bitwise_and.Tensor": (N.BinaryKind.AND,),
        "aten.bitwise_or.Tensor": (N.BinaryKind.OR,),
        "aten.__and__.Tensor": (N.BinaryKind.AND,),
        "aten.__or__.Tensor": (N.BinaryKind.OR,),
    },
)
register_family(
    _scalar_binary,
    {
        "aten.mul.Scalar": (N.BinaryKind.MUL, "other"),
        "aten.div.Scalar": (N.BinaryKind.DIV, "other"),
        "aten.pow.Tensor_Scalar": (N.BinaryKind.POW, "exponent"),
    },
)


@rule("aten.div.Tensor_mode")
def _div_mode(L: FunctionLowering, op: aten.AtenOp) -> None:
    if op.arg("rounding_mode") is not None:
        raise Fallback
    _tensor_binary(N.BinaryKind.DIV)(L, op)


def _add_like(kind: N.BinaryKind, scalar: bool) -> Rule:
    """self ± alpha * other."""

    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        a = L.vmap[op.operands[0]]
        alpha = op.arg("alpha")
        if scalar:  # torch: the number cast unchecked, alpha checked, `alpha * other` in the result type
            elt = out.element_type
            if not fits(alpha, elt):
                raise Fallback
            other = op.arg("other")
            if alpha != 1 and is_float(elt):  # each cast to the result type first, as the kernel's operands
                other = as_float_type(float(other), elt) * as_float_type(float(alpha), elt)
            elif alpha != 1:
                other *= alpha
            b = L.number(other, elt)
        else:
            b = L.vmap[op.operands[1]]
            if alpha != 1:
                scaled = tensor_type(out.element_type, type_of(b).get_shape())
                b = L.binary(N.BinaryKind.MUL, b, L.scalar(alpha, out.element_type), scaled)
        L.bind(op.results[0], L.binary(kind, a, b, out))

    return lower


register_family(
    _add_like,
    {
        "aten.add.Tensor": (N.BinaryKind.ADD, False),
        "aten.add.Scalar": (N.BinaryKind.ADD, True),
        "aten.sub.Tensor": (N.BinaryKind.SUB, False),
        "aten.sub.Scalar": (N.BinaryKind.SUB, True),
    },
)


@rule("aten.rsub.Scalar")
def _rsub(L: FunctionLowering, op: aten.AtenOp) -> None:
    """other - alpha * self."""
    out = out_type(op)
    x = L.vmap[op.operands[0]]
    alpha = op.arg("alpha")
    if alpha != 1:
        x = L.binary(N.BinaryKind.MUL, x, L.scalar(alpha, out.element_type), out)
    L.bind(op.results[0], L.binary(N.BinaryKind.SUB, L.number(op.arg("other"), out.element_type), x, out))


def clamp_bounds_fuse(lo: float | None, hi: float | None) -> bool:
    """Whether a max with constant `lo` then a min with constant `hi` may reach the runtime: OpenVINO
    fuses the pair into a Clamp, which refuses a NaN bound or lo > hi at compile time (torch's result
    is then NaN, or `hi`, everywhere); those go to the CPU fallback."""
    bounds = [b for b in (lo, hi) if b is not None]
    if any(isinstance(b, float) and math.isnan(b) for b in bounds):
        return False
    return lo is None or hi is None or lo <= hi


@rule("aten.clamp")
def _clamp(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    lo, hi = op.arg("min"), op.arg("max")
    if not clamp_bounds_fuse(lo, hi):
        raise Fallback
    if lo is not None:
        x = L.binary(N.BinaryKind.MAX, x, L.scalar(lo, out.element_type), out)
    if hi is not None:
        x = L.binary(N.BinaryKind.MIN, x, L.scalar(hi, out.element_type), out)
    L.bind(op.results[0], x)


@rule("aten.clamp_min", "aten.clamp_max")
def _clamp_one_side(L: FunctionLowering, op: aten.AtenOp) -> None:
    """clamp with only a lower (clamp_min) or an upper (clamp_max) bound: a max / a min."""
    out = out_type(op)
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    lower_bound = op.name == "aten.clamp_min"
    bound = L.scalar(op.arg("min" if lower_bound else "max"), out.element_type)
    L.bind(op.results[0], L.binary(N.BinaryKind.MAX if lower_bound else N.BinaryKind.MIN, x, bound, out))


@rule("aten.clamp.Tensor")
def _clamp_tensor(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    x = L.convert(L.arg(op, "self"), out.element_type)
    for bound, kind in ((L.arg(op, "min"), N.BinaryKind.MAX), (L.arg(op, "max"), N.BinaryKind.MIN)):
        if bound is not None:
            shape = broadcast_shapes(type_of(x).get_shape(), type_of(bound).get_shape())
            x = L.binary(kind, x, bound, tensor_type(out.element_type, shape))
    L.bind(op.results[0], x)


# --- unary functions and logic --------------------------------------------------------------------


def _unary(kind: N.UnaryKind) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        if out.element_type == i1:
            raise Fallback
        L.bind(op.results[0], L.unary(kind, L.vmap[op.operands[0]], out))

    return lower


register_family(
    _unary,
    {
        "aten.neg": (N.UnaryKind.NEG,),
        "aten.abs": (N.UnaryKind.ABS,),
        "aten.reciprocal": (N.UnaryKind.RECIPROCAL,),
        "aten.sqrt": (N.UnaryKind.SQRT,),
        "aten.rsqrt": (N.UnaryKind.RSQRT,),
        "aten.exp": (N.UnaryKind.EXP,),
        "aten.log": (N.UnaryKind.LOG,),
        "aten.sin": (N.UnaryKind.SIN,),
        "aten.cos": (N.UnaryKind.COS,),
        "aten.erf": (N.UnaryKind.ERF,),
        "aten.log1p": (N.UnaryKind.LOG1P,),
        "aten.tanh": (N.UnaryKind.TANH,),
        "aten.sigmoid": (N.UnaryKind.SIGMOID,),
        "aten.relu": (N.UnaryKind.RELU,),
        "aten.silu": (N.UnaryKind.SILU,),
    },
)


@rule("aten.gelu")
def _gelu(L: FunctionLowering, op: aten.AtenOp) -> None:
    kind = N.UnaryKind.GELU_TANH if op.arg("approximate") == "tanh" else N.UnaryKind.GELU
    _unary(kind)(L, op)


@rule("aten.bitwise_not")
def _bitwise_not(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    x = L.vmap[op.operands[0]]
    if out.element_type == i1:
        L.bind(op.results[0], L.emit(N.UnaryOp, [x], out, {"kind": UNARY[N.UnaryKind.NOT]}))
    else:  # ~x == -x - 1 in two's complement
        neg = L.unary(N.UnaryKind.NEG, x, out)
        L.bind(op.results[0], L.binary(N.BinaryKind.SUB, neg, L.const(1, out.element_type), out))


def _to_bool(L: FunctionLowering, x: SSAValue) -> SSAValue:
    t = type_of(x)
    if t.element_type == i1:
        return x
    return L.compare(N.CompareKind.NE, x, L.const(0, t.element_type), tensor_type(i1, t.get_shape()))


@rule("aten.logical_not")
def _logical_not(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    if out.element_type != i1:
        raise Fallback
    x = L.vmap[op.operands[0]]
    t = type_of(x)
    if t.element_type == i1:
        L.bind(op.results[0], L.emit(N.UnaryOp, [x], out, {"kind": UNARY[N.UnaryKind.NOT]}))
    else:
        L.bind(op.results[0], L.compare(N.CompareKind.EQ, x, L.const(0, t.element_type), out))


@rule("aten.logical_and")
def _logical_and(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    if out.element_type != i1:
        raise Fallback
    a, b = _to_bool(L, L.vmap[op.operands[0]]), _to_bool(L, L.vmap[op.operands[1]])
    L.bind(op.results[0], L.emit(N.BinaryOp, [a, b], out, {"kind": BINARY[N.BinaryKind.AND]}))


# --- comparisons and selection -------------------------------------------------------------------


def _compare_rule(kind: N.CompareKind, scalar: bool) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        a = L.vmap[op.operands[0]]
        ta = type_of(a)
        if scalar:
            value = op.arg("other")
            elt = promote(ta, value)
            a = L.convert(a, elt)
            b = L.number(value, elt)
        else:
            b = L.vmap[op.operands[1]]
            elt = promote(ta, type_of(b))
            a, b = L.convert(a, elt), L.convert(b, elt)
        L.bind(op.results[0], L.compare(kind, a, b, out_type(op)))

    return lower


_COMPARISONS = {
    "eq": N.CompareKind.EQ,
    "ne": N.CompareKind.NE,
    "lt": N.CompareKind.LT,
    "le": N.CompareKind.LE,
    "gt": N.CompareKind.GT,
    "ge": N.CompareKind.GE,
}
register_family(
    _compare_rule,
    {
        f"aten.{name}.{form}": (kind, form == "Scalar")
        for name, kind in _COMPARISONS.items()
        for form in ("Tensor", "Scalar")
    },
)


def _select_values(L: FunctionLowering, cond: SSAValue, a: SSAValue, b: SSAValue, out: TensorType) -> SSAValue:
    cond = _to_bool(L, cond)
    a, b = L.convert(a, out.element_type), L.convert(b, out.element_type)
    return L.emit(N.SelectOp, [cond, a, b], out)


@rule("aten.where.self")
def _where(L: FunctionLowering, op: aten.AtenOp) -> None:
    c, a, b = (L.vmap[v] for v in op.operands)
    L.bind(op.results[0], _select_values(L, c, a, b, out_type(op)))


@rule("aten.where.ScalarOther")
def _where_other(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    c, a = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    L.bind(op.results[0], _select_values(L, c, a, L.scalar(op.arg("other"), out.element_type), out))


@rule("aten.where.ScalarSelf")
def _where_self(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    c, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    L.bind(op.results[0], _select_values(L, c, L.scalar(op.arg("self"), out.element_type), b, out))


@rule("aten.masked_fill.Scalar")
def _masked_fill(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    x, m = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    L.bind(op.results[0], _select_values(L, m, L.scalar(op.arg("value"), out.element_type), x, out))


@rule("aten.masked_fill.Tensor")
def _masked_fill_t(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, m, v = (L.vmap[o] for o in op.operands)
    L.bind(op.results[0], _select_values(L, m, v, x, out_type(op)))


def _tri(upper: bool) -> Rule:
    """triu/tril: keep x where (col - row) >= diagonal (triu) or <= diagonal (tril), from two
    small iota constants (f32: exact for any realistic size, and NPU-friendly)."""

    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        shape = out.get_shape()
        if len(shape) < 2 or out.element_type == i1:
            raise Fallback
        rows, cols = shape[-2], shape[-1]
        r = L.const_values([float(i) for i in range(rows)], f32, (rows, 1))
        c = L.const_values([float(i) for i in range(cols)], f32, (1, cols))
        d = L.binary(N.BinaryKind.SUB, c, r, tensor_type(f32, (rows, cols)))
        kind = N.CompareKind.GE if upper else N.CompareKind.LE
        keep = L.compare(kind, d, L.const(op.arg("diagonal"), f32), tensor_type(i1, (rows, cols)))
        x = L.vmap[op.operands[0]]
        L.bind(op.results[0], L.emit(N.SelectOp, [keep, x, L.const(0, out.element_type)], out))

    return lower


register_family(_tri, {"aten.triu": (True,), "aten.tril": (False,)})
