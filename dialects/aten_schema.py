"""How an ATen overload's schema maps onto an IRDL op: the one policy behind every `aten` op.

Tensor arguments become operands (`Tensor?` optional, `Tensor[]` variadic); every other argument
(ints, floats, lists, dtypes, devices, ...) becomes a property, stored only when it differs from the
schema default. The same `Signature` drives op definition, the custom syntax, the importer's argument
binding, the reference interpreter's call and shape verification, so they cannot disagree.

A Signature is built from a schema *entry* (`schema_entry`: the schema text, each argument's name,
type, default and kwarg-only flag, the return types and the tags Forge reads), which
scripts/gen_aten_ops.py writes into dialects/aten_table.py: defining the dialect needs no torch.
The overload itself (`Signature.target`) is looked up in `torch.ops` on first use.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import Enum, auto
from functools import cached_property
from typing import Any

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

from dialects.torch_types import ELEMENT_TYPES, element_type, is_dtype_attr, torch_dtype

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


ArgEntry = tuple[str, str, bool, bool, Any]
"""One schema argument as the table stores it: name, type (`Optional[List[int]]`), kwarg-only,
has a default, the default (a Python int/float/bool/str/list or None)."""

SchemaEntry = tuple[str, tuple[ArgEntry, ...], tuple[str, ...], tuple[str, ...]]
"""One overload as the table stores it: its schema text, arguments, return types and tags
(`pointwise`, `nondeterministic_seeded`, `mutable`: the ones Forge reads)."""

ENTRY_TAGS = ("pointwise", "nondeterministic_seeded")
"""The torch tags a schema entry records (plus `mutable` for `_schema.is_mutable`)."""


@dataclass(frozen=True)
class Signature:
    """The parsed schema of one overload (or of a Forge op written like one)."""

    qualname: str  # "aten::view.default", "forge::fused_linear.default"
    args: tuple[ArgSpec, ...]
    result_fields: tuple[str, ...]
    variadic_result: bool
    schema: str = ""  # the schema text, `aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)`
    tags: frozenset[str] = frozenset()

    @cached_property
    def target(self) -> Any:
        """The callable that gives the op its semantics (a torch OpOverload; imports torch)."""
        return resolve_overload(self.qualname)

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


NOT_BROADCASTING = frozenset({"masked_fill", "masked_scatter"})
"""Pointwise-tagged ATen ops whose result has the shape of `self` rather than the broadcast of
every operand (a mask may broadcast to `self`, not the other way round)."""

UNTAGGED_POINTWISE = frozenset({"where", "__and__", "__or__"})
"""Broadcasting elementwise packets some of whose overloads torch does not tag `pointwise`."""


def is_elementwise(sig: Signature) -> bool:
    """Whether the op's result is the broadcast of its operands with a promoted dtype."""
    packet = sig.qualname.split("::")[1].rpartition(".")[0]
    pointwise = "pointwise" in sig.tags or packet in UNTAGGED_POINTWISE
    return pointwise and packet not in NOT_BROADCASTING and len(sig.result_fields) == 1


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


def qualified_name(target: Any) -> str:
    """`aten::view.default` for torch.ops.aten.view.default."""
    return f"{target._schema.name}.{target._overloadname}"


def resolve_overload(qualname: str) -> Any:
    """The torch OpOverload named `aten::packet.overload` (imports torch; `forge::` ops are registered
    by dialects/fused_kernels.py)."""
    import torch

    namespace, _, name = qualname.partition("::")
    packet, _, overload = name.rpartition(".")
    if namespace == "forge":
        import dialects.fused_kernels  # noqa: F401  (registers the forge custom ops)
    return getattr(getattr(getattr(torch.ops, namespace), packet), overload)


def schema_entry(target: Any) -> SchemaEntry:
    """What the table stores of an overload's schema (scripts/gen_aten_ops.py; needs the live overload)."""
    schema = target._schema
    args = tuple(_arg_entry(a) for a in schema.arguments)
    tags = tuple(t for t in ENTRY_TAGS if any(tag.name == t for tag in target.tags))
    if schema.is_mutable:
        tags = (*tags, "mutable")
    return str(schema), args, tuple(str(r.type) for r in schema.returns), tags


