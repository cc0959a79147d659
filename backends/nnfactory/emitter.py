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
* **Compressed weights** (a runtime in a `weights` mode, int8/int4): before the graphs are built,
  `compress_weights` replaces in the WeightStore each float weight the program reads only as a matmul-like
  weight or a gather table on the npu by its `CompressedWeight` (forge/quantize.py); a segment then reads
  the store's integers and scales (`quantize.weight_node`: the dequantize-in-kernel pattern), whatever the
  runtime's mode (a loaded compressed artifact runs compressed). The store is changed in place: the
  compiled model and its saved artifact hold the compressed bytes, not the float ones.
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
from forge.quantize import CompressedWeight, quantize
from forge.stage_clock import charged
from forge.weights import WeightStore, weights_of

from .analysis import SegmentPlan, analyze, describe_op, op_text
from .executor import CompiledNPUExecutor
from .program import CpuStep, EmitError, Program, Segment, SegmentStats, SegmentStep, Step, ValueRef
from .runtime import CompiledGraph, GraphGroup, Runtime, get_runtime
from .runtime.graph_builder import GraphBuilder
from .runtime.graph_values import GraphBuildError, Node, to_numpy_dtype

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

    def compressed_source(self, value: SSAValue, ref: ValueRef, cw: CompressedWeight) -> None:
        """A compressed weight of the store (`backends.nnfactory.runtime.quantize.weight_node`): its integers
        and scales, dequantized in the graph, output-major `[N, K]`, so a weight contracted on its axis 0
        is held transposed."""
        from backends.nnfactory.runtime.quantize import weight_node

        self.trace.begin(ref.name, f"%{ref.name} as {cw.mode} weights")
        node = weight_node(self.g, cw)
        self.trace.end(node)
        if cw.k_axis == 0:
            self.transposed.add(node)
        self.nodes[value] = node
        self.constants += 1
        self.constant_bytes += cw.nbytes

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

    def compressed(self, ref: ValueRef) -> CompressedWeight | None:
        """The store's compressed form of a weight, None for a float one (or a constant)."""
        if ref.source != "weight" or self.weights is None or ref.key not in self.weights:
            return None
        return self.weights.compressed(ref.key)

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
# operand may be compressed (weight-only int8/int4: `Runtime.weights`)
_QUANTIZABLE_OPERANDS = {
    "linear": {1: "transpose_w"},
    "gated_mlp": {1: "transpose_w", 2: "transpose_w"},
    "matmul": {0: "transpose_a", 1: "transpose_b"},
}
_INT8_ONLY = "int8"
"""The mode of a gather table (an embedding): rows are looked up, not contracted, so each row keeps its own
int8 scale (OpenVINO's CPU Gather decompresses int8 rows; int4 mode keeps embeddings int8, as NNCF does)."""


def _use_of(op: B.ExecOp, i: int) -> tuple[int, str | None] | None:
    """How operand `i` of `op` reads a 2-D weight that may be compressed: (the axis a channel's values
    lie along, the mode it needs or None for any), or None when it must stay float."""
    kind = op.kind.data
    if kind == "gather" and i == 0 and op.param_view().get_int("axis") == 0:
        return 1, _INT8_ONLY  # a row of the table per index: per-row scales
    flag = _QUANTIZABLE_OPERANDS.get(kind, {}).get(i)
    if flag is None:
        return None
    transposed = op.param_view().get_flag(flag)
    # matmul a [M, K]: K is axis 1 unless transposed; a weight operand [K, N]: axis 0 unless transposed
    return ((0 if transposed else 1) if i == 0 and kind == "matmul" else (1 if transposed else 0)), None


def _compressible_uses(seg: SegmentPlan, refs: Mapping[SSAValue, ValueRef]) -> dict[SSAValue, tuple[int, str | None]]:
    """The 2-D f32 weights the segment reads only as matmul-like weight operands or gather tables, each
    with its channel axis (one for all its uses) and the mode one of its uses needs (int8 for a table);
    weights under 16 in a dim stay f32. The other sources are absent."""
    uses: dict[SSAValue, tuple[int, str | None] | None] = {}
    for op in seg.ops:
        for i, v in enumerate(op.ins):
            if v not in seg.sources:
                continue
            use, seen = _use_of(op, i), uses.get(v, ())
            if use is None or seen is None or (seen and seen[0] != use[0]):
                uses[v] = None
            else:
                uses[v] = (use[0], use[1] or (seen[1] if seen else None))
    return {
        v: use for v, use in uses.items()
        if use is not None and refs[v].source == "weight" and refs[v].dtype == torch.float32
        and len(refs[v].shape) == 2 and min(refs[v].shape) >= 16
    }


