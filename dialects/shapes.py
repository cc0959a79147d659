"""Static-shape helpers shared by the dialects and everything above them (no torch needed).

One definition each of: the shape of a value's tensor type (`static_shape`), numpy broadcasting
of static shapes with MLIR's dynamic dims (`broadcast_shapes`), how messages print a shape
(`fmt_shape`), and the clamped [start, end) of a Python/ATen slice (`slice_bounds`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.utils.exceptions import VerifyException


def static_shape(value: SSAValue | Attribute) -> tuple[int, ...]:
    """The shape of a value's (or a type's) `tensor<...>` type; () for anything else."""
    ty = value.type if isinstance(value, SSAValue) else value
    return tuple(ty.get_shape()) if isinstance(ty, TensorType) else ()


def fmt_shape(shape: Iterable[int]) -> str:
    """`[1, ?, 768]`: how verifier messages print shapes."""
    return "[" + ", ".join("?" if d == DYNAMIC_INDEX else str(d) for d in shape) + "]"


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The numpy broadcast of `shapes`; VerifyException if they are not broadcast-compatible.

    A dynamic dim (`?`) broadcasts with anything but a conflicting known size, which it takes.
    """
    out: list[int] = []
    rank = max((len(s) for s in shapes), default=0)
    for i in range(1, rank + 1):
        dim = 1
        for shape in shapes:
            d = shape[-i] if i <= len(shape) else 1
            if d == 1 or d == dim or d == DYNAMIC_INDEX and dim != 1:
                continue
            if dim in (1, DYNAMIC_INDEX):  # a known size refines 1 or a dynamic size
                dim = d
            else:
                listed = " and ".join(fmt_shape(s) for s in shapes)
                raise VerifyException(f"shapes {listed} are not broadcast-compatible")
        out.append(dim)
    return tuple(reversed(out))


def slice_bounds(start: int | None, end: int | None, size: int) -> tuple[int, int]:
    """`aten.slice`'s [start, end) on a dim of `size`: None means the whole dim, negatives count
    from the end, and both are clamped to [0, size] with end >= start (what torch computes)."""
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end
