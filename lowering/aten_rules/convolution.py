"""Rules for convolutions and constant padding: conv1d/conv2d (int or "same"/"valid" padding),
_convolution_mode (the string-padding overload decompositions produce), convolution, Forge's
fused_conv (a convolution with its activation, from fuse-ops), conv_transpose1d/2d, pad (mode
"constant") and constant_pad_nd.

Every convolution becomes one `npuir.conv` (transposed ones carry `transposed` and
`output_padding`); torch's symmetric `padding` is written as equal `pads_begin` / `pads_end`,
"same" as the split `_convolution_mode` makes (odd totals one longer at the end). Unbatched
inputs, 3-D convolutions, non-float or mixed element types and non-constant pad modes use the
fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.utils.exceptions import VerifyException

from dialects import aten
from dialects import npuir as N
from lowering.function_lowering import Fallback, FunctionLowering, is_float, out_type, rule, same_elements, type_of


def _per_dim(value: Any, n: int) -> list[int]:
    """A torch int-or-list argument as one int per spatial dim."""
    values = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    if len(values) == 1:
        values *= n
    if len(values) != n:
        raise Fallback
    return values


def _emit_checked(
    L: FunctionLowering, op: aten.AtenOp, cls: type[N.NpuirOp], operands: Sequence[Any], **params: Any
) -> None:
    """Emit `cls` for `op` unless its verifier rejects the instance (then the fallback runs it)."""
    props = N.make_params(cls, **params)
    out = out_type(op)
    try:
        cls.check([type_of(v) for v in operands], out, N.Params(cls, props))
    except VerifyException:
        raise Fallback from None
    L.bind(op.results[0], L.emit(cls, list(operands), out, props))


def _conv(
    L: FunctionLowering, op: aten.AtenOp, transposed: bool, output_padding: Any = None, activation: str = "none"
) -> None:
    x, w, bias = L.arg(op, "input"), L.arg(op, "weight"), L.arg(op, "bias")
    assert x is not None and w is not None
    rank = len(type_of(x).get_shape())
    if rank not in (3, 4) or not same_elements(x, w, bias) or not is_float(type_of(x).element_type):
        raise Fallback
    n = rank - 2
    dilation = _per_dim(op.arg("dilation"), n)
    begin, end = _pads(op.arg("padding"), n, dilation, type_of(w).get_shape()[2:])
    params: dict[str, Any] = {
        "stride": _per_dim(op.arg("stride"), n),
        "pads_begin": begin,
        "pads_end": end,
        "dilation": dilation,
        "groups": int(op.arg("groups")),
    }
    if transposed:
        params["transposed"] = True
        out_pad = _per_dim(output_padding, n)
        if any(out_pad):
            params["output_padding"] = out_pad
    if activation != "none":
        params["activation"] = activation
    operands = [x, w] if bias is None else [x, w, bias]
    _emit_checked(L, op, N.ConvOp, operands, **params)


def _pads(padding: Any, n: int, dilation: list[int], kernel: Sequence[int]) -> tuple[list[int], list[int]]:
    """pads_begin and pads_end from torch's padding: ints, "valid", or "same" (the odd element
    of a dim's total padding goes at the end, as torch's `_convolution_mode` puts it)."""
    if padding == "valid":
        return [0] * n, [0] * n
    if padding == "same":
        total = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        return [t // 2 for t in total], [t - t // 2 for t in total]
    if isinstance(padding, str):
        raise Fallback
    pads = _per_dim(padding, n)
    return pads, pads


@rule("aten.conv1d", "aten.conv2d", "aten.conv1d.padding", "aten.conv2d.padding", "aten._convolution_mode")
def _aten_conv(L: FunctionLowering, op: aten.AtenOp) -> None:
    _conv(L, op, transposed=False)


@rule("aten.fused_conv")
def _fused_conv(L: FunctionLowering, op: aten.AtenOp) -> None:
    _conv(L, op, transposed=False, activation=op.arg("activation"))


@rule("aten.conv_transpose1d", "aten.conv_transpose2d.input")
def _aten_conv_transpose(L: FunctionLowering, op: aten.AtenOp) -> None:
    _conv(L, op, transposed=True, output_padding=op.arg("output_padding"))


@rule("aten.convolution")
def _aten_convolution(L: FunctionLowering, op: aten.AtenOp) -> None:
    transposed = bool(op.arg("transposed"))
    _conv(L, op, transposed, op.arg("output_padding") if transposed else None)


def _pad(L: FunctionLowering, op: aten.AtenOp, value: Any) -> None:
    x = L.vmap[op.operands[0]]
    shape = type_of(x).get_shape()
    pads = [int(v) for v in op.arg("pad")]
    if len(pads) % 2 or len(pads) // 2 > len(shape) or not is_float(type_of(x).element_type):
        raise Fallback
    begin, end = [0] * len(shape), [0] * len(shape)
    for i in range(len(pads) // 2):  # torch lists the last dim first
        begin[len(shape) - 1 - i], end[len(shape) - 1 - i] = pads[2 * i], pads[2 * i + 1]
    _emit_checked(L, op, N.PadOp, [x], pads_begin=begin, pads_end=end, value=float(value or 0.0))


@rule("aten.pad")
def _aten_pad(L: FunctionLowering, op: aten.AtenOp) -> None:
    if op.arg("mode") != "constant":
        raise Fallback
    _pad(L, op, op.arg("value"))


@rule("aten.constant_pad_nd")
def _aten_constant_pad_nd(L: FunctionLowering, op: aten.AtenOp) -> None:
    _pad(L, op, op.arg("value"))
