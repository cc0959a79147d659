"""How an ATen overload's schema maps onto an IRDL op: the one policy behind every `aten` op.

Tensor arguments become operands (`Tensor?` optional, `Tensor[]` variadic); every other argument
(ints, floats, lists, dtypes, devices, ...) becomes a property, stored only when it differs from the
schema default. The same `Signature` drives op definition, the custom syntax, the importer's argument
binding, the reference interpreter's call and shape verification, so they cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum, auto
from typing import Any

import torch
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl import base

from dialects.torch_types import element_type, is_dtype_attr, torch_dtype

i1 = IntegerType(1)


class ArgKind(Enum):
    """What a schema argument becomes in the IR."""

    TENSOR = auto()
    OPT_TENSOR = auto()
    TENSOR_LIST = auto()
    OPT_TENSOR_LIST = auto()  # Tensor?[] (aten.index): operands plus a presence mask
    INT = auto()
    FLOAT = auto()
    BOOL = auto()
    SCALAR = auto()  # ATen "Scalar": int, float or bool
    INT_LIST = auto()
    FLOAT_LIST = auto()
    DTYPE = auto()
    STR = auto()
    DEVICE = auto()
    LAYOUT = auto()
    MEMORY_FORMAT = auto()
    GENERATOR = auto()  # must be None; never stored

    @property
    def is_tensor(self) -> bool:
        return self in _TENSOR_KINDS


_TENSOR_KINDS = {ArgKind.TENSOR, ArgKind.OPT_TENSOR, ArgKind.TENSOR_LIST, ArgKind.OPT_TENSOR_LIST}

_KIND_BY_TYPE = {
    "Tensor": ArgKind.TENSOR,
    "List[Tensor]": ArgKind.TENSOR_LIST,
    "List[Optional[Tensor]]": ArgKind.OPT_TENSOR_LIST,
    "int": ArgKind.INT,
    "SymInt": ArgKind.INT,
    "float": ArgKind.FLOAT,
    "bool": ArgKind.BOOL,
    "number": ArgKind.SCALAR,
    "List[int]": ArgKind.INT_LIST,
    "List[SymInt]": ArgKind.INT_LIST,
    "List[float]": ArgKind.FLOAT_LIST,
    "ScalarType": ArgKind.DTYPE,
    "str": ArgKind.STR,
    "Device": ArgKind.DEVICE,
    "Layout": ArgKind.LAYOUT,
    "MemoryFormat": ArgKind.MEMORY_FORMAT,
    "Generator": ArgKind.GENERATOR,
}

PROPERTY_CONSTRAINTS = {
    ArgKind.INT: base(IntegerAttr),
    ArgKind.FLOAT: base(FloatAttr),
    ArgKind.BOOL: base(IntegerAttr),
    ArgKind.SCALAR: base(IntegerAttr) | base(FloatAttr),
    ArgKind.INT_LIST: base(DenseArrayBase),
    ArgKind.FLOAT_LIST: base(DenseArrayBase),
    ArgKind.DTYPE: base(Attribute),
    ArgKind.STR: base(StringAttr),
    ArgKind.DEVICE: base(StringAttr),
    ArgKind.LAYOUT: base(StringAttr),
    ArgKind.MEMORY_FORMAT: base(StringAttr),
}


@dataclass(frozen=True)
class ArgSpec:
    """One schema argument: its ATen name, the Python field name on the op, and its kind."""

    name: str
    field: str
    kind: ArgKind
    optional: bool
    has_default: bool
    default: Any
    kwarg_only: bool


@dataclass(frozen=True)
class Signature:
    """The parsed schema of one overload (or of a Forge op written like one)."""

    target: Any  # the callable that gives the op its semantics (a torch OpOverload)
    args: tuple[ArgSpec, ...]
    result_fields: tuple[str, ...]
    variadic_result: bool

    @property
    def tensor_args(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.kind.is_tensor)

    @property
    def property_args(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if not a.kind.is_tensor and a.kind is not ArgKind.GENERATOR)

    def arg(self, name: str) -> ArgSpec:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)


class SchemaError(ValueError):
    """An overload whose schema Forge cannot represent."""


def _kind_of(type_str: str) -> tuple[ArgKind, bool]:
    optional = type_str.startswith("Optional[")
    inner = type_str[len("Optional[") : -1] if optional else type_str
    kind = _KIND_BY_TYPE.get(inner)
    if kind is None:
        raise SchemaError(f"unsupported schema argument type {type_str}")
    if kind is ArgKind.TENSOR and optional:
        return ArgKind.OPT_TENSOR, True
    return kind, optional


def field_name(arg_name: str, taken: set[str], reserved: set[str]) -> str:
    """A Python-safe accessor name: `self` reads as `input`; clashes get a trailing underscore."""
    name = "input" if arg_name == "self" else arg_name
    while name in taken or name in reserved:
        name += "_"
    return name


def parse_signature(target: Any, reserved: set[str]) -> Signature:
    """The Signature of a torch OpOverload from its schema."""
    schema = target._schema
    taken: set[str] = set()
    args = []
    for a in schema.arguments:
        kind, optional = _kind_of(str(a.real_type))
        name = field_name(a.name, taken, reserved)
        taken.add(name)
        # An optional non-tensor argument without a default (`float[]? scale_factors`) may be None:
        # absent means None, as for a `= None` default.
        has_default = a.has_default_value() or (optional and not kind.is_tensor)
        default = a.default_value if a.has_default_value() else None
        args.append(ArgSpec(a.name, name, kind, optional, has_default, default, a.kwarg_only))
    returns = [str(r.type) for r in schema.returns]
    if returns == ["List[Tensor]"]:
        return Signature(target, tuple(args), ("results_",), True)
    if any(r != "Tensor" for r in returns):
        raise SchemaError(f"unsupported return types {returns}")
    fields = ("result",) if len(returns) == 1 else tuple(f"result{i}" for i in range(len(returns)))
    return Signature(target, tuple(args), fields if returns else (), False)


# --- Python values <-> property attributes ---------------------------------------------------


def _enum_name(value: Any) -> str:
    return str(value).removeprefix("torch.")


def to_attribute(kind: ArgKind, value: Any) -> Attribute:
    """The property attribute storing a Python argument value of the given kind."""
    if kind is ArgKind.INT:
        return IntegerAttr(int(value), i64)
    if kind is ArgKind.FLOAT:
        return FloatAttr(float(value), f64)
    if kind is ArgKind.BOOL:
        return IntegerAttr(int(bool(value)), i1)
    if kind is ArgKind.SCALAR:
        if isinstance(value, bool):
            return IntegerAttr(int(value), i1)
        if isinstance(value, int):
            return IntegerAttr(value, i64)
        return FloatAttr(float(value), f64)
    if kind is ArgKind.INT_LIST:
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    if kind is ArgKind.FLOAT_LIST:
        return DenseArrayBase.from_list(f64, [float(v) for v in value])
    if kind is ArgKind.DTYPE:
        return element_type(value)
    if kind in (ArgKind.STR, ArgKind.DEVICE):
        return StringAttr(str(value))
    if kind in (ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT):
        return StringAttr(_enum_name(value))
    raise SchemaError(f"no property representation for {kind.name}")


def from_attribute(kind: ArgKind, attr: Attribute) -> Any:
    """The Python argument value stored in a property attribute."""
    if kind is ArgKind.BOOL:
        assert isinstance(attr, IntegerAttr)
        return bool(attr.value.data)
    if kind in (ArgKind.INT, ArgKind.SCALAR) and isinstance(attr, IntegerAttr):
        if attr.type == i1:
            return bool(attr.value.data)
        return attr.value.data
    if kind in (ArgKind.FLOAT, ArgKind.SCALAR) and isinstance(attr, FloatAttr):
        return attr.value.data
    if kind in (ArgKind.INT_LIST, ArgKind.FLOAT_LIST):
        assert isinstance(attr, DenseArrayBase)
        return list(attr.get_values())
    if kind is ArgKind.DTYPE:
        return torch_dtype(attr)
    if kind is ArgKind.STR:
        assert isinstance(attr, StringAttr)
        return attr.data
    if kind is ArgKind.DEVICE:
        assert isinstance(attr, StringAttr)
        return torch.device(attr.data)
    if kind in (ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT):
        assert isinstance(attr, StringAttr)
        return getattr(torch, attr.data)
    raise SchemaError(f"cannot read {kind.name} property {attr}")


def is_valid_attribute(kind: ArgKind, attr: Attribute) -> bool:
    """Whether `attr` has the representation `to_attribute` gives for `kind` (for the verifier)."""
    if kind is ArgKind.DTYPE:
        return is_dtype_attr(attr)
    if kind is ArgKind.BOOL:
        return isinstance(attr, IntegerAttr) and attr.type == i1
    if kind is ArgKind.INT:
        return isinstance(attr, IntegerAttr) and attr.type == i64
    if kind is ArgKind.FLOAT:
        return isinstance(attr, FloatAttr) and attr.type == f64
    if kind is ArgKind.SCALAR:
        return (isinstance(attr, IntegerAttr) and attr.type in (i64, i1)) or (
            isinstance(attr, FloatAttr) and attr.type == f64
        )
    if kind in (ArgKind.INT_LIST, ArgKind.FLOAT_LIST):
        want = i64 if kind is ArgKind.INT_LIST else f64
        return isinstance(attr, DenseArrayBase) and attr.elt_type == want
    if kind is ArgKind.DEVICE:
        return isinstance(attr, StringAttr) and _is_device(attr.data)
    if kind in (ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT):
        return isinstance(attr, StringAttr) and isinstance(
            getattr(torch, attr.data, None), (torch.layout, torch.memory_format)
        )
    return True


def _is_device(text: str) -> bool:
    try:
        torch.device(text)
    except RuntimeError:
        return False
    return True


def equals_default(spec: ArgSpec, value: Any) -> bool:
    """Whether a bound value is the schema default, so the property can be left out."""
    if not spec.has_default:
        return False
    default = spec.default
    if value is None or default is None:
        return value is default
    if isinstance(default, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return (math.isnan(default) and math.isnan(value)) or float(value) == default
    if isinstance(default, (list, tuple)):
        return isinstance(value, (list, tuple)) and list(value) == list(default)
    return type(value) is type(default) and value == default
