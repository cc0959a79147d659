"""Convolution kinds: conv (1-D and 2-D, grouped, depthwise, transposed) and pad (constant padding).

`conv` takes torch's weight layouts ([O, C/groups, *k], or [C, O/groups, *k] when transposed) and
pads each spatial dim by `pads_begin` / `pads_end`, which may differ (torch's own convolutions pad
symmetrically; asymmetric pads come from a `pad` folded in). A transposed convolution's pads crop
its full output, exactly as torch's `padding` does. `pad` pads with a constant; a negative pad
crops, as torch's `constant_pad_nd` does.

A conv's `activation` is its epilogue (fuse-ops folds relu/gelu/silu/sigmoid of a convolution into
it), spelled as a linear layer's (`linear_algebra.ACTIVATIONS`). On the NPU, `conv` is the
GraphBuilder's `convolution` / `convolution_transpose` (bias added after) then the activation, and
`pad` its `pad`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from dialects import npuir as N
from dialects.shapes import static_shape
from dialects.torch_types import dtype_of, shape_of
from forge.kinds import CpuKernel, Example, KindSpec, NotOnNpu, SegmentHelpers, elements, is_i1
from forge.kinds.linear_algebra import ACTIVATIONS

if TYPE_CHECKING:
    import torch

# ======================================================================================= conv


def _torch_pads(begin: Sequence[int], end: Sequence[int]) -> list[int]:
    """F.pad's order: last dim first, (begin, end) per dim."""
    return [v for b, e in zip(reversed(begin), reversed(end), strict=True) for v in (b, e)]


class _ConvArgs:
    """A conv op's parameters as plain values."""

    def __init__(self, p: N.Params, rank: int):
        n = rank - 2
        self.n = n
        self.stride = list(p.get_ints("stride"))
        self.dilation = list(p.get_ints("dilation"))
        self.begin = list(p.get_ints("pads_begin"))
        self.end = list(p.get_ints("pads_end"))
        self.groups = p.get_int("groups")
        self.transposed = p.get_flag("transposed")
        self.out_pad = list(p.get_ints("output_padding")) or [0] * n

    @property
    def symmetric(self) -> bool:
        return self.begin == self.end

    def crop(self, full: Sequence[int]) -> tuple[slice, ...]:
        """A transposed convolution's pads as an index into its unpadded output of spatial dims `full`."""
        spatial = (slice(b, d - e) for b, e, d in zip(self.begin, self.end, full, strict=True))
        return (slice(None), slice(None), *spatial)


def _conv_fn(n: int, transposed: bool) -> Any:
    import torch.nn.functional as F

    return {(1, False): F.conv1d, (2, False): F.conv2d, (1, True): F.conv_transpose1d, (2, True): F.conv_transpose2d}[
        (n, transposed)
    ]


