"""CompiledNPUExecutor: run a `Program` as a flat instruction list over pre-allocated buffers.

At construction (never at run time):

* every physical buffer of the plan (`Program.buffers`, from `buffer_table`) is one torch
  `uint8` tensor of its planned size, allocated once;
* every value living in a buffer gets a view of that buffer's first bytes with the value's
  shape and dtype (a buffer holding values of different shapes/dtypes over time has one view
  per value, all on the same bytes); segments get numpy views of the same memory (an i1 value
  on a runtime without booleans is viewed as int8: same bytes);
* each step becomes an instruction with its arguments bound:

  - `RunSegment(k, input_buffers, output_buffers)`: run compiled graph k reading and writing
    buffer views in place (`CompiledGraph.run(..., outputs=...)`); an output sharing a buffer
    with one of the segment's inputs goes through a staging array allocated here, copied into
    its buffer after the run;
  - `RunCpu(fn, input_buffers, output_buffer)`: a torch kernel writing its result into the
    output view (`cpu_kernel`);
  - `Transfer(src, dst)`: `dst.copy_(src)`.

A call binds the inputs (checked against the input specs), runs the instructions in order and
copies the outputs out of their buffers: those copies are the only allocation per call (none
with `run(..., out=[...])`). A program whose CPU ops are allocation-free kinds allocates no
tensor memory besides the outputs (`tests/backends/test_executor.py` measures it).

CPU kernels (`cpu_kernel`) use torch's `out=` variants or in-place copies into the
destination view; `CpuKernel.allocation_free` says which. Allocation-free: unary, binary,
compare, select, reduce (float sum/max/min), cumsum, softmax, matmul, linear (matmul into the
view, bias and activation in place), gated_mlp (the up projection goes to a scratch tensor
allocated at construction), reshape, transpose, broadcast, slice, concat, gather (indices
wrapped into a scratch tensor), convert. The others (layer_norm, rms_norm, sdpa, mean, the
`npuir.aten` fallback and unusual dtype combinations) compute a temporary with the reference
semantics (`forge.interpreter.lowered_functions.run_kind`) and `copy_` it into the view: one
temporary per call.

An executor is not thread-safe (it owns one set of buffers); make one per thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import TensorType

from dialects import npuir as N
from dialects.torch_types import dtype_of, shape_of
from forge.interpreter.lowered_functions import (
    BINARY_OUT_FUNCTIONS,
    COMPARE_FUNCTIONS,
    UNARY_OUT_FUNCTIONS,
    logical_or_bitwise,
)

from .emitter import CpuStep, Program, SegmentStep, TransferStep, ValueRef
from .runtime import CompiledGraph

__all__ = [
    "CompiledNPUExecutor",
    "CpuKernel",
    "ExecutorInputError",
    "RunCpu",
    "RunSegment",
    "Transfer",
    "cpu_kernel",
]


class ExecutorInputError(ValueError):
    """The executor was called with inputs that do not match the program's signature."""


# ============================================================================ cpu kernels


@dataclass(frozen=True)
class CpuKernel:
    """`fn(*ins, out)` writes the op's value into `out` (a view of its buffer)."""

    fn: Callable[..., Any]
    allocation_free: bool
    scratch: tuple[torch.Tensor, ...] = ()


def _reference(step_kind: type[N.NpuirOp], p: N.Params, out_type: TensorType) -> Callable[..., Any]:
    from forge.interpreter.lowered_functions import run_kind  # shared reference semantics

    def fn(*args: torch.Tensor) -> None:
        *ins, out = args
        out.copy_(run_kind(step_kind, p, ins, out_type))

    return fn


def _unary(kind: str) -> Callable[..., Any]:
    if kind in UNARY_OUT_FUNCTIONS:
        f = UNARY_OUT_FUNCTIONS[kind]
        return lambda x, out: f(x, out=out)
    if kind == "relu":
        return lambda x, out: torch.clamp_min(x, 0, out=out)
    if kind in ("gelu", "gelu_tanh"):
        approximate = "tanh" if kind == "gelu_tanh" else "none"
        return lambda x, out: torch.ops.aten.gelu.out(x, approximate=approximate, out=out)
    if kind == "silu":
        return lambda x, out: torch.ops.aten.silu.out(x, out=out)
    raise KeyError(kind)


