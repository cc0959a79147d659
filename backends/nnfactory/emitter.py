"""buffer IR -> an NNFactory program: one compiled graph per NPU segment, CPU ops in between.

`emit(module, weights, runtime="openvino", device="CPU")` reads a function in the `buffer`
dialect (the output of `lower-npuir-to-buffer`) and returns a `Program` (`program.py`):

* `analyze` (`analysis.py`) splits the function into segments (maximal runs of
  `buffer.exec npu` ops), CPU steps and transfers. Each segment becomes ONE graph built with the
  runtime's NNFactory-shaped `GraphBuilder` and compiled once: its inputs become graph
  `parameter`s, the values read after it its `result`s.
* Each npu op is built by its kind's entry in the kind table (`forge.kinds`,
  `KindSpec.build_npu`), with the segment emitter's helpers (`_SegmentEmitter.scalar`, `num01`,
  `same_dtype`, `flag`, `np_dtype`). A kind or instance the runtime cannot express on the npu
  (`cumsum`, the `aten` fallback, integer division, bitwise and/or, ...) is an `EmitError`
  naming the op: the affinity policy should have put it on the cpu.
* **Weights and constants read by a segment become constants of that segment's graph**
  (`builder.constant(array)`). A weight read by several segments is therefore embedded once
  per segment (the runtime copies it into each compiled graph): `Program.shared_weights` lists
  those; the affinity scheduler keeps them rare by grouping NPU work. Constants are passed in
  their memory layout: a 2-D weight stored as a transposed view (the layout pass does that to
  GPT-2's Conv1D weights) and read only as a matmul-like weight operand (the kind table's
  `transposable_operands`) becomes a constant of its contiguous base with the transpose flag
  flipped, so no copy is made (the openvino runtime shares large constant arrays; do not modify
  the weights while the program lives); other strided weights are copied
  (`SegmentStats.relayout_bytes`).
* `buffer.exec cpu` ops and transfers become `CpuStep`s and `TransferStep`s between segments;
  the executor (`executor.py`) runs them with torch into pre-allocated buffers.

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
from typing import Any

import numpy as np
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue

from dialects import buffer as B
from dialects.torch_types import dtype_of, shape_of
from forge.kinds import KINDS, NotOnNpu, is_i1
from forge.stage_clock import charged
from forge.weights import WeightStore, weights_of

from .analysis import SegmentPlan, analyze, describe_op, op_text
from .executor import CompiledNPUExecutor
from .graph_builder import GraphBuilder
from .graph_values import GraphBuildError, Node, to_numpy_dtype
from .program import CpuStep, EmitError, Program, Segment, SegmentStats, SegmentStep, Step, ValueRef
from .runtime import CompiledGraph, Runtime, get_runtime

__all__ = [
    "GraphTrace",
    "bool_carrier",
    "build_segment",
    "emit",
    "npu_kinds",
]


# ============================================================================ npu kinds


def bool_carrier(runtime: Runtime) -> np.dtype:
    """The graph-boundary dtype of i1 values on `runtime`: bool, else int8 (same bytes)."""
    supported = runtime.builder_class.supported_dtypes
    return np.dtype(np.bool_) if np.dtype(np.bool_) in supported else np.dtype(np.int8)


def npu_kinds() -> frozenset[str]:
    """npuir kinds the emitter can put in a graph: the kind table's kinds with an NPU lowering
    (some element types still refuse)."""
    return frozenset(name for name, spec in KINDS.items() if spec.npu)


def _literal(value: float) -> str:
    """Python source for a float/int (infinities and NaN through numpy)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "np.nan" if math.isnan(value) else ("np.inf" if value > 0 else "-np.inf")
    return repr(value)


def _np_dtype(t: TensorType) -> np.dtype:
    try:
        return to_numpy_dtype(dtype_of(t))
    except TypeError as e:
        raise NotOnNpu(str(e)) from None


