"""The `buffer` dialect: explicit memory, the level whose allocation the FileCheck suite pins.

Three kinds of SSA values:

- arenas, typed `!buffer.arena<id, device, bytes>` and declared by `buffer.arena`: one block of
  memory per device that the memory plan places values in;
- physical buffers, typed `!buffer.buf<id, device, bytes>` and declared by `buffer.alloc`: either
  a view of an arena at a byte offset (`buffer.alloc %arena0[4096]`, the plan's placement; the
  offset is a multiple of `ALIGNMENT`) or, without an arena, memory of their own (a state's buffer);
- logical values, typed as plain `tensor<...>`: each one lives in the buffer it was written
  into (`into %b`), or outside the plan (graph inputs on the host; weights and constants,
  immutable and placed by the backend).

A **state** is a value that outlives a call (a KV cache): `buffer.state "name" in %b` is the value
state `name` holds when the function is entered, living in buffer %b; the function's last write
to %b is the state's value when it returns (an exec may write a state's buffer while reading the
value it replaces, as its first input: an in-place update). The executor keeps a state's buffer
across calls and shares it, by name, between the functions that name it (prefill and decode);
the memory plan never gives a state's buffer to another value. The value a state holds on entry is
read in place by an op on either device (no transfer: the runtime binds the state's memory, so an
attention on the npu reads the KV cache where it is and only the new rows cross, see
`lowering/cached_attention.py`).

    %b7 = buffer.alloc : !buffer.buf<7, cpu, 24576>
    %k = buffer.state "key_cache_0" in %b7 : tensor<1x4x24x64xf32> in !buffer.buf<7, cpu, 24576>
    %k2 = buffer.exec cpu aten(%k, %pos, %new) into %b7 {op = "aten.index_put", ...} : ...

Ops run in destination-passing style: `buffer.exec` runs one npuir op kind on logical values and
writes its result into a buffer, `buffer.transfer` copies a value into a buffer on the other
device. The op order is the schedule. A buffer may hold several values over time, and buffers
of one arena may overlap in address; a value occupies `[offset, offset + its bytes)` of its
buffer's arena. Because every value names its defining op and so its buffer (and that buffer's
alloc its offset), "no two simultaneously-live values overlap in memory" is checkable
(`lowering.check_allocation`): no write may touch the bytes of a value still to be read.

    %arena0 = buffer.arena : !buffer.arena<0, npu, 1966080>
    %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 393216> in !buffer.arena<0, npu, 1966080>
    %b3 = buffer.alloc %arena0[393216] : !buffer.buf<3, npu, 1572864> in !buffer.arena<0, npu, 1966080>
    %ids = buffer.input 0 : tensor<1x128xi64>
    %w = buffer.weight "h.0.mlp.c_fc.weight" : tensor<3072x768xf32>
    %c = buffer.constant dense<0.0> : tensor<768xf32>
    %xn = buffer.transfer %x into %b0 : tensor<1x128x768xf32> in !buffer.buf<0, npu, 393216>
    %h = buffer.exec npu linear(%xn, %w) into %b3 {activation = gelu}
           : (tensor<1x128x768xf32>, tensor<3072x768xf32>) -> tensor<1x128x3072xf32>
             in !buffer.buf<3, npu, 1572864>
    func.return %h : tensor<1x128x3072xf32>

`buffer.exec` names an npuir kind (`npuir_kinds()`) and carries that op's parameters; its
verifier reuses the npuir kind's type check, so shapes stay checked after lowering.

Helpers for the lowering, checker, interpreter and backend: `ExecOp.of(npuir_op, ins, out)`,
`exec_kinds()`, `value_buffer()`, `value_device()`, `buffer_table()`, `arena_table()`,
`buffer_placement()`, `planned_bytes()`, `tensor_bytes()`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    VarConstraint,
    base,
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
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure
from xdsl.utils.exceptions import VerifyException

from dialects.npuir import (
    COMMON_PROPS,
    Device,
    DeviceAttr,
    NpuirOp,
    Params,
    SourceOp,
    npuir_kinds,
    op_class,
    op_params,
    param_defs,
    parse_params,
    print_params,
    tensor_bytes,
    verify_params,
)

__all__ = [
    "ALIGNMENT",
    "AllocOp",
    "ArenaOp",
    "ArenaType",
    "Buffer",
    "BufType",
    "ConstantOp",
    "ExecOp",
    "InputOp",
    "StateOp",
    "TransferOp",
    "WeightOp",
    "arena_table",
    "buffer_placement",
    "buffer_table",
    "exec_kinds",
    "planned_bytes",
    "state_buffers",
    "tensor_bytes",
    "value_buffer",
    "value_device",
]

# ===================================================================================== type


class _NumberedMemory:
    """What a buffer and an arena type share: `<id, device, bytes>` parameters, their accessors and syntax."""

    id: IntAttr
    device: DeviceAttr
    size: IntAttr

    def __init__(self, id: int | IntAttr, device: Device | str | DeviceAttr, size: int | IntAttr):
        super().__init__(  # type: ignore[call-arg]
            id if isinstance(id, IntAttr) else IntAttr(id),
            device if isinstance(device, DeviceAttr) else DeviceAttr(Device(device)),
            size if isinstance(size, IntAttr) else IntAttr(size),
        )

    @property
    def nbytes(self) -> int:
        return self.size.data

    @property
    def on(self) -> Device:
        return self.device.data

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.id.data}, {self.on.value}, {self.nbytes}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            number = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation(",")
            device = parser.parse_str_enum(Device)
            parser.parse_punctuation(",")
            size = parser.parse_integer(allow_boolean=False, allow_negative=False)
        return (IntAttr(number), DeviceAttr(device), IntAttr(size))


@irdl_attr_definition
class BufType(_NumberedMemory, ParametrizedAttribute, TypeAttribute):
    """A physical buffer: `!buffer.buf<3, npu, 393216>` is buffer 3, on the NPU, 393216 bytes.

    The id is part of the type so that every use of a buffer shows which one it is (what
    FileCheck tests pin); ids are unique within a function (`buffer_table`)."""

    name = "buffer.buf"

    id: IntAttr
    device: DeviceAttr
    size: IntAttr

    @property
    def buffer_id(self) -> int:
        return self.id.data


@irdl_attr_definition
class ArenaType(_NumberedMemory, ParametrizedAttribute, TypeAttribute):
    """An arena: `!buffer.arena<0, npu, 1966080>` is arena 0, on the NPU, 1966080 bytes, the
    memory the plan places one device's values in (`buffer.alloc %arena[offset]` views it)."""

    name = "buffer.arena"

    id: IntAttr
    device: DeviceAttr
    size: IntAttr

    @property
    def arena_id(self) -> int:
        return self.id.data