def _activation_inplace(activation: str) -> Callable[[torch.Tensor], Any] | None:
    if activation == "none":
        return None
    if activation == "relu":
        return torch.relu_
    if activation in ("gelu", "gelu_tanh"):
        approximate = "tanh" if activation == "gelu_tanh" else "none"
        return lambda y: torch.ops.aten.gelu_(y, approximate=approximate)
    if activation == "silu":
        return torch.ops.aten.silu_
    if activation == "sigmoid":
        return torch.sigmoid_
    raise KeyError(activation)


def _binary(kind: str, dtype: torch.dtype) -> Callable[..., Any]:
    if kind == "div" and not dtype.is_floating_point:
        return lambda a, b, out: torch.div(a, b, rounding_mode="trunc", out=out)
    if kind in ("and", "or"):
        f = logical_or_bitwise(kind, dtype)
    else:
        f = BINARY_OUT_FUNCTIONS[kind]
    return lambda a, b, out: f(a, b, out=out)


def _copy_into(out: torch.Tensor, src: torch.Tensor) -> None:
    # A rank-2 transposed copy takes torch's blocked-transpose path, which allocates a block
    # buffer; a leading unit dim keeps it on the plain (allocation-free) copy.
    if out.dim() == 2:
        out.unsqueeze(0).copy_(src.unsqueeze(0))
    else:
        out.copy_(src)


def _mat(w: torch.Tensor, transpose: bool) -> torch.Tensor:
    return w.transpose(-1, -2) if transpose else w


def cpu_kernel(step: CpuStep) -> CpuKernel:
    """The torch kernel of a cpu step: `out=` variants where torch has them."""
    kind, p = step.kind, step.params
    out_type, in_types = step.out_type, step.in_types
    out_dtype = dtype_of(out_type)
    in_dtypes = [dtype_of(t) for t in in_types]
    floating = out_dtype.is_floating_point and all(d == out_dtype for d in in_dtypes)
    reference = CpuKernel(_reference(step.op_class, p, out_type), allocation_free=False)

    if kind == "unary":
        if in_dtypes[0] != out_dtype:
            return reference
        return CpuKernel(_unary(p.get_str("kind")), True)
    if kind == "binary":
        if any(d != out_dtype for d in in_dtypes):
            return reference
        return CpuKernel(_binary(p.get_str("kind"), out_dtype), True)
    if kind == "compare":
        f = COMPARE_FUNCTIONS[p.get_str("kind")]
        return CpuKernel(lambda a, b, out: f(a, b, out=out), True)
    if kind == "select":
        return CpuKernel(lambda c, a, b, out: torch.where(c, a, b, out=out), True)
    if kind == "reduce":
        axes = list(p.get_ints("axes"))
        keep = p.get_flag("keepdims")
        rkind = p.get_str("kind")
        if not axes:
            return CpuKernel(lambda x, out: out.copy_(x), True)
        if not floating or rkind == "mean":  # mean out= allocates a dtype scalar
            return reference
        f = {"sum": torch.sum, "max": torch.amax, "min": torch.amin}[rkind]
        return CpuKernel(lambda x, out: f(x, axes, keep, out=out), True)
    if kind == "cumsum":
        if in_dtypes[0] != out_dtype or out_dtype == torch.bool:
            return reference
        axis = p.get_int("axis")
        return CpuKernel(lambda x, out: torch.cumsum(x, axis, out=out), True)
    if kind == "softmax":
        if not floating:
            return reference
        axis = p.get_int("axis")
        return CpuKernel(lambda x, out: torch.ops.aten._softmax.out(x, axis, False, out=out), True)
    if kind == "matmul":
        if not floating:
            return reference
        ta, tb = p.get_flag("transpose_a"), p.get_flag("transpose_b")
        return CpuKernel(lambda a, b, out: torch.matmul(_mat(a, ta), _mat(b, tb), out=out), True)
    if kind == "linear":
        if not floating:
            return reference
        tw = p.get_flag("transpose_w")
        act = _activation_inplace(p.get_str("activation"))

        def linear(x: torch.Tensor, w: torch.Tensor, *rest: torch.Tensor) -> None:
            *bias, out = rest
            torch.matmul(x, _mat(w, tw), out=out)
            if bias:
                out.add_(bias[0])
            if act is not None:
                act(out)

        return CpuKernel(linear, True)
    if kind == "gated_mlp":
        if not floating:
            return reference
        tw = p.get_flag("transpose_w")
        act = _activation_inplace(p.get_str("activation"))
        up = torch.empty(shape_of(out_type), dtype=out_dtype)

        def gated_mlp(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, out: torch.Tensor) -> None:
            torch.matmul(x, _mat(wg, tw), out=out)
            if act is not None:
                act(out)
            torch.matmul(x, _mat(wu, tw), out=up)
            out.mul_(up)

        return CpuKernel(gated_mlp, True, (up,))
    if kind == "reshape":
        shape = shape_of(in_types[0])
        return CpuKernel(lambda x, out: out.view(shape).copy_(x), True)
    if kind == "transpose":
        perm = p.get_ints("perm")
        return CpuKernel(lambda x, out: _copy_into(out, x.permute(perm)), True)
    if kind == "broadcast":
        shape = shape_of(out_type)
        return CpuKernel(lambda x, out: out.copy_(x.expand(shape)), True)
    if kind == "slice":
        index = tuple(
            slice(s, e, st) for s, e, st in zip(p.get_ints("starts"), p.get_ints("ends"), p.get_ints("steps"))
        )
        return CpuKernel(lambda x, out: _copy_into(out, x[index]), True)
    if kind == "concat":
        axis = p.get_int("axis")
        return CpuKernel(lambda *args: torch.cat(args[:-1], axis, out=args[-1]), True)
    if kind == "gather":
        axis = p.get_int("axis")
        data_shape, idx_shape = shape_of(in_types[0]), shape_of(in_types[1])
        size = data_shape[axis]
        count = int(np.prod(idx_shape, dtype=np.int64))
        flat_shape = (*data_shape[:axis], count, *data_shape[axis + 1 :])
        wrapped = torch.empty(count, dtype=torch.int64)

        def gather(data: torch.Tensor, indices: torch.Tensor, out: torch.Tensor) -> None:
            torch.remainder(indices.reshape(-1), size, out=wrapped)  # negative -> from the end
            torch.index_select(data, axis, wrapped, out=out.view(flat_shape))

        return CpuKernel(gather, True, (wrapped,))
    if kind == "convert":
        return CpuKernel(lambda x, out: out.copy_(x), True)
    return reference  # layer_norm, rms_norm, sdpa, aten, ...


