"""buffer IR -> an NNFactory program: one compiled graph per NPU segment, CPU ops in between.

`emit(module, weights, runtime="openvino", device="CPU")` reads a function in the `buffer`
dialect (the output of `lower-npuir-to-buffer`) and returns a `Program`:

* The op order is the schedule. A **segment** is a maximal run of `buffer.exec npu` ops;
  `buffer.exec cpu` and `buffer.transfer` end it (`buffer.alloc`, `buffer.input`,
  `buffer.weight`, `buffer.constant` are declarations and do not). Each segment becomes ONE
  graph built with the runtime's NNFactory-shaped `GraphBuilder` and compiled once.
* Segment inputs are the values defined outside the segment and read inside (graph
  `parameter`s, in order of first use); segment outputs are the values defined inside and read
  outside or returned (`result`s, in definition order).
* **Weights and constants read by a segment become constants of that segment's graph**
  (`builder.constant(array)`). A weight read by several segments is therefore embedded once
  per segment (the runtime copies it into each compiled graph): `Program.shared_weights` lists
  those; the affinity scheduler keeps them rare by grouping NPU work. Constants are passed in
  their memory layout: a 2-D weight stored as a transposed view (the layout pass does that to
  GPT-2's Conv1D weights) and read only as a matmul/linear/gated_mlp weight becomes a constant
  of its contiguous base with the transpose flag flipped, so no copy is made (the openvino
  runtime shares large constant arrays; do not modify the weights while the program lives);
  other strided weights are copied (`SegmentStats.relayout_bytes`).
* `buffer.exec cpu` ops and transfers become `CpuStep`s and `TransferStep`s between segments;
  the executor (`executor.py`) runs them with torch into pre-allocated buffers.
* An npuir kind the runtime cannot express on the npu (`cumsum`, the `aten` fallback, integer
  division, bitwise and/or, ...) is an `EmitError` naming the op: the affinity policy should
  have put it on the cpu.

Every value of the program has a `ValueRef`: it lives in a planned buffer (always at byte
offset 0, viewed with the value's shape and dtype; a buffer holds values of different shapes
and dtypes over time) or outside the plan (graph input, weight, constant).

Booleans (`i1`): NNFactory has no boolean element type and its comparisons return 0/1 in the
inputs' dtype, so inside a graph an `i1` value is a 0/1 tensor of any dtype ("logical").
At graph boundaries it has the runtime's *carrier* dtype: `bool` where the runtime supports it
(openvino), else `int8` (nnfactory), which views the same one-byte-per-element buffer bytes as
torch's `bool`, so binding stays zero-copy.

Per segment, `SegmentStats` records op count and kinds, parameters, results, embedded
constants, graph build ms and device compile ms; `Program.summary()` prints them.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerType, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from dialects import buffer as B
from dialects import npuir as N
from dialects.torch_types import dense_tensor, dtype_of, shape_of
from forge.weights import WeightStore, weights_of

from .runtime import (
    CompiledGraph,
    GraphBuildError,
    GraphBuilder,
    Node,
    Runtime,
    get_runtime,
    to_numpy_dtype,
)

if TYPE_CHECKING:
    from .executor import CompiledNPUExecutor

__all__ = [
    "BufferSpec",
    "CpuStep",
    "EmitError",
    "Program",
    "Segment",
    "SegmentStats",
    "SegmentStep",
    "Step",
    "TransferStep",
    "ValueRef",
    "analyze",
    "bool_carrier",
    "build_segment",
    "describe_op",
    "emit",
    "npu_kinds",
]


class EmitError(ValueError):
    """The buffer IR cannot become a program; the message names the op."""


# ============================================================================ program data


@dataclass(frozen=True)
class ValueRef:
    """Where a logical value lives.

    `source` is "buffer" (`key` = buffer id; the value is the first bytes of the buffer viewed
    with `shape`/`dtype`), "input" (`key` = graph input index), "weight" (`key` = WeightStore
    name) or "constant" (`key` = name in `Program.constants`). `name` is the SSA name.
    """

    source: str
    key: int | str
    shape: tuple[int, ...]
    dtype: torch.dtype
    name: str = ""

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * torch.empty((), dtype=self.dtype).element_size()

    @property
    def is_bool(self) -> bool:
        return self.dtype == torch.bool

    def where(self) -> str:
        return {
            "buffer": f"buffer {self.key}",
            "input": f"input {self.key}",
            "weight": f'weight "{self.key}"',
            "constant": f"constant {self.key}",
        }[self.source]

    def __str__(self) -> str:
        dt = str(self.dtype).removeprefix("torch.")
        return f"%{self.name} ({self.where()}, {dt}{list(self.shape)})"


@dataclass(frozen=True)
class BufferSpec:
    """A physical buffer of the plan (`buffer.alloc`)."""

    id: int
    device: str
    nbytes: int


@dataclass(frozen=True)
class SegmentStep:
    """Run compiled segment `segment`."""

    segment: int


@dataclass(frozen=True)
class CpuStep:
    """Run npuir kind `kind` with torch on the host, writing `out`."""

    kind: str
    params: N.Params
    ins: tuple[ValueRef, ...]
    out: ValueRef
    in_types: tuple[TensorType, ...]
    out_type: TensorType

    @property
    def op_class(self) -> type[N.NpuirOp]:
        return self.params.op_cls


@dataclass(frozen=True)
class TransferStep:
    """Copy `src` into `dst` (a buffer on the other device)."""

    src: ValueRef
    dst: ValueRef


Step = SegmentStep | CpuStep | TransferStep


@dataclass
class SegmentStats:
    ops: int
    kinds: dict[str, int]
    parameters: int
    results: int
    constants: int
    constant_bytes: int
    build_ms: float
    compile_ms: float
    relayout_bytes: int = 0


@dataclass
class Segment:
    """One compiled NPU graph and how it connects to the buffers.

    `input_dtypes`/`output_dtypes` are the graph's numpy dtypes (an i1 value has the carrier
    dtype). `staged[i]` says output i shares a buffer with one of the segment's inputs: the
    graph must not write it while the input may still be read, so the executor gives it a
    private staging array and copies it into the buffer after the run.
    """

    index: int
    graph: CompiledGraph
    inputs: tuple[ValueRef, ...]
    outputs: tuple[ValueRef, ...]
    input_dtypes: tuple[np.dtype, ...]
    output_dtypes: tuple[np.dtype, ...]
    staged: tuple[bool, ...]
    weights: tuple[str, ...]
    stats: SegmentStats


@dataclass
class Program:
    """A compiled program: buffers of the plan, compiled segments and the step list.

    Run it with `program(*inputs)` (an executor is created on first use) or
    `program.executor()` for a `CompiledNPUExecutor` of your own.
    """

    runtime: Runtime
    function: str
    buffers: dict[int, BufferSpec]
    inputs: tuple[ValueRef, ...]
    outputs: tuple[ValueRef, ...]
    steps: tuple[Step, ...]
    segments: tuple[Segment, ...]
    weights: WeightStore | None
    constants: dict[str, torch.Tensor]
    carrier: np.dtype
    shared_weights: dict[str, tuple[int, ...]] = field(default_factory=dict)
    runtime_ms: float = 0.0
    analyze_ms: float = 0.0
    emit_ms: float = 0.0
    _executor: CompiledNPUExecutor | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ running

    def executor(self) -> CompiledNPUExecutor:
        """A new executor: every buffer of the plan allocated once, instructions bound."""
        from .executor import CompiledNPUExecutor

        return CompiledNPUExecutor(self)

    def __call__(self, *inputs: Any) -> list[torch.Tensor]:
        if self._executor is None:
            self._executor = self.executor()
        return self._executor(*inputs)

    # ------------------------------------------------------------------ reporting

    @property
    def build_ms(self) -> float:
        return sum(s.stats.build_ms for s in self.segments)

    @property
    def compile_ms(self) -> float:
        return sum(s.stats.compile_ms for s in self.segments)

    @property
    def planned_bytes(self) -> int:
        return sum(b.nbytes for b in self.buffers.values())

    def cpu_steps(self) -> list[CpuStep]:
        return [s for s in self.steps if isinstance(s, CpuStep)]

    def transfers(self) -> list[TransferStep]:
        return [s for s in self.steps if isinstance(s, TransferStep)]

    def stats(self) -> dict[str, Any]:
        """JSON-ready numbers for reports (the model compiler's `--report`)."""
        return {
            "runtime": self.runtime.name,
            "device": self.runtime.device,
            "segments": len(self.segments),
            "npu_ops": sum(s.stats.ops for s in self.segments),
            "cpu_ops": len(self.cpu_steps()),
            "transfers": len(self.transfers()),
            "buffers": len(self.buffers),
            "planned_bytes": self.planned_bytes,
            "runtime_ms": round(self.runtime_ms, 3),
            "analyze_ms": round(self.analyze_ms, 3),
            "build_ms": round(self.build_ms, 3),
            "compile_ms": round(self.compile_ms, 3),
            "emit_ms": round(self.emit_ms, 3),
            "shared_weights": {k: list(v) for k, v in self.shared_weights.items()},
            "per_segment": [
                {
                    "index": s.index,
                    "ops": s.stats.ops,
                    "kinds": dict(s.stats.kinds),
                    "parameters": s.stats.parameters,
                    "results": s.stats.results,
                    "constants": s.stats.constants,
                    "constant_bytes": s.stats.constant_bytes,
                    "relayout_bytes": s.stats.relayout_bytes,
                    "build_ms": round(s.stats.build_ms, 3),
                    "compile_ms": round(s.stats.compile_ms, 3),
                }
                for s in self.segments
            ],
        }

    def summary(self, timings: bool = True) -> str:
        """A readable table: one line per step (`timings=False`: reproducible text)."""
        head = (
            f"program @{self.function} on {self.runtime.name}/{self.runtime.device}: "
            f"{len(self.segments)} segment(s), {len(self.cpu_steps())} cpu op(s), "
            f"{len(self.transfers())} transfer(s), {len(self.buffers)} buffers "
            f"({self.planned_bytes} bytes)"
        )
        if timings:
            head += (
                f"; emit {self.emit_ms:.1f} ms (runtime {self.runtime_ms:.1f}, analyze "
                f"{self.analyze_ms:.1f}, build {self.build_ms:.1f}, device compile {self.compile_ms:.1f} ms)"
            )
        lines = [head]
        for step in self.steps:
            if isinstance(step, SegmentStep):
                seg = self.segments[step.segment]
                st = seg.stats
                kinds = ", ".join(f"{k} {n}" for k, n in sorted(st.kinds.items(), key=lambda kv: (-kv[1], kv[0])))
                ins = ", ".join(f"%{r.name}" for r in seg.inputs) or "none"
                outs = ", ".join(f"%{r.name}" + (" (staged)" if staged else "") for r, staged in zip(seg.outputs, seg.staged))
                line = (
                    f"  segment {seg.index}: {st.ops} ops ({kinds}); in {ins}; out {outs}; "
                    f"{st.constants} constants ({st.constant_bytes} bytes)"
                )
                if timings:
                    line += f"; build {st.build_ms:.1f} ms, compile {st.compile_ms:.1f} ms"
                lines.append(line)
            elif isinstance(step, CpuStep):
                ins = ", ".join(f"%{r.name}" for r in step.ins)
                lines.append(f"  cpu {step.kind}({ins}) -> {step.out}")
            else:
                lines.append(f"  transfer %{step.src.name} -> {step.dst}")
        if self.shared_weights:
            lines.append(
                "  weights embedded in several segments: "
                + ", ".join(f"{k} {list(v)}" for k, v in self.shared_weights.items())
            )
        return "\n".join(lines)


# ============================================================================== analysis


@dataclass
class SegmentPlan:
    """A segment before building: its ops and boundary values."""

    index: int
    ops: list[B.ExecOp]
    params: list[SSAValue]
    results: list[SSAValue]
    sources: list[SSAValue]  # weights and constants read (become graph constants)


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


def _op_text(op: Operation, refs: Mapping[SSAValue, ValueRef] | None = None) -> str:
    """`buffer.exec npu sdpa (%sdpa_1)`: how messages name an op."""
    name = ""
    if op.results:
        ref = refs.get(op.results[0]) if refs is not None else None
        name = f" (%{ref.name if ref is not None else _name(op.results[0])})"
    if isinstance(op, B.ExecOp):
        return f"buffer.exec {op.device.data.value} {op.kind.data}{name}"
    return f"{op.name}{name}"


def _param_text(value: Any) -> str:
    from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, StringAttr
    from xdsl.dialects.utils import EnumAttribute

    if isinstance(value, EnumAttribute):
        return str(value.data.value)
    if isinstance(value, IntegerAttr):
        v = value.value.data
        return ("true" if v else "false") if value.type == IntegerType(1) else str(v)
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
    buffers = {bid: BufferSpec(bid, buf.on.value, buf.nbytes) for bid, buf in B.buffer_table(fn).items()}
    arg_types = list(fn.function_type.inputs.data)
    namer = _Namer()
    inputs = tuple(
        ValueRef("input", i, shape_of(t), dtype_of(t), namer(arg))  # type: ignore[arg-type]
        for i, (t, arg) in enumerate(zip(arg_types, fn.body.block.args))
    )
    refs: dict[SSAValue, ValueRef] = dict(zip(fn.body.block.args, inputs))
    constants: dict[str, torch.Tensor] = {}
    items: list[SegmentPlan | CpuStep | TransferStep] = []
    current: list[B.ExecOp] = []
    outputs: tuple[ValueRef, ...] = ()

    def close() -> None:
        if current:
            items.append(SegmentPlan(len([i for i in items if isinstance(i, SegmentPlan)]), list(current), [], [], []))
            current.clear()

    def ref(value: SSAValue, user: Operation) -> ValueRef:
        found = refs.get(value)
        if found is None:
            raise EmitError(f"emit: {_op_text(user)} reads %{_name(value)}, which no buffer op defines")
        return found

    def typed(value: SSAValue, user: Operation) -> TensorType:
        if not isinstance(value.type, TensorType):
            raise EmitError(f"emit: {_op_text(user)}: %{_name(value)} is not a tensor")
        return value.type

    for op in fn.body.block.ops:
        if isinstance(op, B.AllocOp):
            continue
        if isinstance(op, B.InputOp):
            index = op.index.value.data
            if index >= len(inputs):
                raise EmitError(f"emit: {_op_text(op)} reads input {index}; @{fn.sym_name.data} has {len(inputs)}")
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
        if isinstance(op, (B.ExecOp, B.TransferOp)):
            t = typed(op.result, op)
            buf = op.out_buffer()
            if buf.buffer_id not in buffers:
                raise EmitError(f"emit: {_op_text(op)} writes buffer {buf.buffer_id}, which is not allocated")
            out = ValueRef("buffer", buf.buffer_id, shape_of(t), dtype_of(t), namer(op.result))
            if out.nbytes > buf.nbytes:
                raise EmitError(f"emit: {_op_text(op)}: {out} does not fit buffer {buf.buffer_id} ({buf.nbytes} bytes)")
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
                    raise EmitError(f"emit: {_op_text(op)}: unknown npuir kind '{op.kind.data}'")
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
        _boundaries(seg, refs)
    return Analysis(fn.sym_name.data, buffers, refs, inputs, outputs, items, constants)


def _boundaries(seg: SegmentPlan, refs: Mapping[SSAValue, ValueRef]) -> None:
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
                    f"emit: {_op_text(op)} reads graph input %{r.name} on the npu; "
                    "insert a buffer.transfer (does the IR verify?)"
                )
            else:
                seg.params.append(v)
    for op in seg.ops:
        if any(use.operation not in inside for use in op.result.uses):
            seg.results.append(op.result)
    holders: dict[int, SSAValue] = {}
    for v in seg.params:
        bid = refs[v].key
        if bid in holders:
            raise EmitError(
                f"emit: segment {seg.index} reads %{refs[holders[bid]].name} and %{refs[v].name}, "
                f"which both live in buffer {bid} (the allocation is invalid)"
            )
        holders[bid] = v  # type: ignore[index]