ALIGNMENT = 64
"""Byte alignment of every offset in an arena (a cache line; any dtype's view is aligned)."""


# ================================================================================ buffers


@irdl_op_definition
class ArenaOp(IRDLOperation):
    """Declares arena `id` (everything is in its type): one block of memory that the buffers
    placed in it (`buffer.alloc %arena[offset]`) view."""

    name = "buffer.arena"
    arena = result_def(ArenaType)

    assembly_format = "attr-dict `:` type($arena)"

    def __init__(self, arena: ArenaType):
        super().__init__(result_types=[arena])


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Declares physical buffer `id` (id, device and size are in its type). With an arena
    operand, the buffer is the arena's bytes `[offset, offset + size)`; without, memory of its
    own. Not Pure: an allocation is part of the plan even before its first use.

        %b0 = buffer.alloc : !buffer.buf<0, cpu, 24576>
        %b1 = buffer.alloc %arena0[4096] : !buffer.buf<1, npu, 512> in !buffer.arena<0, npu, 8192>
    """

    name = "buffer.alloc"
    arena = opt_operand_def(ArenaType)
    offset = opt_prop_def(IntAttr)
    buffer = result_def(BufType)

    def __init__(self, buf: BufType, arena: SSAValue | None = None, offset: int = 0):
        super().__init__(
            operands=[[arena] if arena is not None else []],
            result_types=[buf],
            properties={"offset": IntAttr(offset)} if arena is not None else {},
        )

    @property
    def byte_offset(self) -> int:
        """The offset in the arena (0 for a buffer of its own)."""
        return self.offset.data if self.offset is not None else 0

    def print(self, printer: Printer) -> None:
        if self.arena is not None:
            printer.print_string(" ")
            printer.print_operand(self.arena)
            printer.print_string(f"[{self.byte_offset}]")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.buffer.type)
        if self.arena is not None:
            printer.print_string(" in ")
            printer.print_attribute(self.arena.type)

    @classmethod
    def parse(cls, parser: Parser) -> AllocOp:
        arena = parser.parse_optional_unresolved_operand()
        offset = None
        if arena is not None:
            parser.parse_punctuation("[")
            offset = parser.parse_integer(allow_boolean=False, allow_negative=False)
            parser.parse_punctuation("]")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        buf = parser.parse_type()
        operands: list[SSAValue] = []
        if arena is not None:
            parser.parse_keyword("in")
            operands.append(parser.resolve_operand(arena, parser.parse_type()))
        props = {"offset": IntAttr(offset)} if offset is not None else {}
        return cls.create(operands=operands, result_types=[buf], properties=props, attributes=attrs)

    def verify_(self) -> None:
        buf = self.buffer.type
        assert isinstance(buf, BufType)
        if self.arena is None:
            if self.offset is not None:
                raise VerifyException(f"{self.name}: buffer {buf.buffer_id} has an offset but no arena")
            return
        arena = self.arena.type
        assert isinstance(arena, ArenaType)
        where = f"{self.name}: buffer {buf.buffer_id} at offset {self.byte_offset} of arena {arena.arena_id}"
        if self.offset is None:
            raise VerifyException(f"{self.name}: buffer {buf.buffer_id} is in arena {arena.arena_id} but has no offset")
        if self.byte_offset % ALIGNMENT:
            raise VerifyException(f"{where}: the offset is not a multiple of {ALIGNMENT}")
        if arena.on != buf.on:
            raise VerifyException(f"{where}: the buffer is on {buf.on.value}, the arena on {arena.on.value}")
        if self.byte_offset + buf.nbytes > arena.nbytes:
            raise VerifyException(
                f"{where}: its {buf.nbytes} bytes end at {self.byte_offset + buf.nbytes}, past the arena's "
                f"{arena.nbytes}"
            )


# ========================================================== values outside the memory plan


class SourceValueOp(IRDLOperation):
    """A value that needs no planned buffer: inputs (host memory, owned by the caller),
    weights and constants (immutable; the backend embeds or binds them)."""

    result = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class InputOp(SourceValueOp):
    """Graph input number `index`, on the host (cpu)."""

    name = "buffer.input"
    index = prop_def(IntegerAttr[I64])

    assembly_format = "$index attr-dict `:` type($result)"

    def verify_(self) -> None:
        if self.index.value.data < 0:
            raise VerifyException(f"{self.name}: input index {self.index.value.data} is negative")


@irdl_op_definition
class WeightOp(SourceValueOp):
    """A WeightStore entry, by name."""

    name = "buffer.weight"
    weight_name = prop_def(StringAttr, prop_name="name")

    assembly_format = "$name attr-dict `:` type($result)"

    def verify_(self) -> None:
        if not self.weight_name.data:
            raise VerifyException(f"{self.name}: weight name is empty")


@irdl_op_definition
class ConstantOp(SourceValueOp):
    """A small inline value: `buffer.constant dense<1.0> : tensor<4xf32>`."""

    name = "buffer.constant"
    value = prop_def(DenseIntOrFPElementsAttr)
    traits = traits_def(Pure(), ConstantLike())

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_attribute(self.value)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> ConstantOp:
        pos = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error("buffer.constant expects a dense<...> : tensor<...> value", pos, parser.pos)
        attrs = parser.parse_optional_attr_dict()
        return cls.create(
            result_types=[value.get_type()], properties={"value": value}, attributes=attrs
        )

    def verify_(self) -> None:
        if self.value.get_type() != self.result.type:
            raise VerifyException(
                f"{self.name}: value type {self.value.get_type()} does not match result type "
                f"{self.result.type}"
            )


# ========================================================================= writing buffers


class WriteOp(IRDLOperation):
    """Base of the ops that write a logical value into a buffer and define it. Subclasses
    declare the destination buffer operand `out` after their inputs."""

    result = result_def(TensorType)

    def out_buffer(self) -> BufType:
        ty = self.operands[-1].type
        assert isinstance(ty, BufType)
        return ty

    def _verify_fits(self, what: str) -> None:
        buf, ty = self.out_buffer(), self.result.type
        assert isinstance(ty, TensorType)
        try:
            needed = tensor_bytes(ty)
        except ValueError as err:
            raise VerifyException(f"{what}: {err}") from None
        if buf.nbytes < needed:
            raise VerifyException(
                f"{what}: buffer {buf.buffer_id} holds {buf.nbytes} bytes but {ty} needs {needed}"
            )


@irdl_op_definition
class StateOp(WriteOp):
    """The value state `name` holds when the function is entered; it lives in buffer `out`,
    which the executor keeps across calls (see the module docstring)."""

    name = "buffer.state"
    state_name = prop_def(StringAttr, prop_name="name")
    out = operand_def(BufType)

    assembly_format = "$name `in` $out attr-dict `:` type($result) `in` type($out)"

    def __init__(self, state_name: str, out: SSAValue, result_type: Attribute):
        super().__init__(operands=[out], result_types=[result_type], properties={"name": StringAttr(state_name)})

    def verify_(self) -> None:
        if not self.state_name.data:
            raise VerifyException(f"{self.name}: state name is empty")
        self._verify_fits(f'{self.name} "{self.state_name.data}"')


@irdl_op_definition
class TransferOp(WriteOp):
    """Copy a value into a buffer on the other device (the explicit npu <-> cpu transition)."""

    name = "buffer.transfer"
    T: ClassVar = VarConstraint("T", base(TensorType))
    source = operand_def(T)
    out = operand_def(BufType)
    result = result_def(T)

    assembly_format = "$source `into` $out attr-dict `:` type($source) `in` type($out)"

    def __init__(self, source: SSAValue, out: SSAValue):
        super().__init__(operands=[source, out], result_types=[source.type])

    def verify_(self) -> None:
        self._verify_fits(self.name)
        buf, src = self.out_buffer(), value_device(self.source)
        if src == buf.on:
            where = value_buffer(self.source)
            origin = f"buffer {where.buffer_id}" if where else "a graph input"
            raise VerifyException(
                f"{self.name}: source is already on {src.value} ({origin}); "
                f"destination buffer {buf.buffer_id} is on {buf.on.value} too"
            )


_EXEC_KINDS: dict[str, type[NpuirOp]] = {
    kind: cls for kind, cls in npuir_kinds().items() if not issubclass(cls, SourceOp)
}


def exec_kinds() -> dict[str, type[NpuirOp]]:
    """The npuir kinds `buffer.exec` can run (all but input/weight/constant) and their classes."""
    return dict(_EXEC_KINDS)


@irdl_op_definition
class ExecOp(WriteOp):
    """Run npuir op kind `kind` on `device`, reading `ins` and writing the result into `out`.

    `params` holds the npuir op's parameters (its properties but device and vreg); the custom
    syntax prints them like npuir does: `{activation = gelu, perm = [0, 2, 1]}`."""

    name = "buffer.exec"
    ins = var_operand_def(TensorType)
    out = operand_def(BufType)
    device = prop_def(DeviceAttr)
    kind = prop_def(StringAttr)
    params = prop_def(DictionaryAttr, default_value=DictionaryAttr({}))

    @staticmethod
    def of(op: NpuirOp, ins: Sequence[SSAValue], out: SSAValue) -> ExecOp:
        """The exec of npuir `op` on `ins` (standing for its operands), writing into `out`."""
        return ExecOp.create(
            operands=[*ins, out],
            result_types=[op.result.type],
            properties={
                "device": op.device,
                "kind": StringAttr(op.mnemonic()),
                "params": DictionaryAttr(op_params(op)),
            },
        )

    def npuir_class(self) -> type[NpuirOp] | None:
        """The npuir op class of `kind` (None if unknown or not executable)."""
        return _EXEC_KINDS.get(self.kind.data)

    def param_view(self) -> Params:
        """The parameters with the npuir kind's defaults filled in."""
        cls = self.npuir_class()
        assert cls is not None, f"unknown npuir kind {self.kind.data}"
        return Params(cls, self.params.data)

    # --------------------------------------------------------------------------- verify

    def verify_(self) -> None:
        kind = self.kind.data
        what = f"{self.name} {kind}"
        cls = self.npuir_class()
        if cls is None:
            if op_class(kind) is not None:
                raise VerifyException(
                    f"{self.name}: '{kind}' is a source, not an executable kind; "
                    f"use buffer.{kind}"
                )
            raise VerifyException(f"{self.name}: unknown npuir kind '{kind}'")
        lo, hi = cls.arity()
        if len(self.ins) < lo or (hi is not None and len(self.ins) > hi):
            expected = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi is not None else f"at least {lo}"
            raise VerifyException(f"{what}: expects {expected} inputs, got {len(self.ins)}")
        try:
            verify_params(cls, self.params.data)
            ins = [v.type for v in self.ins]
            cls.check(ins, self.result.type, Params(cls, self.params.data))  # pyright: ignore
        except VerifyException as err:
            raise VerifyException(f"{what}: {err}") from None
        buf, device = self.out_buffer(), self.device.data
        if cls.CPU_ONLY and device is not Device.CPU:
            raise VerifyException(f"{what}: runs only on cpu, not {device.value}")
        if buf.on != device:
            raise VerifyException(
                f"{what}: runs on {device.value} but writes buffer {buf.buffer_id} "
                f"on {buf.on.value}"
            )
        self._verify_fits(what)
        for i, value in enumerate(self.ins):
            src = value_device(value)
            if src is not None and src != device:
                where = value_buffer(value)
                origin = f"buffer {where.buffer_id}" if where else "a graph input"
                raise VerifyException(
                    f"{what}: input {i} is on {src.value} ({origin}) but the op runs on "
                    f"{device.value}; insert a buffer.transfer"
                )

    # --------------------------------------------------------------------------- syntax

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.device.data.value} ")
        printer.print_identifier_or_string_literal(self.kind.data)
        printer.print_string("(")
        printer.print_list(self.ins, printer.print_operand)
        printer.print_string(") into ")
        printer.print_operand(self.out)
        cls = self.npuir_class()
        if cls is not None and self.params.data.keys() <= param_defs(cls).keys():
            print_params(printer, cls, self.params.data, self.attributes)
        else:  # unknown kind or parameter (IR that does not verify): params in generic form
            printer.print_op_attributes({"params": self.params, **self.attributes})
        printer.print_string(" : ")
        printer.print_function_type([v.type for v in self.ins], [self.result.type])
        printer.print_string(" in ")
        printer.print_attribute(self.out.type)

    @classmethod
    def parse(cls, parser: Parser) -> ExecOp:
        device = DeviceAttr(parser.parse_str_enum(Device))
        kind = parser.parse_identifier_or_str_literal()
        unresolved: list[UnresolvedOperand] = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, parser.parse_unresolved_operand
        )
        parser.parse_keyword("into")
        out = parser.parse_unresolved_operand()
        npuir_cls = _EXEC_KINDS.get(kind)
        if npuir_cls is not None:
            params, attrs = parse_params(parser, npuir_cls)
            params = _with_defaults(npuir_cls, params)
        else:
            params, attrs = {}, parser.parse_optional_attr_dict()
        if isinstance(generic := attrs.pop("params", None), DictionaryAttr):
            params = dict(generic.data)  # the generic fallback printed above
        parser.parse_punctuation(":")
        pos = parser.pos
        ftype = parser.parse_function_type()
        ins = parser.resolve_operands(unresolved, ftype.inputs.data, pos)
        if len(ftype.outputs.data) != 1:
            parser.raise_error("buffer.exec has exactly one result", pos, parser.pos)
        parser.parse_keyword("in")
        out_value = parser.resolve_operand(out, parser.parse_type())
        return cls.create(
            operands=[*ins, out_value],
            result_types=ftype.outputs.data,
            properties={
                "device": device,
                "kind": StringAttr(kind),
                "params": DictionaryAttr(params),
            },
            attributes=attrs,
        )