# =========================================================================== instructions


@dataclass
class RunSegment:
    """Run compiled segment `k`: read `input_buffers`, write `output_buffers` (numpy views of
    the plan's buffers, or staging arrays copied into `copies` destinations afterwards)."""

    k: int
    graph: CompiledGraph
    input_buffers: list[np.ndarray]
    output_buffers: list[np.ndarray]
    copies: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    text: str = ""

    def __call__(self, env: list[Any]) -> None:
        self.graph.run(self.input_buffers, outputs=self.output_buffers)
        for src, dst in self.copies:
            np.copyto(dst, src)

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
    """`env[dst].copy_(env[src])`: the explicit device transition."""

    src: int
    dst: int
    text: str = ""

    def __call__(self, env: list[Any]) -> None:
        env[self.dst].copy_(env[self.src])

    def __str__(self) -> str:
        return self.text or f"Transfer({self.src} -> {self.dst})"


Instruction = RunSegment | RunCpu | Transfer


# ============================================================================== executor


class CompiledNPUExecutor:
    """Runs a `Program` (see the module docstring).

    `executor(*inputs)` takes torch tensors (or numpy arrays) matching `program.inputs` and
    returns the outputs as new torch tensors; `executor.run(*inputs, out=[...])` writes them
    into the given tensors instead.
    """

    def __init__(self, program: Program):
        start = time.perf_counter()
        self.program = program
        self.buffers: dict[int, torch.Tensor] = {
            bid: torch.zeros(spec.nbytes, dtype=torch.uint8) for bid, spec in program.buffers.items()
        }
        self.env: list[Any] = []
        self._slots: dict[ValueRef, int] = {}
        self._numpy: dict[tuple[ValueRef, str], np.ndarray] = {}
        self.scratch: list[torch.Tensor] = []  # kernel temporaries, allocated here once
        self._input_slots = [self._slot(r) for r in program.inputs]
        self.instructions: list[Instruction] = []
        for step in program.steps:
            self.instructions.append(self._instruction(step))
        self._output_slots = [self._slot(r) for r in program.outputs]
        self.bind_ms = (time.perf_counter() - start) * 1e3

    # ---- binding ------------------------------------------------------------------

    def view(self, ref: ValueRef) -> torch.Tensor:
        """The torch view of a buffer value (its buffer's first bytes)."""
        buf = self.buffers[ref.key]  # type: ignore[index]
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
            value = weights[ref.key]  # type: ignore[index]
        else:
            value = self.program.constants[ref.key]  # type: ignore[index]
        slot = self._slots[ref] = len(self.env)
        self.env.append(value)
        return slot

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

    def _instruction(self, step: Any) -> Instruction:
        if isinstance(step, SegmentStep):
            seg = self.program.segments[step.segment]
            ins = [self._numpy_view(r, d) for r, d in zip(seg.inputs, seg.input_dtypes)]
            outs: list[np.ndarray] = []
            copies: list[tuple[np.ndarray, np.ndarray]] = []
            for r, d, staged in zip(seg.outputs, seg.output_dtypes, seg.staged):
                view = self._numpy_view(r, d)
                if staged:
                    stage = np.empty(view.shape, view.dtype)
                    outs.append(stage)
                    copies.append((stage, view))
                else:
                    outs.append(view)
            names = ", ".join(f"%{r.name}" for r in seg.inputs)
            results = ", ".join(f"%{r.name}" for r in seg.outputs)
            return RunSegment(step.segment, seg.graph, ins, outs, copies, f"segment {step.segment}({names}) -> {results}")
        if isinstance(step, CpuStep):
            kernel = cpu_kernel(step)
            self.scratch.extend(kernel.scratch)
            ins_slots = tuple(self._slot(r) for r in step.ins)
            out_slot = self._slot(step.out)
            names = ", ".join(f"%{r.name}" for r in step.ins)
            return RunCpu(kernel.fn, ins_slots, out_slot, f"cpu {step.kind}({names}) -> {step.out}", kernel.allocation_free)
        assert isinstance(step, TransferStep)
        return Transfer(self._slot(step.src), self._slot(step.dst), f"transfer %{step.src.name} -> {step.dst}")

    # ---- running ------------------------------------------------------------------

    def _bind_inputs(self, inputs: Sequence[Any]) -> None:
        specs = self.program.inputs
        if len(inputs) != len(specs):
            raise ExecutorInputError(f"expected {len(specs)} inputs, got {len(inputs)}")
        for slot, spec, x in zip(self._input_slots, specs, inputs):
            if isinstance(x, np.ndarray):
                x = torch.from_numpy(x)
            if not isinstance(x, torch.Tensor):
                raise ExecutorInputError(f"input {spec.key} (%{spec.name}): expected a tensor, got {type(x).__name__}")
            if x.dtype != spec.dtype or tuple(x.shape) != spec.shape:
                raise ExecutorInputError(
                    f"input {spec.key} (%{spec.name}): expected {spec.dtype}{list(spec.shape)}, "
                    f"got {x.dtype}{list(x.shape)}"
                )
            if x.device.type != "cpu":
                raise ExecutorInputError(f"input {spec.key} (%{spec.name}): tensor on {x.device}, expected cpu")
            self.env[slot] = x

    def run(self, *inputs: Any, out: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]:
        self._bind_inputs(inputs)
        env = self.env
        try:
            for instruction in self.instructions:
                instruction(env)
            if out is None:
                return [env[i].clone() for i in self._output_slots]
            if len(out) != len(self._output_slots):
                raise ExecutorInputError(f"expected {len(self._output_slots)} output tensors, got {len(out)}")
            for dst, i in zip(out, self._output_slots):
                dst.copy_(env[i])
            return list(out)
        finally:
            for slot in self._input_slots:
                self.env[slot] = None  # do not keep the caller's tensors alive

    __call__ = run

    # ---- introspection ------------------------------------------------------------

    @property
    def planned_bytes(self) -> int:
        return sum(b.numel() for b in self.buffers.values())

    def buffer_pointers(self) -> dict[int, int]:
        """Data pointer of every buffer (stable for the executor's lifetime)."""
        return {bid: b.data_ptr() for bid, b in self.buffers.items()}

    def describe(self) -> str:
        """The instruction list, one per line."""
        return "\n".join(f"{i:4d}  {ins}" for i, ins in enumerate(self.instructions))
