"""CompiledNPUExecutor: run a `Program` as a flat instruction list over pre-allocated buffers.

At construction (never at run time):

* every arena of the plan (`Program.arenas`, from `buffer.arena`) is one torch `uint8` tensor
  of its planned size, allocated once, and every buffer viewing it (`buffer.alloc
  %arena[offset]`) a slice of it at its byte offset (a multiple of `buffer.ALIGNMENT`, 64: every
  dtype's view is aligned); a buffer of its own (no arena) is a tensor of its own (left unfilled and
  never touched when every value in it is a direct output, see below: `untouched`);
* every value living in a buffer gets a view of that buffer's first bytes with the value's
  shape and dtype (a buffer holding values of different shapes/dtypes over time has one view
  per value, all on the same bytes); segments get numpy views of the same memory (an i1 value
  on a runtime without booleans is viewed as int8: same bytes);
* each step becomes an instruction with its arguments bound:

  - `RunSegment(k, input_buffers, output_buffers)`: run compiled graph k reading and writing
    buffer views in place (checked against the graph's specs here, once, then run with
    `CompiledGraph.run_prepared`); an output sharing a buffer with one of the segment's inputs
    goes through a staging array allocated here, copied into its buffer after the run;
  - `RunCpu(fn, input_buffers, output_buffer)`: a torch kernel writing its result into the
    output view (`cpu_kernel`);
  - `Transfer(src, dst)`: `dst <- src` (`host_copy`: numpy's one-thread copy, see there).
  - `WriteRows`: a run of state row writes (a KV cache update after a decode step) as one instruction
    reading the rows straight from the segment's outputs, the transfers that only fed them dropped
    (`fuse_row_writes=False` keeps them, for comparisons; see `WriteRows`).

A call binds the inputs (checked against the input specs), runs the instructions in order and
returns the outputs as new tensors: the outputs are the only allocation per call (none with
`run(..., out=[...])`). A program whose CPU ops are allocation-free kinds allocates no tensor
memory besides the outputs (`tests/backends/test_executor.py` measures it).

Direct outputs: a program output that a segment produces and nothing after it overwrites
(`program.direct_outputs`: the conditions) is not written into its planned buffer and copied out;
the call allocates the output tensor (or takes the caller's `out=` tensor, when it has the value's
shape and dtype, is contiguous and shares no memory with the inputs, the other `out=` tensors or
the arenas) and binds it as that segment output for the call; later steps reading the value read
that tensor. On GPT-2 12L this saves the copy of the 25.7 MB logits (3.8% of a call). The same
value returned twice comes back as two tensors (the second a copy). `direct_outputs=False` keeps
every output in its buffer (the copy-out path, for measurements). A buffer holding only direct
outputs is never read nor written (`untouched`), so the executor never fills it: an arena is
zero-filled over the other buffers' bytes only, and the bytes of GPT-2 12L's logits (98% of its
arena, 25 MB) never become resident.

CPU kernels (`cpu_kernel`) come from the kind table (`forge.kinds`, `KindSpec.cpu_kernel`):
torch's `out=` variants or in-place copies into the destination view, with scratch tensors
allocated once at construction; `CpuKernel.allocation_free` says which. Kinds and dtype
combinations without such a kernel compute a temporary with the reference semantics and `copy_`
it into the view: one temporary per call.

States (`Program.states`, from `buffer.state`): a state's buffer is not allocated per executor
but taken from a `StateStore`, which allocates each state once (by name) and keeps it across
calls, so several programs (a prefill and a decode function) given the same store share the
state's memory. `StateStore.reset()` restores the initial values in place (no reallocation).
The cpu step that updates a state (its output is the state's buffer and its first input the
value that buffer holds) runs the aten op's in-place overload on the buffer (`index_put_`):
it writes only the new rows, nothing is copied.

An executor is not thread-safe (it owns one set of buffers); make one per thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from dialects.npuir import aten_call
from dialects.torch_types import dtype_of, shape_of
from forge.kinds import CpuKernel, kind_spec

from .program import (
    TORCH_TO_NUMPY,
    ArenaSpec,
    BufferSpec,
    CpuStep,
    DirectOutput,
    Program,
    SegmentStep,
    TransferStep,
    ValueRef,
    step_reads,
    step_writes,
)
from .program import direct_outputs as plan_direct_outputs
from .runtime import CompiledGraph

__all__ = [
    "CompiledNPUExecutor",
    "ExecutorInputError",
    "RunCpu",
    "RunSegment",
    "StateStore",
    "Transfer",
    "WriteRows",
    "cpu_kernel",
    "inplace_kernel",
]


class ExecutorInputError(ValueError):
    """The executor was called with inputs that do not match the program's signature."""


# ============================================================================ cpu kernels


