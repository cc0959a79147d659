"""Rules for the elementwise and movement ops the vision families add: hardtanh and roll.

`hardtanh(x, lo, hi)` (MobileNetV2's ReLU6 is `hardtanh(x, 0, 6)`) is `min(max(x, lo), hi)`, two
binary kinds, as `clamp` lowers; fuse-ops usually has taken a ReLU6 of a convolution into the
convolution already (`activation = relu6`).

`roll(x, shifts, dims)` (Swin's shifted windows) is, per rolled dim d of size n with the shift
s taken modulo n, `concat([x[n-s:], x[:n-s]], d)`: two slices and a concat, movement kinds the
NPU runs. Without `dims` torch rolls the flattened tensor: reshape to 1-D, roll, reshape back.
Integer and boolean tensors roll the same way; a shift of 0 (mod n) emits nothing.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from dialects import aten
from dialects import npuir as N
from lowering.aten_rules.elementwise import clamp_bounds_fuse
from lowering.function_lowering import Fallback, FunctionLowering, is_float, out_type, rule, type_of


@rule("aten.hardtanh")
def _hardtanh(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    if not is_float(out.element_type):
        raise Fallback
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    lo, hi = float(op.arg("min_val")), float(op.arg("max_val"))
    if not clamp_bounds_fuse(lo, hi):
        raise Fallback  # a NaN bound, or lo > hi: OpenVINO's fused Clamp refuses them
    x = L.binary(N.BinaryKind.MAX, x, L.scalar(lo, out.element_type), out)
    L.bind(op.results[0], L.binary(N.BinaryKind.MIN, x, L.scalar(hi, out.element_type), out))


def _roll_dim(L: FunctionLowering, x: SSAValue, shift: int, dim: int) -> SSAValue:
    shape = type_of(x).get_shape()
    n = shape[dim]
    s = shift % n if n else 0
    if s == 0:
        return x
    head = L.slice(x, dim, n - s, n)
    tail = L.slice(x, dim, 0, n - s)
    return L.concat([head, tail], dim, type_of(x))


@rule("aten.roll")
def _roll(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    shape = tuple(type_of(x).get_shape())
    shifts = [int(s) for s in op.arg("shifts")]
    dims = [int(d) for d in (op.arg("dims") or [])]
    if not dims:
        if len(shifts) != 1:
            raise Fallback
        size = 1
        for d in shape:
            size *= d
        flat = _roll_dim(L, L.reshape(x, (size,)), shifts[0], 0)
        L.bind(op.results[0], L.reshape(flat, shape))
        return
    if len(shifts) != len(dims):
        raise Fallback
    for shift, dim in zip(shifts, dims, strict=True):
        x = _roll_dim(L, x, shift, dim % len(shape))
    out = out_type(op)
    if type_of(x) != out:
        x = L.convert(x, out.element_type)
    L.bind(op.results[0], x)

