"""Values and errors of the runtime graph API: nodes, tensor specs, dtypes, build errors.

What `graph_builder.py` builds with and `runtime.py` runs with; see `runtime.py` for the API as a whole.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from dialects.torch_types import ELEMENT_TYPES, dtype_name
from dialects.windows import pool_out_size

if TYPE_CHECKING:
    from .graph_builder import GraphBuilder

# --------------------------------------------------------------------------- errors


class GraphBuildError(ValueError):
    """Building a graph failed. ``op`` is the public op; the message names its inputs."""

    def __init__(self, op: str, inputs: str, reason: str):
        self.op = op
        self.inputs = inputs
        self.reason = reason
        super().__init__(f"{op}({inputs}): {reason}")


# --------------------------------------------------------------------------- dtypes

_DTYPE_ALIASES = {
    "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
    "i32": "int32", "i64": "int64", "u8": "uint8", "bool": "bool", "boolean": "bool",
}  # fmt: skip


def to_numpy_dtype(dtype: Any) -> np.dtype:
    """numpy dtype of a numpy dtype/type, a string (``"f32"``, ``"float32"``) or a torch dtype."""
    if isinstance(dtype, str):
        return np.dtype(_DTYPE_ALIASES.get(dtype, dtype))
    if type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        found = torch_numpy_dtype(dtype)
        if found is None:
            hint = "; use float16 or float32" if dtype_name(dtype) == "bfloat16" else ""
            raise TypeError(f"{dtype_name(dtype)} has no numpy dtype{hint}")
        return found
    return np.dtype(dtype)


_NUMPY_DTYPES: dict[str, np.dtype] = {name: np.dtype(name) for name in ELEMENT_TYPES if name != "bfloat16"}
"""numpy's dtype of each torch dtype Forge represents (numpy names them as torch does), bar bfloat16."""


def torch_numpy_dtype(dtype: Any) -> np.dtype | None:
    """The numpy dtype of a torch dtype, without importing torch (None: numpy has none, e.g. bfloat16)."""
    return _NUMPY_DTYPES.get(dtype_name(dtype))


def short_dtype(dtype: np.dtype) -> str:
    return {"float": "f", "int": "i", "uint": "u"}.get(
        dtype.name.rstrip("0123456789"), dtype.name
    ) + (dtype.name[len(dtype.name.rstrip("0123456789")) :])


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: np.dtype

    def __str__(self) -> str:
        return f"{short_dtype(self.dtype)}{list(self.shape)}"


@dataclass(frozen=True, eq=False)
class Node:
    """A value in a graph under construction. Nodes belong to one builder."""

    builder: GraphBuilder = field(repr=False)
    handle: Any = field(repr=False)
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def spec(self) -> TensorSpec:
        return TensorSpec(self.shape, self.dtype)

    def __repr__(self) -> str:
        return f"Node({self.spec})"


Operand: TypeAlias = "Node | float | int | bool | np.ndarray"