class Conv(KindSpec):
    """N-d convolution (1 or 2 spatial dims), grouped, depthwise or transposed, with an optional bias."""

    name = "conv"
    example = Example(
        ("1x4x7x6xf32", "6x2x3x2xf32", "6xf32"),
        "1x6x4x3xf32",
        {"stride": [2, 2], "pads_begin": [1, 0], "pads_end": [1, 1], "dilation": [1, 2], "groups": 2,
         "activation": "silu"},
    )

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        from dialects.fused_kernels import apply_activation

        return apply_activation(self._conv(p, ins), p.get_str("activation"))

    def _conv(self, p: N.Params, ins: Sequence[torch.Tensor]) -> torch.Tensor:
        import torch.nn.functional as F

        x, w, *bias = ins
        a = _ConvArgs(p, x.dim())
        b = bias[0] if bias else None
        fn = _conv_fn(a.n, a.transposed)
        if a.transposed:
            if a.symmetric:
                return fn(x, w, b, a.stride, a.begin, a.out_pad, a.groups, a.dilation)
            full = fn(x, w, b, a.stride, 0, a.out_pad, a.groups, a.dilation)
            return full[a.crop(full.shape[2:])]
        if not a.symmetric:
            x, a.begin = F.pad(x, _torch_pads(a.begin, a.end)), [0] * a.n
        return fn(x, w, b, a.stride, a.begin, a.dilation, a.groups)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return ACTIVATIONS[p.get_str("activation")].source.format(self._conv_source(p, args, in_types, out_type))

    def _conv_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        x, w, *bias = args
        a = _ConvArgs(p, len(shape_of(in_types[0])))
        b = bias[0] if bias else "None"
        fn = f"F.conv{'_transpose' if a.transposed else ''}{a.n}d"
        if a.transposed:
            pads = a.begin if a.symmetric else 0
            call = f"{fn}({x}, {w}, {b}, {a.stride}, {pads}, {a.out_pad}, {a.groups}, {a.dilation})"
            if a.symmetric:
                return call
            full = [d + bb + e for d, bb, e in zip(shape_of(out_type)[2:], a.begin, a.end, strict=True)]
            index = ", ".join(f"{bb}:{d - e}" for bb, e, d in zip(a.begin, a.end, full, strict=True))
            return f"{call}[:, :, {index}]"
        if not a.symmetric:
            x, a.begin = f"F.pad({x}, {_torch_pads(a.begin, a.end)})", [0] * a.n
        return f"{fn}({x}, {w}, {b}, {a.stride}, {a.begin}, {a.dilation}, {a.groups})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        x, w, *bias = ins
        a = _ConvArgs(p, len(shape_of(in_types[0])))
        b = bias[0] if bias else None
        if a.transposed:
            y = em.g.convolution_transpose(x, w, b, a.stride, a.begin, a.end, a.dilation, a.groups, a.out_pad)
        else:
            y = em.g.convolution(x, w, b, a.stride, a.begin, a.end, a.dilation, a.groups)
        method = ACTIVATIONS[p.get_str("activation")].builder
        return y if method is None else getattr(em.g, method)(y)

    def npu_reason(self, in_types: Sequence[Attribute], out_type: Attribute, small_ints: bool = False) -> str | None:
        if any(is_i1(t) for t in in_types):
            return "a convolution of booleans"
        return super().npu_reason(in_types, out_type)

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        """A multiply-add per weight tap per output (transposed: per input) element, plus the bias
        and the activation."""
        w = static_shape(in_types[1])
        taps = w[1] * math.prod(w[2:])
        if p.get_flag("transposed"):
            macs = elements(in_types[0]) * taps
        else:
            macs = elements(out_type) * taps
        bias = elements(out_type) if len(in_types) > 2 else 0
        return 2.0 * macs + bias + elements(out_type) * ACTIVATIONS[p.get_str("activation")].flops


# ======================================================================================== pad


class Pad(KindSpec):
    """Constant padding (a negative pad crops)."""

    name = "pad"
    moves_data = True
    example = Example(("2x3x4xf32",), "2x4x5xf32", {"pads_begin": [0, 1, 2], "pads_end": [0, 0, -1], "value": 0.5})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        pads = _torch_pads(p.get_ints("pads_begin"), p.get_ints("pads_end"))
        return torch.constant_pad_nd(ins[0], pads, p.get_float("value") or 0.0)

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        """Fill the output with the value, then copy the kept part of x into its place (views only)."""
        if dtype_of(in_types[0]) != dtype_of(out_type) or 0 in shape_of(out_type):
            return self.reference_kernel(p, out_type)
        begin, end, shape = p.get_ints("pads_begin"), p.get_ints("pads_end"), shape_of(in_types[0])
        src = tuple(slice(max(0, -b), d - max(0, -e)) for b, e, d in zip(begin, end, shape, strict=True))
        dst = tuple(slice(max(0, b), max(0, b) + s.stop - s.start) for b, s in zip(begin, src, strict=True))
        value = p.get_float("value") or 0.0

        def pad(x: torch.Tensor, out: torch.Tensor) -> None:
            out.fill_(value)
            out[dst].copy_(x[src])

        return CpuKernel(pad, True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        pads = _torch_pads(p.get_ints("pads_begin"), p.get_ints("pads_end"))
        return f"torch.constant_pad_nd({args[0]}, {pads}, {p.get_float('value') or 0.0!r})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        if 0 in shape_of(out_type):
            raise NotOnNpu("an empty result has no static NNFactory shape")
        value = p.get_float("value") or 0.0
        return em.g.pad(ins[0], list(p.get_ints("pads_begin")), list(p.get_ints("pads_end")), value)

    def npu_reason(self, in_types: Sequence[Attribute], out_type: Attribute, small_ints: bool = False) -> str | None:
        if is_i1(out_type):
            return "NNFactory has no boolean constants to pad with"
        if 0 in static_shape(out_type) or 0 in static_shape(in_types[0]):
            return "an empty tensor has no static NNFactory shape"
        return super().npu_reason(in_types, out_type)


SPECS: tuple[KindSpec, ...] = (Conv(), Pad())