def _with_defaults(cls: type[NpuirOp], params: Mapping[str, Attribute]) -> dict[str, Attribute]:
    """`params` plus the kind's default values, as `op_params` of an npuir op would give."""
    full = dict(params)
    for key, prop in cls.get_irdl_definition().properties.items():
        if key not in COMMON_PROPS and key not in full and prop.default_value is not None:
            full[key] = prop.default_value
    return full


# ================================================================================ helpers


def value_buffer(value: SSAValue) -> BufType | None:
    """The buffer a logical value lives in (None for inputs, weights, constants, block args)."""
    owner = value.owner
    if isinstance(owner, WriteOp):
        return owner.out_buffer()
    return None


def value_device(value: SSAValue) -> Device | None:
    """Where a logical value is: its buffer's device, cpu for graph inputs, None when the value
    is device-neutral (weights, constants, a state's entry value: both devices read a state's buffer
    in place) or unknown (block arguments)."""
    if isinstance(value.owner, StateOp):
        return None
    if (buf := value_buffer(value)) is not None:
        return buf.on
    if isinstance(value.owner, InputOp):
        return Device.CPU
    return None


def buffer_table(op: Operation) -> dict[int, BufType]:
    """Every buffer allocated under `op` by id, in allocation order; VerifyException if two
    allocations share an id. What an executor pre-allocates."""
    return _numbered(op, AllocOp, lambda o: o.buffer.type, "buffer.alloc: buffer id {} is allocated twice")