# ============================================================================ npu kinds


def bool_carrier(runtime: Runtime) -> np.dtype:
    """The graph-boundary dtype of i1 values on `runtime`: bool, else int8 (same bytes)."""
    supported = runtime.builder_class.supported_dtypes
    return np.dtype(np.bool_) if np.dtype(np.bool_) in supported else np.dtype(np.int8)


_ACTIVATIONS: dict[str, str | None] = {
    "none": None,
    "relu": "relu",
    "gelu": "gelu_erf",
    "gelu_tanh": "gelu",
    "silu": "swish",
    "sigmoid": "sigmoid",
}

_UNARY: dict[str, str] = {
    "neg": "negative",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "rsqrt": "rsqrt",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "relu": "relu",
    "gelu": "gelu_erf",
    "gelu_tanh": "gelu",
    "silu": "swish",
    "sin": "sin",
    "cos": "cos",
    "abs": "abs",
    "erf": "erf",
}

_ARITH: dict[str, str] = {
    "add": "eltwise_add",
    "sub": "eltwise_sub",
    "mul": "eltwise_mul",
    "div": "eltwise_div",
    "pow": "power",
    "max": "maximum",
    "min": "minimum",
}

_LOGICAL_BINARY: dict[str, str] = {
    "and": "eltwise_mul",
    "min": "minimum",
    "or": "maximum",
    "max": "maximum",
}