def _arg_entry(arg: Any) -> ArgEntry:
    has_default = arg.has_default_value()
    return arg.name, str(arg.real_type), arg.kwarg_only, has_default, arg.default_value if has_default else None


def parse_signature(target: Any, reserved: set[str]) -> Signature:
    """The Signature of a torch OpOverload from its live schema."""
    return signature(qualified_name(target), schema_entry(target), reserved)


def signature(qualname: str, entry: SchemaEntry, reserved: set[str]) -> Signature:
    """The Signature of the overload `qualname` from its schema entry (no torch needed)."""
    text, arg_entries, returns, tags = entry
    taken: set[str] = set()
    args = []
    for arg_name, type_str, kwarg_only, has_value, value in arg_entries:
        kind, optional = _kind_of(type_str)
        name = field_name(arg_name, taken, reserved)
        taken.add(name)
        # An optional non-tensor argument without a default (`float[]? scale_factors`) may be None:
        # absent means None, as for a `= None` default.
        has_default = has_value or (optional and not kind.is_tensor)
        args.append(ArgSpec(arg_name, name, kind, optional, has_default, value if has_value else None, kwarg_only))
    extra = {"schema": text, "tags": frozenset(tags)}
    if list(returns) == ["List[Tensor]"]:
        return Signature(qualname, tuple(args), ("results_",), True, **extra)
    if any(r != "Tensor" for r in returns):
        raise SchemaError(f"unsupported return types {list(returns)}")
    fields = ("result",) if len(returns) == 1 else tuple(f"result{i}" for i in range(len(returns)))
    return Signature(qualname, tuple(args), fields if returns else (), False, **extra)


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
        import torch

        return torch.device(attr.data)
    if kind in (ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT):
        assert isinstance(attr, StringAttr)
        import torch

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
        return isinstance(attr, StringAttr) and attr.data in LAYOUTS_AND_MEMORY_FORMATS
    return True


LAYOUTS_AND_MEMORY_FORMATS = frozenset({
    "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged",
    "contiguous_format", "legacy_contiguous_format", "preserve_format", "channels_last", "channels_last_3d",
})  # fmt: skip
"""The names of torch's `torch.layout` and `torch.memory_format` values (a property stores the name;
tests/dialects/test_aten_shapes.py checks this set is torch's)."""

_DEVICE = re.compile(r"(cpu|meta|cuda)(:(0|[1-9][0-9]*))?")


def _is_device(text: str) -> bool:
    """Whether torch.device accepts `text`: the common spellings without torch, the rest asks torch."""
    if _DEVICE.fullmatch(text):
        return True
    import torch

    try:
        torch.device(text)
    except RuntimeError:
        return False
    return True


SCALAR_TYPE_NAMES = (
    "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
    None, None, None, "bool", None, None, None, "bfloat16",
)  # fmt: skip
"""The dtype named by each c10 ScalarType code a schema default may hold (`randperm`'s dtype=4 is
int64); None for the ones Forge does not represent."""
MEMORY_FORMAT_NAMES = ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d")
LAYOUT_NAMES = ("strided", "sparse_coo", "sparse_csr", "_mkldnn", "sparse_csc", "sparse_bsr", "sparse_bsc", "jagged")
"""The names of c10's MemoryFormat and Layout codes, in code order (schema defaults hold codes)."""


def default_ir_value(spec: ArgSpec) -> Any:
    """The schema default of a dtype, device, layout or memory-format argument as the IR states such a
    value (`AtenOp.ir_arg`): an element type or a name, None when the default is None; no torch."""
    default = spec.default if spec.has_default else None
    if not isinstance(default, int) or isinstance(default, bool):
        return default
    if spec.kind is ArgKind.DTYPE:
        return ELEMENT_TYPES[SCALAR_TYPE_NAMES[default]]
    names = MEMORY_FORMAT_NAMES if spec.kind is ArgKind.MEMORY_FORMAT else LAYOUT_NAMES
    return names[default]


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
