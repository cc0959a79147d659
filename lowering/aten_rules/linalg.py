"""Rules for matrix products: mm/bmm/matmul, addmm/baddbmm, linear (with a fused activation), gated MLP.

torch.matmul's rank-1 operands are viewed as matrices and squeezed back; addmm's alpha and beta
become explicit multiplies and an add, except GPT-2's Conv1D form (`addmm` with a bias row),
which is one `npuir.linear`. Mixed element types use the fallback.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue

from dialects import aten
from dialects import npuir as N
from lowering.function_lowering import (
    ACTIVATION,
    Fallback,
    FunctionLowering,
    is_float,
    out_type,
    rule,
    same_elements,
    tensor_type,
    type_of,
)


def _matmul(L: FunctionLowering, a: SSAValue, b: SSAValue, out_shape: tuple[int, ...], ta=False, tb=False) -> SSAValue:
    """torch.matmul semantics (rank-1 operands are viewed as matrices, then squeezed)."""
    sa, sb = type_of(a).get_shape(), type_of(b).get_shape()
    if len(sa) == 1:
        a = L.reshape(a, (1, sa[0]))
    if len(sb) == 1:
        b = L.reshape(b, (sb[0], 1))
    sa, sb = type_of(a).get_shape(), type_of(b).get_shape()
    m = sa[-1] if ta else sa[-2]
    n = sb[-2] if tb else sb[-1]
    batch = N.broadcast_shapes(sa[:-2], sb[:-2])
    elt = type_of(a).element_type
    props: dict[str, Attribute] = {}
    if ta:
        props["transpose_a"] = N.TRUE
    if tb:
        props["transpose_b"] = N.TRUE
    y = L.emit(N.MatmulOp, [a, b], tensor_type(elt, (*batch, m, n)), props)
    return L.reshape(y, out_shape)


def _scale_add(
    L: FunctionLowering, y: SSAValue, bias: SSAValue | None, alpha: Any, beta: Any, out: TensorType
) -> SSAValue:
    """alpha * y + beta * bias (torch's addmm/baddbmm; beta == 0 ignores bias)."""
    if alpha != 1:
        y = L.binary(N.BinaryKind.MUL, y, L.scalar(alpha, out.element_type), out)
    if bias is None or beta == 0:
        return y
    if beta != 1:
        bias = L.binary(N.BinaryKind.MUL, bias, L.scalar(beta, out.element_type), type_of(bias))
    return L.binary(N.BinaryKind.ADD, y, bias, out)


@rule("aten.addmm")
def _addmm(L: FunctionLowering, op: aten.AtenOp) -> None:
    bias, x, w = L.arg(op, "self"), L.arg(op, "mat1"), L.arg(op, "mat2")
    assert bias is not None and x is not None and w is not None
    out = out_type(op)
    alpha, beta = op.arg("alpha"), op.arg("beta")
    if not same_elements(bias, x, w):
        raise Fallback
    if alpha == 1 and beta == 1 and type_of(bias).get_shape() == (out.get_shape()[-1],):
        # GPT-2's Conv1D: the weight is [K, N]
        L.bind(op.results[0], L.emit(N.LinearOp, [x, w, bias], out, {"transpose_w": N.FALSE}))
        return
    y = _matmul(L, x, w, out.get_shape())
    L.bind(op.results[0], _scale_add(L, y, bias, alpha, beta, out))


@rule("aten.baddbmm")
def _baddbmm(L: FunctionLowering, op: aten.AtenOp) -> None:
    bias, a, b = L.arg(op, "self"), L.arg(op, "batch1"), L.arg(op, "batch2")
    assert bias is not None and a is not None and b is not None
    if not same_elements(bias, a, b):
        raise Fallback
    out = out_type(op)
    y = _matmul(L, a, b, out.get_shape())
    L.bind(op.results[0], _scale_add(L, y, bias, op.arg("alpha"), op.arg("beta"), out))


@rule("aten.mm", "aten.bmm", "aten.matmul")
def _mm(L: FunctionLowering, op: aten.AtenOp) -> None:
    a, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    if not same_elements(a, b) or not is_float(type_of(a).element_type):
        raise Fallback
    L.bind(op.results[0], _matmul(L, a, b, out_type(op).get_shape()))


@rule("aten.matmul_transposed")
def _mm_t(L: FunctionLowering, op: aten.AtenOp) -> None:
    a, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    if not same_elements(a, b) or len(type_of(a).get_shape()) < 2 or len(type_of(b).get_shape()) < 2:
        raise Fallback
    y = _matmul(L, a, b, out_type(op).get_shape(), op.arg("transpose_input"), op.arg("transpose_other"))
    L.bind(op.results[0], y)


def _linear(L: FunctionLowering, op: aten.AtenOp, activation: str) -> None:
    x, w, bias = L.arg(op, "input"), L.arg(op, "weight"), L.arg(op, "bias")
    assert x is not None and w is not None
    out = out_type(op)
    if len(type_of(w).get_shape()) != 2 or not same_elements(x, w, bias) or len(type_of(x).get_shape()) < 1:
        raise Fallback
    if bias is not None and type_of(bias).get_shape() != (out.get_shape()[-1],):
        raise Fallback
    props: dict[str, Attribute] = {}
    if activation != "none":
        props["activation"] = ACTIVATION[activation]
    operands = [x, w] if bias is None else [x, w, bias]
    L.bind(op.results[0], L.emit(N.LinearOp, operands, out, props))


@rule("aten.linear")
def _aten_linear(L: FunctionLowering, op: aten.AtenOp) -> None:
    _linear(L, op, "none")


@rule("aten.fused_linear")
def _fused_linear(L: FunctionLowering, op: aten.AtenOp) -> None:
    _linear(L, op, op.arg("activation"))


@rule("aten.gated_mlp")
def _gated_mlp(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, wg, wu = L.arg(op, "input"), L.arg(op, "gate_weight"), L.arg(op, "up_weight")
    assert x is not None and wg is not None and wu is not None
    if not same_elements(x, wg, wu) or len(type_of(wg).get_shape()) != 2:
        raise Fallback
    props = {"activation": ACTIVATION[op.arg("activation")]}
    L.bind(op.results[0], L.emit(N.GatedMlpOp, [x, wg, wu], out_type(op), props))