class GraphTrace:
    """Hooks that let a program writer (`pyemit`) see how a graph is built.

    `wrap(builder)` returns what the segment emitter calls instead of the builder (a proxy
    that records calls); `label(array, expr)` tells the recorder the source expression of a
    constant array just before it is passed to `constant`. `comments`: whether `begin` reads
    its op comments (`describe_op` text, ~10% of a graph build: the default trace skips them).
    """

    comments = False

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

    def quantized_source(self, value: SSAValue, ref: ValueRef, k_axis: int, mode: str) -> None:
        """A 2-D f32 matmul weight quantized (`forge.precision.weight_node`, owned by the precision
        work): built output-major `[N, K]`, so a weight contracted on its axis 0 is held transposed."""
        from forge.precision import weight_node

        array, _ = self.source_array(ref)
        self.trace.begin(ref.name, f"%{ref.name} as {mode} weights")
        node = weight_node(self.g, array.T if k_axis == 0 else array, mode)
        self.trace.end(node)
        if k_axis == 0:
            self.transposed.add(node)
        self.nodes[value] = node
        self.constants += 1
        self.constant_bytes += array.size * (1 if mode == "int8" else 0.5)

    def result(self, value: SSAValue, name: str) -> np.dtype:
        node = self.nodes[value]
        if is_i1(value.type) and node.dtype != self.carrier:
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
        spec = KINDS.get(kind)
        if cls is None or cls.CPU_ONLY or spec is None or not spec.npu:
            raise NotOnNpu(f"the npu has no '{kind}' op")
        self.trace.begin(name, comment)
        p = op.param_view()
        operands = op.ins  # one variadic-operand lookup (an xdsl descriptor) per op
        ins = [self.nodes[v] for v in operands]
        in_types: list[TensorType] = [v.type for v in operands]
        out_type: TensorType = op.result.type
        node = spec.build_npu(self, p, ins, in_types, out_type)
        shape = shape_of(out_type)
        if node.shape != tuple(shape):
            raise NotOnNpu(f"built {node.spec}, expected shape {list(shape)} (emitter bug)")
        if is_i1(out_type):
            self.logical.add(node)
        elif node.dtype != _np_dtype(out_type):
            raise NotOnNpu(f"built {node.spec}, expected dtype {_np_dtype(out_type).name} (emitter bug)")
        self.trace.end(node)
        self.nodes[op.result] = node

    def flag(self, node: Node, flag: bool) -> bool:
        """A matmul transpose flag for `node` (flipped when the node holds its value transposed)."""
        return flag != (node in self.transposed)

    def np_dtype(self, t: TensorType) -> np.dtype:
        """The runtime's numpy dtype of a tensor type (`NotOnNpu` when it has none)."""
        return _np_dtype(t)


# ================================================================================= emit


class _Sources:
    """numpy arrays (and source expressions) of weights and constants, converted once."""

    def __init__(self, weights: WeightStore | None, constants: Mapping[str, torch.Tensor]):
        self.weights = weights
        self.constants = constants
        self._arrays: dict[tuple[str, str], tuple[np.ndarray, str]] = {}

    def __call__(self, ref: ValueRef) -> tuple[np.ndarray, str]:
        key = (ref.source, str(ref.key))
        found = self._arrays.get(key)
        if found is None:
            tensor = self.tensor(ref)
            if tensor.dtype == torch.bfloat16:
                raise NotOnNpu(f"{ref} is bfloat16, which numpy (and so the runtime API) cannot hold")
            found = self._arrays[key] = (tensor.detach().cpu().numpy(), expr_of(ref))  # a view, maybe strided
        return found

    def tensor(self, ref: ValueRef) -> torch.Tensor:
        if ref.source == "weight":
            if self.weights is None or ref.key not in self.weights:
                raise EmitError(f'emit: weight "{ref.key}" (%{ref.name}) is not in the WeightStore')
            tensor = self.weights[ref.key]
        else:
            tensor = self.constants[ref.key]
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


def _flippable_sources(seg: SegmentPlan) -> set[SSAValue]:
    """2-D weights/constants that the segment reads only as operands whose transposed layout a
    transpose flag absorbs (the kind table's `transposable_operands`: matmul-like weights)."""
    uses: dict[SSAValue, bool] = {}
    for op in seg.ops:
        spec = KINDS.get(op.kind.data)
        flippable = spec.transposable_operands if spec is not None else ()
        for i, v in enumerate(op.ins):
            ok = i in flippable and isinstance(v.type, TensorType) and v.type.get_num_dims() == 2
            uses[v] = uses.get(v, True) and ok
    return {v for v in seg.sources if uses.get(v)}