_COMPARE: dict[str, str] = {
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}

_REDUCE: dict[str, str] = {"sum": "reduce_sum", "mean": "reduce_mean", "max": "reduce_max", "min": "reduce_min"}


def npu_kinds() -> frozenset[str]:
    """npuir kinds the emitter can put in a graph (some element types still refuse)."""
    return frozenset(
        {
            "matmul", "linear", "gated_mlp", "sdpa", "softmax", "layer_norm", "rms_norm",
            "unary", "binary", "compare", "select", "reduce", "reshape", "transpose",
            "broadcast", "slice", "concat", "gather", "convert",
        }
    )  # fmt: skip


class _Cannot(Exception):
    """The runtime cannot express this op on the npu (the reason)."""


def _literal(value: float) -> str:
    """Python source for a float/int (infinities and NaN through numpy)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "np.nan" if math.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    return repr(value)


def _is_i1(t: Any) -> bool:
    return isinstance(t, TensorType) and t.element_type == IntegerType(1)


def _np_dtype(t: TensorType) -> np.dtype:
    try:
        return to_numpy_dtype(dtype_of(t))
    except TypeError as e:
        raise _Cannot(str(e)) from None


class GraphTrace:
    """Hooks that let a program writer (`pyemit`) see how a graph is built.

    `wrap(builder)` returns what the segment emitter calls instead of the builder (a proxy
    that records calls); `label(array, expr)` tells the recorder the source expression of a
    constant array just before it is passed to `constant`.
    """

    def wrap(self, builder: GraphBuilder) -> Any:
        return builder

    def label(self, array: np.ndarray, expr: str) -> None:
        pass

    def begin(self, name: str, comment: str = "") -> None:
        """The nodes built from now on compute value `name` (`comment` describes the op)."""

    def end(self, node: Node) -> None:
        """`node` is the value named by the last `begin`."""


class _SegmentEmitter:
    """Builds one segment's graph: parameters, constants, one or more builder calls per op."""

    def __init__(
        self,
        g: Any,
        carrier: np.dtype,
        trace: GraphTrace,
        source_array: Callable[[ValueRef], tuple[np.ndarray, str]],
    ):
        self.g = g
        self.carrier = carrier
        self.trace = trace
        self.source_array = source_array
        self.nodes: dict[SSAValue, Node] = {}
        self.logical: set[Node] = set()
        self.transposed: set[Node] = set()  # constants holding their value transposed (2-D)
        self._num: dict[Node, Node] = {}
        self.constants = 0
        self.constant_bytes = 0
        self.relayout_bytes = 0  # strided weights copied to a contiguous layout
        self._scalars: dict[tuple[float, str], Node] = {}

    # ---- values -------------------------------------------------------------------

    def parameter(self, value: SSAValue, ref: ValueRef) -> np.dtype:
        self.trace.begin(ref.name, f"input {ref}")
        if ref.is_bool:
            node = self.g.parameter(ref.shape, self.carrier)
            self.logical.add(node)
        else:
            dtype = to_numpy_dtype(ref.dtype)
            node = self.g.parameter(ref.shape, dtype)
        self.trace.end(node)
        self.nodes[value] = node
        return node.dtype

    def source(self, value: SSAValue, ref: ValueRef, transposed: bool = False) -> None:
        """A weight/constant as a graph constant. `transposed`: the node holds the 2-D value
        transposed (its contiguous layout: a weight stored as a transposed view is then shared,
        not copied); only matmul-like uses read it, flipping their transpose flag."""
        array, expr = self.source_array(ref)
        if ref.is_bool:
            if self.carrier != np.bool_:
                array = array.astype(self.carrier)
                expr = f"{expr}.astype(np.{self.carrier.name})"
        if transposed:
            array, expr = array.T, f"np.ascontiguousarray({expr}.T)"
        elif not array.flags.c_contiguous:
            array = np.ascontiguousarray(array)
            self.relayout_bytes += array.nbytes
        self.trace.begin(ref.name, f"%{ref.name} transposed (its memory layout)" if transposed else "")
        self.trace.label(array, expr)
        node = self.g.constant(array)
        self.trace.end(node)
        if transposed:
            self.transposed.add(node)
        if ref.is_bool:
            self.logical.add(node)
        self.nodes[value] = node
        self.constants += 1
        self.constant_bytes += array.nbytes

    def result(self, value: SSAValue, name: str) -> np.dtype:
        node = self.nodes[value]
        if _is_i1(value.type) and node.dtype != self.carrier:
            self.trace.begin(f"{name}_out", f"%{name} in the carrier dtype")
            node = self.g.convert(node, self.carrier)
            self.trace.end(node)
        self.g.result(node)
        return node.dtype

    def scalar(self, value: float, dtype: np.dtype) -> Node:
        key = (float(value), dtype.name)
        node = self._scalars.get(key)
        if node is None:
            array = np.asarray(value, dtype=dtype)
            self.trace.label(array, f"np.asarray({_literal(value)}, dtype=np.{dtype.name})")
            node = self._scalars[key] = self.g.constant(array)
        return node

    def num01(self, node: Node) -> Node:
        """A logical value as 0/1 in a type arithmetic accepts (bool and int8 become f32)."""
        if node.dtype in (np.bool_, np.int8):
            found = self._num.get(node)
            if found is None:
                found = self._num[node] = self.g.convert(node, np.float32)
            return found
        return node

    def same_dtype(self, nodes: Sequence[Node]) -> list[Node]:
        """Logical nodes of one dtype (converted to 0/1 f32 when they differ)."""
        if len({n.dtype for n in nodes}) <= 1:
            return list(nodes)
        return [self.g.convert(self.num01(n), np.float32) if n.dtype != np.float32 else n for n in nodes]

    # ---- ops ----------------------------------------------------------------------

    def op(self, op: B.ExecOp, name: str, comment: str = "") -> None:
        kind = op.kind.data
        cls = op.npuir_class()
        if cls is None or cls.CPU_ONLY or kind not in npu_kinds():
            raise _Cannot(f"the npu has no '{kind}' op")
        self.trace.begin(name, comment)
        p = op.param_view()
        ins = [self.nodes[v] for v in op.ins]
        in_types: list[TensorType] = [v.type for v in op.ins]  # type: ignore[misc]
        out_type: TensorType = op.result.type  # type: ignore[assignment]
        node = getattr(self, f"_k_{kind}")(p, ins, in_types, out_type)
        shape = shape_of(out_type)
        if node.shape != tuple(shape):
            raise _Cannot(f"built {node.spec}, expected shape {list(shape)} (emitter bug)")
        if _is_i1(out_type):
            self.logical.add(node)
        elif node.dtype != _np_dtype(out_type):
            raise _Cannot(f"built {node.spec}, expected dtype {_np_dtype(out_type).name} (emitter bug)")
        self.trace.end(node)
        self.nodes[op.result] = node

    def _act(self, y: Node, activation: str) -> Node:
        method = _ACTIVATIONS[activation]
        return y if method is None else getattr(self.g, method)(y)

    def _flag(self, node: Node, flag: bool) -> bool:
        """A matmul transpose flag for `node` (flipped when the node holds its value transposed)."""
        return flag != (node in self.transposed)

    def _k_matmul(self, p, ins, in_types, out_type):
        a, b = ins
        return self.g.matmul(a, b, self._flag(a, p.get_flag("transpose_a")), self._flag(b, p.get_flag("transpose_b")))

    def _k_linear(self, p, ins, in_types, out_type):
        x, w, *bias = ins
        if self._flag(w, p.get_flag("transpose_w")):  # w is [N, K] like torch's Linear
            y = self.g.linear(x, w, bias[0] if bias else None)
        else:  # w is [K, N] (GPT-2's Conv1D)
            y = self.g.matmul(x, w)
            if bias:
                y = self.g.eltwise_add(y, bias[0])
        return self._act(y, p.get_str("activation"))

    def _k_gated_mlp(self, p, ins, in_types, out_type):
        x, wg, wu = ins
        tw = p.get_flag("transpose_w")
        gate = self._act(self.g.matmul(x, wg, False, self._flag(wg, tw)), p.get_str("activation"))
        return self.g.eltwise_mul(gate, self.g.matmul(x, wu, False, self._flag(wu, tw)))

    def _k_sdpa(self, p, ins, in_types, out_type):
        q, k, v, *mask = ins
        m = None
        if mask:
            m = mask[0]
            if _is_i1(in_types[3]):  # keep-mask -> additive 0 / -inf
                cond = m if m.dtype == np.bool_ else self.num01(m)
                m = self.g.select(cond, self.scalar(0.0, q.dtype), self.scalar(-math.inf, q.dtype))
            elif m.dtype != q.dtype:
                m = self.g.convert(m, q.dtype)
        return self.g.scaled_dot_product_attention(
            q, k, v, m, is_causal=p.get_flag("is_causal"), scale=p.get_float("scale")
        )

    def _k_softmax(self, p, ins, in_types, out_type):
        return self.g.softmax(ins[0], p.get_int("axis"))

    def _k_layer_norm(self, p, ins, in_types, out_type):
        x, *affine = ins
        axes = list(range(p.get_int("axis"), x.rank))
        w = affine[0] if affine else None
        b = affine[1] if len(affine) > 1 else None
        return self.g.layer_norm(x, w, b, axes, p.get_float("eps"))

    def _k_rms_norm(self, p, ins, in_types, out_type):
        x, *affine = ins
        axes = list(range(p.get_int("axis"), x.rank))
        return self.g.rms_norm(x, affine[0] if affine else None, p.get_float("eps"), axes)

    def _k_unary(self, p, ins, in_types, out_type):
        (x,) = ins
        kind = p.get_str("kind")
        if kind == "not":
            x = self.num01(x)
            return self.g.eltwise_sub(self.scalar(1.0, x.dtype), x)
        if kind == "reciprocal":
            return self.g.eltwise_div(self.scalar(1.0, x.dtype), x)
        return getattr(self.g, _UNARY[kind])(x)

    def _k_binary(self, p, ins, in_types, out_type):
        kind = p.get_str("kind")
        a, b = ins
        if _is_i1(in_types[0]):
            if kind not in _LOGICAL_BINARY:
                raise _Cannot(f"binary {kind} on i1")
            a, b = self.same_dtype([self.num01(a), self.num01(b)])
            return getattr(self.g, _LOGICAL_BINARY[kind])(a, b)
        if kind not in _ARITH:
            raise _Cannot(f"bitwise {kind} on {a.dtype.name} has no NNFactory op")
        if kind == "div" and np.issubdtype(a.dtype, np.integer):
            raise _Cannot(f"integer division (truncating) on {a.dtype.name} has no NNFactory op")
        return getattr(self.g, _ARITH[kind])(a, b)

    def _k_compare(self, p, ins, in_types, out_type):
        a, b = ins
        if _is_i1(in_types[0]):
            a, b = self.same_dtype([self.num01(a), self.num01(b)])
        return getattr(self.g, _COMPARE[p.get_str("kind")])(a, b)

    def _cond(self, node: Node) -> Node:
        if node.dtype == np.bool_ or np.issubdtype(node.dtype, np.floating):
            return node
        return self.g.convert(node, np.float32)

    def _k_select(self, p, ins, in_types, out_type):
        cond, a, b = ins
        if _is_i1(out_type):
            a, b = self.same_dtype([self.num01(a), self.num01(b)])
        return self.g.select(self._cond(cond), a, b)

    def _k_reduce(self, p, ins, in_types, out_type):
        (x,) = ins
        axes = list(p.get_ints("axes"))
        if not axes:
            return x
        if _is_i1(in_types[0]):
            x = self.num01(x)
        return getattr(self.g, _REDUCE[p.get_str("kind")])(x, axes, p.get_flag("keepdims"))

    def _k_reshape(self, p, ins, in_types, out_type):
        return self.g.reshape(ins[0], shape_of(out_type))

    def _k_transpose(self, p, ins, in_types, out_type):
        return self.g.transpose(ins[0], list(p.get_ints("perm")))

    def _k_broadcast(self, p, ins, in_types, out_type):
        return self.g.broadcast(ins[0], shape_of(out_type))

    def _k_slice(self, p, ins, in_types, out_type):
        if 0 in shape_of(out_type):
            raise _Cannot("an empty slice has no static NNFactory shape")
        return self.g.slice(ins[0], list(p.get_ints("starts")), list(p.get_ints("ends")), list(p.get_ints("steps")))

    def _k_concat(self, p, ins, in_types, out_type):
        nodes = self.same_dtype(ins) if _is_i1(out_type) else ins
        return self.g.concat(nodes, p.get_int("axis"))

    def _k_gather(self, p, ins, in_types, out_type):
        data, indices = ins
        return self.g.gather(data, indices, p.get_int("axis"))

    def _k_convert(self, p, ins, in_types, out_type):
        (x,) = ins
        if _is_i1(out_type):
            if _is_i1(in_types[0]):
                return x
            return self.g.not_equal(x, self.scalar(0, x.dtype))
        if _is_i1(in_types[0]):
            x = self.num01(x)
        return self.g.convert(x, _np_dtype(out_type))


