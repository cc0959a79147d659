"""Kinds along an axis or over trailing dims: softmax, cumsum, layer_norm, rms_norm."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import TensorType

from dialects import npuir as N
from dialects.torch_types import dtype_of, shape_of
from forge.kinds import CpuKernel, Example, KindSpec, SegmentHelpers, all_floating

if TYPE_CHECKING:
    import torch


class Softmax(KindSpec):
    name = "softmax"
    flops_per_element = 5.0
    example = Example(("2x5x3xf32",), "2x5x3xf32", {"axis": 1})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        return torch.softmax(ins[0], p.get_int("axis"))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        import torch

        if not all_floating(in_types, out_type):
            return self.reference_kernel(p, out_type)
        axis = p.get_int("axis")
        return CpuKernel(lambda x, out: torch.ops.aten._softmax.out(x, axis, False, out=out), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return f"torch.softmax({args[0]}, {p.get_int('axis')})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        return em.g.softmax(ins[0], p.get_int("axis"))


class Cumsum(KindSpec):
    """Running sum along `axis`; the NPU has no cumsum."""

    name = "cumsum"
    npu = False
    example = Example(("3x2xi64",), "3x2xi64", {"axis": 0})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        return torch.cumsum(ins[0], p.get_int("axis"))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        import torch

        out_dtype = dtype_of(out_type)
        if dtype_of(in_types[0]) != out_dtype or out_dtype == torch.bool:
            return self.reference_kernel(p, out_type)
        axis = p.get_int("axis")
        return CpuKernel(lambda x, out: torch.cumsum(x, axis, out=out), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return f"torch.cumsum({args[0]}, {p.get_int('axis')}).to({dtype_of(out_type)})"


class LayerNorm(KindSpec):
    """Normalize over dims [axis, rank), then weight and bias (the reference kernel on the cpu)."""

    name = "layer_norm"
    flops_per_element = 8.0
    example = Example(("2x3x8xf32", "8xf32", "8xf32"), "2x3x8xf32", {"axis": 2, "eps": 1e-05})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        x, *affine = ins
        shape = tuple(x.shape[p.get_int("axis") :])
        w = affine[0] if affine else None
        b = affine[1] if len(affine) > 1 else None
        return F.layer_norm(x, shape, w, b, p.get_float("eps"))

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        x, *affine = args
        shape = shape_of(in_types[0])[p.get_int("axis") :]
        w = affine[0] if affine else "None"
        b = affine[1] if len(affine) > 1 else "None"
        return f"F.layer_norm({x}, {shape}, {w}, {b}, {p.get_float('eps')!r})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        x, *affine = ins
        axes = list(range(p.get_int("axis"), x.rank))
        w = affine[0] if affine else None
        b = affine[1] if len(affine) > 1 else None
        return em.g.layer_norm(x, w, b, axes, p.get_float("eps"))


class RmsNorm(KindSpec):
    """x / sqrt(mean(x²) + eps) * weight over dims [axis, rank) (the reference kernel on the cpu)."""

    name = "rms_norm"
    flops_per_element = 5.0
    example = Example(("2x3x8xf32", "8xf32"), "2x3x8xf32", {"axis": 2, "eps": 1e-06})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        x, *affine = ins
        shape = tuple(x.shape[p.get_int("axis") :])
        return F.rms_norm(x, shape, affine[0] if affine else None, p.get_float("eps"))

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        x, *affine = args
        shape = shape_of(in_types[0])[p.get_int("axis") :]
        return f"F.rms_norm({x}, {shape}, {affine[0] if affine else 'None'}, {p.get_float('eps')!r})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        x, *affine = ins
        axes = list(range(p.get_int("axis"), x.rank))
        return em.g.rms_norm(x, affine[0] if affine else None, p.get_float("eps"), axes)


SPECS: tuple[KindSpec, ...] = (Softmax(), Cumsum(), LayerNorm(), RmsNorm())
