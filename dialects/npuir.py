"""The `npuir` dialect: the typed, backend-oriented IR between `aten` and `buffer`.

Fewer, coarser ops than `aten`: a linear layer with its activation fused in, matmul, attention,
norms, four elementwise families (unary, binary, compare, select), reductions and data movement,
plus `npuir.aten`, a host-only fallback that runs an `aten` op unchanged (for what has no family).
Every op has one ranked `tensor<...>` result and two common properties:

- `device`: where the op runs, `npu` or `cpu` (`#npuir<device npu>` in generic form);
- `vreg`: the virtual register its result defines (numbered in program order by the lowering).

Axes are non-negative (the lowering normalizes torch's negative dims), integer lists are
`array<i64: ...>`, flags are `i1`, floats are `f64`. All ops are `Pure`. Note that `vreg` is a
property, so CSE never merges two npuir ops: optimize at the `aten` level.

Custom syntax, one shape for every op (properties equal to their default are left out):

    %0 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x128xi64>
    %1 = npuir.weight npu {name = "h.0.mlp.c_fc.weight", vreg = 1} : tensor<3072x768xf32>
    %3 = npuir.linear npu %x, %w, %b {activation = gelu_tanh, vreg = 3}
           : (tensor<1x128x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<1x128x3072xf32>
    %4 = npuir.transpose npu %3 {perm = [0, 2, 1], vreg = 4} : (tensor<1x128x3072xf32>) -> tensor<1x3072x128xf32>

Verification of each op kind is a classmethod `check(ins, out, params)` on operand/result types and
properties only, so `buffer.exec` (which names an npuir kind and carries its properties) reuses it.

Helpers for the lowering and backends: `npuir_kinds()`, `op_class()`, `op_params()`,
`make_params()`, `tensor_bytes()`, `broadcast_shapes()`, `Params`, and `NpuirOp.make()`
(builds an op from plain Python values with `Operation.create`).
"""

# Why one module of ~1,500 lines: one dialect per file (docs/architecture.md). Its op classes are the
# verifiers of the npuir kinds and share the parameter and syntax machinery above them; what a kind
# computes, costs and becomes on a device lives in the kind table (forge/kinds), not here.

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    I64,
    BoolAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.interfaces import HasFolderInterface
from xdsl.ir import Attribute, Block, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AttrConstraint,
    IRDLOperation,
    OptOperandDef,
    OptPropertyDef,
    VarOperandDef,
    VerificationContext,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from dialects.shapes import broadcast_shapes, fmt_shape
from dialects.windows import pool_out_size

# ===================================================================================== enums


class Device(StrEnum):
    NPU = "npu"
    CPU = "cpu"


class Activation(StrEnum):
    NONE = "none"
    RELU = "relu"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    SILU = "silu"
    SIGMOID = "sigmoid"
    RELU6 = "relu6"


class UnaryKind(StrEnum):
    NEG = "neg"
    EXP = "exp"
    LOG = "log"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    TANH = "tanh"
    SIGMOID = "sigmoid"
    RELU = "relu"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    SILU = "silu"
    SIN = "sin"
    COS = "cos"
    ABS = "abs"
    ERF = "erf"
    LOG1P = "log1p"
    RECIPROCAL = "reciprocal"
    NOT = "not"


class BinaryKind(StrEnum):
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    POW = "pow"
    MAX = "max"
    MIN = "min"
    AND = "and"
    OR = "or"


