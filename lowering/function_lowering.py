"""The aten -> npuir sweep over one function, and the emission API its conversion rules call.

`FunctionLowering(policy).run(fn)` replaces the body of `fn` by a new block of npuir ops (the
contract is in `lowering/aten_to_npuir.py`). For each live aten op it calls the rule registered
for the op's name in `RULES` (the rules live in `lowering/aten_rules/`, one module per op
family); a rule builds npuir ops through `emit`, `const`, `convert`, `reshape`, `binary`, ... and
binds the aten results to npuir values. A rule raises `Fallback` when a variant has no npuir
form: what it emitted is rolled back and the op becomes `npuir.aten` (the host fallback).

`on_emit` is the public hook for observers (e.g. predicting which device each aten op gets,
`lowering.aten_to_npuir.predict_devices`) instead of subclassing.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    Signedness,
    StringAttr,
    TensorType,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue

from dialects import aten
from dialects import npuir as N
from dialects.aten_shapes import result_dtype
from dialects.npuir import Device
from dialects.torch_types import DTYPE_NAMES, ELEMENT_TYPES, FLOAT_MAX, INT_RANGE, element_type
from forge.diagnostics import pass_failure
from forge.kinds import KINDS, SMALL_INT_BITS
from forge.patterns import describe_op
from lowering.affinity import AffinityPolicy, NoDeviceError, final_norm
from lowering.stats import PassStats

if TYPE_CHECKING:
    import torch

# ============================================================================ cached attributes

_DEVICE = {Device.NPU: N.DeviceAttr(Device.NPU), Device.CPU: N.DeviceAttr(Device.CPU)}


@cache
def i64_attr(v: int) -> IntegerAttr:
    return IntegerAttr(v, i64)


@cache
def ints_attr(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@cache
def f64_attr(v: float) -> FloatAttr:
    return FloatAttr(v, f64)


@cache
def tensor_type(elt: Attribute, shape: tuple[int, ...]) -> TensorType:
    return TensorType(elt, shape)


UNARY = {k: N.UnaryKindAttr(k) for k in N.UnaryKind}
BINARY = {k: N.BinaryKindAttr(k) for k in N.BinaryKind}
COMPARE = {k: N.CompareKindAttr(k) for k in N.CompareKind}
REDUCE = {k: N.ReduceKindAttr(k) for k in N.ReduceKind}
ACTIVATION = {k.value: N.ActivationAttr(k) for k in N.Activation}
_KIND_OF: dict[type, str] = {cls: kind for kind, cls in N.npuir_kinds().items()}
_ARITH = {N.BinaryKind.ADD, N.BinaryKind.SUB, N.BinaryKind.MUL, N.BinaryKind.DIV, N.BinaryKind.POW}

# ============================================================================= rule helpers


class Fallback(Exception):
    """Raised by a rule: this variant has no npuir form, use the aten fallback."""


def is_float(elt: Attribute) -> bool:
    return not isinstance(elt, IntegerType)


def wrapped(value: int, elt: IntegerType) -> int:
    """`value` as torch converts a Python int to the integer dtype `elt`: modulo 2**width (`uint8 + -2`
    adds 254, `int32 + 2**40` adds 0)."""
    width = elt.width.data
    if width == 1:
        return 1 if value else 0
    value %= 1 << width
    if elt.signedness.data != Signedness.UNSIGNED and value >= 1 << (width - 1):
        value -= 1 << width
    return value


_PACKED_FLOATS = {"float32": "f", "float16": "e"}
"""The float dtypes whose constants hold a rounded Python float (struct's format); float64 holds it as it is."""


def as_float_type(value: float, elt: Attribute) -> float:
    """`value` cast to the float type `elt` as C++ casts a double, which is what torch does to a Python number
    wrapped as an operand: rounded to nearest, and ±inf beyond the type's range (`x + 1e40` adds inf to float32)."""
    fmt = _PACKED_FLOATS.get(DTYPE_NAMES.get(elt, ""))
    if fmt is None:
        return value
    try:
        return struct.unpack(fmt, struct.pack(fmt, value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def fits(value: bool | int | float, elt: Attribute) -> bool:
    """Whether torch's checked conversion of a scalar argument to `elt` accepts `value` (an alpha, a clamp bound, a
    fill value): an integer in the dtype's range, a float within its finite range (or inf, NaN); torch raises
    "value cannot be converted to type ... without overflow" for the rest. Conservative for a non-integral float
    into an integer dtype, which torch truncates: False, so the op runs torch's kernel. (An int beyond int64 never
    gets here: torch.export refuses it, "int too big to convert".)"""
    dtype = DTYPE_NAMES.get(elt, "")
    if dtype == "bool":
        return True
    if dtype in INT_RANGE:
        lo, hi = INT_RANGE[dtype]
        return (not isinstance(value, float) or value.is_integer()) and lo <= value <= hi
    return not math.isfinite(value) or abs(value) <= FLOAT_MAX.get(dtype, math.inf)


def normalize_dim(d: int, rank: int) -> int:
    """`d` in [0, rank) (torch's negative dims count from the end); Fallback when out of range."""
    nd = d + rank if d < 0 else d
    if not 0 <= nd < rank:
        raise Fallback
    return nd


def promote(a: TensorType, b: TensorType | bool | int | float) -> Attribute:
    """The element type of torch's `result_type(a, b)`: `a` a tensor (rank 0 or not), `b` a tensor
    or a Python scalar (dialects.aten_shapes.result_dtype: torch's promotion, without torch)."""
    tensors = [(tuple(a.get_shape()), DTYPE_NAMES[a.element_type])]
    scalars: list[Any] = []
    if isinstance(b, TensorType):
        tensors.append((tuple(b.get_shape()), DTYPE_NAMES[b.element_type]))
    else:
        scalars.append(b)
    dtype = result_dtype(tensors, scalars)
    assert dtype is not None
    return ELEMENT_TYPES[dtype]


def out_type(op: Operation, i: int = 0) -> TensorType:
    """The tensor type of result `i` of `op` (every aten result a rule lowers is a tensor)."""
    return op.results[i].type


def type_of(v: SSAValue) -> TensorType:
    """The tensor type of an npuir value (every value a rule reads is a tensor)."""
    return v.type


def same_elements(*values: SSAValue | None) -> bool:
    """Whether the given values (None: an absent optional operand) share one element type."""
    elts = {type_of(v).element_type for v in values if v is not None}
    return len(elts) == 1


# ==================================================================================== rules

Rule = Callable[["FunctionLowering", Any], None]
RULES: dict[str, Rule] = {}
"""aten op name -> the rule that lowers it; filled by the modules of `lowering/aten_rules/`."""


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Register the decorated function as the rule of each aten op in `names`."""

    def register(fn: Rule) -> Rule:
        for name in names:
            RULES[name] = fn
        return fn

    return register


def register_family(make_rule: Callable[..., Rule], variants: dict[str, tuple[Any, ...]]) -> None:
    """Register `make_rule(*args)` as the rule of each aten op of `variants` (name -> args)."""
    for name, args in variants.items():
        RULES[name] = make_rule(*args)


# ================================================================================= lowering


@dataclass
class LoweringStats(PassStats):
    vregs: int = 0
    fallbacks: int = 0
    dropped: int = 0


EmitHook = Callable[[Operation, Operation], None]
"""`on_emit(aten_op, npuir_op)`: see `FunctionLowering`."""


class FunctionLowering:
    """Lowers one func.func (in place: its body is replaced by a new block).

    `on_emit`, when given, is called with (the aten op being lowered, the npuir op) for every op
    `emit` creates, with its device already set: the compute ops, not the inputs, weights and
    constants (`source`), whose device is settled after the sweep. Ops of a rule that falls back
    are reported before they are rolled back.
    """

    def __init__(self, policy: AffinityPolicy, on_emit: EmitHook | None = None):
        self.policy = policy
        self.on_emit = on_emit
        self.vmap: dict[SSAValue, SSAValue] = {}
        self.ops: list[Operation] = []
        self.vreg = 0
        self.consts: dict[tuple[Any, ...], SSAValue] = {}
        self.current: Operation | None = None
        self.current_name = ""
        self.pinned = False
        self.stats = LoweringStats()
        self.live: set[Operation] = set()
        self.loc: Any = None
        self.small_ints: set[SSAValue] = set()
        self.emitted: set[Operation] = set()
        """The compute ops `emit` made (whose device `assume_small` may revisit)."""
        """Integer values proven to fit in 32 bits (`forge.kinds.SMALL_INT_BITS`): booleans are
        not listed (they always fit)."""

    # ------------------------------------------------------------------------ emission

    def emit(
        self, cls: type[N.NpuirOp], operands: Sequence[SSAValue], rtype: TensorType, props: dict | None = None
    ) -> SSAValue:
        if 0 in rtype.get_shape():  # no values to compute: an empty constant (sources cost nothing)
            return self.const_values([], rtype.element_type, tuple(rtype.get_shape()))
        kind = _KIND_OF[cls]
        small = self.small_operands(kind, operands)
        try:
            device = self.policy.device(
                kind, [o.type for o in operands], rtype, aten_name=self.current_name, pinned=self.pinned,
                small_ints=small,
            )
        except NoDeviceError as err:
            raise self.no_device(str(err)) from None
        p = {} if props is None else props
        p["device"] = _DEVICE[device]
        p["vreg"] = i64_attr(self.vreg)
        self.vreg += 1
        op = cls.create(operands=operands, result_types=(rtype,), properties=p, location=self.loc)
        self.ops.append(op)
        self.emitted.add(op)
        result = op.results[0]
        if _is_int(rtype) and self.makes_small_ints(kind, operands, small):
            self.small_ints.add(result)
        if self.on_emit is not None and self.current is not None:
            self.on_emit(self.current, op)
        return result

    # ------------------------------------------------------------- small integers

    def small_operands(self, kind: str, operands: Sequence[SSAValue]) -> bool:
        """Whether every integer operand (other than an index operand) is known to fit in 32 bits."""
        spec = KINDS.get(kind)
        skip = spec.index_operands if spec is not None else ()
        return all(i in skip or self.is_small_int(v) for i, v in enumerate(operands))

    def assume_small(self, value: SSAValue) -> None:
        """`value` holds integers that fit in 32 bits (a valid index does: it lies in [-d, d)); so
        does what a view (reshape) of it was made from, and such a view may then run on the npu."""
        while True:
            self.small_ints.add(value)
            op = value.owner
            kind = _KIND_OF.get(type(op))
            spec = KINDS.get(kind) if kind is not None else None
            if spec is None or not spec.view or op not in self.emitted:
                return
            (source,) = op.operands
            if op.properties["device"] == _DEVICE[Device.CPU] and not self.policy.cpu_ops:
                device = self.policy.device(kind, [source.type], value.type, small_ints=True)
                op.properties["device"] = _DEVICE[device]
            value = source

    def is_small_int(self, v: SSAValue) -> bool:
        """Not an integer wider than 32 bits, or one proven to hold values that fit in 32 bits."""
        t = v.type
        return not _is_int(t) or t.element_type.width.data <= SMALL_INT_BITS or v in self.small_ints

    def makes_small_ints(self, kind: str, operands: Sequence[SSAValue], small: bool) -> bool:
        """Whether an integer result of `kind` on these operands fits in 32 bits: an index made by a
        `makes_small_ints` kind, or data a `small_int_exact` kind moves from small integers/booleans."""
        spec = KINDS.get(kind)
        if spec is None:
            return False
        if spec.makes_small_ints:
            return True
        data = [v for i, v in enumerate(operands) if i not in spec.index_operands]
        return spec.small_int_exact and small and all(isinstance(type_of(v).element_type, IntegerType) for v in data)

    def no_device(self, why: str) -> Exception:
        op = self.current
        assert op is not None
        return pass_failure(op, f"lower-aten-to-npuir: no device can run {describe_op(op)}: {why}")

    def source(self, cls: type[N.NpuirOp], rtype: Attribute, props: dict) -> SSAValue:
        props["device"] = _DEVICE[Device.CPU]  # fixed up once users are known
        props["vreg"] = i64_attr(self.vreg)
        self.vreg += 1
        op = cls.create(result_types=(rtype,), properties=props)
        self.ops.append(op)
        if cls is N.ConstantOp and _is_int(rtype) and _small_constant(props["value"]):
            self.small_ints.add(op.results[0])
        return op.results[0]

    def used(self, value: SSAValue) -> bool:
        """Whether a live op (or the return) reads `value`."""
        return any(use.operation in self.live for use in value.uses)

    def bind(self, old: SSAValue, new: SSAValue) -> None:
        self.vmap[old] = new
        if new.name_hint is None and old.name_hint is not None:
            new.name_hint = old.name_hint

    # ------------------------------------------------------------------------- helpers

    def arg(self, op: aten.AtenOp, name: str) -> SSAValue | None:
        value = op.tensor_arg(name)
        return None if value is None else self.vmap[value]

    def const(self, value: Any, elt: Attribute, shape: tuple[int, ...] = ()) -> SSAValue:
        """A splat constant of `value` (a Python number) with element type `elt`."""
        if isinstance(elt, IntegerType):
            if elt.width.data == 1:
                value = 1 if value else 0
            elif isinstance(value, float):
                if not value.is_integer():
                    raise Fallback
                value = int(value)
            else:
                value = int(value)
            value = wrapped(value, elt)
            key: tuple[Any, ...] = (elt, shape, value)
        else:
            value = float(value)
            key = (elt, shape, repr(value))
        found = self.consts.get(key)
        if found is None:
            t = tensor_type(elt, shape)
            attr = DenseIntOrFPElementsAttr.from_list(t, [value])
            found = self.consts[key] = self.source(N.ConstantOp, t, {"value": attr})
        return found

    def number(self, value: bool | int | float, elt: Attribute) -> SSAValue:
        """The Python operand of an arithmetic op or a comparison (`x + 1e40`, `x == 300`) as a constant: torch wraps
        it as a number and casts it unchecked, so an int wraps modulo 2**width (as `const` does) and a float beyond
        `elt`'s range is ±inf (`as_float_type`; packing it failed: "float too large to pack")."""
        if is_float(elt):
            value = as_float_type(float(value), elt)
        return self.const(value, elt)

    def scalar(self, value: bool | int | float, elt: Attribute) -> SSAValue:
        """A scalar argument torch converts checked (an alpha, a clamp bound, a fill value) as a constant; one beyond
        `elt`'s range is Fallback, so that torch's own kernel refuses it as torch does (where the constant wrapped
        or overflowed)."""
        if not fits(value, elt):
            raise Fallback
        return self.const(value, elt)

    def const_tensor(self, tensor: torch.Tensor) -> SSAValue:
        """A constant holding `tensor` (a splat when uniform)."""
        import torch  # only a rule that ran a kernel has a tensor: torch is loaded already

        flat = tensor.reshape(-1)
        values = flat.tolist() if tensor.dtype.is_floating_point else flat.to(torch.int64).tolist()
        return self.const_values(values, element_type(tensor.dtype), tuple(tensor.shape))

    def const_values(self, values: Sequence[bool | int | float], elt: Attribute, shape: tuple[int, ...]) -> SSAValue:
        """A constant of `shape` holding `values` (row-major, already of `elt`'s kind; a splat when uniform)."""
        if values and all(v == values[0] for v in values):
            return self.const(values[0], elt, shape)
        if elt == i1:
            values = [1 if v else 0 for v in values]
        t = tensor_type(elt, shape)
        attr = DenseIntOrFPElementsAttr.from_list(t, list(values))
        return self.source(N.ConstantOp, t, {"value": attr})

    def convert(self, x: SSAValue, elt: Attribute) -> SSAValue:
        t = x.type
        assert isinstance(t, TensorType)
        if t.element_type == elt:
            return x
        return self.emit(N.ConvertOp, [x], tensor_type(elt, t.get_shape()))

    def reshape(self, x: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        t = x.type
        assert isinstance(t, TensorType)
        if t.get_shape() == shape:
            return x
        return self.emit(N.ReshapeOp, [x], tensor_type(t.element_type, shape))

    def unary(self, kind: N.UnaryKind, x: SSAValue, out: TensorType) -> SSAValue:
        x = self.convert(x, out.element_type)
        return self.emit(N.UnaryOp, [x], out, {"kind": UNARY[kind]})

    def binary(self, kind: N.BinaryKind, a: SSAValue, b: SSAValue, out: TensorType) -> SSAValue:
        elt = out.element_type
        if elt == i1 and kind in _ARITH:
            if kind is N.BinaryKind.ADD:
                kind = N.BinaryKind.OR
            elif kind is N.BinaryKind.MUL:
                kind = N.BinaryKind.AND
            else:
                raise Fallback
        if kind in (N.BinaryKind.AND, N.BinaryKind.OR) and is_float(elt):
            raise Fallback
        a, b = self.convert(a, elt), self.convert(b, elt)
        return self.emit(N.BinaryOp, [a, b], out, {"kind": BINARY[kind]})

    def compare(self, kind: N.CompareKind, a: SSAValue, b: SSAValue, out: TensorType) -> SSAValue:
        return self.emit(N.CompareOp, [a, b], out, {"kind": COMPARE[kind]})

    def slice(self, x: SSAValue, axis: int, start: int, end: int, step: int = 1) -> SSAValue:
        t = x.type
        assert isinstance(t, TensorType)
        shape = t.get_shape()
        if start == 0 and end == shape[axis] and step == 1:
            return x
        starts = [0] * len(shape)
        ends = list(shape)
        steps = [1] * len(shape)
        starts[axis], ends[axis], steps[axis] = start, end, step
        out = list(shape)
        out[axis] = (end - start + step - 1) // step
        return self.emit(
            N.SliceOp,
            [x],
            tensor_type(t.element_type, tuple(out)),
            {"starts": ints_attr(tuple(starts)), "ends": ints_attr(tuple(ends)), "steps": ints_attr(tuple(steps))},
        )

    def concat(self, values: list[SSAValue], axis: int, out: TensorType) -> SSAValue:
        """`values` joined along `axis`. A part of size 0 along `axis` adds nothing; a part empty in another
        dimension still adds its size along `axis` (then the whole result is empty: a constant of `out`)."""
        if 0 in out.get_shape():
            return self.const_values([], out.element_type, out.get_shape())
        values = [v for v in values if type_of(v).get_shape()[axis] != 0]
        values = [self.convert(v, out.element_type) for v in values]
        if len(values) == 1:
            return values[0]
        return self.emit(N.ConcatOp, values, out, {"axis": i64_attr(axis)})

    # ------------------------------------------------------------------------ fallback

    def fallback(self, op: Operation) -> None:
        operands = [self.vmap[v] for v in op.operands]
        attrs = DictionaryAttr(dict(op.properties))
        target = StringAttr(op.name)
        for i, r in enumerate(op.results):
            if not self.used(r):
                continue
            rtype = r.type
            assert isinstance(rtype, TensorType)
            value = self.emit(
                N.AtenCallOp, operands, rtype, {"op": target, "attrs": attrs, "result_index": i64_attr(i)}
            )
            self.bind(r, value)
            self.stats.fallbacks += 1

    def rollback(self, mark: int, vreg: int) -> None:
        for op in reversed(self.ops[mark:]):
            op.drop_all_references()
        # Constants created by the failed rule may be cached: forget those.
        dropped = set(self.ops[mark:])
        if dropped:
            self.consts = {k: v for k, v in self.consts.items() if v.owner not in dropped}
        del self.ops[mark:]
        self.vreg = vreg

    # -------------------------------------------------------------------------- driver

    def run(self, fn: func.FuncOp) -> LoweringStats:
        block = fn.body.block
        body = list(block.ops)
        live = self.live = _live_ops(body)
        pin = final_norm(body) if self.policy.pin_final_norm else None
        for i, arg in enumerate(block.args):
            assert isinstance(arg.type, TensorType)
            value = self.source(N.InputOp, arg.type, {"index": i64_attr(i)})
            self.bind(arg, value)
        ret: Operation | None = None
        for op in body:
            if op.name == "func.return":
                ret = op
                continue
            if op not in live:
                self.stats.dropped += 1
                continue
            self.current, self.current_name, self.pinned = op, op.name, op is pin
            self.loc = op.location
            op_rule = RULES.get(op.name)
            if op_rule is None and not isinstance(op, aten.AtenOp):
                raise self.no_device("it is not an aten op (nothing lowers it)")
            mark, vreg = len(self.ops), self.vreg
            try:
                if op_rule is None:
                    self.fallback(op)
                else:
                    op_rule(self, op)
            except Fallback:
                self.rollback(mark, vreg)
                self.fallback(op)
        self.current = None
        results = [self.vmap[v] for v in ret.operands] if ret is not None else []
        self.ops = _without_dead_ops(self.ops, results)
        new_block = Block(arg_types=block.arg_types)
        for old, new in zip(block.args, new_block.args, strict=True):
            new.name_hint = old.name_hint
        new_block.add_ops(self.ops)
        if ret is not None:
            new_block.add_op(func.ReturnOp(*results))
        _place_sources(self.ops)
        fn.body.insert_block_before(new_block, block)
        fn.body.detach_block(block)
        self.stats.vregs = len(self.ops)
        return self.stats


def _is_int(t: Attribute) -> bool:
    """A tensor of integers other than booleans."""
    return isinstance(t, TensorType) and isinstance(t.element_type, IntegerType) and t.element_type.width.data > 1


_SMALL = 2 ** (SMALL_INT_BITS - 1)
_CHECKED_CONSTANT = 1 << 16
"""Larger integer constants are not inspected (they are not proven small)."""


def _small_constant(value: Attribute) -> bool:
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return False
    if math.prod(value.get_shape()) == 0:
        return True  # no values (a size-0 constant): xDSL's is_splat reads the first
    if value.is_splat():
        values = value.get_values()[:1]
    elif math.prod(value.get_shape()) <= _CHECKED_CONSTANT:
        values = value.get_values()
    else:
        return False
    return all(-_SMALL <= int(v) < _SMALL for v in values)


def _without_dead_ops(ops: list[Operation], results: Sequence[SSAValue]) -> list[Operation]:
    """`ops` without those whose value nothing reads (a rule may leave one: the slice a copy
    overwrites, an empty part a concat dropped), inputs kept; vregs renumbered in program order
    (unchanged when nothing is dropped)."""
    needed = set(results)
    live: list[Operation] = []
    for op in reversed(ops):
        if isinstance(op, N.InputOp) or op.results[0] in needed:
            live.append(op)
            needed.update(op.operands)
        else:
            op.drop_all_references()
    if len(live) == len(ops):
        return ops
    live.reverse()
    for vreg, op in enumerate(live):
        op.properties["vreg"] = i64_attr(vreg)
    return live


def _live_ops(body: list[Operation]) -> set[Operation]:
    """Ops with a result the function (transitively) returns; one backward sweep."""
    live: set[Operation] = set()
    for op in reversed(body):
        if op.name == "func.return" or any(use.operation in live for r in op.results for use in r.uses):
            live.add(op)
    return live


def _place_sources(ops: list[Operation]) -> None:
    """Weights and constants go to the npu when an npu op reads them (device-neutral data)."""
    npu = _DEVICE[Device.NPU]
    for op in ops:
        if type(op) in (N.WeightOp, N.ConstantOp):
            for use in op.results[0].uses:
                if use.operation.properties.get("device") is npu:
                    op.properties["device"] = npu
                    break
