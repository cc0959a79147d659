"""Conversions between torch dtypes/shapes and builtin MLIR types, shared by every dialect.

Types are cached: building `TensorType`s dominates IR construction time otherwise.
"""

from __future__ import annotations

import math
from functools import cache

import torch
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

_TORCH_TO_MLIR: dict[torch.dtype, Attribute] = {
    torch.float32: Float32Type(),
    torch.float16: Float16Type(),
    torch.bfloat16: BFloat16Type(),
    torch.float64: Float64Type(),
    torch.int64: IntegerType(64),
    torch.int32: IntegerType(32),
    torch.int16: IntegerType(16),
    torch.int8: IntegerType(8),
    torch.uint8: IntegerType(8, Signedness.UNSIGNED),
    torch.bool: IntegerType(1),
}
_MLIR_TO_TORCH: dict[Attribute, torch.dtype] = {v: k for k, v in _TORCH_TO_MLIR.items()}


class UnsupportedTypeError(ValueError):
    """A torch dtype or MLIR element type Forge cannot represent."""


def element_type(dtype: torch.dtype) -> Attribute:
    """The MLIR element type of a torch dtype (torch.bool is i1, torch.int64 is i64)."""
    try:
        return _TORCH_TO_MLIR[dtype]
    except KeyError:
        raise UnsupportedTypeError(f"unsupported torch dtype {dtype}") from None


def torch_dtype(element: Attribute) -> torch.dtype:
    """The torch dtype of an MLIR element type."""
    try:
        return _MLIR_TO_TORCH[element]
    except KeyError:
        raise UnsupportedTypeError(f"unsupported element type {element}") from None


def is_dtype_attr(attr: Attribute) -> bool:
    return attr in _MLIR_TO_TORCH


@cache
def tensor_type(shape: tuple[int, ...], dtype: torch.dtype) -> TensorType:
    """The builtin `tensor<...>` type of a static shape and dtype (cached)."""
    return TensorType(element_type(dtype), shape)


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
    return torch.empty(shape_of(ty), dtype=dtype_of(ty), device="meta")


def nbytes(ty: Attribute) -> int:
    """Size in bytes of a value of tensor type `ty` (i1 counts as one byte, like torch.bool)."""
    dtype = dtype_of(ty)
    count = 1
    for d in shape_of(ty):
        count *= d
    return count * dtype.itemsize


def dense_tensor(attr: DenseIntOrFPElementsAttr) -> torch.Tensor:
    """The tensor a dense attribute holds (a splat expanded to the full shape, empty shapes kept)."""
    ty = attr.get_type()
    dtype, shape = dtype_of(ty), shape_of(ty)
    if math.prod(shape) == 0:
        return torch.empty(shape, dtype=dtype)
    if attr.is_splat():
        return torch.full(shape, next(iter(attr.iter_values())), dtype=dtype)
    return torch.tensor(list(attr.get_values()), dtype=dtype).reshape(shape)
