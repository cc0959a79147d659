"""Conversions between torch dtypes/shapes and builtin MLIR types, shared by every dialect.

The dtype table is torch-free: dtypes are known by name (`"float32"` <-> `f32`), so parsing,
verifying and printing IR never imports torch. Functions that return torch objects (`torch_dtype`,
`dtype_of`, `meta_tensor`, `dense_tensor`) import it on first use; the ones that take a torch dtype
(`element_type`, `tensor_type`) read only its name. Types are cached: building `TensorType`s
dominates IR construction time otherwise.
"""

from __future__ import annotations

import math
import struct
from functools import cache
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute

if TYPE_CHECKING:
    import torch

ELEMENT_TYPES: dict[str, Attribute] = {
    "float32": Float32Type(),
    "float16": Float16Type(),
    "bfloat16": BFloat16Type(),
    "float64": Float64Type(),
    "int64": IntegerType(64),
    "int32": IntegerType(32),
    "int16": IntegerType(16),
    "int8": IntegerType(8),
    "uint8": IntegerType(8, Signedness.UNSIGNED),
    "bool": IntegerType(1),
}
"""Every dtype Forge represents, by torch's name (`torch.float32` is "float32"), and its element type."""

DTYPE_NAMES: dict[Attribute, str] = {v: k for k, v in ELEMENT_TYPES.items()}
"""The torch dtype name of each element type."""

ITEMSIZE: dict[str, int] = {
    "float32": 4, "float16": 2, "bfloat16": 2, "float64": 8,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1,
}  # fmt: skip
"""Bytes per element of each dtype (torch's `dtype.itemsize`)."""

FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
INT_DTYPES = frozenset({"uint8", "int8", "int16", "int32", "int64"})

FLOAT_EPS: dict[str, float] = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}
"""`torch.finfo(dtype).eps` of each floating-point dtype (the default eps of rms_norm)."""
FLOAT_MAX: dict[str, float] = {
    "float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
    "float64": 1.7976931348623157e308,
}  # fmt: skip
"""`torch.finfo(dtype).max` of each floating-point dtype: a Python float beyond it converts to ±inf unchecked, and
is refused by torch's checked conversion of a scalar argument."""
INT_RANGE: dict[str, tuple[int, int]] = {
    "bool": (0, 1), "uint8": (0, 255), "int8": (-128, 127), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
}  # fmt: skip
"""The values of each integer dtype (`torch.iinfo(dtype).min, .max`; bool 0 and 1)."""


class UnsupportedTypeError(ValueError):
    """A torch dtype or MLIR element type Forge cannot represent."""


def dtype_name(dtype: Any) -> str:
    """The name of a torch dtype (`torch.float32` -> "float32") without importing torch."""
    return str(dtype).removeprefix("torch.")


def element_type(dtype: Any) -> Attribute:
    """The MLIR element type of a torch dtype (torch.bool is i1, torch.int64 is i64)."""
    try:
        return ELEMENT_TYPES[dtype_name(dtype)]
    except KeyError:
        raise UnsupportedTypeError(f"unsupported torch dtype {dtype}") from None


def torch_dtype(element: Attribute) -> torch.dtype:
    """The torch dtype of an MLIR element type (imports torch)."""
    try:
        name = DTYPE_NAMES[element]
    except KeyError:
        raise UnsupportedTypeError(f"unsupported element type {element}") from None
    import torch

    return getattr(torch, name)


def is_dtype_attr(attr: Attribute) -> bool:
    return attr in DTYPE_NAMES


@cache
def tensor_type(shape: tuple[int, ...], dtype: Any) -> TensorType:
    """The builtin `tensor<...>` type of a static shape and dtype (a torch dtype or its name; cached)."""
    return TensorType(element_type(dtype), shape)


@cache
def tensor_of(shape: tuple[int, ...], element: Attribute) -> TensorType:
    """The builtin `tensor<...>` type of a static shape and element type (cached)."""
    return TensorType(element, shape)


def type_of(tensor: torch.Tensor) -> TensorType:
    return tensor_type(tuple(tensor.shape), tensor.dtype)


def shape_of(ty: Attribute) -> tuple[int, ...]:
    assert isinstance(ty, TensorType), ty
    return tuple(ty.get_shape())


def dtype_of(ty: Attribute) -> torch.dtype:
    assert isinstance(ty, TensorType), ty
    return torch_dtype(ty.element_type)


def meta_tensor(ty: Attribute) -> torch.Tensor:
    """A storage-less tensor with the shape and dtype of `ty`, for shape inference."""
    import torch

    return torch.empty(shape_of(ty), dtype=dtype_of(ty), device="meta")


def nbytes(ty: Attribute) -> int:
    """Size in bytes of a value of tensor type `ty` (i1 counts as one byte, like torch.bool)."""
    assert isinstance(ty, TensorType), ty
    try:
        itemsize = ITEMSIZE[DTYPE_NAMES[ty.element_type]]
    except KeyError:
        raise UnsupportedTypeError(f"unsupported element type {ty.element_type}") from None
    return math.prod(shape_of(ty)) * itemsize


def scalar_value(attr: DenseIntOrFPElementsAttr) -> bool | int | float:
    """The value of a one-element dense attribute as torch's `.item()` gives it (floats rounded to the
    element type: f32, f16 and bf16 values are not the double the attribute holds), without torch."""
    ty = attr.get_type()
    assert math.prod(shape_of(ty)) == 1, ty
    value = next(iter(attr.iter_values())) if attr.is_splat() else attr.get_values()[0]
    name = DTYPE_NAMES.get(ty.element_type)
    if name == "bool":
        return bool(value)
    if name in ("float64", None) or not isinstance(value, float):
        return value
    if name == "float16":
        return struct.unpack("<e", struct.pack("<e", value))[0]
    single = struct.unpack("<f", struct.pack("<f", value))[0]
    if name == "float32" or math.isnan(single) or math.isinf(single):
        return single
    bits = struct.unpack("<I", struct.pack("<f", single))[0]  # bfloat16: round to nearest even
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def dense_tensor(attr: DenseIntOrFPElementsAttr) -> torch.Tensor:
    """The tensor a dense attribute holds (a splat expanded to the full shape, empty shapes kept)."""
    import torch

    ty = attr.get_type()
    dtype, shape = dtype_of(ty), shape_of(ty)
    if math.prod(shape) == 0:
        return torch.empty(shape, dtype=dtype)
    if attr.is_splat():
        return torch.full(shape, next(iter(attr.iter_values())), dtype=dtype)
    return torch.tensor(list(attr.get_values()), dtype=dtype).reshape(shape)
