"""The program data model of the NNFactory backend: what `emit` produces and the executor runs.

A `Program` is the plan's buffers (`BufferSpec`: a view of an arena, `ArenaSpec`, at a byte
offset, or memory of its own), the compiled segments (`Segment`, with its `SegmentStats`) and the
step list (`SegmentStep`, `CpuStep`, `TransferStep`). Every value of the program has a
`ValueRef`: it lives in a planned buffer (at the buffer's first byte, viewed with the value's
shape and dtype; a buffer holds values of different shapes and dtypes over time, and buffers of
one arena may overlap: `memory_of` says which bytes a value occupies) or outside the plan
(graph input, weight, constant). `EmitError` is how the backend says the buffer
IR cannot become a program. `Program.states` names the buffers that hold states (`buffer.state`):
the executor takes them from a `StateStore` shared across calls and programs, not from its plan.

`direct_outputs(program)` says which program outputs the segment producing them may write straight
into the caller's tensor (the executor binds that tensor as the segment's output for the call,
instead of writing the plan's buffer and copying it out); the conditions are on the function.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import TensorType

from dialects import npuir as N
from dialects.torch_types import ELEMENT_TYPES
from forge.weights import WeightStore

from .runtime import CompiledGraph, Runtime
from .runtime.graph_values import torch_numpy_dtype

__all__ = [
    "ArenaSpec",
    "BufferSpec",
    "CpuStep",
    "DirectOutput",
    "EmitError",
    "Program",
    "Segment",
    "SegmentStats",
    "SegmentStep",
    "Step",
    "TransferStep",
    "ValueRef",
    "TORCH_TO_NUMPY",
    "direct_outputs",
    "memory_of",
    "overlap",
    "step_reads",
    "step_writes",
]


class EmitError(ValueError):
    """The buffer IR cannot become a program; the message names the op."""


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
class ArenaSpec:
    """An arena of the plan (`buffer.arena`): one block of memory its buffers view."""

    id: int
    device: str
    nbytes: int


@dataclass(frozen=True)
class BufferSpec:
    """A physical buffer of the plan (`buffer.alloc`): bytes `[offset, offset + nbytes)` of
    `arena`, or (arena None) memory of its own."""

    id: int
    device: str
    nbytes: int
    arena: ArenaSpec | None = None
    offset: int = 0


Region = tuple[tuple[str, int], int, int]


def memory_of(ref: ValueRef, buffers: dict[int, BufferSpec]) -> Region:
    """`(region, lo, hi)`: the bytes `[lo, hi)` a buffer value occupies in its region (an arena,
    ("arena", id), or its buffer of its own, ("buffer", id))."""
    spec = buffers[int(ref.key)]
    region = ("arena", spec.arena.id) if spec.arena is not None else ("buffer", spec.id)
    return region, spec.offset, spec.offset + ref.nbytes


def overlap(a: Region, b: Region) -> bool:
    """Two values' bytes intersect (values of no bytes overlap nothing)."""
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


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
    `program.executor()` for a `CompiledNPUExecutor` of your own. `emit` passes the executor
    class as `executor_class` (this data model does not import the executor, which reads it).
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
    states: dict[str, int] = field(default_factory=dict)
    """State name -> the buffer holding it (kept across calls; see the executor's StateStore)."""
    shared_weights: dict[str, tuple[int, ...]] = field(default_factory=dict)
    runtime_ms: float = 0.0
    analyze_ms: float = 0.0
    emit_ms: float = 0.0
    executor_class: Callable[[Program], Any] | None = field(default=None, repr=False)
    _executor: Any = field(default=None, repr=False)

    # ------------------------------------------------------------------ running

    def executor(self, states: Any = None) -> Any:
        """A new executor (`CompiledNPUExecutor`): every buffer of the plan allocated once,
        instructions bound; the state buffers from `states` (a `StateStore`; a private one if None)."""
        if self.executor_class is None:
            raise TypeError("this Program has no executor_class (programs made by `emit` have one)")
        return self.executor_class(self) if states is None else self.executor_class(self, states)

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
    def arenas(self) -> dict[int, ArenaSpec]:
        """The arenas the buffers view, by id."""
        return {b.arena.id: b.arena for b in self.buffers.values() if b.arena is not None}

    @property
    def planned_bytes(self) -> int:
        """Bytes of the per-call plan: the arenas and the buffers of their own (state buffers are not
        in it: they are kept across calls)."""
        held = set(self.states.values())
        own = sum(b.nbytes for b in self.buffers.values() if b.arena is None and b.id not in held)
        return own + sum(a.nbytes for a in self.arenas.values())

    def cpu_steps(self) -> list[CpuStep]:
        return [s for s in self.steps if isinstance(s, CpuStep)]

    def transfers(self) -> list[TransferStep]:
        return [s for s in self.steps if isinstance(s, TransferStep)]

    def transfer_bytes(self) -> int:
        """Bytes copied between the devices per call (every `buffer.transfer`)."""
        return sum(t.src.nbytes for t in self.transfers())

    def state_bytes_moved(self) -> int:
        """Bytes of the states that cross between the devices per call: transfers of a state's value, and
        transfers of what a state's in-place update reads (a KV cache's new rows). A state read in place
        by a segment moves nothing."""
        held = set(self.states.values())
        feeding = {
            ref
            for step in self.steps
            if any(w.source == "buffer" and int(w.key) in held for w in step_writes(self, step))
            for ref in step_reads(self, step)
        }
        return sum(
            t.src.nbytes
            for t in self.transfers()
            if (t.src.source == "buffer" and int(t.src.key) in held) or t.dst in feeding
        )

    def stats(self) -> dict[str, Any]:
        """JSON-ready numbers for reports (the model compiler's `--report`)."""
        return {
            "runtime": self.runtime.name,
            "device": self.runtime.device,
            "segments": len(self.segments),
            "npu_ops": sum(s.stats.ops for s in self.segments),
            "cpu_ops": len(self.cpu_steps()),
            "transfers": len(self.transfers()),
            "transfer_bytes": self.transfer_bytes(),
            "state_bytes_moved": self.state_bytes_moved(),
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
                outs = ", ".join(
                    f"%{r.name}" + (" (staged)" if staged else "")
                    for r, staged in zip(seg.outputs, seg.staged, strict=True)
                )
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



# ------------------------------------------------------------------------------ direct outputs

TORCH_TO_NUMPY = {d: found for d in (getattr(torch, n) for n in ELEMENT_TYPES) if (found := torch_numpy_dtype(d))}
"""The torch dtypes numpy can view, and their numpy dtypes (bfloat16 has none)."""


def step_reads(program: Program, step: Step) -> tuple[ValueRef, ...]:
    """The values a step reads."""
    if isinstance(step, SegmentStep):
        return program.segments[step.segment].inputs
    if isinstance(step, CpuStep):
        return step.ins
    return (step.src,)


def step_writes(program: Program, step: Step) -> tuple[ValueRef, ...]:
    """The values a step writes."""
    if isinstance(step, SegmentStep):
        return program.segments[step.segment].outputs
    if isinstance(step, CpuStep):
        return (step.out,)
    return (step.dst,)


@dataclass(frozen=True)
class DirectOutput:
    """A program output that segment output `position` of step `step` (an index into
    `Program.steps`) may write straight into the caller's tensor. `readers` are the later reads of
    the value, `(step, input position)`: they read the caller's tensor instead of the buffer."""

    ref: ValueRef
    step: int
    position: int
    readers: tuple[tuple[int, int], ...] = ()


def direct_outputs(program: Program) -> tuple[DirectOutput, ...]:
    """The program outputs a segment may write into the caller's tensor, one entry per distinct value.

    Sound when writing the value elsewhere than its buffer changes nothing else the program computes:
    the value is a buffer value (not an input, weight, constant or state: those alias memory that
    outlives the call), written by exactly one step, a segment whose graph output has the value's
    numpy dtype (an i1 value viewed as int8 included); after that step, every access to bytes
    overlapping the value's is a read of the value itself (redirected to the caller's tensor; a
    segment reading it must take it in the same numpy dtype), never a write or a read of another
    value sharing those bytes; and no other program output shares its bytes. A staged output
    (bytes overlapping an input of its own segment) qualifies: the caller's tensor overlaps no input,
    so its staging copy is not needed. The same value returned twice is one entry (the executor
    copies it for the second)."""
    buffers, held = program.buffers, set(program.states.values())
    found: list[DirectOutput] = []
    seen: set[ValueRef] = set()
    for ref in program.outputs:
        if ref in seen or ref.source != "buffer" or int(ref.key) in held:
            continue
        seen.add(ref)
        entry = _direct_output(program, ref)
        mem = memory_of(ref, buffers)
        shared = any(o != ref and o.source == "buffer" and overlap(mem, memory_of(o, buffers)) for o in program.outputs)
        if entry is not None and not shared:
            found.append(entry)
    return tuple(found)


def _direct_output(program: Program, ref: ValueRef) -> DirectOutput | None:
    """`ref`'s entry if its producer and every later access allow it (see `direct_outputs`)."""
    writers = [(i, s) for i, s in enumerate(program.steps) if ref in step_writes(program, s)]
    if len(writers) != 1 or not isinstance(writers[0][1], SegmentStep):
        return None
    index, step = writers[0]
    seg = program.segments[step.segment]
    position = seg.outputs.index(ref)
    dtype = torch_numpy_dtype(ref.dtype)
    graph_dtype = seg.output_dtypes[position]
    if dtype is None or graph_dtype not in (dtype, np.dtype(np.int8) if ref.is_bool else dtype):
        return None
    mem = memory_of(ref, program.buffers)
    readers: list[tuple[int, int]] = []
    for later in range(index + 1, len(program.steps)):
        s = program.steps[later]
        for r in step_writes(program, s):
            if r.source == "buffer" and overlap(mem, memory_of(r, program.buffers)):
                return None
        for pos, r in enumerate(step_reads(program, s)):
            if r.source != "buffer" or not overlap(mem, memory_of(r, program.buffers)):
                continue
            if r != ref:
                return None
            if isinstance(s, SegmentStep) and program.segments[s.segment].input_dtypes[pos] != graph_dtype:
                return None
            readers.append((later, pos))
    return DirectOutput(ref, index, position, tuple(readers))