def _describe(value: Any) -> str:
    if isinstance(value, Node):
        return str(value.spec)
    if isinstance(value, np.ndarray):
        return f"array {short_dtype(value.dtype)}{list(value.shape)}"
    if type(value).__module__ == "torch" and hasattr(value, "shape"):
        return f"tensor {value.dtype}{list(value.shape)}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, Node) for v in value):
        inner = ", ".join(_describe(v) for v in value)
        return f"[{inner}]"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe_call(args: tuple, kwargs: dict) -> str:
    parts = [_describe(a) for a in args]
    parts += [f"{k}={_describe(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def build_failure_reason(e: Exception) -> str:
    """A one-line reason; OpenVINO's validation messages keep their last (human) line,
    the full text stays on ``__cause__``."""
    text = str(e).strip() or type(e).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and any(line.startswith("While validating node") for line in lines):
        return f"{lines[-1]} (OpenVINO shape inference)"
    return text


def graph_op(fn: Callable) -> Callable:
    """Mark a public builder op: closed-builder check and error naming/wrapping."""
    name = fn.__name__

    @functools.wraps(fn)
    def wrapper(self: GraphBuilder, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise GraphBuildError(name, "", "the graph is already compiled")
        try:
            return fn(self, *args, **kwargs)
        except GraphBuildError as e:
            if e.op == name and e.inputs == _describe_call(args, kwargs):
                raise
            raise GraphBuildError(name, _describe_call(args, kwargs), str(e)) from e
        except Exception as e:
            raise GraphBuildError(name, _describe_call(args, kwargs), build_failure_reason(e)) from e

    wrapper.__forge_op__ = True
    return wrapper


def contiguous(array: np.ndarray) -> np.ndarray:
    """C-contiguous (copied only if needed); unlike np.ascontiguousarray keeps rank 0."""
    return array if array.flags.c_contiguous else array.copy(order="C")


def norm_axis(axis: int, rank: int, *, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise ValueError(f"{what} {axis} out of range for rank {rank}")
    return axis % rank if rank else 0


def norm_axes(axes: int | Sequence[int] | None, rank: int) -> list[int]:
    if axes is None:
        return list(range(rank))
    if isinstance(axes, (int, np.integer)):
        axes = [int(axes)]
    out = sorted({norm_axis(int(a), rank) for a in axes})
    if not out:
        raise ValueError("empty axes (pass axes=None to reduce over all axes)")
    if len(out) != len(axes):
        raise ValueError(f"duplicate axes {list(axes)}")
    return out


# --------------------------------------------------------------------------- pooling windows


@dataclass(frozen=True)
class PoolWindows:
    """torch's pooling windows as floor-mode windows over an explicitly padded input: `pads_end`
    includes what `ceil_mode` adds; `divisors` is torch's avg divisor per output position (None
    when every window counts the whole kernel)."""

    kernel: list[int]
    strides: list[int]
    pads_begin: list[int]
    pads_end: list[int]
    dilations: list[int]
    out: list[int]
    divisors: np.ndarray | None


def pool_windows(
    sizes: Sequence[int],
    kernel: Sequence[int],
    strides: Sequence[int] | None,
    pads_begin: Sequence[int] | None,
    pads_end: Sequence[int] | None,
    dilations: Sequence[int] | None,
    ceil_mode: bool,
    count_include_pad: bool = True,
) -> PoolWindows:
    """Normalize torch pooling parameters over spatial `sizes` (see `PoolWindows`)."""
    n = len(kernel)
    k = [int(v) for v in kernel]
    s = list(k) if strides is None else [int(v) for v in strides]
    pb = [0] * n if pads_begin is None else [int(v) for v in pads_begin]
    pe = list(pb) if pads_end is None else [int(v) for v in pads_end]
    d = [1] * n if dilations is None else [int(v) for v in dilations]
    if not len(s) == len(pb) == len(pe) == len(d) == len(sizes) == n:
        raise ValueError(f"pooling parameters for {n} spatial dims do not match input dims {list(sizes)}")
    out, ends, divs = [], [], []
    for size, ki, si, b, e, di in zip(sizes, k, s, pb, pe, d, strict=True):
        extent = di * (ki - 1) + 1
        o = pool_out_size(size, ki, si, b, e, di, ceil_mode)
        if o < 1:
            raise ValueError(f"input size {size} is smaller than the kernel extent {extent}")
        out.append(o)
        ends.append(max(e, (o - 1) * si + extent - size - b))
        starts = [i * si for i in range(o)]
        if count_include_pad:
            divs.append([min(a + ki, size + b + e) - a for a in starts])
        else:
            divs.append([min(a + ki, b + size) - max(a, b) for a in starts])
    grid = np.ones(out, dtype=np.float64)
    for i, di in enumerate(divs):
        grid = grid * np.asarray(di, dtype=np.float64).reshape([-1 if j == i else 1 for j in range(n)])
    full = float(np.prod(k))
    return PoolWindows(k, s, pb, ends, d, out, None if np.all(grid == full) else grid)


# --------------------------------------------------------------------------- resampling


def nearest_indices(size: int, out: int) -> np.ndarray:
    """torch's `nearest` source index of each output position (scale = size / out, in f32)."""
    scale = np.float32(size) / np.float32(out)
    idx = np.floor(np.arange(out, dtype=np.float32) * scale).astype(np.int64)
    return np.minimum(idx, size - 1)


def linear_taps(size: int, out: int, align_corners: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """torch's (bi)linear interpolation along one axis: output o is ``l0[o] * x[i0[o]] + l1[o] * x[i1[o]]``
    (int32 indices, f32 weights, as torch's kernels compute them)."""
    dst = np.arange(out, dtype=np.float32)
    if align_corners:
        scale = np.float32((size - 1) / (out - 1)) if out > 1 else np.float32(0)
        src = scale * dst
    else:
        scale = np.float32(size) / np.float32(out)
        src = np.maximum(scale * (dst + np.float32(0.5)) - np.float32(0.5), np.float32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), size - 1)
    i1 = np.where(i0 < size - 1, i0 + 1, i0)
    l1 = src - i0.astype(np.float32)
    return i0.astype(np.int32), i1.astype(np.int32), np.float32(1) - l1, l1


def linear_weights(size: int, out: int, align_corners: bool) -> np.ndarray:
    """torch's (bi)linear interpolation along one axis as an [out, size] f32 matrix."""
    i0, i1, l0, l1 = linear_taps(size, out, align_corners)
    w = np.zeros((out, size), dtype=np.float32)
    np.add.at(w, (np.arange(out), i0), l0)
    np.add.at(w, (np.arange(out), i1), l1)
    return w
