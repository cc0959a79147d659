"""Kinds over spatial windows: `pool` (max and average pooling, 1-D and 2-D) and `resize`
(nearest and (bi)linear upsampling).

Semantics are torch's (`F.max_pool{1,2}d`, `F.avg_pool{1,2}d`): windows over the last
len(kernel) dims; max pads with -inf, avg pads with zeros and divides by the window's size
clipped to the padded input (`count_include_pad`) or by its valid elements; with `ceil_mode` the
last window must start inside the input or the begin padding. Padding may differ at begin and
end (torch's own modules pad symmetrically; the reference then calls torch directly). The NPU
graph uses the GraphBuilder's `max_pool` / `avg_pool`, which take the same parameters.

`resize` is `F.interpolate` to the result's spatial sizes (torch's `upsample_*` with output sizes:
scale = input / output); the NPU graph is the GraphBuilder's `interpolate`, a composition of
constant-index gathers (nearest) or constant interpolation-matrix matmuls ((bi)linear).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import TensorType

from dialects import npuir as N
from dialects.torch_types import shape_of
from dialects.windows import pool_out_size
from forge.kinds import Example, KindSpec, SegmentHelpers

if TYPE_CHECKING:
    import torch


def pool_params(p: N.Params) -> dict[str, Any]:
    """The pooling parameters as plain values (dilations filled in)."""
    kernel = p.get_ints("kernel")
    dil = p.get_ints("dilations") if p.attr("dilations") is not None else (1,) * len(kernel)
    return {
        "kind": p.get_str("kind"),
        "kernel": kernel,
        "strides": p.get_ints("strides"),
        "pads_begin": p.get_ints("pads_begin"),
        "pads_end": p.get_ints("pads_end"),
        "dilations": dil,
        "ceil_mode": p.get_flag("ceil_mode"),
        "count_include_pad": p.get_flag("count_include_pad"),
    }


def _torch_call(q: dict[str, Any], x: str) -> str:
    """The torch call for symmetric padding, over the expression `x`."""
    n = len(q["kernel"])
    k, s, pad = list(q["kernel"]), list(q["strides"]), list(q["pads_begin"])
    if q["kind"] == "max":
        return f"F.max_pool{n}d({x}, {k}, {s}, {pad}, {list(q['dilations'])}, {q['ceil_mode']})"
    return f"F.avg_pool{n}d({x}, {k}, {s}, {pad}, {q['ceil_mode']}, {q['count_include_pad']})"


def _padded_extra(shape: Sequence[int], q: dict[str, Any]) -> list[int]:
    """End padding added so that floor-mode windows over the padded input are torch's windows."""
    n = len(q["kernel"])
    extra = []
    for size, k, s, pb, pe, d in zip(
        shape[-n:], q["kernel"], q["strides"], q["pads_begin"], q["pads_end"], q["dilations"], strict=True
    ):
        o = pool_out_size(size, k, s, pb, pe, d, q["ceil_mode"])
        extra.append(max(0, (o - 1) * s + d * (k - 1) + 1 - (size + pb + pe)))
    return extra


def _divisor(size: int, k: int, s: int, pb: int, pe: int, out: int, include: bool) -> list[int]:
    """torch's avg divisor for each window of one dim (window starts in padded coordinates)."""
    starts = [o * s for o in range(out)]
    if include:
        return [min(a + k, size + pb + pe) - a for a in starts]
    return [min(a + k, pb + size) - max(a, pb) for a in starts]


def _padding(shape: Sequence[int], q: dict[str, Any]) -> list[int]:
    """F.pad's list (last dim first) of the explicit padding, ceil-mode extension included."""
    n = len(q["kernel"])
    extra = _padded_extra(shape, q)
    pads: list[int] = []
    for i in reversed(range(n)):
        pads += [q["pads_begin"][i], q["pads_end"][i] + extra[i]]
    return pads


def _divisor_grid(shape: Sequence[int], q: dict[str, Any]) -> torch.Tensor:
    """torch's avg divisor of every output position (f64, the spatial output shape)."""
    import torch

    n = len(q["kernel"])
    k, s, pb, pe = q["kernel"], q["strides"], q["pads_begin"], q["pads_end"]
    sizes = shape[-n:]
    out = [pool_out_size(sizes[i], k[i], s[i], pb[i], pe[i], 1, q["ceil_mode"]) for i in range(n)]
    grid = torch.ones(out, dtype=torch.float64)
    for i in range(n):
        d = _divisor(sizes[i], k[i], s[i], pb[i], pe[i], out[i], q["count_include_pad"])
        view = [1] * n
        view[i] = out[i]
        grid = grid * torch.tensor(d, dtype=torch.float64).reshape(view)
    return grid