class CompareKind(StrEnum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"


class ReduceKind(StrEnum):
    SUM = "sum"
    MEAN = "mean"
    MAX = "max"
    MIN = "min"


@irdl_attr_definition
class DeviceAttr(EnumAttribute[Device], SpacedOpaqueSyntaxAttribute):
    """Where an op runs or a buffer lives: `#npuir<device npu>`, `npu` in custom syntax."""

    name = "npuir.device"


@irdl_attr_definition
class ActivationAttr(EnumAttribute[Activation], SpacedOpaqueSyntaxAttribute):
    name = "npuir.activation"


@irdl_attr_definition
class UnaryKindAttr(EnumAttribute[UnaryKind], SpacedOpaqueSyntaxAttribute):
    name = "npuir.unary_kind"


@irdl_attr_definition
class BinaryKindAttr(EnumAttribute[BinaryKind], SpacedOpaqueSyntaxAttribute):
    name = "npuir.binary_kind"


@irdl_attr_definition
class CompareKindAttr(EnumAttribute[CompareKind], SpacedOpaqueSyntaxAttribute):
    name = "npuir.compare_kind"


@irdl_attr_definition
class ReduceKindAttr(EnumAttribute[ReduceKind], SpacedOpaqueSyntaxAttribute):
    name = "npuir.reduce_kind"


NPU = DeviceAttr(Device.NPU)
CPU = DeviceAttr(Device.CPU)
FALSE = IntegerAttr(0, i1)
TRUE = IntegerAttr(1, i1)

# ============================================================================ shape helpers


def tensor_bytes(ty: Attribute) -> int:
    """Bytes needed to hold a static tensor of type `ty` (i1 takes a byte per element)."""
    if not isinstance(ty, TensorType):
        raise ValueError(f"expected a tensor type, got {ty}")
    shape = ty.get_shape()
    if DYNAMIC_INDEX in shape:
        raise ValueError(f"tensor_bytes: {ty} has a dynamic shape")
    bits = _element_bits(ty.element_type)
    return (math.prod(shape) * bits + 7) // 8


def _element_bits(element: Attribute) -> int:
    if isinstance(element, IntegerType):
        width = element.width.data
        return 8 if width == 1 else width
    if isinstance(element, IndexType):
        return 64
    bitwidth = getattr(element, "bitwidth", None)
    if not isinstance(bitwidth, int):
        raise ValueError(f"element type {element} has no fixed bit width")
    return bitwidth


def _dims_agree(a: int, b: int) -> bool:
    return a == b or a == DYNAMIC_INDEX or b == DYNAMIC_INDEX


def _shapes_agree(a: Sequence[int], b: Sequence[int]) -> bool:
    return len(a) == len(b) and all(map(_dims_agree, a, b))


def _broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether `shape` numpy-broadcasts to exactly `target`."""
    # Trailing dims align; target's extra leading dims are what `shape` broadcasts into.
    return len(shape) <= len(target) and all(
        s == 1 or _dims_agree(s, t) for s, t in zip(reversed(shape), reversed(target), strict=False)
    )


def _is_bool(element: Attribute) -> bool:
    return element == i1


def _is_int(element: Attribute) -> bool:
    return isinstance(element, IntegerType | IndexType)


def _is_float(element: Attribute) -> bool:
    return not _is_int(element)


def _same_element(what: str, types: Mapping[str, TensorType]) -> None:
    """All `types` share one element type, else 'element types differ: lhs f32, rhs f16'."""
    elements = {t.element_type for t in types.values()}
    if len(elements) > 1:
        listed = ", ".join(f"{k} {t.element_type}" for k, t in types.items())
        raise VerifyException(f"{what} differ: {listed}")


def _expect_result(out: TensorType, shape: Sequence[int], element: Attribute) -> None:
    if not _shapes_agree(out.get_shape(), shape) or out.element_type != element:
        expected = TensorType(element, shape)
        raise VerifyException(f"result type {out} does not match expected {expected}")


def _check_axis(axis: int, rank: int, what: str = "axis") -> None:
    if not 0 <= axis < rank:
        raise VerifyException(f"{what} {axis} out of range for rank {rank}")


# ================================================================================ properties


def _unique_base(constr: AttrConstraint) -> type[Attribute] | None:
    bases = constr.get_bases()
    return next(iter(bases)) if bases is not None and len(bases) == 1 else None


def make_params(op_cls: type[NpuirOp], **values: Any) -> dict[str, Attribute]:
    """Parameter attributes of kind `op_cls` from plain values (None values are skipped):
    `make_params(TransposeOp, perm=[0, 2, 1])`. Attributes pass through unchanged."""
    defs = param_defs(op_cls)
    params: dict[str, Attribute] = {}
    for key, value in values.items():
        if key not in defs:
            raise TypeError(f"{op_cls.name} has no parameter '{key}'")
        if value is not None:
            params[key] = _to_attr(defs[key], value)
    return params


def _to_attr(constr: AttrConstraint, value: Any) -> Attribute:
    """The property attribute for a plain Python value (str enum, bool, int, float, str, ints)."""
    if isinstance(value, Attribute):
        return value
    base = _unique_base(constr)
    if base is not None and issubclass(base, EnumAttribute):
        return base(base.enum_type(value))
    if isinstance(value, bool):
        return TRUE if value else FALSE
    if base is FloatAttr:
        return FloatAttr(float(value), f64)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, list | tuple):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    raise TypeError(f"cannot turn {value!r} into a property")


class Params:
    """The properties of an npuir op kind, defaults filled in: what `check` reads.

    Built from an op (`Params.of(op)`) or from a `buffer.exec`'s parameter dictionary.
    """

    def __init__(self, op_cls: type[NpuirOp], props: Mapping[str, Attribute]):
        self.op_cls = op_cls
        self.props = props

    @staticmethod
    def of(op: NpuirOp) -> Params:
        return Params(type(op), op.properties)

    def attr(self, name: str) -> Attribute | None:
        if name in self.props:
            return self.props[name]
        prop = self.op_cls.get_irdl_definition().properties[name]
        return prop.default_value

    def get_int(self, name: str) -> int:
        attr = self.attr(name)
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    def get_ints(self, name: str) -> tuple[int, ...]:
        attr = self.attr(name)
        assert isinstance(attr, DenseArrayBase)
        return tuple(int(v) for v in attr.get_values())

    def get_flag(self, name: str) -> bool:
        return bool(self.get_int(name))

    def get_float(self, name: str) -> float | None:
        attr = self.attr(name)
        return attr.value.data if isinstance(attr, FloatAttr) else None

    def get_str(self, name: str) -> str:
        attr = self.attr(name)
        if isinstance(attr, EnumAttribute):
            return str(attr.data.value)
        assert isinstance(attr, StringAttr)
        return attr.data


COMMON_PROPS = ("device", "vreg")
"""Properties every npuir op has; the others are its kind's parameters (`op_params`)."""


def param_defs(op_cls: type[NpuirOp]) -> dict[str, AttrConstraint]:
    """The parameters of an op kind (its properties other than device and vreg) and constraints."""
    props = op_cls.get_irdl_definition().properties
    return {k: p.constr for k, p in props.items() if k not in COMMON_PROPS}


def verify_params(op_cls: type[NpuirOp], params: Mapping[str, Attribute]) -> None:
    """VerifyException unless `params` are valid parameters of `op_cls` (used by buffer.exec)."""
    props = op_cls.get_irdl_definition().properties
    for key, value in params.items():
        if key in COMMON_PROPS or key not in props:
            raise VerifyException(f"unknown parameter '{key}' for {op_cls.mnemonic()}")
        try:
            props[key].constr.verify(value, VerificationContext())
        except VerifyException:
            raise VerifyException(f"invalid value {value} for parameter '{key}'") from None
    for key, prop in props.items():
        if key in COMMON_PROPS or key in params:
            continue
        if prop.default_value is None and not isinstance(prop, OptPropertyDef):
            raise VerifyException(f"missing parameter '{key}'")


def op_params(op: NpuirOp) -> dict[str, Attribute]:
    """An op's kind parameters (its properties other than device and vreg), e.g. for buffer.exec."""
    return {k: v for k, v in op.properties.items() if k not in COMMON_PROPS}


# --------------------------------------------------------------- the `{key = value}` dictionary


def print_params(
    printer: Printer,
    op_cls: type[NpuirOp],
    props: Mapping[str, Attribute],
    extra: Mapping[str, Attribute] = {},
) -> None:
    """Print ` {activation = gelu, perm = [0, 2, 1]}`: enums bare, i64 arrays in brackets,
    defaults left out, `vreg` last, then `extra` (discardable attributes) in generic form."""
    defs = op_cls.get_irdl_definition().properties
    keys = [k for k, p in defs.items() if k in props and props[k] != p.default_value]
    keys = [k for k in keys if k not in COMMON_PROPS] + (["vreg"] if "vreg" in props else [])
    # A value that breaks its constraint (IR that does not verify) prints in generic form.
    entries = [(k, props[k], _satisfies(defs[k].constr, props[k])) for k in keys]
    entries.extend((k, v, False) for k, v in props.items() if k not in defs)
    entries.extend((k, v, False) for k, v in extra.items())
    if not entries:
        return
    printer.print_string(" {")

    def entry(item: tuple[str, Attribute, bool]) -> None:
        key, value, short = item
        printer.print_identifier_or_string_literal(key)
        printer.print_string(" = ")
        if short:
            _print_short(printer, value)
        else:
            printer.print_attribute(value)

    printer.print_list(entries, entry)
    printer.print_string("}")


def _satisfies(constr: AttrConstraint, value: Attribute) -> bool:
    try:
        constr.verify(value, VerificationContext())
    except VerifyException:
        return False
    return True


def _print_short(printer: Printer, value: Attribute) -> None:
    if isinstance(value, EnumAttribute):
        printer.print_string(str(value.data.value))
    elif isinstance(value, IntegerAttr) and value.type in (i1, i64):
        printer.print_int(value.value.data, value.type)
    elif isinstance(value, FloatAttr) and isinstance(value.type, Float64Type):
        if math.isfinite(value.value.data):
            printer.print_float(value.value.data, value.type)
        else:  # inf/nan print as bits, which need the `: f64` to read back as a float
            printer.print_attribute(value)
    elif isinstance(value, DenseArrayBase) and value.elt_type == i64:
        printer.print_string("[")
        printer.print_list(value.get_values(), lambda v: printer.print_string(str(v)))
        printer.print_string("]")
    else:
        printer.print_attribute(value)


def parse_params(
    parser: Parser, op_cls: type[NpuirOp]
) -> tuple[dict[str, Attribute], dict[str, Attribute]]:
    """Parse what `print_params` prints: (properties, discardable attributes)."""
    defs = op_cls.get_irdl_definition().properties
    props: dict[str, Attribute] = {}
    attrs: dict[str, Attribute] = {}

    def entry() -> None:
        pos = parser.pos
        key = parser.parse_identifier_or_str_literal()
        if key in props or key in attrs:
            parser.raise_error(f"duplicate key '{key}'", pos, parser.pos)
        parser.parse_punctuation("=")
        if key in defs:
            value_pos = parser.pos
            try:
                props[key] = _parse_short(parser, defs[key].constr)
            except ValueError as e:  # e.g. an integer out of range for i64
                parser.raise_error(f"invalid value for '{key}': {e}", value_pos, parser.pos)
        else:
            attrs[key] = parser.parse_attribute()

    parser.parse_optional_comma_separated_list(Parser.Delimiter.BRACES, entry)
    return props, attrs


def _parse_short(parser: Parser, constr: AttrConstraint) -> Attribute:
    """A value in the short form of its constraint's base, else any attribute."""
    base = _unique_base(constr)
    if base is not None and issubclass(base, EnumAttribute):
        if (value := parser.parse_optional_str_enum(base.enum_type)) is not None:
            return base(value)
    if base is IntegerAttr:
        if (flag := parser.parse_optional_boolean()) is not None:
            return TRUE if flag else FALSE
        if (number := parser.parse_optional_integer(allow_boolean=False)) is not None:
            if parser.parse_optional_punctuation(":") is not None:  # `3 : i32`, generic form
                return IntegerAttr(number, parser.parse_type())  # pyright: ignore
            return IntegerAttr(number, i64)
    if base is FloatAttr:
        value = parser.parse_attribute()  # `0.125`, `1`, or `0x7FF0000000000000 : f64`
        return FloatAttr(float(value.value.data), f64) if isinstance(value, IntegerAttr) else value
    if base is DenseArrayBase and parser.parse_optional_punctuation("[") is not None:
        values: list[int] = []
        if parser.parse_optional_punctuation("]") is None:
            values.append(parser.parse_integer(allow_boolean=False))
            while parser.parse_optional_punctuation(",") is not None:
                values.append(parser.parse_integer(allow_boolean=False))
            parser.parse_punctuation("]")
        return DenseArrayBase.from_list(i64, values)
    return parser.parse_attribute()


# ===================================================================================== base


class NpuirOp(IRDLOperation, ABC):
    """Base of every npuir op: device, vreg, one tensor result, one custom syntax."""

    device = prop_def(DeviceAttr)
    vreg = prop_def(IntegerAttr[I64])
    result = result_def(TensorType)

    traits = traits_def(Pure())

    CPU_ONLY: ClassVar[bool] = False
    """Kinds only the host can run (the aten fallback): the verifier rejects them on the npu."""

    @classmethod
    def mnemonic(cls) -> str:
        """The op kind: its name without `npuir.` ('linear'), what buffer.exec names."""
        return cls.name.removeprefix("npuir.")

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        """Check operand/result types against the parameters; raise VerifyException (message
        without the op name). Operands come flattened, optional ones only when present."""

    @classmethod
    def arity(cls) -> tuple[int, int | None]:
        """(min, max) operand count of the kind; max None when variadic."""
        lo, hi = 0, 0
        for _, operand in cls.get_irdl_definition().operands:
            if isinstance(operand, OptOperandDef):
                hi = None if hi is None else hi + 1
            elif isinstance(operand, VarOperandDef):
                hi = None
            else:
                lo += 1
                hi = None if hi is None else hi + 1
        return lo, hi

    def verify_(self) -> None:
        if self.vreg.value.data < 0:
            raise VerifyException(f"{self.name}: vreg {self.vreg.value.data} is negative")
        ins: list[TensorType] = [o.type for o in self.operands]  # pyright: ignore
        try:
            self.check(ins, self.result.type, Params.of(self))
        except VerifyException as err:
            raise VerifyException(f"{self.name}: {err}") from None

    @classmethod
    def make(
        cls,
        operands: Sequence[SSAValue],
        result_type: Attribute,
        device: str | Device | DeviceAttr,
        vreg: int,
        **params: Any,
    ) -> NpuirOp:
        """Build an op from plain values: `LinearOp.make([x, w], t, "npu", 3, activation="gelu")`.

        Uses `Operation.create` (cheaper than IRDL init); defaults are filled in.
        """
        props = make_params(cls, **params)
        props["device"] = device if isinstance(device, DeviceAttr) else _device_attr(Device(device))
        props["vreg"] = _i64_attr(vreg)
        return cls.create(operands=operands, result_types=[result_type], properties=props)

    # ---------------------------------------------------------------------------- syntax

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string(self.device.data.value)
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        print_params(printer, type(self), self.properties, self.attributes)
        printer.print_string(" : ")
        if self.operands:
            printer.print_function_type(self.operand_types, self.result_types)
        else:
            printer.print_attribute(self.result.type)

    @classmethod
    def parse(cls, parser: Parser) -> NpuirOp:
        device = _device_attr(parser.parse_str_enum(Device))
        unresolved: list[UnresolvedOperand] = (
            parser.parse_optional_undelimited_comma_separated_list(
                parser.parse_optional_unresolved_operand, parser.parse_unresolved_operand
            )
            or []
        )
        props, attrs = parse_params(parser, cls)
        props["device"] = device
        parser.parse_punctuation(":")
        pos = parser.pos
        if unresolved:
            ftype = parser.parse_function_type()
            operands = parser.resolve_operands(unresolved, ftype.inputs.data, pos)
            result_types = ftype.outputs.data
        else:
            operands, result_types = [], [parser.parse_type()]
        if len(result_types) != 1:
            parser.raise_error(f"{cls.name} has exactly one result", pos, parser.pos)
        return cls.create(
            operands=operands, result_types=result_types, properties=props, attributes=attrs
        )


@cache
def _device_attr(device: Device) -> DeviceAttr:
    return DeviceAttr(device)


@cache
def _i64_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


# ================================================================================== sources


class SourceOp(NpuirOp, ABC):
    """A value that enters the program: a graph input, a weight or a small constant."""


@irdl_op_definition
class InputOp(SourceOp):
    """Graph input number `index`."""

    name = "npuir.input"
    index = prop_def(IntegerAttr[I64])

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        if p.get_int("index") < 0:
            raise VerifyException(f"input index {p.get_int('index')} is negative")


@irdl_op_definition
class WeightOp(SourceOp):
    """A WeightStore entry, by name: weights never appear in the IR."""

    name = "npuir.weight"
    weight_name = prop_def(StringAttr, prop_name="name")

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        if not p.get_str("name"):
            raise VerifyException("weight name is empty")


@irdl_op_definition
class ConstantOp(SourceOp, HasFolderInterface):
    """A small inline value (masks, scalars); large tensors are weights."""

    name = "npuir.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    traits = traits_def(Pure(), ConstantLike())

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        value = p.attr("value")
        assert isinstance(value, DenseIntOrFPElementsAttr)
        if value.get_type() != out:
            raise VerifyException(f"value type {value.get_type()} does not match result type {out}")

    def fold(self) -> Sequence[SSAValue | Attribute] | None:
        return (self.value,)


# ================================================================================== compute


class ComputeOp(NpuirOp, ABC):
    """An op that computes new values (as opposed to moving data)."""


def _contract(
    what: str, a_name: str, a_k: int, b_name: str, b_k: int
) -> None:
    if not _dims_agree(a_k, b_k):
        raise VerifyException(f"{what} dims differ: {a_name} K={a_k}, {b_name} K={b_k}")


def _check_rank(name: str, ty: TensorType, lo: int, hi: int | None = None) -> None:
    rank = ty.get_num_dims()
    if rank < lo or (hi is not None and rank > hi):
        want = f"{lo}" if hi == lo else f">= {lo}" if hi is None else f"{lo}..{hi}"
        raise VerifyException(f"{name} rank {rank}, expected {want}")


@irdl_op_definition
class MatmulOp(ComputeOp):
    """Batched matrix product: op(lhs)[..., M, K] x op(rhs)[..., K, N], batch dims broadcast."""

    name = "npuir.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    transpose_a = prop_def(BoolAttr, default_value=FALSE)
    transpose_b = prop_def(BoolAttr, default_value=FALSE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        lhs, rhs = ins
        _check_rank("lhs", lhs, 2)
        _check_rank("rhs", rhs, 2)
        _same_element("element types", {"lhs": lhs, "rhs": rhs})
        a, b = lhs.get_shape(), rhs.get_shape()
        m, lk = (a[-1], a[-2]) if p.get_flag("transpose_a") else (a[-2], a[-1])
        rk, n = (b[-1], b[-2]) if p.get_flag("transpose_b") else (b[-2], b[-1])
        _contract("contraction", "lhs", lk, "rhs", rk)
        batch = broadcast_shapes(a[:-2], b[:-2])
        _expect_result(out, (*batch, m, n), lhs.element_type)


def _check_weight(x: TensorType, w: TensorType, transpose_w: bool, w_name: str) -> int:
    """Check x[..., K] against a 2-D weight; return N."""
    _check_rank(w_name, w, 2, 2)
    n, k = w.get_shape() if transpose_w else reversed(w.get_shape())
    _contract("contraction", "x", x.get_shape()[-1], w_name, k)
    return n


@irdl_op_definition
class LinearOp(ComputeOp):
    """activation(x · wᵀ + bias). `transpose_w` (default) means w is [N, K] like torch's Linear;
    false means w is [K, N] (GPT-2's Conv1D)."""

    name = "npuir.linear"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    activation = prop_def(ActivationAttr, default_value=ActivationAttr(Activation.NONE))
    transpose_w = prop_def(BoolAttr, default_value=TRUE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        x, w, *bias = ins
        _check_rank("x", x, 1)
        _same_element("element types", {"x": x, "w": w, **({"bias": bias[-1]} if bias else {})})
        n = _check_weight(x, w, p.get_flag("transpose_w"), "w")
        for b in bias:
            if not _shapes_agree(b.get_shape(), (n,)):
                raise VerifyException(f"bias shape {fmt_shape(b.get_shape())} is not [{n}]")
        _expect_result(out, (*x.get_shape()[:-1], n), x.element_type)


@irdl_op_definition
class GatedMlpOp(ComputeOp):
    """activation(x · w_gateᵀ) * (x · w_upᵀ): the gated half of SwiGLU; the down projection is
    a separate linear. Weights are [N, K] unless `transpose_w` is false."""

    name = "npuir.gated_mlp"
    x = operand_def(TensorType)
    w_gate = operand_def(TensorType)
    w_up = operand_def(TensorType)
    activation = prop_def(ActivationAttr, default_value=ActivationAttr(Activation.SILU))
    transpose_w = prop_def(BoolAttr, default_value=TRUE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        x, w_gate, w_up = ins
        _check_rank("x", x, 1)
        _same_element("element types", {"x": x, "w_gate": w_gate, "w_up": w_up})
        if not _shapes_agree(w_gate.get_shape(), w_up.get_shape()):
            raise VerifyException(
                f"w_gate shape {fmt_shape(w_gate.get_shape())} differs from "
                f"w_up shape {fmt_shape(w_up.get_shape())}"
            )
        n = _check_weight(x, w_gate, p.get_flag("transpose_w"), "w_gate")
        _expect_result(out, (*x.get_shape()[:-1], n), x.element_type)


@irdl_op_definition
class SdpaOp(ComputeOp):
    """softmax(q · kᵀ · scale + mask) · v on [..., H, L, E] tensors. K/V may have fewer heads
    than Q (grouped-query attention). `scale` absent means 1/sqrt(E); the mask (i1: keep, or
    additive float) broadcasts to [..., Hq, L, S] and excludes `is_causal`."""

    name = "npuir.sdpa"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    scale = opt_prop_def(FloatAttr[Float64Type])
    is_causal = prop_def(BoolAttr, default_value=FALSE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        _check_attention(ins, out, p.get_flag("is_causal"), p.get_float("scale"))


def _check_attention(ins: Sequence[TensorType], out: TensorType, causal: bool, scale: float | None) -> None:
    """npuir.sdpa's checks (q, k, v, optional mask), shared with npuir.cached_sdpa."""
    q, k, v, *mask = ins
    for name, t in (("query", q), ("key", k), ("value", v)):
        _check_rank(name, t, 3)
    if not q.get_num_dims() == k.get_num_dims() == v.get_num_dims():
        raise VerifyException(
            f"ranks differ: query {q.get_num_dims()}, key {k.get_num_dims()}, "
            f"value {v.get_num_dims()}"
        )
    _same_element("element types", {"query": q, "key": k, "value": v})
    qs, ks, vs = q.get_shape(), k.get_shape(), v.get_shape()
    if not (_shapes_agree(qs[:-3], ks[:-3]) and _shapes_agree(ks[:-3], vs[:-3])):
        raise VerifyException(
            f"batch dims differ: query {fmt_shape(qs[:-3])}, key {fmt_shape(ks[:-3])}, "
            f"value {fmt_shape(vs[:-3])}"
        )
    hq, hkv = qs[-3], ks[-3]
    if not _dims_agree(ks[-3], vs[-3]):
        raise VerifyException(f"key heads {ks[-3]} differ from value heads {vs[-3]}")
    if DYNAMIC_INDEX not in (hq, hkv) and (hkv == 0 or hq % hkv):
        raise VerifyException(f"query heads {hq} not divisible by kv heads {hkv}")
    if not _dims_agree(qs[-1], ks[-1]):
        raise VerifyException(f"query head dim {qs[-1]} differs from key head dim {ks[-1]}")
    if not _dims_agree(ks[-2], vs[-2]):
        raise VerifyException(f"key length {ks[-2]} differs from value length {vs[-2]}")
    for m in mask:
        if causal:
            raise VerifyException("is_causal and an explicit mask are exclusive")
        if not (_is_bool(m.element_type) or m.element_type == q.element_type):
            raise VerifyException(
                f"mask element type {m.element_type} is neither i1 nor {q.element_type}"
            )
        scores = (*qs[:-1], ks[-2])
        if not _broadcasts_to(m.get_shape(), scores):
            raise VerifyException(
                f"mask shape {fmt_shape(m.get_shape())} does not broadcast to scores "
                f"{fmt_shape(scores)}"
            )
    if scale is not None and not math.isfinite(scale):
        raise VerifyException(f"scale {scale} is not finite")
    _expect_result(out, (*qs[:-1], vs[-1]), q.element_type)


@irdl_op_definition
class CachedSdpaOp(ComputeOp):
    """`sdpa(q, K, V, mask)` where K and V are a cache with new rows written at positions `index`
    (dim -2): `K = k_cache.index_copy(-2, index, k_new)`, the same for V. The op reads the cache as it
    was before the write, so the device never waits for (or copies) the updated cache: the KV-cache
    step of a decoder (`cached-attention` forms it from `sdpa(q, index_put(cache, ...), ...)`). Negative
    indices count from the end; a repeated index keeps its last row (the serial write's result). Heads,
    scale and mask as `npuir.sdpa` (no `is_causal`)."""

    name = "npuir.cached_sdpa"
    q = operand_def(TensorType)
    k_cache = operand_def(TensorType)
    v_cache = operand_def(TensorType)
    index = operand_def(TensorType)
    k_new = operand_def(TensorType)
    v_new = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    scale = opt_prop_def(FloatAttr[Float64Type])

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        q, k, v, index, k_new, v_new, *mask = ins
        _check_attention([q, k, v, *mask], out, False, p.get_float("scale"))
        if index.get_num_dims() != 1 or not _is_int(index.element_type) or _is_bool(index.element_type):
            raise VerifyException(f"index must be a 1-D integer tensor, got {index}")
        n = index.get_shape()[0]
        for name, held, new in (("k_new", k, k_new), ("v_new", v, v_new)):
            expected = (*held.get_shape()[:-2], n, held.get_shape()[-1])
            if not _shapes_agree(new.get_shape(), expected) or new.element_type != held.element_type:
                raise VerifyException(
                    f"{name} is {new}, expected {fmt_shape(expected)} of {held.element_type}"
                )


class _AxisOp(ComputeOp, ABC):
    """x -> same type, along `axis` (softmax, cumsum)."""

    x = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])

    FLOAT_ONLY: ClassVar[bool] = False

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        _check_axis(p.get_int("axis"), x.get_num_dims())
        if cls.FLOAT_ONLY and not _is_float(x.element_type):
            raise VerifyException(f"expects a float tensor, got {x.element_type}")
        _expect_result(out, x.get_shape(), x.element_type)


@irdl_op_definition
class SoftmaxOp(_AxisOp):
    name = "npuir.softmax"
    FLOAT_ONLY: ClassVar[bool] = True


@irdl_op_definition
class CumsumOp(_AxisOp):
    name = "npuir.cumsum"


class _NormOp(ComputeOp, ABC):
    """Normalize x over dims [axis, rank) (ONNX-style), then scale by weight and add bias.
    Affine operands have shape x.shape[axis:]."""

    x = operand_def(TensorType)
    affine = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])
    eps = prop_def(FloatAttr[Float64Type])

    AFFINE: ClassVar[tuple[str, ...]]

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        x, *affine = ins
        if len(affine) > len(cls.AFFINE):
            raise VerifyException(
                f"expects at most {len(cls.AFFINE)} affine operands "
                f"({', '.join(cls.AFFINE)}), got {len(affine)}"
            )
        axis = p.get_int("axis")
        _check_axis(axis, x.get_num_dims())
        if not _is_float(x.element_type):
            raise VerifyException(f"expects a float tensor, got {x.element_type}")
        eps = p.get_float("eps")
        if eps is None or not eps >= 0:
            raise VerifyException(f"eps {eps} is not a non-negative number")
        normalized = x.get_shape()[axis:]
        # Affine operands are optional trailing ones: `affine` may be shorter than AFFINE.
        for name, t in zip(cls.AFFINE, affine, strict=False):
            if not _shapes_agree(t.get_shape(), normalized):
                raise VerifyException(
                    f"{name} shape {fmt_shape(t.get_shape())} does not match normalized "
                    f"shape {fmt_shape(normalized)}"
                )
            _same_element("element types", {"x": x, name: t})
        _expect_result(out, x.get_shape(), x.element_type)

    @property
    def weight(self) -> SSAValue | None:
        return self.affine[0] if len(self.affine) > 0 else None

    @property
    def bias(self) -> SSAValue | None:
        return self.affine[1] if len(self.affine) > 1 else None


@irdl_op_definition
class LayerNormOp(_NormOp):
    """(x - mean) / sqrt(var + eps) * weight + bias; operands x, weight?, bias? (a bias needs a
    weight: the lowering passes ones when torch gives only a bias)."""

    name = "npuir.layer_norm"
    AFFINE: ClassVar[tuple[str, ...]] = ("weight", "bias")


@irdl_op_definition
class RmsNormOp(_NormOp):
    """x / sqrt(mean(x²) + eps) * weight; operands x, weight?."""

    name = "npuir.rms_norm"
    AFFINE: ClassVar[tuple[str, ...]] = ("weight",)


_INT_UNARY = {UnaryKind.NEG, UnaryKind.ABS, UnaryKind.RELU}


@irdl_op_definition
class UnaryOp(ComputeOp):
    """Elementwise `kind`(x). `not` takes i1; neg/abs/relu take ints or floats; others floats."""

    name = "npuir.unary"
    x = operand_def(TensorType)
    kind = prop_def(UnaryKindAttr)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        kind, elt = UnaryKind(p.get_str("kind")), x.element_type
        if kind is UnaryKind.NOT:
            ok = _is_bool(elt)
        elif kind in _INT_UNARY:
            ok = not _is_bool(elt)
        else:
            ok = _is_float(elt)
        if not ok:
            raise VerifyException(f"{kind} does not apply to element type {elt}")
        _expect_result(out, x.get_shape(), elt)


_LOGICAL = {BinaryKind.AND, BinaryKind.OR}


@irdl_op_definition
class BinaryOp(ComputeOp):
    """Elementwise `kind`(lhs, rhs) with numpy broadcasting; one element type throughout.
    and/or take integers or i1; arithmetic kinds do not take i1."""

    name = "npuir.binary"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    kind = prop_def(BinaryKindAttr)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        lhs, rhs = ins
        _same_element("element types", {"lhs": lhs, "rhs": rhs})
        kind, elt = BinaryKind(p.get_str("kind")), lhs.element_type
        if kind in _LOGICAL and not _is_int(elt):
            raise VerifyException(f"{kind} does not apply to element type {elt}")
        if kind not in _LOGICAL | {BinaryKind.MAX, BinaryKind.MIN} and _is_bool(elt):
            raise VerifyException(f"{kind} does not apply to element type {elt}")
        _expect_result(out, broadcast_shapes(lhs.get_shape(), rhs.get_shape()), elt)


@irdl_op_definition
class CompareOp(ComputeOp):
    """Elementwise comparison with broadcasting; the result is i1."""

    name = "npuir.compare"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    kind = prop_def(CompareKindAttr)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        lhs, rhs = ins
        _same_element("element types", {"lhs": lhs, "rhs": rhs})
        _expect_result(out, broadcast_shapes(lhs.get_shape(), rhs.get_shape()), i1)


@irdl_op_definition
class SelectOp(ComputeOp):
    """cond ? a : b elementwise, the three broadcast together; cond is i1."""

    name = "npuir.select"
    cond = operand_def(TensorType)
    a = operand_def(TensorType)
    b = operand_def(TensorType)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        cond, a, b = ins
        if not _is_bool(cond.element_type):
            raise VerifyException(f"condition element type {cond.element_type} is not i1")
        _same_element("element types", {"a": a, "b": b})
        shape = broadcast_shapes(cond.get_shape(), a.get_shape(), b.get_shape())
        _expect_result(out, shape, a.element_type)


@irdl_op_definition
class ReduceOp(ComputeOp):
    """`kind` over `axes` (sorted, unique); reduced dims are dropped unless `keepdims`."""

    name = "npuir.reduce"
    x = operand_def(TensorType)
    kind = prop_def(ReduceKindAttr)
    axes = prop_def(DenseArrayBase[I64])
    keepdims = prop_def(BoolAttr, default_value=FALSE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        axes, rank = p.get_ints("axes"), x.get_num_dims()
        if list(axes) != sorted(set(axes)) or any(not 0 <= a < rank for a in axes):
            raise VerifyException(
                f"axes {list(axes)} are not sorted unique axes of rank {rank}"
            )
        shape = x.get_shape()
        if p.get_flag("keepdims"):
            expected = tuple(1 if i in axes else d for i, d in enumerate(shape))
        else:
            expected = tuple(d for i, d in enumerate(shape) if i not in axes)
        _expect_result(out, expected, x.element_type)


# ============================================================================ data movement


class DataMovementOp(NpuirOp, ABC):
    """An op that moves or reinterprets data without arithmetic (a single input `x` unless
    stated otherwise)."""


class _MoveOneOp(DataMovementOp, ABC):
    x = operand_def(TensorType)


@irdl_op_definition
class ReshapeOp(_MoveOneOp):
    """Same elements, new shape (taken from the result type)."""

    name = "npuir.reshape"

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        _same_element("element types", {"input": x, "result": out})
        a, b = x.get_shape(), out.get_shape()
        if DYNAMIC_INDEX not in a and DYNAMIC_INDEX not in b and math.prod(a) != math.prod(b):
            raise VerifyException(
                f"element counts differ: input {fmt_shape(a)} has {math.prod(a)}, "
                f"result {fmt_shape(b)} has {math.prod(b)}"
            )


@irdl_op_definition
class TransposeOp(_MoveOneOp):
    """result.shape[i] = x.shape[perm[i]]."""

    name = "npuir.transpose"
    perm = prop_def(DenseArrayBase[I64])

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        perm, rank = p.get_ints("perm"), x.get_num_dims()
        if sorted(perm) != list(range(rank)):
            raise VerifyException(f"perm {list(perm)} is not a permutation of rank {rank}")
        shape = x.get_shape()
        _expect_result(out, tuple(shape[i] for i in perm), x.element_type)


@irdl_op_definition
class BroadcastOp(_MoveOneOp):
    """Numpy-broadcast x to the result shape (leading dims added, size-1 dims expanded)."""

    name = "npuir.broadcast"

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        _same_element("element types", {"input": x, "result": out})
        src, dst = x.get_shape(), out.get_shape()
        if not _broadcasts_to(src, dst):
            raise VerifyException(f"cannot broadcast {fmt_shape(src)} to {fmt_shape(dst)}")


@irdl_op_definition
class SliceOp(_MoveOneOp):
    """x[starts[i]:ends[i]:steps[i]] on every axis, with 0 <= start <= end <= dim, step >= 1
    (the lowering clamps and normalizes torch's bounds)."""

    name = "npuir.slice"
    starts = prop_def(DenseArrayBase[I64])
    ends = prop_def(DenseArrayBase[I64])
    steps = prop_def(DenseArrayBase[I64])

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        shape = x.get_shape()
        starts, ends, steps = p.get_ints("starts"), p.get_ints("ends"), p.get_ints("steps")
        if not len(starts) == len(ends) == len(steps) == len(shape):
            raise VerifyException(
                f"starts/ends/steps have {len(starts)}/{len(ends)}/{len(steps)} entries "
                f"for rank {len(shape)}"
            )
        expected: list[int] = []
        for axis, (start, end, step, dim) in enumerate(zip(starts, ends, steps, shape, strict=True)):
            bound = end if dim == DYNAMIC_INDEX else dim
            if step < 1 or not 0 <= start <= end <= bound:
                raise VerifyException(
                    f"axis {axis}: slice {start}:{end}:{step} is invalid for dim {dim}"
                )
            expected.append((end - start + step - 1) // step)
        _expect_result(out, expected, x.element_type)


@irdl_op_definition
class ConcatOp(DataMovementOp):
    """Concatenate the inputs along `axis`; other dims and element types agree."""

    name = "npuir.concat"
    inputs = var_operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        if not ins:
            raise VerifyException("expects at least one input")
        first, axis = ins[0], p.get_int("axis")
        rank = first.get_num_dims()
        _check_axis(axis, rank)
        _same_element("element types", {f"input {i}": t for i, t in enumerate(ins)})
        total = 0
        for i, t in enumerate(ins):
            shape = t.get_shape()
            if len(shape) != rank or not all(
                _dims_agree(a, b) for j, (a, b) in enumerate(zip(shape, first.get_shape(), strict=True)) if j != axis
            ):
                raise VerifyException(
                    f"input {i} shape {fmt_shape(shape)} does not match input 0 shape "
                    f"{fmt_shape(first.get_shape())} outside axis {axis}"
                )
            total = DYNAMIC_INDEX if DYNAMIC_INDEX in (total, shape[axis]) else total + shape[axis]
        expected = list(first.get_shape())
        expected[axis] = total
        _expect_result(out, expected, first.element_type)


@irdl_op_definition
class GatherOp(DataMovementOp):
    """Take slices of `data` along `axis` at `indices` (embedding lookup, index_select):
    result shape data[:axis] + indices + data[axis+1:]."""

    name = "npuir.gather"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        data, indices = ins
        axis = p.get_int("axis")
        _check_axis(axis, data.get_num_dims())
        if not _is_int(indices.element_type) or _is_bool(indices.element_type):
            raise VerifyException(f"indices element type {indices.element_type} is not an integer")
        shape = data.get_shape()
        expected = (*shape[:axis], *indices.get_shape(), *shape[axis + 1 :])
        _expect_result(out, expected, data.element_type)


@irdl_op_definition
class GatherElementsOp(DataMovementOp):
    """`torch.gather` / ONNX GatherElements: result[i][j][k] = data[i][indices[i][j][k]][k] for
    `axis` 1. data and indices have the same rank; off `axis`, each indices dim is at most data's
    (the result has the indices' shape)."""

    name = "npuir.gather_elements"
    data = operand_def(TensorType)
    indices = operand_def(TensorType)
    axis = prop_def(IntegerAttr[I64])

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        data, indices = ins
        axis = p.get_int("axis")
        _check_axis(axis, data.get_num_dims())
        if not _is_int(indices.element_type) or _is_bool(indices.element_type):
            raise VerifyException(f"indices element type {indices.element_type} is not an integer")
        ds, js = data.get_shape(), indices.get_shape()
        if len(ds) != len(js):
            raise VerifyException(f"indices rank {len(js)} differs from data rank {len(ds)}")
        for i, (d, j) in enumerate(zip(ds, js, strict=True)):
            if i != axis and DYNAMIC_INDEX not in (d, j) and j > d:
                raise VerifyException(f"indices dim {i} ({j}) exceeds data dim {i} ({d})")
        _expect_result(out, js, data.element_type)


@irdl_op_definition
class TopkOp(ComputeOp):
    """The indices of the `k` largest (or, not `largest`, smallest) elements of x along `axis`,
    ordered from the first pick (the values are a `gather_elements` of x at them). Ties go to the
    lower index; NaN counts as larger than every number (torch's order)."""

    name = "npuir.topk"
    x = operand_def(TensorType)
    k = prop_def(IntegerAttr[I64])
    axis = prop_def(IntegerAttr[I64])
    largest = prop_def(BoolAttr, default_value=TRUE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        axis, k = p.get_int("axis"), p.get_int("k")
        _check_axis(axis, x.get_num_dims())
        size = x.get_shape()[axis]
        if k < 0 or (size != DYNAMIC_INDEX and k > size):
            raise VerifyException(f"k {k} is not in [0, {size}] (the size of axis {axis})")
        if _is_bool(x.element_type):
            raise VerifyException("topk does not apply to i1")
        if not _is_int(out.element_type) or _is_bool(out.element_type):
            raise VerifyException(f"result element type {out.element_type} is not an integer")
        shape = list(x.get_shape())
        shape[axis] = k
        _expect_result(out, shape, out.element_type)


def _conv_out_dim(
    size: int, k: int, stride: int, begin: int, end: int, dilation: int, out_pad: int, transposed: bool
) -> int:
    """One spatial output dim of a (transposed) convolution (DYNAMIC_INDEX stays dynamic)."""
    if DYNAMIC_INDEX in (size, k):
        return DYNAMIC_INDEX
    span = dilation * (k - 1)
    if transposed:
        return (size - 1) * stride - begin - end + span + out_pad + 1
    return (size + begin + end - span - 1) // stride + 1


def _check_conv_params(p: Params, n: int) -> None:
    for key, low in (("stride", 1), ("dilation", 1), ("pads_begin", 0), ("pads_end", 0)):
        values = p.get_ints(key)
        if len(values) != n:
            raise VerifyException(f"{key} has {len(values)} entries for {n} spatial dims")
        if any(v < low for v in values):
            raise VerifyException(f"{key} {list(values)} has an entry below {low}")
    out_pad = p.get_ints("output_padding")
    if out_pad and not p.get_flag("transposed"):
        raise VerifyException("output_padding needs transposed")
    if out_pad and len(out_pad) != n:
        raise VerifyException(f"output_padding has {len(out_pad)} entries for {n} spatial dims")
    for o, s, d in zip(out_pad, p.get_ints("stride"), p.get_ints("dilation"), strict=False):
        if not 0 <= o < max(s, d):
            raise VerifyException(f"output_padding {list(out_pad)} is not below the stride or the dilation")
    if p.get_int("groups") < 1:
        raise VerifyException(f"groups {p.get_int('groups')} is below 1")


@irdl_op_definition
class ConvOp(ComputeOp):
    """N-d convolution (1 or 2 spatial dims) of x [N, C, *spatial] with w and an optional bias [O].

    w is [O, C/groups, *k] (torch's Conv layout), or [C, O/groups, *k] when `transposed`
    (ConvTranspose: the gradient of a convolution, with `output_padding` extra trailing
    elements). `pads_begin`/`pads_end` pad (or, transposed, crop) each spatial dim; a depthwise
    convolution is groups == C. `activation` is applied last (an epilogue, like a linear's)."""

    name = "npuir.conv"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    stride = prop_def(DenseArrayBase[I64])
    pads_begin = prop_def(DenseArrayBase[I64])
    pads_end = prop_def(DenseArrayBase[I64])
    dilation = prop_def(DenseArrayBase[I64])
    groups = prop_def(IntegerAttr[I64], default_value=IntegerAttr(1, i64))
    transposed = prop_def(BoolAttr, default_value=FALSE)
    output_padding = prop_def(DenseArrayBase[I64], default_value=DenseArrayBase.from_list(i64, []))
    activation = prop_def(ActivationAttr, default_value=ActivationAttr(Activation.NONE))

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        x, w, *bias = ins
        _check_rank("x", x, 3, 4)
        if w.get_num_dims() != x.get_num_dims():
            raise VerifyException(f"w rank {w.get_num_dims()} differs from x rank {x.get_num_dims()}")
        _same_element("element types", {"x": x, "w": w, **({"bias": bias[0]} if bias else {})})
        if not _is_float(x.element_type):
            raise VerifyException(f"expects float tensors, got {x.element_type}")
        n = x.get_num_dims() - 2
        _check_conv_params(p, n)
        groups, transposed = p.get_int("groups"), p.get_flag("transposed")
        xs, ws = x.get_shape(), w.get_shape()
        channels = ws[0] if transposed else ws[1] * groups
        out_channels = ws[1] * groups if transposed else ws[0]
        if DYNAMIC_INDEX not in (xs[1], channels) and xs[1] != channels:
            raise VerifyException(
                f"x has {xs[1]} channels but w {fmt_shape(ws)} with groups {groups} expects {channels}"
            )
        for what, count in (("input", channels), ("output", out_channels)):
            if count != DYNAMIC_INDEX and count % groups:
                raise VerifyException(f"{what} channels {count} are not divisible by groups {groups}")
        for b in bias:
            if not _shapes_agree(b.get_shape(), (out_channels,)):
                raise VerifyException(f"bias shape {fmt_shape(b.get_shape())} is not [{out_channels}]")
        out_pad = p.get_ints("output_padding") or (0,) * n
        spatial = [
            _conv_out_dim(*dims, transposed)
            for dims in zip(
                xs[2:], ws[2:], p.get_ints("stride"), p.get_ints("pads_begin"), p.get_ints("pads_end"),
                p.get_ints("dilation"), out_pad, strict=True,
            )
        ]
        if any(d != DYNAMIC_INDEX and d < 1 for d in spatial):
            raise VerifyException(f"output spatial dims {spatial} are not positive")
        _expect_result(out, (xs[0], out_channels, *spatial), x.element_type)


@irdl_op_definition
class PadOp(_MoveOneOp):
    """Constant padding: `pads_begin[i]` / `pads_end[i]` elements of `value` before / after
    axis i (a negative pad crops, as in torch's constant_pad_nd)."""

    name = "npuir.pad"
    pads_begin = prop_def(DenseArrayBase[I64])
    pads_end = prop_def(DenseArrayBase[I64])
    value = prop_def(FloatAttr[Float64Type], default_value=FloatAttr(0.0, f64))

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        shape = x.get_shape()
        begin, end = p.get_ints("pads_begin"), p.get_ints("pads_end")
        if not len(begin) == len(end) == len(shape):
            raise VerifyException(
                f"pads_begin/pads_end have {len(begin)}/{len(end)} entries for rank {len(shape)}"
            )
        expected = [
            DYNAMIC_INDEX if d == DYNAMIC_INDEX else d + b + e for d, b, e in zip(shape, begin, end, strict=True)
        ]
        if any(d != DYNAMIC_INDEX and d < 0 for d in expected):
            raise VerifyException(f"pads {list(begin)}/{list(end)} crop {fmt_shape(shape)} below zero")
        _expect_result(out, expected, x.element_type)


@irdl_op_definition
class ConvertOp(_MoveOneOp):
    """Change the element type (taken from the result type); the shape stays."""

    name = "npuir.convert"

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        if not _shapes_agree(x.get_shape(), out.get_shape()):
            raise VerifyException(
                f"shape changes from {fmt_shape(x.get_shape())} to {fmt_shape(out.get_shape())}"
            )


_POOL_KINDS = ("max", "avg")


@irdl_op_definition
class PoolOp(ComputeOp):
    """`kind` (max | avg) pooling over the last len(kernel) (1 or 2) dims of x, torch semantics:
    padding begin/end per dim (max pads with -inf, at most half the dilated kernel), `dilations`
    (max only; absent means 1), `ceil_mode`, and for avg `count_include_pad`."""

    name = "npuir.pool"
    x = operand_def(TensorType)
    kind = prop_def(StringAttr)
    kernel = prop_def(DenseArrayBase[I64])
    strides = prop_def(DenseArrayBase[I64])
    pads_begin = prop_def(DenseArrayBase[I64])
    pads_end = prop_def(DenseArrayBase[I64])
    dilations = opt_prop_def(DenseArrayBase[I64])
    ceil_mode = prop_def(BoolAttr, default_value=FALSE)
    count_include_pad = prop_def(BoolAttr, default_value=TRUE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        kind = p.get_str("kind")
        if kind not in _POOL_KINDS:
            raise VerifyException(f"kind '{kind}' is not one of {', '.join(_POOL_KINDS)}")
        if not _is_float(x.element_type):
            raise VerifyException(f"expects a float tensor, got {x.element_type}")
        kernel = p.get_ints("kernel")
        n = len(kernel)
        if n not in (1, 2):
            raise VerifyException(f"kernel {list(kernel)} has {n} dims, expected 1 or 2")
        _check_rank("x", x, n + 1, n + 2)
        dil = p.get_ints("dilations") if p.attr("dilations") is not None else (1,) * n
        lists = {"strides": p.get_ints("strides"), "pads_begin": p.get_ints("pads_begin"),
                 "pads_end": p.get_ints("pads_end"), "dilations": dil}
        for what, values in lists.items():
            if len(values) != n:
                raise VerifyException(f"{what} {list(values)} has {len(values)} entries for a {n}-d kernel")
        if kind == "avg" and any(d != 1 for d in dil):
            raise VerifyException(f"avg pooling takes no dilations, got {list(dil)}")
        shape = x.get_shape()
        expected = list(shape[:-n])
        for i, (size, k, s, pb, pe, d) in enumerate(
            zip(shape[-n:], kernel, *lists.values(), strict=True)
        ):
            if k < 1 or s < 1 or d < 1 or pb < 0 or pe < 0:
                raise VerifyException(f"dim {i}: kernel {k}, stride {s}, dilation {d}, pads {pb}/{pe} are invalid")
            if max(pb, pe) > (d * (k - 1) + 1) // 2:
                raise VerifyException(f"dim {i}: pads {pb}/{pe} exceed half the kernel extent {d * (k - 1) + 1}")
            if size == DYNAMIC_INDEX:
                expected.append(DYNAMIC_INDEX)
                continue
            o = pool_out_size(size, k, s, pb, pe, d, p.get_flag("ceil_mode"))
            if o < 1:
                raise VerifyException(f"dim {i}: input size {size} is smaller than the kernel extent")
            expected.append(o)
        _expect_result(out, expected, x.element_type)


_RESIZE_RANK = {"nearest": (3, 4), "linear": (3,), "bilinear": (4,)}


@irdl_op_definition
class ResizeOp(ComputeOp):
    """Upsampling (or downsampling) of the spatial dims of an [N, C, *spatial] tensor to the result's
    sizes, torch's `upsample_*` with output sizes (scale = input / output): `nearest` (1-D or 2-D,
    source index floor(dst * scale)), `linear` (1-D) or `bilinear` (2-D), with `align_corners`."""

    name = "npuir.resize"
    x = operand_def(TensorType)
    mode = prop_def(StringAttr)
    align_corners = prop_def(BoolAttr, default_value=FALSE)

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        (x,) = ins
        mode = p.get_str("mode")
        if mode not in _RESIZE_RANK:
            raise VerifyException(f"mode '{mode}' is not one of {', '.join(_RESIZE_RANK)}")
        if x.get_num_dims() not in _RESIZE_RANK[mode]:
            want = " or ".join(str(r) for r in _RESIZE_RANK[mode])
            raise VerifyException(f"{mode} resizes a rank-{want} [N, C, *spatial] tensor, got rank {x.get_num_dims()}")
        if mode == "nearest" and p.get_flag("align_corners"):
            raise VerifyException("align_corners applies to linear modes only")
        if not _is_float(x.element_type):
            raise VerifyException(f"expects a float tensor, got {x.element_type}")
        if out.get_num_dims() != x.get_num_dims() or any(d == 0 for d in out.get_shape()[2:]):
            raise VerifyException(f"result type {out} is not a non-empty resize of {x}")
        _expect_result(out, (*x.get_shape()[:2], *out.get_shape()[2:]), x.element_type)


# ============================================================================ aten fallback


@irdl_op_definition
class AtenCallOp(ComputeOp):
    """The generic host fallback: run the `aten` op named `op` (e.g. "aten.index.Tensor") with
    its properties `attrs` on the operands and take its result number `result_index`.

    For what has no npuir family (advanced indexing, integer division modes, random ops, ...):
    the semantics are exactly the aten op's, so lowering never fails on an op the CPU can run.
    Only on `cpu` (NNFactory cannot run it). Operands and `attrs` are the aten op's own (operand
    segment sizes and `present` masks included); the check runs the aten op's type inference.
    """

    name = "npuir.aten"
    inputs = var_operand_def(TensorType)
    target = prop_def(StringAttr, prop_name="op")
    attrs = prop_def(DictionaryAttr, default_value=DictionaryAttr({}))
    result_index = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, i64))

    CPU_ONLY: ClassVar[bool] = True

    @classmethod
    def check(cls, ins: Sequence[TensorType], out: TensorType, p: Params) -> None:
        name = p.get_str("op")
        attrs = p.attr("attrs")
        assert isinstance(attrs, DictionaryAttr)
        results = aten_call(name, attrs, tuple(ins)).result_types
        index = p.get_int("result_index")
        if not 0 <= index < len(results):
            raise VerifyException(f"result_index {index} out of range: {name} has {len(results)} results")
        if results[index] != out:
            raise VerifyException(f"result type {out} does not match {name} result {index} type {results[index]}")

    def verify_(self) -> None:
        super().verify_()
        if self.device.data is not Device.CPU:
            raise VerifyException(f"{self.name}: the aten fallback runs only on cpu, not {self.device.data.value}")


def _aten_class(name: str) -> Any:
    """The schema op class of `aten` op `name`, or None (built on first use: not the whole dialect)."""
    from dialects import aten  # lazy: only the fallback needs the aten dialect

    cls = aten.op_named(name)
    return cls if cls is not None and issubclass(cls, aten.AtenOp) else None


@lru_cache(maxsize=4096)
def aten_call(name: str, attrs: DictionaryAttr, in_types: tuple[Attribute, ...]) -> Any:
    """A detached `aten` op `name` with properties `attrs` on placeholder operands of
    `in_types`, verified, result types inferred: `aten_call(...).call(values)` runs it.
    VerifyException if the op is unknown or rejects the operands."""
    cls = _aten_class(name)
    if cls is None:
        raise VerifyException(f"unknown aten op '{name}'")
    args = Block(arg_types=in_types).args
    props = dict(attrs.data)
    try:
        probe = cls.create(operands=args, result_types=[], properties=props)
        op = cls.create(operands=args, result_types=probe.infer_result_types(), properties=props)
        op.verify()
    except VerifyException as err:
        raise VerifyException(str(err)) from None
    except Exception as err:  # malformed operand groups surface as assorted errors
        raise VerifyException(f"{name}: operands or attributes do not fit its schema ({err})") from None
    return op


# ================================================================================== dialect

_OPS: list[type[NpuirOp]] = [
    InputOp,
    WeightOp,
    ConstantOp,
    MatmulOp,
    LinearOp,
    GatedMlpOp,
    SdpaOp,
    CachedSdpaOp,
    SoftmaxOp,
    LayerNormOp,
    RmsNormOp,
    UnaryOp,
    BinaryOp,
    CompareOp,
    SelectOp,
    ReduceOp,
    CumsumOp,
    ReshapeOp,
    TransposeOp,
    BroadcastOp,
    SliceOp,
    ConcatOp,
    GatherOp,
    GatherElementsOp,
    TopkOp,
    ConvOp,
    PadOp,
    ConvertOp,
    AtenCallOp,
    PoolOp,
    ResizeOp,
]

_KINDS: dict[str, type[NpuirOp]] = {op.mnemonic(): op for op in _OPS}


def npuir_kinds() -> dict[str, type[NpuirOp]]:
    """Every npuir op kind ('linear', 'sdpa', ...) and its op class, in definition order."""
    return dict(_KINDS)


def op_class(kind: str) -> type[NpuirOp] | None:
    """The npuir op class of `kind` ('linear' -> LinearOp), or None."""
    return _KINDS.get(kind)


NPUIR = Dialect(
    "npuir",
    _OPS,
    [DeviceAttr, ActivationAttr, UnaryKindAttr, BinaryKindAttr, CompareKindAttr, ReduceKindAttr],
)