# ================================================================================= emit


class _Sources:
    """numpy arrays (and source expressions) of weights and constants, converted once."""

    def __init__(self, weights: WeightStore | None, constants: Mapping[str, torch.Tensor]):
        self.weights = weights
        self.constants = constants
        self._arrays: dict[tuple[str, str], np.ndarray] = {}

    def __call__(self, ref: ValueRef) -> tuple[np.ndarray, str]:
        key = (ref.source, str(ref.key))
        array = self._arrays.get(key)
        if array is None:
            tensor = self.tensor(ref)
            if tensor.dtype == torch.bfloat16:
                raise _Cannot(f"{ref} is bfloat16, which numpy (and so the runtime API) cannot hold")
            array = self._arrays[key] = tensor.detach().cpu().numpy()  # a view, maybe strided
        return array, expr_of(ref)

    def tensor(self, ref: ValueRef) -> torch.Tensor:
        if ref.source == "weight":
            if self.weights is None or ref.key not in self.weights:
                raise EmitError(f'emit: weight "{ref.key}" (%{ref.name}) is not in the WeightStore')
            tensor = self.weights[ref.key]  # type: ignore[index]
        else:
            tensor = self.constants[ref.key]  # type: ignore[index]
        if tuple(tensor.shape) != ref.shape or tensor.dtype != ref.dtype:
            raise EmitError(
                f"emit: {ref.where()} is {tensor.dtype}{list(tensor.shape)} but the IR reads it as "
                f"{ref.dtype}{list(ref.shape)} (%{ref.name})"
            )
        return tensor