def _asymmetric(x: torch.Tensor, q: dict[str, Any]) -> torch.Tensor:
    """Pooling with begin/end padding that differ: explicit padding, floor-mode windows."""
    import torch.nn.functional as F

    n, k, s = len(q["kernel"]), list(q["kernel"]), list(q["strides"])
    pads = _padding(x.shape, q)
    if q["kind"] == "max":
        return getattr(F, f"max_pool{n}d")(F.pad(x, pads, value=-math.inf), k, s, 0, list(q["dilations"]))
    total = getattr(F, f"avg_pool{n}d")(F.pad(x, pads), k, s, 0) * math.prod(k)
    return total / _divisor_grid(x.shape, q).to(x.dtype)


def _asymmetric_source(q: dict[str, Any], x: str, shape: Sequence[int]) -> str:
    """What `_asymmetric` computes, as a torch expression over `x` of static `shape`."""
    n, k, s = len(q["kernel"]), list(q["kernel"]), list(q["strides"])
    pads = _padding(shape, q)
    if q["kind"] == "max":
        return f"F.max_pool{n}d(F.pad({x}, {pads}, value=float('-inf')), {k}, {s}, 0, {list(q['dilations'])})"
    total = f"F.avg_pool{n}d(F.pad({x}, {pads}), {k}, {s}, 0) * {math.prod(k)}"
    return f"({total} / torch.tensor({_divisor_grid(shape, q).tolist()}, dtype={x}.dtype))"


class Pool(KindSpec):
    """Max or average pooling over windows of the last 1 or 2 dims."""

    name = "pool"
    example = Example(
        ("1x3x7x6xf32",),
        "1x3x4x3xf32",
        {"kind": "max", "kernel": [3, 2], "strides": [2, 2], "pads_begin": [1, 0], "pads_end": [1, 0],
         "ceil_mode": True},
    )

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        q = pool_params(p)
        x = ins[0]
        if q["pads_begin"] != q["pads_end"]:
            return _asymmetric(x, q)
        n, k, s, pad = len(q["kernel"]), list(q["kernel"]), list(q["strides"]), list(q["pads_begin"])
        if q["kind"] == "max":
            return getattr(F, f"max_pool{n}d")(x, k, s, pad, list(q["dilations"]), q["ceil_mode"])
        return getattr(F, f"avg_pool{n}d")(x, k, s, pad, q["ceil_mode"], q["count_include_pad"])

    def flops(self, p: N.Params, in_types: Sequence[Any], out_type: Any) -> float:
        return math.prod(shape_of(out_type)) * math.prod(p.get_ints("kernel"))

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        q = pool_params(p)
        if q["pads_begin"] != q["pads_end"]:
            return _asymmetric_source(q, args[0], shape_of(in_types[0]))
        return _torch_call(q, args[0])

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        q = pool_params(p)
        x = ins[0]
        n = len(q["kernel"])
        unbatched = x.rank == n + 1
        if unbatched:
            x = em.g.unsqueeze(x, 0)
        common = dict(strides=q["strides"], pads_begin=q["pads_begin"], pads_end=q["pads_end"],
                      ceil_mode=q["ceil_mode"])
        if q["kind"] == "max":
            y = em.g.max_pool(x, q["kernel"], dilations=q["dilations"], **common)
        else:
            y = em.g.avg_pool(x, q["kernel"], count_include_pad=q["count_include_pad"], **common)
        return em.g.squeeze(y, 0) if unbatched else y


def _interpolate_call(p: N.Params, x: str, out_type: TensorType) -> str:
    mode = p.get_str("mode")
    corners = None if mode == "nearest" else p.get_flag("align_corners")
    size = list(shape_of(out_type)[2:])
    return f"F.interpolate({x}, size={size}, mode={mode!r}, align_corners={corners})"


class Resize(KindSpec):
    """Nearest or (bi)linear resampling of the spatial dims to the result's sizes."""

    name = "resize"
    flops_per_element = 4.0
    example = Example(("1x2x3x4xf32",), "1x2x6x7xf32", {"mode": "bilinear", "align_corners": True})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        mode = p.get_str("mode")
        corners = None if mode == "nearest" else p.get_flag("align_corners")
        return F.interpolate(ins[0], size=list(shape_of(out_type)[2:]), mode=mode, align_corners=corners)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return _interpolate_call(p, args[0], out_type)

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        return em.g.interpolate(ins[0], shape_of(out_type)[2:], p.get_str("mode"), p.get_flag("align_corners"))


SPECS: tuple[KindSpec, ...] = (Pool(), Resize())
