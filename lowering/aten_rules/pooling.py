"""Rules for pooling, inference batch norm and upsampling.

`max_pool{1,2}d` (and `max_pool2d_with_indices` whose indices are unused) and `avg_pool{1,2}d`
map to `npuir.pool` (torch's one-entry lists are repeated per spatial dim, an empty stride means
the kernel). `adaptive_avg_pool{1,2}d` (and `_adaptive_avg_pool2d`) is an average pool when every
input size is a multiple of its output size (output 1 included: global average); otherwise its
windows overlap unevenly and the op runs on the host (fallback). `avg_pool2d` with
a `divisor_override` and max pooling of integers use the fallback too.

`batch_norm` in inference mode (training false) lowers to elementwise kinds, no kind of its own:
(x - running_mean) * rsqrt(running_var + eps) * weight + bias, with the [C] vectors reshaped to
broadcast along axis 1. This is torch's own eval formula, and the NPU graph of those kinds is
what a `batch_norm` kind would build anyway. Training mode (batch statistics) uses the fallback.

`upsample_{nearest1d,nearest2d,linear1d,bilinear2d}.vec` map to `npuir.resize` to the result's
sizes; scale factors are accepted when they are integers that give those sizes (torch then maps
positions by 1/scale = input/output exactly); fractional scales use the fallback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from dialects import aten
from dialects import npuir as N
from lowering.function_lowering import (
    Fallback,
    FunctionLowering,
    ints_attr,
    is_float,
    out_type,
    rule,
    tensor_type,
    type_of,
)


def _per_dim(values: Any, n: int, default: Sequence[int] | None = None) -> tuple[int, ...]:
    """A torch pooling list for `n` spatial dims: one entry repeats, none means `default`."""
    values = [] if values is None else [int(v) for v in (values if isinstance(values, list | tuple) else [values])]
    if not values:
        if default is None:
            raise Fallback
        return tuple(default)
    if len(values) == 1:
        values = values * n
    if len(values) != n:
        raise Fallback
    return tuple(values)


def _pool(
    L: FunctionLowering, op: aten.AtenOp, kind: str, n: int, kernel: Sequence[int], stride: Sequence[int],
    padding: Sequence[int], **flags: Any,
) -> None:
    out = out_type(op)
    x = L.arg(op, "self")
    assert x is not None
    if not is_float(out.element_type) or type_of(x).element_type != out.element_type:
        raise Fallback
    props: dict[str, Any] = {
        "kind": StringAttr(kind),
        "kernel": ints_attr(tuple(kernel)),
        "strides": ints_attr(tuple(stride)),
        "pads_begin": ints_attr(tuple(padding)),
        "pads_end": ints_attr(tuple(padding)),
    }
    for key, value in flags.items():
        if isinstance(value, bool):
            props[key] = N.TRUE if value else N.FALSE
        elif value is not None:
            props[key] = ints_attr(tuple(value))
    L.bind(op.results[0], L.emit(N.PoolOp, [x], out, props))


def _max_pool(n: int):
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        kernel = _per_dim(op.arg("kernel_size"), n)
        stride = _per_dim(op.arg("stride"), n, kernel)
        padding = _per_dim(op.arg("padding"), n, (0,) * n)
        dilation = _per_dim(op.arg("dilation"), n, (1,) * n)
        ceil = bool(op.arg("ceil_mode"))
        dil = None if all(d == 1 for d in dilation) else dilation
        _pool(L, op, "max", n, kernel, stride, padding, dilations=dil, ceil_mode=ceil)

    return lower


def _avg_pool(n: int):
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        if n == 2 and op.arg("divisor_override") is not None:
            raise Fallback
        kernel = _per_dim(op.arg("kernel_size"), n)
        stride = _per_dim(op.arg("stride"), n, kernel)
        padding = _per_dim(op.arg("padding"), n, (0,) * n)
        flags = {"ceil_mode": bool(op.arg("ceil_mode")), "count_include_pad": bool(op.arg("count_include_pad"))}
        _pool(L, op, "avg", n, kernel, stride, padding, **flags)

    return lower


rule("aten.max_pool1d")(_max_pool(1))
rule("aten.max_pool2d")(_max_pool(2))


@rule("aten.max_pool2d_with_indices")
def _max_pool_with_indices(L: FunctionLowering, op: aten.AtenOp) -> None:
    if L.used(op.results[1]):
        raise Fallback  # the indices: the host computes both
    _max_pool(2)(L, op)
rule("aten.avg_pool1d")(_avg_pool(1))
rule("aten.avg_pool2d")(_avg_pool(2))


def _adaptive_avg_pool(n: int):
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        x = L.arg(op, "self")
        assert x is not None
        sizes = type_of(x).get_shape()[-n:]
        outs = _per_dim(op.arg("output_size"), n)
        if any(o <= 0 or s % o for s, o in zip(sizes, outs, strict=True)):
            raise Fallback(f"{op.name}: input {list(sizes)} is not a multiple of output {list(outs)}")
        kernel = tuple(s // o for s, o in zip(sizes, outs, strict=True))
        _pool(L, op, "avg", n, kernel, kernel, (0,) * n)

    return lower


rule("aten.adaptive_avg_pool1d")(_adaptive_avg_pool(1))
rule("aten.adaptive_avg_pool2d", "aten._adaptive_avg_pool2d")(_adaptive_avg_pool(2))


@rule("aten.batch_norm")
def _batch_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    if op.arg("training"):
        raise Fallback
    inference_batch_norm(L, op)


def inference_batch_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    mean, var = L.arg(op, "running_mean"), L.arg(op, "running_var")
    if mean is None or var is None or not is_float(out.element_type):
        raise Fallback
    shape = out.get_shape()
    if len(shape) < 2:
        raise Fallback
    elt = out.element_type
    vec = tensor_type(elt, (shape[1], *[1] * (len(shape) - 2)))

    def channel(v: SSAValue) -> SSAValue:
        return L.reshape(L.convert(v, elt), vec.get_shape())

    # torch's CPU kernel's form: x * alpha + beta with per-channel alpha = weight / sqrt(var + eps) and
    # beta = bias - mean * alpha. (x - mean) * alpha differs where it matters: a zero variance gives
    # torch nan (0 * inf in beta) where it gives inf, a zero weight another sign of zero.
    x = L.convert(L.arg(op, "input"), elt)
    eps = L.const(float(op.arg("eps")), elt)
    alpha = L.unary(N.UnaryKind.RSQRT, L.binary(N.BinaryKind.ADD, channel(var), eps, vec), vec)
    weight, bias = L.arg(op, "weight"), L.arg(op, "bias")
    if weight is not None:
        alpha = L.binary(N.BinaryKind.MUL, alpha, channel(weight), vec)
    shift = L.binary(N.BinaryKind.MUL, channel(mean), alpha, vec)
    beta = L.binary(N.BinaryKind.SUB, channel(bias) if bias is not None else L.const(0.0, elt), shift, vec)
    y = L.binary(N.BinaryKind.ADD, L.binary(N.BinaryKind.MUL, x, alpha, out), beta, out)
    L.bind(op.results[0], y)


def _upsample(mode: str):
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = out_type(op)
        x = L.arg(op, "input")
        assert x is not None
        if not is_float(out.element_type) or type_of(x).element_type != out.element_type:
            raise Fallback
        scales = op.arg("scale_factors")
        sizes, outs = type_of(x).get_shape()[2:], out.get_shape()[2:]
        if scales is not None and any(
            float(f) != int(f) or s * int(f) != o for f, s, o in zip(scales, sizes, outs, strict=True)
        ):
            raise Fallback(f"{op.name}: fractional scale factors {list(scales)}")
        props: dict[str, Any] = {"mode": StringAttr(mode)}
        if mode != "nearest" and op.arg("align_corners"):
            props["align_corners"] = N.TRUE
        L.bind(op.results[0], L.emit(N.ResizeOp, [x], out, props))

    return lower


rule("aten.upsample_nearest1d.vec", "aten.upsample_nearest2d.vec")(_upsample("nearest"))
rule("aten.upsample_linear1d.vec")(_upsample("linear"))
rule("aten.upsample_bilinear2d.vec")(_upsample("bilinear"))