def arena_table(op: Operation) -> dict[int, ArenaType]:
    """Every arena declared under `op` by id, in declaration order; VerifyException if two
    declarations share an id."""
    return _numbered(op, ArenaOp, lambda o: o.arena.type, "buffer.arena: arena id {} is declared twice")


def _numbered(op: Operation, kind: type[Operation], typ: Callable[[Any], Any], twice: str) -> dict[int, Any]:
    """The `_NumberedMemory` types of the `kind` ops under `op` by their id (`twice`: the error for a repeat)."""
    table: dict[int, Any] = {}
    for inner in op.walk():
        if isinstance(inner, kind):
            found = typ(inner)
            assert isinstance(found, _NumberedMemory)
            if found.id.data in table:
                raise VerifyException(twice.format(found.id.data))
            table[found.id.data] = found
    return table


def buffer_placement(alloc: AllocOp) -> tuple[int | None, int]:
    """(arena id, byte offset) of a buffer; (None, 0) for a buffer of its own."""
    if alloc.arena is None:
        return None, 0
    arena = alloc.arena.type
    assert isinstance(arena, ArenaType)
    return arena.arena_id, alloc.byte_offset


def planned_bytes(op: Operation, device: str | None = None) -> int:
    """The memory a plan under `op` allocates (on `device`, or all): its arenas plus the buffers
    of their own (states' buffers included)."""
    total = 0
    for inner in op.walk():
        if isinstance(inner, ArenaOp):
            ty = inner.arena.type
        elif isinstance(inner, AllocOp) and inner.arena is None:
            ty = inner.buffer.type
        else:
            continue
        assert isinstance(ty, (ArenaType, BufType))
        if device is None or ty.on.value == device:
            total += ty.nbytes
    return total


def state_buffers(op: Operation) -> dict[int, str]:
    """Buffer id -> state name for every `buffer.state` under `op`; VerifyException if a buffer
    holds two states or a state is in two buffers."""
    found: dict[int, str] = {}
    names: dict[str, int] = {}
    for inner in op.walk():
        if isinstance(inner, StateOp):
            bid, name = inner.out_buffer().buffer_id, inner.state_name.data
            if found.get(bid, name) != name or names.get(name, bid) != bid:
                raise VerifyException(f'buffer.state "{name}": a state has one buffer and a buffer one state')
            found[bid], names[name] = name, bid
    return found


Buffer = Dialect(
    "buffer",
    [ArenaOp, AllocOp, InputOp, WeightOp, ConstantOp, StateOp, TransferOp, ExecOp],
    [BufType, ArenaType],
)