def file_key(ref: ValueRef) -> str:
    """The name of a weight/constant in a generated program's weights file."""
    return str(ref.key) if ref.source == "weight" else f"__constant__.{ref.key}"


def expr_of(ref: ValueRef) -> str:
    """The expression naming a weight/constant (as a numpy array) in generated programs."""
    return f"W[{file_key(ref)!r}]"


_FLIPPABLE = {("matmul", 0), ("matmul", 1), ("linear", 1), ("gated_mlp", 1), ("gated_mlp", 2)}
"""(kind, operand) whose 2-D operand may come transposed: a transpose flag absorbs it."""


def _flippable_sources(seg: SegmentPlan) -> set[SSAValue]:
    """2-D weights/constants that the segment reads only as matmul-like weight operands."""
    uses: dict[SSAValue, bool] = {}
    for op in seg.ops:
        for i, v in enumerate(op.ins):
            ok = (op.kind.data, i) in _FLIPPABLE and isinstance(v.type, TensorType) and v.type.get_num_dims() == 2
            uses[v] = uses.get(v, True) and ok
    return {v for v in seg.sources if uses.get(v)}


def build_segment(
    runtime: Runtime,
    seg: SegmentPlan,
    refs: Mapping[SSAValue, ValueRef],
    sources: Callable[[ValueRef], tuple[np.ndarray, str]],
    *,
    carrier: np.dtype | None = None,
    trace: GraphTrace | None = None,
    compile: bool = True,
) -> Segment:
    """Build one segment's graph and compile it (`compile=False`: build only, `graph` None)."""
    trace = trace or GraphTrace()
    carrier = carrier if carrier is not None else bool_carrier(runtime)
    start = time.perf_counter()
    builder = runtime.builder()
    em = _SegmentEmitter(trace.wrap(builder), carrier, trace, sources)
    current: Operation | None = None
    try:
        in_dtypes = tuple(em.parameter(v, refs[v]) for v in seg.params)
        flippable = _flippable_sources(seg)
        for v in seg.sources:
            current = v.owner  # type: ignore[assignment]
            array = sources(refs[v])[0]
            transposed = v in flippable and not array.flags.c_contiguous and array.T.flags.c_contiguous
            em.source(v, refs[v], transposed)
        for op in seg.ops:
            current = op
            em.op(op, refs[op.result].name, describe_op(op, refs))
        current = None
        out_dtypes = tuple(em.result(v, refs[v].name) for v in seg.results)
    except _Cannot as e:
        what = _op_text(current, refs) if current is not None else "a segment boundary"
        raise EmitError(
            f"emit: segment {seg.index}: {what}: the {runtime.name} runtime cannot run it on "
            f"the npu ({e}); the affinity policy should place it on the cpu"
        ) from None
    except GraphBuildError as e:
        what = _op_text(current, refs) if current is not None else "a segment boundary"
        raise EmitError(f"emit: segment {seg.index}: {what}: {e}") from e
    build_ms = (time.perf_counter() - start) * 1e3
    if not seg.results:
        raise EmitError(f"emit: segment {seg.index} computes nothing that is read later (dead npu ops)")
    start = time.perf_counter()
    graph: CompiledGraph | None = None
    if compile:
        try:
            graph = builder.compile()
        except GraphBuildError as e:
            raise EmitError(f"emit: segment {seg.index}: device compile failed: {e}") from e
    compile_ms = (time.perf_counter() - start) * 1e3
    param_buffers = {refs[v].key for v in seg.params}
    outputs = tuple(refs[v] for v in seg.results)
    weights = tuple(dict.fromkeys(str(refs[v].key) for v in seg.sources if refs[v].source == "weight"))
    stats = SegmentStats(
        ops=len(seg.ops),
        kinds=dict(Counter(op.kind.data for op in seg.ops)),
        parameters=len(seg.params),
        results=len(seg.results),
        constants=em.constants,
        constant_bytes=em.constant_bytes,
        build_ms=build_ms,
        compile_ms=compile_ms,
        relayout_bytes=em.relayout_bytes,
    )
    return Segment(
        index=seg.index,
        graph=graph,  # type: ignore[arg-type]
        inputs=tuple(refs[v] for v in seg.params),
        outputs=outputs,
        input_dtypes=in_dtypes,
        output_dtypes=out_dtypes,
        staged=tuple(o.key in param_buffers for o in outputs),
        weights=weights,
        stats=stats,
    )