def cpu_kernel(step: CpuStep) -> CpuKernel:
    """The torch kernel of a cpu step, from the kind table: `out=` variants where torch has them,
    else the reference value copied into the output."""
    return kind_spec(step.kind).cpu_kernel(step.params, step.in_types, step.out_type)


def inplace_kernel(step: CpuStep) -> Callable[..., Any] | None:
    """`fn(*ins, out)` running a fallback aten op's in-place overload on `out`, which is the
    buffer of `ins[0]` (a state's update: `index_put_` writes only the indexed rows); None when
    the op has no in-place overload."""
    if step.kind != "aten":
        return None
    attrs = step.params.attr("attrs")
    op = aten_call(step.params.get_str("op"), attrs, step.in_types)  # type: ignore[arg-type]
    target = op.SIGNATURE.target
    schema = getattr(target, "_schema", None)
    if schema is None:
        return None
    packet = getattr(torch.ops.aten, schema.name.split("::")[1] + "_", None)
    inplace = getattr(packet, target._overloadname, None) if packet is not None else None
    if inplace is None:
        return None

    rows = schema.name == "aten::index_put"
    writer = _numpy_row_writer(op, step.in_types) if rows else None
    if writer is not None:
        return writer
    bind = op.argument_binder()

    def fn(*values: torch.Tensor) -> None:
        *ins, out = values
        args, kwargs = bind([out, *ins[1:]])
        if not (rows and _index_copy(*args, **kwargs)):
            inplace(*args, **kwargs)

    return fn


Layout = tuple[tuple[int, ...], torch.dtype]
"""A tensor's shape and dtype."""


def _rows_dim(target: Layout, indices: Sequence[Layout | None], values: Layout, accumulate: bool) -> int | None:
    """The dim along which `index_put_(target, indices, values, accumulate)` writes whole rows (one 1-D int index
    after full slices, `values` of the target's dtype broadcastable to the selected rows, no accumulation), else
    None. A KV cache update `cache[:, :, positions] = k` is that."""
    present = [d for d, index in enumerate(indices) if index is not None]
    if accumulate or len(present) != 1:
        return None
    d = present[0]
    (index_shape, index_dtype), (shape, dtype) = indices[d], target  # type: ignore[misc]
    if len(index_shape) != 1 or index_dtype not in (torch.int64, torch.int32) or values[1] != dtype:
        return None
    selected = (*shape[:d], index_shape[0], *shape[d + 1 :])
    if len(values[0]) > len(selected):
        return None
    trailing = selected[len(selected) - len(values[0]) :]
    return d if all(v in (1, s) for v, s in zip(values[0], trailing, strict=True)) else None


def _numpy_row_writer(op: Any, in_types: Sequence[Any]) -> Callable[..., Any] | None:
    """`fn(state, index, rows, out)` for an `index_put_` that `_rows_dim` says writes whole rows of a numpy dtype:
    one numpy assignment (numpy broadcasts and wraps negative positions as `index_put_` does), decided from the
    operand types once. A decode step runs 2 per layer: ~3 us each, against ~15 through the aten kernel."""
    target, *index_types, values = ((shape_of(t), dtype_of(t)) for t in in_types)
    present = iter(index_types)
    indices = [next(present) if p else None for p in op.present_mask()]
    d = _rows_dim(target, indices, values, bool(op.arg("accumulate")))
    if d is None or target[1] not in _NUMPY_DTYPES:
        return None
    return RowWriter(d)


@dataclass(frozen=True)
class RowWriter:
    """`fn(state, index, rows, out)`: `out[..., index, ...] = rows` along `dim` (`_numpy_row_writer`)."""

    dim: int

    def __call__(self, state: torch.Tensor, index: torch.Tensor, rows: torch.Tensor, out: torch.Tensor) -> None:
        target = out.numpy()
        target[row_selection(index, self.dim, target.shape[self.dim])] = rows.numpy()


def row_selection(index: torch.Tensor, dim: int, size: int) -> tuple[Any, ...]:
    """The numpy key selecting rows `index` (1-D) along `dim` of a dim of `size`: a slice for one row in range
    (a decode step's write: cheaper than numpy's fancy indexing, the same rows), else the index array
    (negative rows wrap as `index_put_` wraps them, out-of-range ones raise IndexError)."""
    rows = index.numpy()
    if rows.size == 1:
        i = int(rows[0])
        if -size <= i < size:
            i %= size
            return (*(slice(None),) * dim, slice(i, i + 1))
    return (*(slice(None),) * dim, rows)


