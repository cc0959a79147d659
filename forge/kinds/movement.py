"""Data movement kinds: reshape, transpose, broadcast, slice, concat, gather, gather_elements (no arithmetic).

`gather` and `gather_elements` wrap negative indices (ONNX Gather / GatherElements), which torch
leaves open (`torch.gather` refuses them). The torch source of a gather calls `gather(data,
indices, axis)`, a helper every generated program defines.

Moving data is exact on integers too, as long as the values fit in 32 bits (the runtimes hold i64
as i32 inside a graph): every kind here is `small_int_exact`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import TensorType

from dialects import npuir as N
from dialects.torch_types import shape_of
from forge.kinds import CpuKernel, Example, KindSpec, NotOnNpu, SegmentHelpers, is_i1

if TYPE_CHECKING:
    import torch


def _copy_into(out: torch.Tensor, src: torch.Tensor) -> None:
    # A rank-2 transposed copy takes torch's blocked-transpose path, which allocates a block
    # buffer; a leading unit dim keeps it on the plain (allocation-free) copy.
    if out.dim() == 2:
        out.unsqueeze(0).copy_(src.unsqueeze(0))
    else:
        out.copy_(src)


class _Movement(KindSpec):
    moves_data = True
    small_int_exact = True


class Reshape(_Movement):
    """Same elements, the result type's shape: a view, no bytes move."""

    name = "reshape"
    view = True
    example = Example(("2x3x4xf32",), "6x4xf32")

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        return ins[0].reshape(shape_of(out_type))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        shape = shape_of(in_types[0])
        return CpuKernel(lambda x, out: out.view(shape).copy_(x), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return f"{args[0]}.reshape({shape_of(out_type)})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        return em.g.reshape(ins[0], shape_of(out_type))


class Transpose(_Movement):
    name = "transpose"
    example = Example(("2x3x4xf32",), "4x2x3xf32", {"perm": [2, 0, 1]})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        return ins[0].permute(p.get_ints("perm"))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        perm = p.get_ints("perm")
        return CpuKernel(lambda x, out: _copy_into(out, x.permute(perm)), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return f"{args[0]}.permute({list(p.get_ints('perm'))})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        return em.g.transpose(ins[0], list(p.get_ints("perm")))


class Broadcast(_Movement):
    name = "broadcast"
    example = Example(("3x1xf32",), "2x3x4xf32")

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        return ins[0].expand(shape_of(out_type))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        shape = shape_of(out_type)
        return CpuKernel(lambda x, out: out.copy_(x.expand(shape)), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return f"{args[0]}.expand({shape_of(out_type)})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        return em.g.broadcast(ins[0], shape_of(out_type))


def _slices(p: N.Params) -> tuple[slice, ...]:
    bounds = zip(p.get_ints("starts"), p.get_ints("ends"), p.get_ints("steps"), strict=True)
    return tuple(slice(s, e, st) for s, e, st in bounds)


class Slice(_Movement):
    name = "slice"
    example = Example(("2x8xf32",), "2x3xf32", {"starts": [0, 1], "ends": [2, 7], "steps": [1, 2]})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        return ins[0][_slices(p)]

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        index = _slices(p)
        return CpuKernel(lambda x, out: _copy_into(out, x[index]), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        index = ", ".join(
            f"{s}:{e}" + (f":{st}" if st != 1 else "")
            for s, e, st in zip(p.get_ints("starts"), p.get_ints("ends"), p.get_ints("steps"), strict=True)
        )
        return f"{args[0]}[{index}]"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        if 0 in shape_of(out_type):
            raise NotOnNpu("an empty slice has no static NNFactory shape")
        return em.g.slice(ins[0], list(p.get_ints("starts")), list(p.get_ints("ends")), list(p.get_ints("steps")))


class Concat(_Movement):
    name = "concat"
    example = Example(("2x1xf32", "2x3xf32", "2x2xf32"), "2x6xf32", {"axis": 1})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        return torch.cat(list(ins), p.get_int("axis"))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        import torch

        axis = p.get_int("axis")
        return CpuKernel(lambda *args: torch.cat(args[:-1], axis, out=args[-1]), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return f"torch.cat([{', '.join(args)}], {p.get_int('axis')})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        nodes = em.same_dtype(ins) if is_i1(out_type) else ins
        return em.g.concat(nodes, p.get_int("axis"))


def _gather(data: torch.Tensor, indices: torch.Tensor, axis: int) -> torch.Tensor:
    import torch

    size = data.shape[axis]
    flat = indices.reshape(-1).to(torch.int64)
    flat = torch.where(flat < 0, flat + size, flat)
    picked = torch.index_select(data, axis, flat)
    return picked.reshape(*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])


class Gather(_Movement):
    """Slices of `data` along `axis` at `indices` (operand 1, integers of any width)."""

    name = "gather"
    index_operands = (1,)
    example = Example(("3x5x2xf32", "2x2xi64"), "3x2x2x2xf32", {"axis": 1})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        return _gather(ins[0], ins[1], p.get_int("axis"))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        """Indices are wrapped into a scratch tensor allocated here, once."""
        import torch

        axis = p.get_int("axis")
        data_shape, idx_shape = shape_of(in_types[0]), shape_of(in_types[1])
        size = data_shape[axis]
        count = math.prod(idx_shape)
        flat_shape = (*data_shape[:axis], count, *data_shape[axis + 1 :])
        wrapped = torch.empty(count, dtype=torch.int64)

        def gather(data: torch.Tensor, indices: torch.Tensor, out: torch.Tensor) -> None:
            torch.remainder(indices.reshape(-1), size, out=wrapped)  # negative -> from the end
            torch.index_select(data, axis, wrapped, out=out.view(flat_shape))

        return CpuKernel(gather, True, (wrapped,))

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        return f"gather({args[0]}, {args[1]}, {p.get_int('axis')})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        data, indices = ins
        return em.g.gather(data, indices, p.get_int("axis"))

    def index_bound(self, p: N.Params, in_types: Sequence[TensorType], operand: int) -> int:
        return shape_of(in_types[0])[p.get_int("axis")]


def _wrapped(indices: torch.Tensor, size: int) -> torch.Tensor:
    import torch

    return torch.remainder(indices.to(torch.int64), size)


def _extents(data_shape: Sequence[int], idx_shape: Sequence[int], axis: int) -> list[int]:
    """How much of each data dim a gather_elements reads: all of `axis`, the indices' extent elsewhere."""
    return [d if i == axis else j for i, (d, j) in enumerate(zip(data_shape, idx_shape, strict=True))]


class GatherElements(_Movement):
    """`torch.gather(data, axis, indices)`: the result has the indices' shape (operand 1, integers
    of any width; off `axis` at most data's extents)."""

    name = "gather_elements"
    index_operands = (1,)
    example = Example(("3x5x2xf32", "2x3x2xi64"), "2x3x2xf32", {"axis": 1}, ("normal", "index5"))

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        data, indices = ins
        axis = p.get_int("axis")
        extents = tuple(slice(0, e) for e in _extents(data.shape, indices.shape, axis))
        return torch.gather(data[extents], axis, _wrapped(indices, data.shape[axis]))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        """Indices are wrapped into a scratch tensor allocated here, once."""
        import torch

        axis = p.get_int("axis")
        data_shape, idx_shape = shape_of(in_types[0]), shape_of(in_types[1])
        size = data_shape[axis]
        extents = tuple(slice(0, e) for e in _extents(data_shape, idx_shape, axis))
        wrapped = torch.empty(idx_shape, dtype=torch.int64)

        def gather(data: torch.Tensor, indices: torch.Tensor, out: torch.Tensor) -> None:
            wrapped.copy_(indices)  # torch.gather takes int64 indices
            torch.remainder(wrapped, size, out=wrapped)  # negative -> from the end
            torch.gather(data[extents], axis, wrapped, out=out)

        return CpuKernel(gather, True, (wrapped,))

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        axis = p.get_int("axis")
        data_shape, idx_shape = shape_of(in_types[0]), shape_of(in_types[1])
        extents = ", ".join(f":{e}" for e in _extents(data_shape, idx_shape, axis))
        index = f"torch.remainder({args[1]}.to(torch.int64), {data_shape[axis]})"
        return f"torch.gather({args[0]}[{extents}], {axis}, {index})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        data, indices = ins
        return em.g.gather_elements(data, indices, p.get_int("axis"))

    def index_bound(self, p: N.Params, in_types: Sequence[TensorType], operand: int) -> int:
        return shape_of(in_types[0])[p.get_int("axis")]


SPECS: tuple[KindSpec, ...] = (Reshape(), Transpose(), Broadcast(), Slice(), Concat(), Gather(), GatherElements())