def emit(
    module: ModuleOp | func.FuncOp,
    weights: WeightStore | None = None,
    *,
    runtime: str | Runtime = "openvino",
    device: str = "CPU",
    func_name: str | None = None,
) -> Program:
    """Compile a `buffer`-dialect function into a `Program` on `runtime` (see the module doc).

    `weights` defaults to the WeightStore attached to `module` (`forge.weights.weights_of`).
    `runtime` is a runtime name (`available_runtimes()`) or a `Runtime` instance (then
    `device` is ignored). Raises `EmitError` naming the op when the IR cannot be emitted.
    """
    start = time.perf_counter()
    if weights is None and isinstance(module, ModuleOp):
        weights = weights_of(module)
    rt = runtime if isinstance(runtime, Runtime) else get_runtime(runtime, device)
    runtime_ms = (time.perf_counter() - start) * 1e3
    analysis = analyze(module, func_name=func_name)
    analyze_ms = (time.perf_counter() - start) * 1e3 - runtime_ms
    sources = _Sources(weights, analysis.constants)
    for step in analysis.items:  # cpu ops read weights from the store: fail early if missing
        if isinstance(step, CpuStep):
            for r in step.ins:
                if r.source in ("weight", "constant"):
                    sources.tensor(r)
    carrier = bool_carrier(rt)
    segments = tuple(
        build_segment(rt, seg, analysis.refs, sources, carrier=carrier) for seg in analysis.segments
    )
    steps: list[Step] = [
        SegmentStep(item.index) if isinstance(item, SegmentPlan) else item for item in analysis.items
    ]
    users: dict[str, list[int]] = {}
    for seg in segments:
        for name in seg.weights:
            users.setdefault(name, []).append(seg.index)
    shared = {name: tuple(idx) for name, idx in users.items() if len(idx) > 1}
    return Program(
        runtime=rt,
        function=analysis.function,
        buffers=analysis.buffers,
        inputs=analysis.inputs,
        outputs=analysis.outputs,
        steps=tuple(steps),
        segments=segments,
        weights=weights,
        constants=analysis.constants,
        carrier=carrier,
        shared_weights=shared,
        runtime_ms=runtime_ms,
        analyze_ms=analyze_ms,
        emit_ms=(time.perf_counter() - start) * 1e3,
    )