def compress_weights(analysis: Any, weights: WeightStore, mode: str, memo: dict[Any, Any] | None = None) -> int:
    """Compress in `weights` (`WeightStore.compress`) each float weight that the analysed program reads only
    as a matmul-like weight or a gather table on the npu (no CPU step reads it), in `mode` (int8 for a weight
    a gather reads too). Entries already compressed (another graph of the same store) are kept. `memo`: the
    weights quantized before for other graphs (a GraphGroup's), by the tensor's memory: a weight two stores
    share is quantized once, and the device sees the same compressed arrays. Returns the number compressed now."""
    plans: dict[str, tuple[int, str | None] | None] = {}
    for seg in analysis.segments:
        uses = _compressible_uses(seg, analysis.refs)
        for v in seg.sources:
            ref = analysis.refs[v]
            if ref.source != "weight":
                continue
            use, seen = uses.get(v), plans.get(str(ref.key), ())
            if use is None or seen is None or (seen and seen[0] != use[0]):
                plans[str(ref.key)] = None
            else:
                plans[str(ref.key)] = (use[0], use[1] or (seen[1] if seen else None))
    for step in analysis.items:
        if isinstance(step, CpuStep):
            for r in step.ins:
                if r.source == "weight":
                    plans[str(r.key)] = None
    done = 0
    for name, plan in plans.items():
        if plan is None or name not in weights or not weights.has_data(name) or weights.compressed(name) is not None:
            continue
        weights.compress(name, _quantized(weights[name], plan[1] or mode, plan[0], memo))
        done += 1
    return done


def _quantized(w: torch.Tensor, mode: str, k_axis: int, memo: dict[Any, Any] | None) -> Any:
    if memo is None:
        return quantize(w, mode, k_axis)
    key = (w.untyped_storage().data_ptr(), w.storage_offset(), tuple(w.shape), w.stride(), w.dtype, mode, k_axis)
    if key not in memo:  # the entry holds `w`: its memory cannot be another tensor's while the memo lives
        memo[key] = (w, quantize(w, mode, k_axis))
    return memo[key][1]


def build_segment(
    runtime: Runtime,
    seg: SegmentPlan,
    refs: Mapping[SSAValue, ValueRef],
    sources: Callable[[ValueRef], tuple[np.ndarray, str]],
    *,
    carrier: np.dtype | None = None,
    trace: GraphTrace | None = None,
    compile: bool = True,
    group: GraphGroup | None = None,
) -> Segment:
    """Build one segment's graph and compile it (`compile=False`: build only, `graph` None; `group`: as a
    graph of that group, compiled with the group's other graphs)."""
    trace = trace or GraphTrace()
    carrier = carrier if carrier is not None else bool_carrier(runtime)
    start = time.perf_counter()
    builder = runtime.builder()
    em = _SegmentEmitter(trace.wrap(builder), carrier, trace, sources)
    current: Operation | None = None
    try:
        in_dtypes = tuple(em.parameter(v, refs[v]) for v in seg.params)
        flippable = _flippable_sources(seg)
        compressible = _compressible_uses(seg, refs)
        stored = getattr(sources, "compressed", None)  # a program writer's sources hold float arrays
        for v in seg.sources:
            current = v.owner
            cw = stored(refs[v]) if stored is not None else None
            if cw is not None and v in compressible and compressible[v][0] == cw.k_axis:
                em.compressed_source(v, refs[v], cw)
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
                # no argument without a group: a runtime's builder may override compile() as it was before groups
                graph = builder.compile() if group is None else builder.compile(group)
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
    group: GraphGroup | None = None,
) -> Program:
    """Compile a `buffer`-dialect function into a `Program` on `runtime` (see the module doc).

    `weights` defaults to the WeightStore attached to `module` (`forge.weights.weights_of`).
    `runtime` is a runtime name (`available_runtimes()`) or a `Runtime` instance (then
    `device` is ignored). `group`: the segments are graphs of that `GraphGroup` (of `runtime`),
    compiled with the group. Raises `EmitError` naming the op when the IR cannot be emitted.
    """
    start = time.perf_counter()
    if weights is None and isinstance(module, ModuleOp):
        weights = weights_of(module)
    rt = runtime if isinstance(runtime, Runtime) else get_runtime(runtime, device)
    if group is not None and group.runtime is not rt:
        raise EmitError(f"emit: the graph group belongs to {group.runtime!r}, not to {rt!r}")
    runtime_ms = (time.perf_counter() - start) * 1e3
    analysis = analyze(module, func_name=func_name)
    analyze_ms = (time.perf_counter() - start) * 1e3 - runtime_ms
    if rt.weights and weights is not None:
        memo = None if group is None else group.shared.setdefault("quantized", {})
        compress_weights(analysis, weights, rt.weights, memo)
    sources = _Sources(weights, analysis.constants)
    for step in analysis.items:  # cpu ops read weights from the store: fail early if missing
        if isinstance(step, CpuStep):
            for r in step.ins:
                if r.source in ("weight", "constant"):
                    sources.tensor(r)
    carrier = bool_carrier(rt)
    segments = tuple(
        build_segment(rt, seg, analysis.refs, sources, carrier=carrier, group=group) for seg in analysis.segments
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