def _index_copy(target: torch.Tensor, indices: Sequence[Any], values: torch.Tensor, accumulate: bool = False) -> bool:
    """`target[..., idx, ...] = values` as `index_copy_` when `index_put_` writes whole rows along one dim
    (`_rows_dim`) with no negative index: the same writes. True when done. Why: torch's `index_put_` takes a slow
    path for several indices on a non-leading dim (32 rows of a [1, 12, 256, 64] cache: ~35 ms, `index_copy_`
    ~0.02 ms); a prefill runs 2 per layer. (A dtype numpy has takes `_numpy_row_writer`, decided at build.)"""
    layouts = [None if i is None else (tuple(i.shape), i.dtype) for i in indices]
    d = _rows_dim((tuple(target.shape), target.dtype), layouts, (tuple(values.shape), values.dtype), accumulate)
    if d is None:
        return False
    index = indices[d]
    if index.numel() and int(index.min()) < 0:
        return False
    selected = (*target.shape[:d], index.numel(), *target.shape[d + 1 :])
    target.index_copy_(d, index.long(), values.expand(selected))  # broadcast as index_put_ broadcasts
    return True


# ================================================================================= states


def _zeros(nbytes: int) -> torch.Tensor:
    return torch.zeros(nbytes, dtype=torch.uint8)


class StateStore:
    """The buffers of named states, allocated once and kept across calls (see the module doc).

    `initial` gives a state's initial value (zeros otherwise); `buffer(name, nbytes)` is its
    buffer, made on first use and checked to have the same size afterwards."""

    def __init__(self, initial: dict[str, torch.Tensor] | None = None):
        self.initial = dict(initial or {})
        self.buffers: dict[str, torch.Tensor] = {}

    def buffer(self, name: str, nbytes: int) -> torch.Tensor:
        found = self.buffers.get(name)
        if found is None:
            found = self.buffers[name] = torch.zeros(nbytes, dtype=torch.uint8)
            self._fill(name, found)
        elif found.numel() != nbytes:
            raise ValueError(f"state '{name}' has {found.numel()} bytes here, a program wants {nbytes}")
        return found

    def _fill(self, name: str, buf: torch.Tensor) -> None:
        value = self.initial.get(name)
        if value is None:
            buf.zero_()
            return
        raw = value.detach().contiguous().reshape(-1).view(torch.uint8)
        if raw.numel() != buf.numel():
            raise ValueError(f"state '{name}': initial value has {raw.numel()} bytes, its buffer {buf.numel()}")
        buf.copy_(raw)

    def reset(self) -> None:
        """Every state back to its initial value, in place (same memory)."""
        for name, buf in self.buffers.items():
            self._fill(name, buf)

    def pointers(self) -> dict[str, int]:
        return {name: b.data_ptr() for name, b in self.buffers.items()}


# =========================================================================== instructions


@dataclass
class DeviceClock:
    """Nanoseconds an executor's segments spent in their device calls, summed over its calls (`RunSegment` adds
    each call's): what a call's time less this is the host's (a generator's per-step split, `last_timings`)."""

    ns: int = 0


@dataclass
class RunSegment:
    """Run compiled segment `k`: read `input_buffers`, write `output_buffers` (numpy views of
    the plan's buffers, or staging arrays copied into `copies` destinations afterwards).

    `direct_outputs` / `direct_inputs` are `(position, env slot)` pairs: that output (input) is
    the numpy array the call put in the env slot instead (a program output written straight
    into the caller's tensor, see `CompiledNPUExecutor`)."""

    k: int
    graph: CompiledGraph
    input_buffers: list[np.ndarray]
    output_buffers: list[np.ndarray]
    copies: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    text: str = ""
    direct_outputs: tuple[tuple[int, int], ...] = ()
    direct_inputs: tuple[tuple[int, int], ...] = ()
    clock: DeviceClock = field(default_factory=DeviceClock)

    def __post_init__(self) -> None:
        self.graph.check_arrays(self.input_buffers, self.output_buffers)  # once: the planned views stay as they are

    def __call__(self, env: list[Any]) -> None:
        ins, outs = self.input_buffers, self.output_buffers
        if self.direct_inputs:
            ins = list(ins)
            for i, slot in self.direct_inputs:
                ins[i] = self._checked(env[slot], self.input_buffers[i])
        if self.direct_outputs:
            outs = list(outs)
            for j, slot in self.direct_outputs:
                outs[j] = self._checked(env[slot], self.output_buffers[j])
        start = time.perf_counter_ns()
        self.graph.run_prepared(ins, outs)
        self.clock.ns += time.perf_counter_ns() - start
        for src, dst in self.copies:
            np.copyto(dst, src)

    def _checked(self, array: np.ndarray, planned: np.ndarray) -> np.ndarray:
        """A call's own array (a direct output's) in place of the planned view `planned`: of its shape and dtype."""
        if array.shape != planned.shape or array.dtype != planned.dtype or not array.flags.c_contiguous:
            raise TypeError(f"{self.text or self}: a call's array is {array.dtype}{list(array.shape)}, the segment "
                            f"reads and writes {planned.dtype}{list(planned.shape)}")
        return array

    def __str__(self) -> str:
        return self.text or f"RunSegment({self.k})"