# ================================================================================== cli


def load_ir(path: str, random_weights: int | None = None) -> tuple[ModuleOp, WeightStore | None]:
    """A buffer-IR file and its weights: the companion `.safetensors` when there is one, else
    seeded random tensors for every `buffer.weight` when `random_weights` is given."""
    from pathlib import Path

    from xdsl.parser import Parser

    from forge.context import make_context
    from forge.weights import companion_weights_path

    text = Path(path).read_text()
    module = Parser(make_context(), text, name=path).parse_module()
    module.verify()
    companion = companion_weights_path(path)
    if companion.exists():
        return module, WeightStore.load(companion)
    if random_weights is None:
        return module, None
    store = WeightStore()
    g = torch.Generator().manual_seed(random_weights)
    for op in module.walk():
        if isinstance(op, B.WeightOp) and op.weight_name.data not in store:
            t = op.result.type
            assert isinstance(t, TensorType)
            value = torch.randn(shape_of(t), generator=g) * 0.5
            store.add(op.weight_name.data, value.to(dtype_of(t)))
    return module, store


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m backends.nnfactory.emitter in.mlir`: emit a buffer-IR file, print the program."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m backends.nnfactory.emitter", description=main.__doc__)
    parser.add_argument("input", help="buffer IR (weights from the companion .safetensors)")
    parser.add_argument("--runtime", default="openvino")
    parser.add_argument("--device", default="CPU")
    parser.add_argument("--random-weights", type=int, metavar="SEED", help="random weights when there is no weights file")
    parser.add_argument("--no-timings", action="store_true", help="leave timings out (reproducible output)")
    parser.add_argument("--instructions", action="store_true", help="print the executor's instruction list")
    parser.add_argument("--run", type=int, metavar="SEED", help="run on random inputs and print the outputs")
    args = parser.parse_args(argv)
    try:
        module, weights = load_ir(args.input, args.random_weights)
        program = emit(module, weights, runtime=args.runtime, device=args.device)
    except EmitError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(program.summary(timings=not args.no_timings))
    if args.instructions or args.run is not None:
        ex = program.executor()
        if args.instructions:
            print(ex.describe())
        if args.run is not None:
            g = torch.Generator().manual_seed(args.run)
            inputs = []
            for ref in program.inputs:
                if ref.dtype == torch.bool:
                    inputs.append(torch.rand(ref.shape, generator=g) < 0.5)
                elif ref.dtype.is_floating_point:
                    inputs.append(torch.randn(ref.shape, generator=g).to(ref.dtype))
                else:
                    inputs.append(torch.randint(0, 2, ref.shape, generator=g, dtype=ref.dtype))
            for ref, out in zip(program.outputs, ex(*inputs)):
                values = out.flatten()[:4].tolist()
                print(f"output %{ref.name}: {str(out.dtype).removeprefix('torch.')}{list(out.shape)} {values}")
    return 0


if __name__ == "__main__":  # run the package's module, not a second copy of its classes
    from backends.nnfactory.emitter import main as _main

    raise SystemExit(_main())