# operand index -> the flag naming its transposition, for the matmul-like kinds whose weight
# operand may be quantized (weight-only int8/int4: `Runtime.weights`)
_QUANTIZABLE_OPERANDS = {
    "linear": {1: "transpose_w"},
    "gated_mlp": {1: "transpose_w", 2: "transpose_w"},
    "matmul": {0: "transpose_a", 1: "transpose_b"},
}


def _quantizable_sources(seg: SegmentPlan, refs: Mapping[SSAValue, ValueRef]) -> dict[SSAValue, int]:
    """2-D f32 weights the segment reads only as matmul-like weight operands, each with the axis
    it is contracted on (one axis for all its uses); weights under 16 in a dim stay f32."""
    axes: dict[SSAValue, int | None] = {}
    for op in seg.ops:
        operands = _QUANTIZABLE_OPERANDS.get(op.kind.data, {})
        for i, v in enumerate(op.ins):
            if v not in seg.sources:
                continue
            flag = operands.get(i)
            if flag is None:
                axes[v] = None
                continue
            transposed = op.param_view().get_flag(flag)
            # matmul a [M, K]: K is axis 1 unless transposed; a weight operand [K, N]: axis 0 unless transposed
            k_axis = (0 if transposed else 1) if i == 0 and op.kind.data == "matmul" else (1 if transposed else 0)
            axes[v] = k_axis if axes.get(v, k_axis) == k_axis else None
    return {
        v: k for v, k in axes.items()
        if k is not None and refs[v].source == "weight" and refs[v].dtype == torch.float32
        and len(refs[v].shape) == 2 and min(refs[v].shape) >= 16
    }


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
        quantizable = _quantizable_sources(seg, refs) if runtime.weights else {}
        for v in seg.sources:
            current = v.owner
            if v in quantizable:
                em.quantized_source(v, refs[v], quantizable[v], runtime.weights)
                continue
            array = sources(refs[v])[0]
            transposed = v in flippable and not array.flags.c_contiguous and array.T.flags.c_contiguous
            em.source(v, refs[v], transposed)
        for op in seg.ops:
            current = op
            em.op(op, refs[op.result].name, describe_op(op, refs) if trace.comments else "")
        current = None
        out_dtypes = tuple(em.result(v, refs[v].name) for v in seg.results)
    except NotOnNpu as e:
        what = op_text(current, refs) if current is not None else "a segment boundary"
        raise EmitError(
            f"emit: segment {seg.index}: {what}: the {runtime.name} runtime cannot run it on "
            f"the npu ({e}); the affinity policy should place it on the cpu"
        ) from None
    except GraphBuildError as e:
        what = op_text(current, refs) if current is not None else "a segment boundary"
        raise EmitError(f"emit: segment {seg.index}: {what}: {e}") from e
    build_ms = (time.perf_counter() - start) * 1e3
    if not seg.results:
        raise EmitError(f"emit: segment {seg.index} computes nothing that is read later (dead npu ops)")
    start = time.perf_counter()
    graph: CompiledGraph | None = None
    if compile:
        try:
            with charged("device_compile_ms"):  # the running compile's device-compile stage
                graph = builder.compile()
        except GraphBuildError as e:
            raise EmitError(f"emit: segment {seg.index}: device compile failed: {e}") from e
    compile_ms = (time.perf_counter() - start) * 1e3
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
        graph=graph,
        inputs=tuple(refs[v] for v in seg.params),
        outputs=outputs,
        input_dtypes=in_dtypes,
        output_dtypes=out_dtypes,
        staged=tuple(v in seg.staged for v in seg.results),  # bytes overlapping an input (analysis)
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
        states=analysis.states,
        carrier=carrier,
        shared_weights=shared,
        runtime_ms=runtime_ms,
        analyze_ms=analyze_ms,
        emit_ms=(time.perf_counter() - start) * 1e3,
        executor_class=CompiledNPUExecutor,
    )