@dataclass
class RunCpu:
    """`fn(*env[input_buffers], env[output_buffer])`: a torch kernel writing into its view."""

    fn: Callable[..., Any]
    input_buffers: tuple[int, ...]
    output_buffer: int
    text: str = ""
    allocation_free: bool = True

    def __call__(self, env: list[Any]) -> None:
        self.fn(*[env[i] for i in self.input_buffers], env[self.output_buffer])

    def __str__(self) -> str:
        return self.text or f"RunCpu({self.input_buffers} -> {self.output_buffer})"


@dataclass
class Transfer:
    """`env[dst] <- env[src]` (`host_copy`): the explicit device transition. `arrays`: (src, dst) as numpy views
    when both are planned buffers no call rebinds, copied without looking them up (a decode step runs 29)."""

    src: int
    dst: int
    text: str = ""
    arrays: tuple[np.ndarray, np.ndarray] | None = None

    def __call__(self, env: list[Any]) -> None:
        if self.arrays is not None:
            np.copyto(self.arrays[1], self.arrays[0])
        else:
            host_copy(env[self.dst], env[self.src])

    def __str__(self) -> str:
        return self.text or f"Transfer({self.src} -> {self.dst})"


@dataclass
class WriteRows:
    """State row writes (`RowWriter`s, `index_put_` of whole rows) that read each block of rows straight from the
    segment output their transfer copied it from: `(index slot, dim, state array, rows array)` each. A segment's
    outputs are host memory on this executor, so a transfer to a host copy that only the row write reads is a
    copy for nothing (the plan's transfers stay what a device with memory of its own moves). A GPT-2 12L
    decode step has 24 writes and 24 such transfers; right after the device call (its caches cold) they took
    327 us as 48 instructions, 127 us as this one (int8 weights, one process)."""

    writes: tuple[tuple[int, int, np.ndarray, np.ndarray], ...]
    text: str = ""
    groups: tuple[tuple[int, int, int, tuple[tuple[np.ndarray, np.ndarray], ...]], ...] = field(init=False)
    """Consecutive writes of one (index slot, dim, size along dim), in order: the rows selected once per group (a
    decode step's 24 writes share one index; selecting it per write was 40% of their time)."""

    def __post_init__(self) -> None:
        groups: list[tuple[int, int, int, list[tuple[np.ndarray, np.ndarray]]]] = []
        for slot, dim, state, rows in self.writes:
            if not groups or groups[-1][:3] != (slot, dim, state.shape[dim]):
                groups.append((slot, dim, state.shape[dim], []))
            groups[-1][3].append((state, rows))
        self.groups = tuple((slot, dim, size, tuple(pairs)) for slot, dim, size, pairs in groups)

    def __call__(self, env: list[Any]) -> None:
        for slot, dim, size, pairs in self.groups:
            key = row_selection(env[slot], dim, size)
            for state, rows in pairs:
                state[key] = rows

    def __str__(self) -> str:
        return self.text


Instruction = RunSegment | RunCpu | Transfer | WriteRows


# Copies next to a segment run go through numpy (one thread, no OpenMP): torch's copy_/clone of a
# large tensor wakes its OpenMP pool, whose threads then spin on the cores OpenVINO's own (pinned)
# threads compute on. On the shared 2-core Xeon (issue 15, docs/benchmarks.md node_profile) a torch
# copy of ResNet-50's 600 KB input before its infer cost +13% once (numpy +1%), but other interleaved
# runs in a rotating order (biased: a fixed predecessor) showed no difference beyond the noise; with a
# seeded random call order it was ahead on all four issue-15 models (ResNet-50 163 -> 127 ms, GPT-2
# 345 -> 325, BERT 239 -> 219, Llama 439 -> 431; OpenVINO 138/322/216/425, load 3-5).
_NUMPY_DTYPES = frozenset(TORCH_TO_NUMPY)


def _numpy_able(*tensors: torch.Tensor) -> bool:
    return all(t.dtype in _NUMPY_DTYPES and t.device.type == "cpu" for t in tensors)


def host_copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    """`dst.copy_(src)` (same shape and dtype), single-threaded through numpy where both have a numpy dtype."""
    if _numpy_able(dst, src) and dst.dtype == src.dtype and dst.shape == src.shape:
        np.copyto(dst.detach().numpy(), src.detach().numpy())
    else:
        dst.copy_(src)


def host_clone(t: torch.Tensor) -> torch.Tensor:
    """`t.clone()` of a contiguous tensor, single-threaded through numpy where its dtype allows."""
    if _numpy_able(t) and t.is_contiguous():
        out = torch.empty_like(t, memory_format=torch.contiguous_format)
        np.copyto(out.numpy(), t.detach().numpy())
        return out
    return t.clone()


# ======================================================================= direct outputs


