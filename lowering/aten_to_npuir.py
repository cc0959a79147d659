"""aten -> npuir: every op becomes typed npuir ops with a device and a virtual register.

Pass `lower-aten-to-npuir{policy=npu-first cpu-ops=gather pin-final-norm=true}`.

One forward sweep over each function body builds a new block (no rewriter, no text):

- graph inputs become `npuir.input` (on the cpu: inputs live on the host), `aten.weight` and
  `aten.constant` become `npuir.weight` / `npuir.constant`, factories (`arange`, `full`,
  `zeros_like`, ...) become constants (uniform ones as splats, whatever their size);
- each aten op maps to one or a few npuir ops (the table `_RULES`): matmul-like ops to
  `matmul`/`linear`, scalar operands to rank-0 constants, torch's type promotion to explicit
  `convert`s, negative dims and slice bounds normalized, composites for what has no single
  family (log_softmax, repeat, stack, triu/tril, diff, clamp, ...);
- no-ops disappear: views to the same type, `clone`/`contiguous`/`alias`/`detach`, eval-mode
  `dropout`, same-dtype `to`, and `_assert_tensor_metadata` (shapes are static and checked);
- anything without a rule (or a variant a rule does not cover, e.g. `div` with a rounding mode,
  multi-index `index.Tensor`, training-mode dropout) becomes `npuir.aten`, the host fallback that
  runs the aten op unchanged, so lowering never fails on an op the CPU can run;
- ops whose results are never used are dropped (one backward sweep), so are unused results.

Each created op gets its device from the `AffinityPolicy` (`lowering/affinity.py`) and the
next virtual register (`vreg`, one per SSA result, numbered in program order). Weights and
constants take the device of their first NPU user (they are device-neutral data); inputs are on
the cpu. An op no device can run under the policy (npu-only and a CPU-only op, or an op that
is not an aten op) is an error naming it with its location.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from dialects import aten
from dialects import npuir as N
from dialects.npuir import Device
from dialects.torch_types import element_type as _elt
from dialects.torch_types import torch_dtype
from forge.diagnostics import pass_failure
from forge.patterns import describe_op
from lowering.affinity import AffinityPolicy, NoDeviceError, final_norm

# ============================================================================ cached attributes

_DEVICE = {Device.NPU: N.DeviceAttr(Device.NPU), Device.CPU: N.DeviceAttr(Device.CPU)}


@lru_cache(maxsize=None)
def _i64(v: int) -> IntegerAttr:
    return IntegerAttr(v, i64)


@lru_cache(maxsize=None)
def _ints(values: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


@lru_cache(maxsize=None)
def _f64(v: float) -> FloatAttr:
    return FloatAttr(v, f64)


@lru_cache(maxsize=None)
def _tensor(elt: Attribute, shape: tuple[int, ...]) -> TensorType:
    return TensorType(elt, shape)


def _shape(t: TensorType) -> tuple[int, ...]:
    return t.get_shape()  # a tuple; cheaper than hashing the type for a cache


_UNARY = {k: N.UnaryKindAttr(k) for k in N.UnaryKind}
_BINARY = {k: N.BinaryKindAttr(k) for k in N.BinaryKind}
_COMPARE = {k: N.CompareKindAttr(k) for k in N.CompareKind}
_REDUCE = {k: N.ReduceKindAttr(k) for k in N.ReduceKind}
_ACT = {k.value: N.ActivationAttr(k) for k in N.Activation}
_KIND_OF: dict[type, str] = {cls: kind for kind, cls in N.npuir_kinds().items()}
_ARITH = {N.BinaryKind.ADD, N.BinaryKind.SUB, N.BinaryKind.MUL, N.BinaryKind.DIV, N.BinaryKind.POW}
_FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)


def _is_float(elt: Attribute) -> bool:
    return not isinstance(elt, IntegerType)


class _Fallback(Exception):
    """Raised by a rule: this variant has no npuir form, use the aten fallback."""


def _dim(d: int, rank: int) -> int:
    nd = d + rank if d < 0 else d
    if not 0 <= nd < rank:
        raise _Fallback
    return nd


@lru_cache(maxsize=None)
def _promote(a: torch.dtype, a_dim0: bool, b: Any) -> torch.dtype:
    """torch's result type of `a` (a tensor, 0-dim or not) and `b` (a dtype of a tensor with
    dims, or a Python scalar)."""
    ta = torch.empty((), dtype=a) if a_dim0 else torch.empty((1,), dtype=a)
    if isinstance(b, tuple):  # (dtype, is_0dim)
        tb = torch.empty((), dtype=b[0]) if b[1] else torch.empty((1,), dtype=b[0])
        return torch.result_type(ta, tb)
    return torch.result_type(ta, b)


# ================================================================================= lowering


@dataclass
class LoweringStats:
    vregs: int = 0
    fallbacks: int = 0
    dropped: int = 0


class FunctionLowering:
    """Lowers one func.func (in place: its body is replaced by a new block)."""

    def __init__(self, policy: AffinityPolicy):
        self.policy = policy
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

    # ------------------------------------------------------------------------ emission

    def emit(
        self, cls: type[N.NpuirOp], operands: Sequence[SSAValue], rtype: TensorType, props: dict | None = None
    ) -> SSAValue:
        kind = _KIND_OF[cls]
        try:
            device = self.policy.device(
                kind, [o.type for o in operands], rtype, aten_name=self.current_name, pinned=self.pinned
            )
        except NoDeviceError as err:
            raise self.no_device(str(err)) from None
        p = {} if props is None else props
        p["device"] = _DEVICE[device]
        p["vreg"] = _i64(self.vreg)
        self.vreg += 1
        op = cls.create(operands=operands, result_types=(rtype,), properties=p, location=self.loc)
        self.ops.append(op)
        return op.results[0]

    def no_device(self, why: str) -> Exception:
        op = self.current
        assert op is not None
        return pass_failure(op, f"lower-aten-to-npuir: no device can run {describe_op(op)}: {why}")

    def source(self, cls: type[N.NpuirOp], rtype: Attribute, props: dict) -> SSAValue:
        props["device"] = _DEVICE[Device.CPU]  # fixed up once users are known
        props["vreg"] = _i64(self.vreg)
        self.vreg += 1
        op = cls.create(result_types=(rtype,), properties=props)
        self.ops.append(op)
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
                    raise _Fallback
                value = int(value)
            else:
                value = int(value)
            key: tuple[Any, ...] = (elt, shape, value)
        else:
            value = float(value)
            key = (elt, shape, repr(value))
        found = self.consts.get(key)
        if found is None:
            t = _tensor(elt, shape)
            attr = DenseIntOrFPElementsAttr.from_list(t, [value])
            found = self.consts[key] = self.source(N.ConstantOp, t, {"value": attr})
        return found

    def const_tensor(self, tensor: torch.Tensor) -> SSAValue:
        """A constant holding `tensor` (a splat when uniform)."""
        t = _tensor(_elt(tensor.dtype), tuple(tensor.shape))
        flat = tensor.reshape(-1)
        if flat.numel() > 0 and bool((flat == flat[0]).all()):
            return self.const(flat[0].item(), t.element_type, tuple(tensor.shape))
        values = flat.tolist() if tensor.dtype.is_floating_point else flat.to(torch.int64).tolist()
        if tensor.dtype == torch.bool:
            values = [1 if v else 0 for v in values]
        attr = DenseIntOrFPElementsAttr.from_list(t, values)
        return self.source(N.ConstantOp, t, {"value": attr})

    def convert(self, x: SSAValue, elt: Attribute) -> SSAValue:
        t = x.type
        assert isinstance(t, TensorType)
        if t.element_type == elt:
            return x
        return self.emit(N.ConvertOp, [x], _tensor(elt, _shape(t)))

    def reshape(self, x: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        t = x.type
        assert isinstance(t, TensorType)
        if _shape(t) == shape:
            return x
        return self.emit(N.ReshapeOp, [x], _tensor(t.element_type, shape))

    def unary(self, kind: N.UnaryKind, x: SSAValue, out: TensorType) -> SSAValue:
        x = self.convert(x, out.element_type)
        return self.emit(N.UnaryOp, [x], out, {"kind": _UNARY[kind]})

    def binary(self, kind: N.BinaryKind, a: SSAValue, b: SSAValue, out: TensorType) -> SSAValue:
        elt = out.element_type
        if elt == i1 and kind in _ARITH:
            if kind is N.BinaryKind.ADD:
                kind = N.BinaryKind.OR
            elif kind is N.BinaryKind.MUL:
                kind = N.BinaryKind.AND
            else:
                raise _Fallback
        if kind in (N.BinaryKind.AND, N.BinaryKind.OR) and _is_float(elt):
            raise _Fallback
        a, b = self.convert(a, elt), self.convert(b, elt)
        return self.emit(N.BinaryOp, [a, b], out, {"kind": _BINARY[kind]})

    def compare(self, kind: N.CompareKind, a: SSAValue, b: SSAValue, out: TensorType) -> SSAValue:
        return self.emit(N.CompareOp, [a, b], out, {"kind": _COMPARE[kind]})

    def slice(self, x: SSAValue, axis: int, start: int, end: int, step: int = 1) -> SSAValue:
        t = x.type
        assert isinstance(t, TensorType)
        shape = _shape(t)
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
            _tensor(t.element_type, tuple(out)),
            {"starts": _ints(tuple(starts)), "ends": _ints(tuple(ends)), "steps": _ints(tuple(steps))},
        )

    def scalar_operand(self, value: Any, elt: Attribute) -> SSAValue:
        return self.const(value, elt)

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
                N.AtenCallOp, operands, rtype, {"op": target, "attrs": attrs, "result_index": _i64(i)}
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
            value = self.source(N.InputOp, arg.type, {"index": _i64(i)})
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
            rule = _RULES.get(op.name)
            if rule is None and not isinstance(op, aten.AtenOp):
                raise self.no_device("it is not an aten op (nothing lowers it)")
            mark, vreg = len(self.ops), self.vreg
            try:
                if rule is None:
                    self.fallback(op)
                else:
                    rule(self, op)
            except _Fallback:
                self.rollback(mark, vreg)
                self.fallback(op)
        self.current = None
        new_block = Block(arg_types=block.arg_types)
        for old, new in zip(block.args, new_block.args):
            new.name_hint = old.name_hint
        new_block.add_ops(self.ops)
        if ret is not None:
            new_block.add_op(func.ReturnOp(*[self.vmap[v] for v in ret.operands]))
        _place_sources(self.ops)
        fn.body.insert_block_before(new_block, block)
        fn.body.detach_block(block)
        self.stats.vregs = self.vreg
        return self.stats


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


# ==================================================================================== rules

Rule = Callable[[FunctionLowering, Any], None]
_RULES: dict[str, Rule] = {}


def rule(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            _RULES[name] = fn
        return fn

    return register


def _out(op: Operation, i: int = 0) -> TensorType:
    return op.results[i].type  # type: ignore[return-value]


def _type(v: SSAValue) -> TensorType:
    return v.type  # type: ignore[return-value]


# --- sources ---------------------------------------------------------------------------------


@rule("aten.weight")
def _weight(L: FunctionLowering, op: aten.WeightOp) -> None:
    result = op.results[0]
    L.bind(result, L.source(N.WeightOp, result.type, {"name": op.properties["name"]}))


@rule("aten.constant")
def _constant(L: FunctionLowering, op: aten.ConstantOp) -> None:
    result = op.results[0]
    L.bind(result, L.source(N.ConstantOp, result.type, {"value": op.properties["value"]}))


_MAX_CONSTANT = 4096
"""Largest non-uniform factory result that becomes an inline constant (else the fallback)."""


@rule(
    "aten.arange",
    "aten.arange.start",
    "aten.arange.start_step",
    "aten.full",
    "aten.ones",
    "aten.zeros",
    "aten.new_ones",
    "aten.new_zeros",
    "aten.full_like",
    "aten.ones_like",
    "aten.zeros_like",
    "aten.scalar_tensor",
)
def _factory(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    dtype = torch_dtype(out.element_type)
    empties = [torch.zeros(_shape(_type(v)), dtype=torch_dtype(_type(v).element_type)) for v in op.operands]
    if math.prod(_shape(out)) > _MAX_CONSTANT and op.name.startswith("aten.arange"):
        raise _Fallback
    value = op.call(empties)
    assert isinstance(value, torch.Tensor) and value.dtype == dtype
    L.bind(op.results[0], L.const_tensor(value))


# --- no-ops and views -----------------------------------------------------------------------


@rule("aten.contiguous", "aten.clone", "aten.alias", "aten.detach", "aten.lift_fresh_copy")
def _identity(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], L.vmap[op.operands[0]])


@rule("aten._assert_tensor_metadata")
def _assert(L: FunctionLowering, op: aten.AtenOp) -> None:
    """Static shapes and dtypes were checked by the verifier: nothing to run."""


@rule("aten.dropout")
def _dropout(L: FunctionLowering, op: aten.AtenOp) -> None:
    if op.arg("train") and op.arg("p") > 0:
        raise _Fallback  # random: keep torch's semantics on the host
    L.bind(op.results[0], L.vmap[op.operands[0]])


@rule(
    "aten.view",
    "aten.reshape",
    "aten._unsafe_view",
    "aten.flatten.using_ints",
    "aten.unsqueeze",
    "aten.squeeze",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
)
def _reshape(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], L.reshape(L.vmap[op.operands[0]], _shape(_out(op))))


@rule("aten.to.dtype", "aten.to.dtype_layout", "aten.to.device", "aten._to_copy")
def _to(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], L.convert(L.vmap[op.operands[0]], _out(op).element_type))


def _transpose(L: FunctionLowering, op: Operation, x: SSAValue, perm: list[int]) -> None:
    if perm == sorted(perm):
        L.bind(op.results[0], x)
    else:
        L.bind(op.results[0], L.emit(N.TransposeOp, [x], _out(op), {"perm": _ints(tuple(perm))}))


@rule("aten.permute")
def _permute(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    rank = len(_shape(_type(x)))
    _transpose(L, op, x, [_dim(d, rank) for d in op.arg("dims")])


@rule("aten.transpose.int")
def _transpose_int(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    rank = len(_shape(_type(x)))
    if rank == 0:
        L.bind(op.results[0], x)
        return
    perm = list(range(rank))
    a, b = _dim(op.arg("dim0"), rank), _dim(op.arg("dim1"), rank)
    perm[a], perm[b] = perm[b], perm[a]
    _transpose(L, op, x, perm)


@rule("aten.t")
def _t(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    _transpose(L, op, x, [1, 0] if len(_shape(_type(x))) == 2 else list(range(len(_shape(_type(x))))))


def _broadcast_to(L: FunctionLowering, x: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    t = _type(x)
    if _shape(t) == shape:
        return x
    return L.emit(N.BroadcastOp, [x], _tensor(t.element_type, shape))


@rule("aten.expand")
def _expand(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], _broadcast_to(L, L.vmap[op.operands[0]], _shape(_out(op))))


@rule("aten.repeat")
def _repeat(L: FunctionLowering, op: aten.AtenOp) -> None:
    """x.repeat(r): view x as [1, s0, 1, s1, ...], broadcast to [r0, s0, r1, s1, ...], flatten."""
    x = L.vmap[op.operands[0]]
    reps = list(op.arg("repeats"))
    shape = list(_shape(_type(x)))
    shape = [1] * (len(reps) - len(shape)) + shape
    x = L.reshape(x, tuple(d for s in shape for d in (1, s)))
    x = _broadcast_to(L, x, tuple(d for r, s in zip(reps, shape) for d in (r, s)))
    L.bind(op.results[0], L.reshape(x, _shape(_out(op))))


def _bounds(start: int | None, end: int | None, size: int) -> tuple[int, int]:
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end


@rule("aten.slice.Tensor")
def _slice(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    shape = _shape(_type(x))
    axis = _dim(op.arg("dim"), len(shape))
    start, end = _bounds(op.arg("start"), op.arg("end"), shape[axis])
    step = op.arg("step")
    if step < 1:
        raise _Fallback
    L.bind(op.results[0], L.slice(x, axis, start, end, step))


@rule("aten.select.int")
def _select(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    shape = _shape(_type(x))
    axis = _dim(op.arg("dim"), len(shape))
    index = op.arg("index")
    index = index + shape[axis] if index < 0 else index
    L.bind(op.results[0], L.reshape(L.slice(x, axis, index, index + 1), _shape(_out(op))))


def _split(L: FunctionLowering, op: aten.AtenOp, sizes: list[int]) -> None:
    x = L.vmap[op.operands[0]]
    shape = _shape(_type(x))
    axis = _dim(op.arg("dim"), len(shape))
    start = 0
    for r, size in zip(op.results, sizes):
        end = min(start + size, shape[axis])
        if L.used(r):
            L.bind(r, L.slice(x, axis, start, end))
        start = end


@rule("aten.split.Tensor")
def _split_tensor(L: FunctionLowering, op: aten.AtenOp) -> None:
    _split(L, op, [op.arg("split_size")] * len(op.results))


@rule("aten.split_with_sizes")
def _split_sizes(L: FunctionLowering, op: aten.AtenOp) -> None:
    _split(L, op, list(op.arg("split_sizes")))


def _concat(L: FunctionLowering, values: list[SSAValue], axis: int, out: TensorType) -> SSAValue:
    values = [L.convert(v, out.element_type) for v in values]
    if len(values) == 1:
        return values[0]
    return L.emit(N.ConcatOp, values, out, {"axis": _i64(axis)})


@rule("aten.cat")
def _cat(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    values = [L.vmap[v] for v in op.operands]
    if any(_shape(_type(v)) == (0,) for v in values):
        raise _Fallback  # torch's legacy empty-tensor rule
    axis = _dim(op.arg("dim"), len(_shape(out)))
    L.bind(op.results[0], _concat(L, values, axis, out))


@rule("aten.stack")
def _stack(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    axis = _dim(op.arg("dim"), len(_shape(out)))
    parts = []
    for v in op.operands:
        x = L.vmap[v]
        shape = list(_shape(_type(x)))
        shape.insert(axis, 1)
        parts.append(L.reshape(x, tuple(shape)))
    L.bind(op.results[0], _concat(L, parts, axis, out))


# --- lookups ----------------------------------------------------------------------------------


def _gather(L: FunctionLowering, op: Operation, data: SSAValue, indices: SSAValue, axis: int) -> None:
    if _type(indices).element_type == i1:
        raise _Fallback  # boolean masks select, they do not index
    L.bind(op.results[0], L.emit(N.GatherOp, [data, indices], _out(op), {"axis": _i64(axis)}))


@rule("aten.embedding")
def _embedding(L: FunctionLowering, op: aten.AtenOp) -> None:
    w, ids = L.arg(op, "weight"), L.arg(op, "indices")
    assert w is not None and ids is not None
    _gather(L, op, w, ids, 0)


@rule("aten.index_select")
def _index_select(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, idx = L.arg(op, "self"), L.arg(op, "index")
    assert x is not None and idx is not None
    _gather(L, op, x, idx, _dim(op.arg("dim"), len(_shape(_type(x)))))


@rule("aten.index.Tensor")
def _index(L: FunctionLowering, op: aten.AtenOp) -> None:
    """x[idx] or x[:, ..., idx] with one index tensor: a gather; other forms use the fallback."""
    mask = op.present_mask()
    if sum(mask) != 1 or mask[-1] != 1:
        raise _Fallback
    x, idx = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    _gather(L, op, x, idx, len(mask) - 1)


# --- linear algebra ----------------------------------------------------------------------------


def _matmul(L: FunctionLowering, a: SSAValue, b: SSAValue, out_shape: tuple[int, ...], ta=False, tb=False) -> SSAValue:
    """torch.matmul semantics (rank-1 operands are viewed as matrices, then squeezed)."""
    sa, sb = _shape(_type(a)), _shape(_type(b))
    if len(sa) == 1:
        a = L.reshape(a, (1, sa[0]))
    if len(sb) == 1:
        b = L.reshape(b, (sb[0], 1))
    sa, sb = _shape(_type(a)), _shape(_type(b))
    m = sa[-1] if ta else sa[-2]
    n = sb[-2] if tb else sb[-1]
    batch = N.broadcast_shapes(sa[:-2], sb[:-2])
    elt = _type(a).element_type
    props: dict[str, Attribute] = {}
    if ta:
        props["transpose_a"] = N.TRUE
    if tb:
        props["transpose_b"] = N.TRUE
    y = L.emit(N.MatmulOp, [a, b], _tensor(elt, (*batch, m, n)), props)
    return L.reshape(y, out_shape)


def _scale_add(L: FunctionLowering, y: SSAValue, bias: SSAValue | None, alpha: Any, beta: Any, out: TensorType) -> SSAValue:
    """alpha * y + beta * bias (torch's addmm/baddbmm; beta == 0 ignores bias)."""
    if alpha != 1:
        y = L.binary(N.BinaryKind.MUL, y, L.const(alpha, out.element_type), out)
    if bias is None or beta == 0:
        return y
    if beta != 1:
        bias = L.binary(N.BinaryKind.MUL, bias, L.const(beta, out.element_type), _type(bias))
    return L.binary(N.BinaryKind.ADD, y, bias, out)


def _same_elements(*values: SSAValue | None) -> bool:
    elts = {_type(v).element_type for v in values if v is not None}
    return len(elts) == 1


@rule("aten.addmm")
def _addmm(L: FunctionLowering, op: aten.AtenOp) -> None:
    bias, x, w = L.arg(op, "self"), L.arg(op, "mat1"), L.arg(op, "mat2")
    assert bias is not None and x is not None and w is not None
    out = _out(op)
    alpha, beta = op.arg("alpha"), op.arg("beta")
    if not _same_elements(bias, x, w):
        raise _Fallback
    if alpha == 1 and beta == 1 and _shape(_type(bias)) == (_shape(out)[-1],):
        # GPT-2's Conv1D: the weight is [K, N]
        L.bind(op.results[0], L.emit(N.LinearOp, [x, w, bias], out, {"transpose_w": N.FALSE}))
        return
    y = _matmul(L, x, w, _shape(out))
    L.bind(op.results[0], _scale_add(L, y, bias, alpha, beta, out))


@rule("aten.baddbmm")
def _baddbmm(L: FunctionLowering, op: aten.AtenOp) -> None:
    bias, a, b = L.arg(op, "self"), L.arg(op, "batch1"), L.arg(op, "batch2")
    assert bias is not None and a is not None and b is not None
    if not _same_elements(bias, a, b):
        raise _Fallback
    out = _out(op)
    y = _matmul(L, a, b, _shape(out))
    L.bind(op.results[0], _scale_add(L, y, bias, op.arg("alpha"), op.arg("beta"), out))


@rule("aten.mm", "aten.bmm", "aten.matmul")
def _mm(L: FunctionLowering, op: aten.AtenOp) -> None:
    a, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    if not _same_elements(a, b) or not _is_float(_type(a).element_type):
        raise _Fallback
    L.bind(op.results[0], _matmul(L, a, b, _shape(_out(op))))


@rule("aten.matmul_transposed")
def _mm_t(L: FunctionLowering, op: aten.AtenOp) -> None:
    a, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    if not _same_elements(a, b) or len(_shape(_type(a))) < 2 or len(_shape(_type(b))) < 2:
        raise _Fallback
    y = _matmul(L, a, b, _shape(_out(op)), op.arg("transpose_input"), op.arg("transpose_other"))
    L.bind(op.results[0], y)


def _linear(L: FunctionLowering, op: aten.AtenOp, activation: str) -> None:
    x, w, bias = L.arg(op, "input"), L.arg(op, "weight"), L.arg(op, "bias")
    assert x is not None and w is not None
    out = _out(op)
    if len(_shape(_type(w))) != 2 or not _same_elements(x, w, bias) or len(_shape(_type(x))) < 1:
        raise _Fallback
    if bias is not None and _shape(_type(bias)) != (_shape(out)[-1],):
        raise _Fallback
    props: dict[str, Attribute] = {}
    if activation != "none":
        props["activation"] = _ACT[activation]
    operands = [x, w] if bias is None else [x, w, bias]
    L.bind(op.results[0], L.emit(N.LinearOp, operands, out, props))


@rule("aten.linear")
def _aten_linear(L: FunctionLowering, op: aten.AtenOp) -> None:
    _linear(L, op, "none")


@rule("aten.fused_linear")
def _fused_linear(L: FunctionLowering, op: aten.AtenOp) -> None:
    _linear(L, op, op.arg("activation"))


@rule("aten.gated_mlp")
def _gated_mlp(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, wg, wu = L.arg(op, "input"), L.arg(op, "gate_weight"), L.arg(op, "up_weight")
    assert x is not None and wg is not None and wu is not None
    if not _same_elements(x, wg, wu) or len(_shape(_type(wg))) != 2:
        raise _Fallback
    props = {"activation": _ACT[op.arg("activation")]}
    L.bind(op.results[0], L.emit(N.GatedMlpOp, [x, wg, wu], _out(op), props))


# --- elementwise -------------------------------------------------------------------------------


def _tensor_binary(kind: N.BinaryKind) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = _out(op)
        a, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
        L.bind(op.results[0], L.binary(kind, a, b, out))

    return lower


def _scalar_binary(kind: N.BinaryKind, value_arg: str = "other") -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = _out(op)
        a = L.vmap[op.operands[0]]
        L.bind(op.results[0], L.binary(kind, a, L.const(op.arg(value_arg), out.element_type), out))

    return lower


for _name, _kind in (
    ("aten.mul.Tensor", N.BinaryKind.MUL),
    ("aten.div.Tensor", N.BinaryKind.DIV),
    ("aten.pow.Tensor_Tensor", N.BinaryKind.POW),
    ("aten.maximum", N.BinaryKind.MAX),
    ("aten.minimum", N.BinaryKind.MIN),
    ("aten.bitwise_and.Tensor", N.BinaryKind.AND),
    ("aten.bitwise_or.Tensor", N.BinaryKind.OR),
    ("aten.__and__.Tensor", N.BinaryKind.AND),
    ("aten.__or__.Tensor", N.BinaryKind.OR),
):
    _RULES[_name] = _tensor_binary(_kind)
for _name, _kind, _arg in (
    ("aten.mul.Scalar", N.BinaryKind.MUL, "other"),
    ("aten.div.Scalar", N.BinaryKind.DIV, "other"),
    ("aten.pow.Tensor_Scalar", N.BinaryKind.POW, "exponent"),
):
    _RULES[_name] = _scalar_binary(_kind, _arg)


@rule("aten.div.Tensor_mode")
def _div_mode(L: FunctionLowering, op: aten.AtenOp) -> None:
    if op.arg("rounding_mode") is not None:
        raise _Fallback
    _tensor_binary(N.BinaryKind.DIV)(L, op)


def _add_like(kind: N.BinaryKind, scalar: bool) -> Rule:
    """self ± alpha * other."""

    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = _out(op)
        a = L.vmap[op.operands[0]]
        alpha = op.arg("alpha")
        if scalar:
            other = op.arg("other")
            b = L.const(other * alpha if alpha != 1 else other, out.element_type)
        else:
            b = L.vmap[op.operands[1]]
            if alpha != 1:
                b = L.binary(N.BinaryKind.MUL, b, L.const(alpha, out.element_type), _tensor(out.element_type, _shape(_type(b))))
        L.bind(op.results[0], L.binary(kind, a, b, out))

    return lower


_RULES["aten.add.Tensor"] = _add_like(N.BinaryKind.ADD, False)
_RULES["aten.add.Scalar"] = _add_like(N.BinaryKind.ADD, True)
_RULES["aten.sub.Tensor"] = _add_like(N.BinaryKind.SUB, False)
_RULES["aten.sub.Scalar"] = _add_like(N.BinaryKind.SUB, True)


@rule("aten.rsub.Scalar")
def _rsub(L: FunctionLowering, op: aten.AtenOp) -> None:
    """other - alpha * self."""
    out = _out(op)
    x = L.vmap[op.operands[0]]
    alpha = op.arg("alpha")
    if alpha != 1:
        x = L.binary(N.BinaryKind.MUL, x, L.const(alpha, out.element_type), out)
    L.bind(op.results[0], L.binary(N.BinaryKind.SUB, L.const(op.arg("other"), out.element_type), x, out))


@rule("aten.clamp")
def _clamp(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    lo, hi = op.arg("min"), op.arg("max")
    if lo is not None:
        x = L.binary(N.BinaryKind.MAX, x, L.const(lo, out.element_type), out)
    if hi is not None:
        x = L.binary(N.BinaryKind.MIN, x, L.const(hi, out.element_type), out)
    L.bind(op.results[0], x)


def _unary(kind: N.UnaryKind) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = _out(op)
        if out.element_type == i1:
            raise _Fallback
        L.bind(op.results[0], L.unary(kind, L.vmap[op.operands[0]], out))

    return lower


for _name, _ukind in (
    ("aten.neg", N.UnaryKind.NEG),
    ("aten.abs", N.UnaryKind.ABS),
    ("aten.reciprocal", N.UnaryKind.RECIPROCAL),
    ("aten.sqrt", N.UnaryKind.SQRT),
    ("aten.rsqrt", N.UnaryKind.RSQRT),
    ("aten.exp", N.UnaryKind.EXP),
    ("aten.log", N.UnaryKind.LOG),
    ("aten.sin", N.UnaryKind.SIN),
    ("aten.cos", N.UnaryKind.COS),
    ("aten.erf", N.UnaryKind.ERF),
    ("aten.tanh", N.UnaryKind.TANH),
    ("aten.sigmoid", N.UnaryKind.SIGMOID),
    ("aten.relu", N.UnaryKind.RELU),
    ("aten.silu", N.UnaryKind.SILU),
):
    _RULES[_name] = _unary(_ukind)


@rule("aten.gelu")
def _gelu(L: FunctionLowering, op: aten.AtenOp) -> None:
    kind = N.UnaryKind.GELU_TANH if op.arg("approximate") == "tanh" else N.UnaryKind.GELU
    _unary(kind)(L, op)


@rule("aten.bitwise_not")
def _bitwise_not(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    x = L.vmap[op.operands[0]]
    if out.element_type == i1:
        L.bind(op.results[0], L.emit(N.UnaryOp, [x], out, {"kind": _UNARY[N.UnaryKind.NOT]}))
    else:  # ~x == -x - 1 in two's complement
        neg = L.unary(N.UnaryKind.NEG, x, out)
        L.bind(op.results[0], L.binary(N.BinaryKind.SUB, neg, L.const(1, out.element_type), out))


def _to_bool(L: FunctionLowering, x: SSAValue) -> SSAValue:
    t = _type(x)
    if t.element_type == i1:
        return x
    return L.compare(N.CompareKind.NE, x, L.const(0, t.element_type), _tensor(i1, _shape(t)))


@rule("aten.logical_not")
def _logical_not(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    if out.element_type != i1:
        raise _Fallback
    x = L.vmap[op.operands[0]]
    t = _type(x)
    if t.element_type == i1:
        L.bind(op.results[0], L.emit(N.UnaryOp, [x], out, {"kind": _UNARY[N.UnaryKind.NOT]}))
    else:
        L.bind(op.results[0], L.compare(N.CompareKind.EQ, x, L.const(0, t.element_type), out))


@rule("aten.logical_and")
def _logical_and(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    if out.element_type != i1:
        raise _Fallback
    a, b = _to_bool(L, L.vmap[op.operands[0]]), _to_bool(L, L.vmap[op.operands[1]])
    L.bind(op.results[0], L.emit(N.BinaryOp, [a, b], out, {"kind": _BINARY[N.BinaryKind.AND]}))


# --- comparisons and selection -------------------------------------------------------------------


def _compare_rule(kind: N.CompareKind, scalar: bool) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        a = L.vmap[op.operands[0]]
        ta = _type(a)
        da = torch_dtype(ta.element_type)
        if scalar:
            value = op.arg("other")
            common = _promote(da, not _shape(ta), value)
            elt = _elt(common)
            a = L.convert(a, elt)
            b = L.const(value, elt)
        else:
            b = L.vmap[op.operands[1]]
            tb = _type(b)
            common = _promote(da, not _shape(ta), (torch_dtype(tb.element_type), not _shape(tb)))
            elt = _elt(common)
            a, b = L.convert(a, elt), L.convert(b, elt)
        L.bind(op.results[0], L.compare(kind, a, b, _out(op)))

    return lower


for _cname, _ckind in (
    ("eq", N.CompareKind.EQ),
    ("ne", N.CompareKind.NE),
    ("lt", N.CompareKind.LT),
    ("le", N.CompareKind.LE),
    ("gt", N.CompareKind.GT),
    ("ge", N.CompareKind.GE),
):
    _RULES[f"aten.{_cname}.Tensor"] = _compare_rule(_ckind, False)
    _RULES[f"aten.{_cname}.Scalar"] = _compare_rule(_ckind, True)


def _select_values(L: FunctionLowering, cond: SSAValue, a: SSAValue, b: SSAValue, out: TensorType) -> SSAValue:
    cond = _to_bool(L, cond)
    a, b = L.convert(a, out.element_type), L.convert(b, out.element_type)
    return L.emit(N.SelectOp, [cond, a, b], out)


@rule("aten.where.self")
def _where(L: FunctionLowering, op: aten.AtenOp) -> None:
    c, a, b = (L.vmap[v] for v in op.operands)
    L.bind(op.results[0], _select_values(L, c, a, b, _out(op)))


@rule("aten.where.ScalarOther")
def _where_other(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    c, a = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    L.bind(op.results[0], _select_values(L, c, a, L.const(op.arg("other"), out.element_type), out))


@rule("aten.where.ScalarSelf")
def _where_self(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    c, b = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    L.bind(op.results[0], _select_values(L, c, L.const(op.arg("self"), out.element_type), b, out))


@rule("aten.masked_fill.Scalar")
def _masked_fill(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    x, m = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    L.bind(op.results[0], _select_values(L, m, L.const(op.arg("value"), out.element_type), x, out))


@rule("aten.masked_fill.Tensor")
def _masked_fill_t(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, m, v = (L.vmap[o] for o in op.operands)
    L.bind(op.results[0], _select_values(L, m, v, x, _out(op)))


def _tri(upper: bool) -> Rule:
    """triu/tril: keep x where (col - row) >= diagonal (triu) or <= diagonal (tril), from two
    small iota constants (f32: exact for any realistic size, and NPU-friendly)."""

    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = _out(op)
        shape = _shape(out)
        if len(shape) < 2 or out.element_type == i1:
            raise _Fallback
        rows, cols = shape[-2], shape[-1]
        r = L.const_tensor(torch.arange(rows, dtype=torch.float32).reshape(rows, 1))
        c = L.const_tensor(torch.arange(cols, dtype=torch.float32).reshape(1, cols))
        d = L.binary(N.BinaryKind.SUB, c, r, _tensor(f32, (rows, cols)))
        kind = N.CompareKind.GE if upper else N.CompareKind.LE
        keep = L.compare(kind, d, L.const(op.arg("diagonal"), f32), _tensor(i1, (rows, cols)))
        x = L.vmap[op.operands[0]]
        L.bind(op.results[0], L.emit(N.SelectOp, [keep, x, L.const(0, out.element_type)], out))

    return lower


_RULES["aten.triu"] = _tri(True)
_RULES["aten.tril"] = _tri(False)


# --- reductions, normalization, attention ---------------------------------------------------------


def _reduce(L: FunctionLowering, kind: N.ReduceKind, x: SSAValue, dims: Sequence[int] | None, keepdim: bool, out: TensorType) -> SSAValue:
    x = L.convert(x, out.element_type)
    rank = len(_shape(_type(x)))
    axes = tuple(range(rank)) if not dims else tuple(sorted({_dim(d, rank) for d in dims}))
    if not axes:
        return x  # a 0-dim tensor: nothing to reduce
    props: dict[str, Attribute] = {"kind": _REDUCE[kind], "axes": _ints(axes)}
    if keepdim:
        props["keepdims"] = N.TRUE
    return L.emit(N.ReduceOp, [x], out, props)


def _reduce_rule(kind: N.ReduceKind, has_dims: bool) -> Rule:
    def lower(L: FunctionLowering, op: aten.AtenOp) -> None:
        out = _out(op)
        dims = op.arg("dim") if has_dims else None
        keep = bool(op.arg("keepdim")) if has_dims else False
        if kind is N.ReduceKind.MEAN and not _is_float(out.element_type):
            raise _Fallback
        if out.element_type == i1 and kind is N.ReduceKind.SUM:
            raise _Fallback
        L.bind(op.results[0], _reduce(L, kind, L.vmap[op.operands[0]], dims, keep, out))

    return lower


_RULES["aten.mean.dim"] = _reduce_rule(N.ReduceKind.MEAN, True)
_RULES["aten.mean"] = _reduce_rule(N.ReduceKind.MEAN, False)
_RULES["aten.sum.dim_IntList"] = _reduce_rule(N.ReduceKind.SUM, True)
_RULES["aten.sum"] = _reduce_rule(N.ReduceKind.SUM, False)
_RULES["aten.amax"] = _reduce_rule(N.ReduceKind.MAX, True)


@rule("aten.cumsum")
def _cumsum(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    if out.element_type == i1:
        raise _Fallback
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    axis = _dim(op.arg("dim"), len(_shape(out)))
    L.bind(op.results[0], L.emit(N.CumsumOp, [x], out, {"axis": _i64(axis)}))


@rule("aten.diff")
def _diff(L: FunctionLowering, op: aten.AtenOp) -> None:
    """n == 1: y = z[1:] - z[:-1] with z = cat(prepend, x, append) along dim."""
    out = _out(op)
    if op.arg("n") != 1 or out.element_type == i1:
        raise _Fallback
    x = L.arg(op, "self")
    assert x is not None
    rank = len(_shape(_type(x)))
    axis = _dim(op.arg("dim"), rank)
    parts = [v for v in (L.arg(op, "prepend"), x, L.arg(op, "append")) if v is not None]
    parts = [L.convert(v, out.element_type) for v in parts]
    length = sum(_shape(_type(v))[axis] for v in parts)
    zshape = list(_shape(_type(x)))
    zshape[axis] = length
    z = _concat(L, parts, axis, _tensor(out.element_type, tuple(zshape)))
    hi, lo = L.slice(z, axis, 1, length), L.slice(z, axis, 0, length - 1)
    L.bind(op.results[0], L.binary(N.BinaryKind.SUB, hi, lo, out))


@rule("aten.softmax.int", "aten._softmax")
def _softmax(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = _out(op)
    if not _is_float(out.element_type):
        raise _Fallback
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    axis = _dim(op.arg("dim"), len(_shape(out)))
    L.bind(op.results[0], L.emit(N.SoftmaxOp, [x], out, {"axis": _i64(axis)}))


@rule("aten.log_softmax.int")
def _log_softmax(L: FunctionLowering, op: aten.AtenOp) -> None:
    """s = x - max(x); s - log(sum(exp(s))) (the stable form)."""
    out = _out(op)
    if not _is_float(out.element_type):
        raise _Fallback
    x = L.convert(L.vmap[op.operands[0]], out.element_type)
    shape = _shape(out)
    axis = _dim(op.arg("dim"), len(shape))
    kept = _tensor(out.element_type, tuple(1 if i == axis else d for i, d in enumerate(shape)))
    m = L.emit(N.ReduceOp, [x], kept, {"kind": _REDUCE[N.ReduceKind.MAX], "axes": _ints((axis,)), "keepdims": N.TRUE})
    s = L.binary(N.BinaryKind.SUB, x, m, out)
    e = L.unary(N.UnaryKind.EXP, s, out)
    z = L.emit(N.ReduceOp, [e], kept, {"kind": _REDUCE[N.ReduceKind.SUM], "axes": _ints((axis,)), "keepdims": N.TRUE})
    lz = L.unary(N.UnaryKind.LOG, z, kept)
    L.bind(op.results[0], L.binary(N.BinaryKind.SUB, s, lz, out))


def _norm(
    L: FunctionLowering, op: aten.AtenOp, cls: type[N.NpuirOp], result: SSAValue, eps: float, *, residual: bool = False
) -> None:
    x = L.arg(op, "input")
    assert x is not None
    out = _type(result)
    if not _is_float(out.element_type):
        raise _Fallback
    x = L.convert(x, out.element_type)
    if residual:  # add_layer_norm: the norm of input + residual
        x = L.binary(N.BinaryKind.ADD, x, L.convert(L.arg(op, "residual"), out.element_type), out)
    shape = _shape(out)
    normalized = tuple(op.arg("normalized_shape"))
    axis = len(shape) - len(normalized)
    if axis < 0 or axis >= len(shape) or shape[axis:] != normalized:
        raise _Fallback
    w = L.arg(op, "weight")
    b = L.arg(op, "bias") if cls is N.LayerNormOp else None
    if b is not None and w is None:
        w = L.const(1.0, out.element_type, normalized)
    affine = [L.convert(v, out.element_type) for v in (w, b) if v is not None]
    props = {"axis": _i64(axis), "eps": _f64(float(eps))}
    L.bind(result, L.emit(cls, [x, *affine], out, props))


@rule("aten.layer_norm")
def _layer_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    _norm(L, op, N.LayerNormOp, op.results[0], op.arg("eps"))


@rule("aten.add_layer_norm")
def _add_layer_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    _norm(L, op, N.LayerNormOp, op.results[0], op.arg("eps"), residual=True)


@rule("aten.native_layer_norm")
def _native_layer_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    if L.used(op.results[1]) or L.used(op.results[2]):
        raise _Fallback  # mean and rstd: the host computes all three
    _norm(L, op, N.LayerNormOp, op.results[0], op.arg("eps"))


@rule("aten.rms_norm")
def _rms_norm(L: FunctionLowering, op: aten.AtenOp) -> None:
    eps = op.arg("eps")
    if eps is None:
        eps = torch.finfo(torch_dtype(_out(op).element_type)).eps if _is_float(_out(op).element_type) else 0.0
    _norm(L, op, N.RmsNormOp, op.results[0], eps)


@rule("aten.scaled_dot_product_attention")
def _sdpa(L: FunctionLowering, op: aten.AtenOp) -> None:
    q, k, v, mask = (L.arg(op, n) for n in ("query", "key", "value", "attn_mask"))
    assert q is not None and k is not None and v is not None
    out = _out(op)
    if op.arg("dropout_p") > 0 or len(_shape(out)) < 3 or not _same_elements(q, k, v):
        raise _Fallback
    props: dict[str, Attribute] = {}
    if op.arg("is_causal"):
        props["is_causal"] = N.TRUE
    if (scale := op.arg("scale")) is not None:
        props["scale"] = _f64(float(scale))
    operands = [q, k, v]
    if mask is not None:
        if _type(mask).element_type != i1:
            mask = L.convert(mask, out.element_type)
        operands.append(mask)
    L.bind(op.results[0], L.emit(N.SdpaOp, operands, out, props))


# ========================================================================================= pass


def lower_module(module: ModuleOp, policy: AffinityPolicy) -> LoweringStats:
    """Lower every func.func of `module` from aten to npuir (in place)."""
    total = LoweringStats()
    for op in list(module.ops):
        if isinstance(op, func.FuncOp) and op.body.blocks:
            stats = FunctionLowering(policy).run(op)
            total.vregs += stats.vregs
            total.fallbacks += stats.fallbacks
            total.dropped += stats.dropped
    return total


@dataclass(frozen=True)
class LowerAtenToNpuirPass(ModulePass):
    """aten -> npuir with device affinity from an `AffinityPolicy` (see lowering/affinity.py).

    Options: `policy` (npu-first | cpu-only | npu-only), `cpu-ops` (npuir kinds or aten op names
    pinned to the cpu, e.g. `cpu-ops=gather`), `pin-final-norm` (the last norm on the cpu).
    Records `npuir.lowering = {vregs, fallbacks, dropped}` on the module.
    """

    name: ClassVar[str] = "lower-aten-to-npuir"

    policy: str = "npu-first"
    cpu_ops: tuple[str, ...] = ()
    pin_final_norm: bool = False

    def __post_init__(self) -> None:
        self.affinity()  # ValueError on an unknown policy: reported as an invalid option

    def affinity(self) -> AffinityPolicy:
        return AffinityPolicy.of(self.policy, self.cpu_ops, self.pin_final_norm)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stats = lower_module(op, self.affinity())
        op.attributes["npuir.lowering"] = DictionaryAttr(
            {"vregs": _i64(stats.vregs), "fallbacks": _i64(stats.fallbacks), "dropped": _i64(stats.dropped)}
        )
