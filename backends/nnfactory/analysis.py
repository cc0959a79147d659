"""Split a buffer function into NPU segments, CPU steps and transfers (no runtime involved).

The op order is the schedule. A **segment** is a maximal run of `buffer.exec npu` ops;
`buffer.exec cpu` and `buffer.transfer` end it (`buffer.arena`, `buffer.alloc`, `buffer.input`,
`buffer.weight`, `buffer.constant` are declarations and do not). Segment inputs (`SegmentPlan.params`) are the
values defined outside the segment and read inside, in order of first use; its results are the
values defined inside and read outside or returned, in definition order; the weights and
constants it reads are its `sources` (they become constants of its graph).

`analyze` also gives every value its `ValueRef` (unique names from the SSA name hints) and checks
what the emitter relies on: every operand defined, every result fitting its buffer, no segment
reading two values whose bytes overlap (`program.memory_of`: buffers of one arena may overlap).
`SegmentPlan.staged` are the results whose bytes overlap one of the segment's inputs: the graph
must not write them in place while it may still read that input (the emitter stages them).
A `buffer.state` value lives in its state's buffer like any buffer value; `Analysis.states`
maps each state name to that buffer's id.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, IntegerType, ModuleOp, StringAttr, TensorType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Operation, SSAValue

from dialects import buffer as B
from dialects import npuir as N
from dialects.torch_types import dense_tensor, dtype_of, shape_of

from .program import ArenaSpec, BufferSpec, CpuStep, EmitError, TransferStep, ValueRef, memory_of, overlap

_I1 = IntegerType(1)  # built once: _param_text runs per op parameter

__all__ = ["Analysis", "SegmentPlan", "analyze", "describe_op", "op_text"]


@dataclass
class SegmentPlan:
    """A segment before building: its ops and boundary values."""

    index: int
    ops: list[B.ExecOp]
    params: list[SSAValue]
    results: list[SSAValue]
    sources: list[SSAValue]  # weights and constants read (become graph constants)
    staged: set[SSAValue] = field(default_factory=set)  # results whose bytes overlap an input's


@dataclass
class Analysis:
    """What `analyze` finds in a buffer function (no runtime involved)."""

    function: str
    buffers: dict[int, BufferSpec]
    refs: dict[SSAValue, ValueRef]
    inputs: tuple[ValueRef, ...]
    outputs: tuple[ValueRef, ...]
    items: list[SegmentPlan | CpuStep | TransferStep]
    constants: dict[str, torch.Tensor]
    states: dict[str, int] = field(default_factory=dict)

    @property
    def segments(self) -> list[SegmentPlan]:
        return [i for i in self.items if isinstance(i, SegmentPlan)]


def _find_function(module: ModuleOp | func.FuncOp, func_name: str | None) -> func.FuncOp:
    if isinstance(module, func.FuncOp):
        return module
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if func_name is not None:
        for f in funcs:
            if f.sym_name.data == func_name:
                return f
        raise EmitError(f"emit: no function @{func_name} in the module")
    if len(funcs) == 1:
        return funcs[0]
    for f in funcs:
        if f.sym_name.data == "forward":
            return f
    raise EmitError(f"emit: {len(funcs)} functions in the module; pass func_name")


def _name(value: SSAValue) -> str:
    return value.name_hint or "v"


class _Namer:
    """Unique value names from SSA name hints (`%add`, `%add_1`, ... as the printer does)."""

    def __init__(self) -> None:
        self.names: dict[SSAValue, str] = {}
        self.used: set[str] = set()

    def __call__(self, value: SSAValue) -> str:
        name = self.names.get(value)
        if name is None:
            base = name = _name(value)
            n = 0
            while name in self.used:
                n += 1
                name = f"{base}_{n}"
            self.used.add(name)
            self.names[value] = name
        return name


def op_text(op: Operation, refs: Mapping[SSAValue, ValueRef] | None = None) -> str:
    """`buffer.exec npu sdpa (%sdpa_1)`: how messages name an op."""
    name = ""
    if op.results:
        ref = refs.get(op.results[0]) if refs is not None else None
        name = f" (%{ref.name if ref is not None else _name(op.results[0])})"
    if isinstance(op, B.ExecOp):
        return f"buffer.exec {op.device.data.value} {op.kind.data}{name}"
    return f"{op.name}{name}"


def _param_text(value: Any) -> str:
    if isinstance(value, EnumAttribute):
        return str(value.data.value)
    if isinstance(value, IntegerAttr):
        v = value.value.data
        return ("true" if v else "false") if value.type == _I1 else str(v)
    if isinstance(value, FloatAttr):
        return repr(value.value.data)
    if isinstance(value, DenseArrayBase):
        return str([int(v) for v in value.get_values()])
    if isinstance(value, StringAttr):
        return repr(value.data)
    return str(value)


def describe_op(op: B.ExecOp, refs: Mapping[SSAValue, ValueRef]) -> str:
    """`%linear_2 = linear(%x, %w) {activation = gelu}`: an exec in one short line."""
    ins = ", ".join(f"%{refs[v].name}" if v in refs else "%?" for v in op.ins)
    cls = op.npuir_class()
    defaults = {k: p.default_value for k, p in cls.get_irdl_definition().properties.items()} if cls else {}
    params = ", ".join(
        f"{k} = {_param_text(v)}" for k, v in op.params.data.items() if defaults.get(k) != v
    )
    params = f" {{{params}}}" if params else ""
    return f"%{refs[op.result].name} = {op.device.data.value} {op.kind.data}({ins}){params}"


def analyze(module: ModuleOp | func.FuncOp, *, func_name: str | None = None) -> Analysis:
    """Split a buffer function into segments, cpu steps and transfers (no building)."""
    fn = _find_function(module, func_name)
    buffers = _buffer_specs(fn)
    arg_types = list(fn.function_type.inputs.data)
    namer = _Namer()
    inputs = tuple(
        ValueRef("input", i, shape_of(t), dtype_of(t), namer(arg))
        for i, (t, arg) in enumerate(zip(arg_types, fn.body.block.args, strict=True))
    )
    refs: dict[SSAValue, ValueRef] = dict(zip(fn.body.block.args, inputs, strict=True))
    constants: dict[str, torch.Tensor] = {}
    items: list[SegmentPlan | CpuStep | TransferStep] = []
    current: list[B.ExecOp] = []
    outputs: tuple[ValueRef, ...] = ()
    states: dict[str, int] = {}

    def close() -> None:
        if current:
            items.append(SegmentPlan(len([i for i in items if isinstance(i, SegmentPlan)]), list(current), [], [], []))
            current.clear()

    def ref(value: SSAValue, user: Operation) -> ValueRef:
        found = refs.get(value)
        if found is None:
            raise EmitError(f"emit: {op_text(user)} reads %{_name(value)}, which no buffer op defines")
        return found

    def typed(value: SSAValue, user: Operation) -> TensorType:
        if not isinstance(value.type, TensorType):
            raise EmitError(f"emit: {op_text(user)}: %{_name(value)} is not a tensor")
        return value.type

    for op in fn.body.block.ops:
        if isinstance(op, (B.ArenaOp, B.AllocOp)):
            continue
        if isinstance(op, B.InputOp):
            index = op.index.value.data
            if index >= len(inputs):
                raise EmitError(f"emit: {op_text(op)} reads input {index}; @{fn.sym_name.data} has {len(inputs)}")
            refs[op.result] = inputs[index]
            continue
        if isinstance(op, (B.WeightOp, B.ConstantOp)):
            t = typed(op.result, op)
            if isinstance(op, B.WeightOp):
                refs[op.result] = ValueRef("weight", op.weight_name.data, shape_of(t), dtype_of(t), namer(op.result))
            else:
                key = namer(op.result)
                constants[key] = dense_tensor(op.value)
                refs[op.result] = ValueRef("constant", key, shape_of(t), dtype_of(t), key)
            continue
        if isinstance(op, B.StateOp):
            t = typed(op.result, op)
            bid = op.out_buffer().buffer_id
            if bid not in buffers:
                raise EmitError(f"emit: {op_text(op)} is in buffer {bid}, which is not allocated")
            states[op.state_name.data] = bid
            refs[op.result] = ValueRef("buffer", bid, shape_of(t), dtype_of(t), namer(op.result))
            continue
        if isinstance(op, (B.ExecOp, B.TransferOp)):
            t = typed(op.result, op)
            buf = op.out_buffer()
            if buf.buffer_id not in buffers:
                raise EmitError(f"emit: {op_text(op)} writes buffer {buf.buffer_id}, which is not allocated")
            out = ValueRef("buffer", buf.buffer_id, shape_of(t), dtype_of(t), namer(op.result))
            if math.prod(out.shape) * out.dtype.itemsize > buf.nbytes:  # out.nbytes without its tensor per op
                raise EmitError(f"emit: {op_text(op)}: {out} does not fit buffer {buf.buffer_id} ({buf.nbytes} bytes)")
            if isinstance(op, B.TransferOp):
                close()
                items.append(TransferStep(ref(op.source, op), out))
            elif op.device.data is N.Device.NPU:
                for v in op.ins:
                    typed(v, op)
                    ref(v, op)
                current.append(op)
            else:
                close()
                cls = op.npuir_class()
                if cls is None:
                    raise EmitError(f"emit: {op_text(op)}: unknown npuir kind '{op.kind.data}'")
                items.append(
                    CpuStep(
                        op.kind.data,
                        op.param_view(),
                        tuple(ref(v, op) for v in op.ins),
                        out,
                        tuple(typed(v, op) for v in op.ins),
                        t,
                    )
                )
            refs[op.result] = out
            continue
        if isinstance(op, func.ReturnOp):
            close()
            outputs = tuple(ref(v, op) for v in op.arguments)
            continue
        raise EmitError(f"emit: unexpected op {op.name} in a buffer function (@{fn.sym_name.data})")
    close()

    for seg in (i for i in items if isinstance(i, SegmentPlan)):
        _boundaries(seg, refs, buffers)
    return Analysis(fn.sym_name.data, buffers, refs, inputs, outputs, items, constants, states)


def _buffer_specs(fn: func.FuncOp) -> dict[int, BufferSpec]:
    """Every buffer of `fn` by id, with the arena it views (`buffer.alloc %arena[offset]`)."""
    B.buffer_table(fn)  # ids unique
    arenas = {aid: ArenaSpec(aid, a.on.value, a.nbytes) for aid, a in B.arena_table(fn).items()}
    specs: dict[int, BufferSpec] = {}
    for op in fn.body.block.ops:
        if isinstance(op, B.AllocOp):
            buf = op.buffer.type
            assert isinstance(buf, B.BufType)
            aid, offset = B.buffer_placement(op)
            arena = arenas.get(aid) if aid is not None else None
            if aid is not None and arena is None:
                raise EmitError(f"emit: buffer {buf.buffer_id} views arena {aid}, which is not declared")
            specs[buf.buffer_id] = BufferSpec(buf.buffer_id, buf.on.value, buf.nbytes, arena, offset)
    return specs


def _boundaries(seg: SegmentPlan, refs: Mapping[SSAValue, ValueRef], buffers: dict[int, BufferSpec]) -> None:
    inside = set(seg.ops)
    defined = {op.result for op in seg.ops}
    seen: set[SSAValue] = set()
    for op in seg.ops:
        for v in op.ins:
            if v in defined or v in seen:
                continue
            seen.add(v)
            r = refs[v]
            if r.source in ("weight", "constant"):
                seg.sources.append(v)
            elif r.source == "input":
                raise EmitError(
                    f"emit: {op_text(op)} reads graph input %{r.name} on the npu; "
                    "insert a buffer.transfer (does the IR verify?)"
                )
            else:
                seg.params.append(v)
    for op in seg.ops:
        if any(use.operation not in inside for use in op.result.uses):
            seg.results.append(op.result)
    held: list[tuple[SSAValue, tuple]] = []
    for v in seg.params:
        mem = memory_of(refs[v], buffers)
        for other, other_mem in held:
            if overlap(mem, other_mem):
                raise EmitError(
                    f"emit: segment {seg.index} reads %{refs[other].name} and %{refs[v].name}, whose bytes overlap "
                    f"(buffers {refs[other].key} and {refs[v].key}; the allocation is invalid)"
                )
        held.append((v, mem))
    for v in seg.results:
        mem = memory_of(refs[v], buffers)
        if any(overlap(mem, m) or refs[v].key == refs[p].key for p, m in held):
            seg.staged.add(v)