def _usable_out(dst: Any, ref: ValueRef, taken: list[tuple[int, int]]) -> torch.Tensor | None:
    """`dst` when a segment may write `ref` straight into it (right shape and dtype, contiguous, on
    the cpu, no grad, overlapping none of the `taken` byte ranges, to which it is then added)."""
    if not isinstance(dst, torch.Tensor) or dst.dtype != ref.dtype or tuple(dst.shape) != ref.shape:
        return None
    if dst.device.type != "cpu" or not dst.is_contiguous() or dst.requires_grad:
        return None
    lo = dst.data_ptr()
    hi = lo + dst.numel() * dst.element_size()
    if any(lo < b and a < hi for a, b in taken):
        return None
    taken.append((lo, hi))
    return dst


def _direct_only_buffers(program: Program, direct: tuple[DirectOutput, ...], states: frozenset[int]) -> frozenset[int]:
    """Buffers (not states) every value of which is a direct output: a call binds its own tensor for each of
    those values and redirects every reader to it, so nothing reads or writes the buffer. One in an arena
    is a range of the arena that is never filled (`_arena`): GPT-2's logits are 98% of its arena."""
    if not direct:
        return frozenset()
    refs: dict[int, set[ValueRef]] = {}
    every = [
        *program.outputs,
        *(r for step in program.steps for r in (*step_reads(program, step), *step_writes(program, step))),
    ]
    for ref in every:
        if ref.source == "buffer":
            refs.setdefault(int(ref.key), set()).add(ref)
    targets = {d.ref for d in direct}
    return frozenset(bid for bid, values in refs.items() if bid not in states and values <= targets)


def _arena(nbytes: int, used: list[tuple[int, int]]) -> torch.Tensor:
    """An arena's memory, zero-filled over the `used` byte ranges only: the bytes only untouched buffers
    cover are allocated but never written, so never resident."""
    arena = torch.empty(nbytes, dtype=torch.uint8)
    for start, end in used:
        arena[start:end].zero_()
    return arena


