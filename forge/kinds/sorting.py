"""Kinds that order elements by value: topk.

`topk` gives only the indices of the picked elements (an npuir op has one result): the values are a
`gather_elements` of its operand at them, which is how the lowering writes `aten.topk`. What torch
leaves open is decided here: ties go to the lower index, and NaN counts as larger than every number
(torch's own order, which `torch.sort(..., stable=True)` follows): the reference is a stable sort.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import IntegerType, TensorType
from xdsl.ir import Attribute

from dialects import npuir as N
from dialects.torch_types import dtype_of, shape_of
from forge.kinds import NPU_ELEMENTS, Example, KindSpec, SegmentHelpers, elements, is_i1

if TYPE_CHECKING:
    import torch


class Topk(KindSpec):
    """The indices of the `k` largest (or smallest) elements of x along `axis`, from the first pick."""

    name = "topk"
    makes_small_ints = True
    example = Example(("3x6xf32",), "3x2xi64", {"k": 2, "axis": 1, "largest": True})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        axis = p.get_int("axis")
        order = torch.sort(ins[0], dim=axis, descending=p.get_flag("largest"), stable=True).indices
        return order.narrow(axis, 0, p.get_int("k"))

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        axis, k, largest = p.get_int("axis"), p.get_int("k"), p.get_flag("largest")
        order = f"torch.sort({args[0]}, dim={axis}, descending={largest}, stable=True).indices"
        return f"{order}.narrow({axis}, 0, {k}).to({dtype_of(out_type)})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        picked = em.g.topk(ins[0], p.get_int("k"), p.get_int("axis"), p.get_flag("largest"))
        return em.g.convert(picked, em.np_dtype(out_type))

    def npu_reason(self, in_types: Sequence[Attribute], out_type: Attribute, small_ints: bool = False) -> str | None:
        """Floating-point operands only (the indices it makes fit in 32 bits: they index an axis)."""
        (x,) = in_types
        if isinstance(x, TensorType) and (is_i1(x) or x.element_type not in NPU_ELEMENTS):
            return f"topk of element type {x.element_type}"
        if isinstance(out_type, TensorType) and not isinstance(out_type.element_type, IntegerType):
            return f"result has element type {out_type.element_type}"
        if any(isinstance(t, TensorType) and 0 in t.get_shape() for t in (*in_types, out_type)):
            return "a zero-size tensor has no static NNFactory shape"
        return None

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        """A sort of each row: log2(n) comparisons per element."""
        (x,) = in_types
        n = shape_of(x)[p.get_int("axis")] if isinstance(x, TensorType) else 1
        return elements(x) * max(1.0, math.log2(max(n, 1)))


SPECS: tuple[KindSpec, ...] = (Topk(),)
