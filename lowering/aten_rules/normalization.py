"""Rules for the normalizations of the convolutional and audio families: group norm and the
inference batch-norm overloads torch.export may produce instead of `aten.batch_norm`.

`group_norm(x, G, weight, bias, eps)` on x [N, C, *spatial] is the layer norm of x viewed as
[N, G, C/G · prod(spatial)] over its last dim (the mean and variance of each group), viewed back,
then `* weight + bias` with the [C] vectors reshaped to broadcast along dim 1: a reshape, the
`layer_norm` kind (no affine) and elementwise kinds, all on the NPU. `native_group_norm` (whose
mean and rstd results must be unused) lowers the same way.

`_native_batch_norm_legit_no_training` and `native_batch_norm` with `training = false` (their
saved statistics unused) lower like `aten.batch_norm` in inference mode (see
`lowering/aten_rules/pooling.py`); usually `fold` has already folded them into the convolution
before them. Anything else (training mode, used statistics, integer tensors, a group count that
does not divide the channels) uses the fallback.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from dialects import aten
from dialects import npuir as N
from lowering.aten_rules.pooling import inference_batch_norm
from lowering.function_lowering import (
    Fallback,
    FunctionLowering,
    f64_attr,
    i64_attr,
    is_float,
    out_type,
    rule,
    tensor_type,
)


def _group_norm(L: FunctionLowering, op: aten.AtenOp, groups: int, eps: float) -> None:
    out = out_type(op)
    shape = out.get_shape()
    if len(shape) < 2 or not is_float(out.element_type) or groups <= 0 or shape[1] % groups:
        raise Fallback
    elt = out.element_type
    n, c = shape[0], shape[1]
    grouped = tensor_type(elt, (n, groups, c // groups * math.prod(shape[2:])))
    x = L.reshape(L.convert(L.arg(op, "input"), elt), grouped.get_shape())
    y = L.emit(N.LayerNormOp, [x], grouped, {"axis": i64_attr(2), "eps": f64_attr(float(eps))})
    y = L.reshape(y, tuple(shape))
    vec = (c, *[1] * (len(shape) - 2))

    def channel(v: SSAValue) -> SSAValue:
        return L.reshape(L.convert(v, elt), vec)

    weight, bias = L.arg(op, "weight"), L.arg(op, "bias")
    if weight is not None:
        y = L.binary(N.BinaryKind.MUL, y, channel(weight), out)
    if bias is not None:
        y = L.binary(N.BinaryKind.ADD, y, channel(bias), out)
    L.bind(op.results[0], y)


@rule("aten.group_norm")
def _aten_group_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    _group_norm(L, op, int(op.arg("num_groups")), op.arg("eps"))


@rule("aten.native_group_norm")
def _native_group_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    if L.used(op.results[1]) or L.used(op.results[2]):
        raise Fallback  # mean and rstd: the host computes all three
    _group_norm(L, op, int(op.arg("group")), op.arg("eps"))


@rule("aten._native_batch_norm_legit_no_training")
def _batch_norm_no_training(L: FunctionLowering, op: aten.AtenOp) -> None:
    if L.used(op.results[1]) or L.used(op.results[2]):
        raise Fallback
    inference_batch_norm(L, op)


@rule("aten.native_batch_norm")
def _native_batch_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    if op.arg("training") or L.used(op.results[1]) or L.used(op.results[2]):
        raise Fallback
    inference_batch_norm(L, op)