def _touched_ranges(spec: ArenaSpec, buffers: Iterable[BufferSpec], untouched: frozenset[int]) -> list[tuple[int, int]]:
    """The byte ranges of arena `spec` that the buffers outside `untouched` cover, merged, in order."""
    ranges = sorted(
        (b.offset, b.offset + b.nbytes)
        for b in buffers
        if b.arena is not None and b.arena.id == spec.id and b.id not in untouched
    )
    merged: list[tuple[int, int]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# ============================================================================== executor


class CompiledNPUExecutor:
    """Runs a `Program` (see the module docstring).

    `executor(*inputs)` takes torch tensors (or numpy arrays) matching `program.inputs` and
    returns the outputs as new torch tensors; `executor.run(*inputs, out=[...])` writes them
    into the given tensors instead.
    """

    def __init__(
        self,
        program: Program,
        states: StateStore | None = None,
        *,
        direct_outputs: bool = True,
        fuse_row_writes: bool = True,
    ):
        start = time.perf_counter()
        self.program = program
        self.states = states if states is not None else StateStore()
        held = {bid: name for name, bid in program.states.items()}
        self.direct: tuple[DirectOutput, ...] = plan_direct_outputs(program) if direct_outputs else ()
        self.untouched: frozenset[int] = _direct_only_buffers(program, self.direct, frozenset(held))
        self.used_ranges: dict[int, list[tuple[int, int]]] = {
            aid: _touched_ranges(a, program.buffers.values(), self.untouched) for aid, a in program.arenas.items()
        }  # per arena, the byte ranges the calls use
        self.arenas: dict[int, torch.Tensor] = {
            aid: _arena(a.nbytes, self.used_ranges[aid]) for aid, a in program.arenas.items()
        }
        self.buffers: dict[int, torch.Tensor] = {}
        for bid, spec in program.buffers.items():
            if bid in held:
                if spec.arena is not None:
                    raise ValueError(
                        f"state '{held[bid]}' is in buffer {bid}, a view of arena {spec.arena.id}: "
                        "a state's buffer must be its own (it outlives the call)"
                    )
                self.buffers[bid] = self.states.buffer(held[bid], spec.nbytes)
            elif spec.arena is not None:
                self.buffers[bid] = self.arenas[spec.arena.id][spec.offset : spec.offset + spec.nbytes]
            elif bid in self.untouched:  # never read nor written: no page of it is ever touched
                self.buffers[bid] = torch.empty(spec.nbytes, dtype=torch.uint8)
            else:
                self.buffers[bid] = _zeros(spec.nbytes)
        self._state_ids = frozenset(held)
        self.env: list[Any] = []
        self._slots: dict[ValueRef, int] = {}
        self._numpy: dict[tuple[ValueRef, str], np.ndarray] = {}
        self.scratch: list[torch.Tensor] = []  # kernel temporaries, allocated here once
        self.clock = DeviceClock()
        """The time its segments spent in device calls, summed over its calls."""
        self._input_slots = [self._slot(r) for r in program.inputs]
        self._input_sizes = [torch.Size(r.shape) for r in program.inputs]  # compared as they are: no tuple per call
        self._direct_refs = frozenset(d.ref for d in self.direct)
        self._direct_slots = [(self._slot(d.ref), self._new_slot()) for d in self.direct]
        self._direct_views = [self.env[slot] for slot, _ in self._direct_slots]
        self._direct_index = [program.outputs.index(d.ref) for d in self.direct]
        self._direct_int8 = [d.ref.is_bool and self._graph_output_dtype(d) == np.int8 for d in self.direct]
        self._last_out: list[tuple[torch.Tensor | None, np.ndarray | None]] = [(None, None)] * len(self.direct)
        self._direct_at = self._direct_positions()
        self.instructions: list[Instruction] = [self._instruction(step, k) for k, step in enumerate(program.steps)]
        if fuse_row_writes:
            self.instructions = self._fused_row_writes(self.instructions)
        self._output_slots = [self._slot(r) for r in program.outputs]
        self._fresh_outputs = frozenset(program.outputs.index(r) for r in self._direct_refs)
        self.bind_ms = (time.perf_counter() - start) * 1e3

    # ---- binding ------------------------------------------------------------------

    def view(self, ref: ValueRef) -> torch.Tensor:
        """The torch view of a buffer value (its buffer's first bytes)."""
        buf = self.buffers[ref.key]
        return buf[: ref.nbytes].view(ref.dtype).view(ref.shape)

    def _slot(self, ref: ValueRef) -> int:
        slot = self._slots.get(ref)
        if slot is not None:
            return slot
        if ref.source == "buffer":
            value: Any = self.view(ref)
        elif ref.source == "input":
            value = None  # bound per call
        elif ref.source == "weight":
            weights = self.program.weights
            if weights is None or ref.key not in weights:
                raise KeyError(f'weight "{ref.key}" is not in the program\'s WeightStore')
            value = weights[ref.key]
        else:
            value = self.program.constants[ref.key]
        slot = self._slots[ref] = len(self.env)
        self.env.append(value)
        return slot

    def _graph_output_dtype(self, d: DirectOutput) -> np.dtype:
        step = self.program.steps[d.step]
        assert isinstance(step, SegmentStep)
        return self.program.segments[step.segment].output_dtypes[d.position]

    def _new_slot(self) -> int:
        """An env slot of no value (filled per call)."""
        self.env.append(None)
        return len(self.env) - 1

    def _direct_positions(self) -> dict[tuple[str, int, int], int]:
        """(`"out"`/`"in"`, step index, position) -> the env slot of the call's array, for segment steps."""
        found: dict[tuple[str, int, int], int] = {}
        for d, (_, array_slot) in zip(self.direct, self._direct_slots, strict=True):
            found["out", d.step, d.position] = array_slot
            for step, position in d.readers:
                if isinstance(self.program.steps[step], SegmentStep):
                    found["in", step, position] = array_slot
        return found

    def _numpy_view(self, ref: ValueRef, dtype: np.dtype) -> np.ndarray:
        key = (ref, dtype.str)
        found = self._numpy.get(key)
        if found is None:
            if ref.source != "buffer":
                raise ValueError(f"a segment reads {ref}, which is not in a buffer")
            t = self.env[self._slot(ref)]
            if ref.is_bool and dtype == np.int8:
                t = t.view(torch.int8)
            found = t.numpy()
            if found.dtype != dtype:
                raise TypeError(f"{ref} is viewed as {found.dtype}, the graph wants {dtype}")
            self._numpy[key] = found
        return found

    def _instruction(self, step: Any, index: int) -> Instruction:
        if isinstance(step, SegmentStep):
            return self._segment_instruction(step, index)
        if isinstance(step, CpuStep):
            update = self._state_update(step)
            if update is not None:
                return update
            kernel = cpu_kernel(step)
            self.scratch.extend(kernel.scratch)
            ins_slots = tuple(self._slot(r) for r in step.ins)
            out_slot = self._slot(step.out)
            names = ", ".join(f"%{r.name}" for r in step.ins)
            text = f"cpu {step.kind}({names}) -> {step.out}"
            return RunCpu(kernel.fn, ins_slots, out_slot, text, kernel.allocation_free)
        assert isinstance(step, TransferStep)
        text = f"transfer %{step.src.name} -> {step.dst}"
        return Transfer(self._slot(step.src), self._slot(step.dst), text, self._fixed_pair(step.src, step.dst))

    def _fixed_pair(self, src: ValueRef, dst: ValueRef) -> tuple[np.ndarray, np.ndarray] | None:
        """The numpy views of two planned buffers of one dtype and shape that no call rebinds (not a direct
        output, whose slot holds the call's own array), else None."""
        if any(r.source != "buffer" or r in self._direct_refs for r in (src, dst)):
            return None
        a, b = self.env[self._slot(src)], self.env[self._slot(dst)]
        if not _numpy_able(a, b) or a.dtype != b.dtype or a.shape != b.shape:
            return None
        return a.detach().numpy(), b.detach().numpy()

    def _segment_instruction(self, step: SegmentStep, index: int) -> RunSegment:
        seg = self.program.segments[step.segment]
        at = self._direct_at
        ins = [self._numpy_view(r, d) for r, d in zip(seg.inputs, seg.input_dtypes, strict=True)]
        outs: list[np.ndarray] = []
        copies: list[tuple[np.ndarray, np.ndarray]] = []
        direct_out: list[tuple[int, int]] = []
        for j, (r, d, staged) in enumerate(zip(seg.outputs, seg.output_dtypes, seg.staged, strict=True)):
            view = self._numpy_view(r, d)
            outs.append(view)
            if ("out", index, j) in at:
                direct_out.append((j, at["out", index, j]))
            elif staged:
                outs[-1] = np.empty(view.shape, view.dtype)
                copies.append((outs[-1], view))
        direct_in = tuple((i, at["in", index, i]) for i in range(len(ins)) if ("in", index, i) in at)
        names = ", ".join(f"%{r.name}" for r in seg.inputs)
        results = ", ".join(
            f"%{r.name}" + (" (direct)" if any(j == k for k, _ in direct_out) else "")
            for j, r in enumerate(seg.outputs)
        )
        text = f"segment {step.segment}({names}) -> {results}"
        return RunSegment(step.segment, seg.graph, ins, outs, copies, text, tuple(direct_out), direct_in, self.clock)

    def _state_update(self, step: CpuStep) -> RunCpu | None:
        """The in-place instruction of a step updating a state (see the module docstring)."""
        out, first = step.out, step.ins[0] if step.ins else None
        if out.key not in self._state_ids or first is None or first.source != "buffer" or first.key != out.key:
            return None
        fn = inplace_kernel(step)
        if fn is None:
            return None
        names = ", ".join(f"%{r.name}" for r in step.ins)
        text = f"cpu {step.kind}({names}) -> {step.out} in place"
        return RunCpu(fn, tuple(self._slot(r) for r in step.ins), self._slot(step.out), text, True)

    def _fused_row_writes(self, instructions: list[Instruction]) -> list[Instruction]:
        """`instructions` (one per step) with each run of consecutive steps that are all state row writes and the
        transfers feeding only them (`_row_write_sources`) as one `WriteRows`; a run with any other step in it
        stays as it is."""
        sources = self._row_write_sources(instructions)
        members = set(sources) | {j for j, _ in sources.values()}
        fused: list[Instruction] = []
        k = 0
        while k < len(instructions):
            end = k
            while end in members:
                end += 1
            one = self._write_rows(instructions, range(k, end), sources)
            fused.append(instructions[k] if one is None else one)
            k = k + 1 if one is None else end
        return fused

    def _write_rows(
        self, instructions: list[Instruction], run: range, sources: dict[int, tuple[int, np.ndarray]]
    ) -> WriteRows | None:
        """The steps `run` as one `WriteRows`, or None when it is not only row writes and their transfers, or when a
        write's rows come from a state the run writes (then the copies' order matters)."""
        writes = [w for w in run if w in sources]
        if not writes or {j for w in writes for j in (w, sources[w][0])} != set(run):
            return None
        entries = []
        for w in writes:
            write = instructions[w]
            assert isinstance(write, RunCpu) and isinstance(write.fn, RowWriter)
            state = self.env[write.output_buffer].detach().numpy()
            entries.append((write.input_buffers[1], write.fn.dim, state, sources[w][1]))
        if any(np.may_share_memory(e[2], f[3]) for e in entries for f in entries):
            return None
        names = ", ".join(f"%{self.program.steps[w].out.name}" for w in writes)  # type: ignore[union-attr]
        return WriteRows(tuple(entries), f"cpu index_put_ x{len(writes)} in place ({names}), rows read from the "
                         "segment's outputs")

    def _row_write_sources(self, instructions: list[Instruction]) -> dict[int, tuple[int, np.ndarray]]:
        """step index of a state row write -> (step index of the transfer of its rows, the transfer's source
        array), for a write whose rows a transfer between two fixed buffers copied and nothing else reads."""
        steps, program = self.program.steps, self.program
        reads: dict[ValueRef, int] = {}
        for step in steps:
            for ref in step_reads(program, step):
                reads[ref] = reads.get(ref, 0) + 1
        copied = {step.dst: j for j, step in enumerate(steps) if isinstance(step, TransferStep)}
        found = {}
        for k, (step, instruction) in enumerate(zip(steps, instructions, strict=True)):
            if not (isinstance(instruction, RunCpu) and isinstance(instruction.fn, RowWriter)):
                continue
            assert isinstance(step, CpuStep)
            rows = step.ins[-1]
            j = copied.get(rows)
            transfer = instructions[j] if j is not None else None
            if not isinstance(transfer, Transfer) or transfer.arrays is None:
                continue
            if reads[rows] == 1 and rows not in program.outputs and len(step.ins) == 3:
                found[k] = (j, transfer.arrays[0])
        return found

    # ---- running ------------------------------------------------------------------

    def _bind_inputs(self, inputs: Sequence[Any]) -> None:
        specs = self.program.inputs
        if len(inputs) != len(specs):
            raise ExecutorInputError(f"expected {len(specs)} inputs, got {len(inputs)}")
        for slot, spec, size, x in zip(self._input_slots, specs, self._input_sizes, inputs, strict=True):
            if isinstance(x, np.ndarray):
                x = torch.from_numpy(x)
            if not isinstance(x, torch.Tensor):
                raise ExecutorInputError(f"input {spec.key} (%{spec.name}): expected a tensor, got {type(x).__name__}")
            if x.dtype != spec.dtype or x.shape != size:
                raise ExecutorInputError(
                    f"input {spec.key} (%{spec.name}): expected {spec.dtype}{list(spec.shape)}, "
                    f"got {x.dtype}{list(x.shape)}"
                )
            if not x.is_cpu:
                raise ExecutorInputError(f"input {spec.key} (%{spec.name}): tensor on {x.device}, expected cpu")
            self.env[slot] = x

    def run(self, *inputs: Any, out: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]:
        if out is not None and len(out) != len(self._output_slots):
            raise ExecutorInputError(f"expected {len(self._output_slots)} output tensors, got {len(out)}")
        self._bind_inputs(inputs)
        env = self.env
        try:
            self._bind_direct(out)
            for instruction in self.instructions:
                instruction(env)
            if out is None:
                fresh = self._fresh_outputs
                return [env[i] if o in fresh else host_clone(env[i]) for o, i in enumerate(self._output_slots)]
            for dst, i in zip(out, self._output_slots, strict=True):
                if env[i] is not dst:
                    host_copy(dst, env[i])
            return list(out)
        finally:
            for slot in self._input_slots:
                env[slot] = None  # do not keep the caller's tensors alive
            for (slot, array_slot), view in zip(self._direct_slots, self._direct_views, strict=True):
                env[slot], env[array_slot] = view, None

    def _bind_direct(self, out: Sequence[torch.Tensor] | None) -> None:
        """Put each direct output's tensor for this call (new, or the caller's `out=` one when usable)
        and its numpy view in their env slots."""
        if not self.direct:
            return
        env = self.env
        taken = self._call_memory() if out is not None else []
        for k, d in enumerate(self.direct):
            t = None if out is None else _usable_out(out[self._direct_index[k]], d.ref, taken)
            slot, array_slot = self._direct_slots[k]
            if t is not None and self._last_out[k][0] is t:  # the same out= tensor as last call: same binding
                env[slot], env[array_slot] = t, self._last_out[k][1]
                continue
            if t is None:
                t = torch.empty(d.ref.shape, dtype=d.ref.dtype)
            array = (t.view(torch.int8) if self._direct_int8[k] else t).detach().numpy()
            env[slot], env[array_slot] = t, array
            if out is not None:
                self._last_out[k] = (t, array)

    def _call_memory(self) -> list[tuple[int, int]]:
        """Byte ranges an `out=` tensor must not overlap to be written directly: the call's inputs'
        storages and the arenas (the usable `out=` tensors are added as they are taken)."""
        ranges = []
        for slot in self._input_slots:
            storage = self.env[slot].untyped_storage()
            ranges.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
        for arena in self.arenas.values():
            ranges.append((arena.data_ptr(), arena.data_ptr() + arena.numel()))
        return ranges

    __call__ = run

    # ---- introspection ------------------------------------------------------------

    @property
    def planned_bytes(self) -> int:
        """Bytes of the plan the calls use: the arenas and the buffers of their own (states' included), but
        for the bytes only `untouched` buffers hold (direct outputs only: allocated, never touched, so never
        resident)."""
        own = sum(
            b.numel()
            for bid, b in self.buffers.items()
            if self.program.buffers[bid].arena is None and bid not in self.untouched
        )
        return own + sum(end - start for ranges in self.used_ranges.values() for start, end in ranges)

    def buffer_pointers(self) -> dict[int, int]:
        """Data pointer of every buffer (stable for the executor's lifetime)."""
        return {bid: b.data_ptr() for bid, b in self.buffers.items()}

    def describe(self) -> str:
        """The instruction list, one per line."""
        return "\n".join(f"{i:4d}  {ins}" for i, ins in enumerate(self.instructions))
