"""The ``openvino`` runtime: the NNFactory interface on OpenVINO's Python API.

Every primitive of :class:`~.runtime.GraphBuilder` is one OpenVINO op (opset 1-16), and
so are ``eltwise_sub``, ``maximum``/``minimum``, the comparisons (a boolean op plus a
``Convert`` to the input dtype), ``select`` and ``broadcast``. Graphs compile for any
OpenVINO device string (``CPU`` here, ``NPU`` on Intel AI Boost machines, ``GPU``).

Precision and threads: on CPUs with AVX512-BF16/AMX the CPU plugin's default inference
precision is bf16, which puts f32 graphs ~1e-2 off torch. CPU and GPU compiles therefore pin
``INFERENCE_PRECISION_HINT`` to the runtime's ``precision`` (``f32`` unless ``bf16``/``f16`` is
asked for; graphs stay f32 at their boundaries); NPU computes in f16. CPU compiles also set the
threads and streams explicitly (``openvino_settings.runtime_properties``: ``INFERENCE_NUM_THREADS`` = the
cores of this process, ``NUM_STREAMS`` 1, ``PERFORMANCE_HINT`` LATENCY, ``ENABLE_CPU_PINNING``
False, ``TBB_PARTITIONER`` AUTO), and with
``weights`` (int8/int4 weight-only quantization) no dynamic quantization of activations.
``properties`` override any of them. ``Runtime.config()`` reports the requested settings and the
values the first compiled graph reads back.

Weight-only int4 constants: ``int4_constant(packed, shape)`` (OpenVINO ``i4``, two values a
byte, converted to f32 in the graph; see ``backends.nnfactory.runtime.quantize.weight_node``).

Running: one ``InferRequest`` per compiled graph, inputs and outputs bound as
``ov.Tensor(array, shared_memory=True)``: the request reads the caller's input arrays and
writes straight into the given output arrays (rebinding only when a different array object is
passed: the executor's planned buffers stay bound across calls; a program output written
directly into the call's new tensor is rebound per call, a few microseconds). The request runs with
``start_async()`` + ``wait()`` (``openvino_group.run_request``): OpenVINO's Python ``infer()`` wraps (or,
by default, copies) every output into a new numpy array per call although the outputs are already in
the bound arrays.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as opset1
import openvino.opset8 as opset8
import openvino.opset16 as ops
from openvino._pyopenvino import NodeFactory as _NodeFactory

from backends.nnfactory.runtime import CompiledGraph, GraphGroup, Runtime, RuntimeUnavailable
from backends.nnfactory.runtime.openvino_settings import DYNAMIC_QUANTIZATION_GROUP, runtime_properties
from forge.precision import (
    PrecisionError,
    PrecisionResolution,
    check_activations,
    check_precision,
    check_weights,
    resolve_precision,
)

from .graph_builder import GraphBuilder
from .graph_values import Node, TensorSpec
from .openvino_group import SHARED_CONSTANT_BYTES, OpenVINOGraphGroup, bind_inputs, run_request

__all__ = [
    "CAPABILITIES_ENV",
    "OpenVINOGraphBuilder",
    "OpenVINOCompiledGraph",
    "OpenVINORuntime",
    "core",
    "cpu_capabilities",
    "is_available",
    "stable_names",
]

_NP_TO_OV = {
    np.dtype(np.float16): ov.Type.f16,
    np.dtype(np.float32): ov.Type.f32,
    np.dtype(np.float64): ov.Type.f64,
    np.dtype(np.int8): ov.Type.i8,
    np.dtype(np.int16): ov.Type.i16,
    np.dtype(np.int32): ov.Type.i32,
    np.dtype(np.int64): ov.Type.i64,
    np.dtype(np.uint8): ov.Type.u8,
    np.dtype(np.bool_): ov.Type.boolean,
}
_OV_TO_NP = {v: k for k, v in _NP_TO_OV.items()}


def is_available() -> bool:
    return True


@functools.cache
def core() -> ov.Core:
    """The process-wide ``ov.Core`` (creating one is slow; plugins load once)."""
    return ov.Core()


CAPABILITIES_ENV = "FORGE_CPU_CAPABILITIES"
"""Set to a comma-separated list (`FP32,INT8`) to stand in for the CPU's answer: a test (or a user
reproducing another machine) sees which precisions Forge would resolve there."""


def cpu_capabilities() -> frozenset[str]:
    """What the CPU computes natively, as OpenVINO's CPU plugin reports it (`OPTIMIZATION_CAPABILITIES`:
    FP32, BF16, FP16, INT8, ...), or the fake in `FORGE_CPU_CAPABILITIES`."""
    fake = os.environ.get(CAPABILITIES_ENV)
    if fake is not None:
        return frozenset(c.strip().upper() for c in fake.split(",") if c.strip())
    return _reported_capabilities()


@functools.cache
def _reported_capabilities() -> frozenset[str]:
    return frozenset(str(c) for c in core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"))


@functools.cache
def cpu_isa() -> str:
    """The instruction set OpenVINO's CPU plugin builds its kernels for on this CPU, as a compiled model's
    `RUNTIME_REQUIREMENTS` names it (`isa=Intel AVX2` on an AVX2-only AMD EPYC); '' when it names none."""
    x = ops.parameter([1], np.float32)
    compiled = core().compile_model(ov.Model([ops.relu(x)], [x]), "CPU")
    fields = dict(f.split("=", 1) for f in str(compiled.get_property("RUNTIME_REQUIREMENTS")).split(";") if "=" in f)
    return fields.get("isa", "")


def cpu_runs_avx512_kernels() -> bool:
    """Whether OpenVINO's CPU kernels here are AVX-512 (or AMX) ones, as `cpu_isa` names them."""
    isa = cpu_isa().upper()
    return "512" in isa or "AMX" in isa


@functools.cache
def cpu_quantizes_activations() -> bool:
    """Whether OpenVINO's CPU plugin here really quantizes a compressed-weight matmul's input rows when
    dynamic quantization is on (`activations="int8"`): a 32-row matmul over int8 weights (K = one group)
    compiled with and without it gives different values. On an AVX2-only AMD EPYC it gave the same (the
    plugin keeps the activations in f32 there); on an AVX-512 one GPT-2 12L's prefill went from 149 to 59 ms."""
    rng = np.random.default_rng(0)
    k = DYNAMIC_QUANTIZATION_GROUP
    x = ops.parameter([32, k], np.float32)
    weight = ops.constant(rng.integers(-127, 128, (64, k)).astype(np.int8))
    scale = ops.constant(rng.uniform(0.001, 0.01, (64, 1)).astype(np.float32))
    matmul = ops.matmul(x, ops.multiply(ops.convert(weight, "f32"), scale), False, True)
    model = ov.Model([matmul], [x])
    data = rng.standard_normal((32, k)).astype(np.float32)
    outputs = []
    for group in (0, DYNAMIC_QUANTIZATION_GROUP):
        props = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": group}
        outputs.append(core().compile_model(model, "CPU", props)({0: data})[0])
    return not np.array_equal(*outputs)


_FACTORIES: dict[str, Any] = {}


def _make(opset: str, op_type: str, inputs: list[ov.Output], attributes: dict[str, Any] | None = None) -> ov.Output:
    """The first output of a new ``op_type`` node of ``opset`` (e.g. ``"opset1"``), built by a cached NodeFactory.

    The same node as OpenVINO's ``openvino.opsetN`` function (they call the same factory with the same
    attributes), at a fraction of the cost: those functions create a new NodeFactory per call (its first
    ``create`` costs ~30 us) and convert every argument through Python decorators. Hooks pass the
    attributes exactly as the opset function would (``tests/backends/test_runtimes.py`` compares them).
    """
    factory = _FACTORIES.get(opset)
    if factory is None:
        factory = _FACTORIES[opset] = _NodeFactory(opset)
    return factory.create(op_type, inputs, attributes or {}).output(0)


def _i64(values: Any) -> ov.Output:
    return ov.op.Constant(np.asarray(values, dtype=np.int64)).output(0)


def _binary(op_type: str) -> Any:
    """A hook for an element-wise binary op of opset1 (numpy broadcasting)."""

    def hook(self: OpenVINOGraphBuilder, a: Node, b: Node) -> ov.Output:
        return _ew(op_type, a.handle, b.handle)

    hook.__name__ = f"_op_{op_type.lower()}"
    return hook


def _unary(op_type: str, opset: str = "opset1") -> Any:
    def hook(self: OpenVINOGraphBuilder, x: Node) -> ov.Output:
        return _make(opset, op_type, [x.handle])

    hook.__name__ = f"_op_{op_type.lower()}"
    return hook


def _reduction(op_type: str) -> Any:
    def hook(self: OpenVINOGraphBuilder, x: Node, axes: list[int], keep_dims: bool) -> ov.Output:
        return _make("opset1", op_type, [x.handle, _i64(axes)], {"keep_dims": keep_dims})

    hook.__name__ = f"_op_{op_type.lower()}"
    return hook


_NUMPY = {"auto_broadcast": "NUMPY"}
_TWO_C = 2.0 * math.sqrt(2.0 / math.pi)
"""tanh GELU's z = c (x + 0.044715 x^3) doubled: 0.5 (1 + tanh z) = sigmoid(2z)."""


def _ew(op_type: str, a: ov.Output, b: ov.Output) -> ov.Output:
    """An element-wise binary op of opset1 (numpy broadcasting) on two outputs."""
    return _make("opset1", op_type, [a, b], _NUMPY)


def _scalar(value: float, dtype: np.dtype) -> ov.Output:
    return ov.op.Constant(np.array(value, dtype=dtype)).output(0)


class OpenVINOGraphBuilder(GraphBuilder):
    supported_dtypes = frozenset(_NP_TO_OV)

    def __init__(self, runtime: Runtime):
        super().__init__(runtime)
        self._parameters: list[ov.Node] = []
        self._shared_arrays: list[np.ndarray] = []

    def _spec_of(self, handle: ov.Output) -> tuple[tuple[int, ...], np.dtype]:
        pshape = handle.get_partial_shape()
        if pshape.is_dynamic:
            raise ValueError(f"dynamic output shape {pshape}")
        etype = handle.get_element_type()
        if etype not in _OV_TO_NP:
            raise TypeError(f"element type {etype} has no numpy dtype here")
        # "[1,128,768]": iterating an ov.Shape costs ~30 us (8 ms the first time), its text ~1 us
        text = pshape.to_string()[1:-1]
        return (tuple(int(d) for d in text.split(",")) if text else ()), _OV_TO_NP[etype]

    # Every hook returns the op's first output.

    def _op_parameter(self, shape, dtype):
        p = ov.op.Parameter(_NP_TO_OV[dtype], ov.PartialShape(list(shape)))
        self._parameters.append(p)
        return p.output(0)

    def _op_constant(self, array):
        """Shared memory from `SHARED_CONSTANT_BYTES` (the arrays kept alive by the builder, then by the compiled
        graph or the group)."""
        if array.nbytes >= SHARED_CONSTANT_BYTES and array.flags.c_contiguous:
            self._shared_arrays.append(array)
            return ov.op.Constant(array, shared_memory=True).output(0)
        return ov.op.Constant(array).output(0)

    def int4_constant(self, packed: np.ndarray, shape: Sequence[int]) -> Node:
        """An ``i4`` constant of ``shape`` from ``packed`` bytes (low nibble first), converted to f32."""
        packed = np.ascontiguousarray(packed, dtype=np.uint8)
        self._shared_arrays.append(packed)
        const = ov.op.Constant(ov.Tensor(packed, list(shape), ov.Type.i4), shared_memory=True)
        return self._node(_make("opset1", "Convert", [const.output(0)], {"destination_type": ov.Type.f32}))

    def _op_matmul(self, a, b, trA, trB):
        return _make("opset1", "MatMul", [a.handle, b.handle], {"transpose_a": trA, "transpose_b": trB})

    def _op_scaled_dot_product_attention(self, q, k, v, mask, is_causal, scale):
        inputs = [q.handle, k.handle, v.handle]
        if mask is not None:
            inputs.append(mask.handle)
        elif scale is not None:  # the mask input before the scale: a 0 of q's type (as opset13's function)
            zero = ov.op.Constant(np.array(0, np.int32)).output(0)
            inputs.append(_make("opset1", "ConvertLike", [zero, q.handle]))
        if scale is not None:
            inputs.append(ov.op.Constant(np.asarray(scale, dtype=q.dtype)).output(0))
        return _make("opset13", "ScaledDotProductAttention", inputs, {"causal": is_causal})

    def _op_softmax(self, x, axis):
        return _make("opset8", "Softmax", [x.handle], {"axis": axis})

    def _op_log_softmax(self, x, axis):
        return _make("opset5", "LogSoftmax", [x.handle], {"axis": axis})

    def _op_gelu(self, x):
        """tanh GELU as `x * sigmoid(2c (x + 0.044715 x^3))`, c = sqrt(2/pi): the same function (0.5 (1 + tanh z)
        is sigmoid(2z)) in a form the CPU plugin does not fuse into the matmul before it. Fused (a `Gelu`, or
        the tanh form, which it recognizes), that matmul leaves MLAS for a kernel of its own (brgemm at one row,
        a 1x1 convolution at 8 or more) with its own packed copy of the weights: 12 GPT-2-sized MLP pairs took
        10.1 ms at one row against 7.7 ms unfused (AMD EPYC, f32), and a generator's two graphs packed them
        twice. Here every matmul stays on MLAS and the GELU is one element-wise subgraph."""
        v = x.handle
        inner = _ew("Add", v, _ew("Multiply", _ew("Multiply", _ew("Multiply", v, v), v), _scalar(0.044715, x.dtype)))
        return _ew("Multiply", v, _make("opset1", "Sigmoid", [_ew("Multiply", inner, _scalar(_TWO_C, x.dtype))]))

    def _op_gelu_erf(self, x):
        return _make("opset7", "Gelu", [x.handle], {"approximation_mode": "erf"})

    def _op_swish(self, x):
        """SiLU as `x * (1 / (1 + exp(-x)))`, torch's own formula, in the one form of those tried that the CPU
        plugin neither turns back into `Swish` nor fuses into the matmul before it (`Swish`, `x * sigmoid(x)`
        and `x / (1 + exp(-x))` all end fused): a SwiGLU's gate matmul then stays on MLAS with the others
        (see `_op_gelu`: faster at one row, one packed copy of the weights for a generator's graphs)."""
        one = _scalar(1.0, x.dtype)
        denominator = _ew("Add", _make("opset1", "Exp", [_make("opset1", "Negative", [x.handle])]), one)
        return _ew("Multiply", x.handle, _ew("Divide", one, denominator))

    _op_relu = _unary("Relu")
    _op_sigmoid = _unary("Sigmoid")
    _op_tanh = _unary("Tanh")
    _op_exp = _unary("Exp")
    _op_log = _unary("Log")
    _op_sqrt = _unary("Sqrt")
    _op_negative = _unary("Negative")
    _op_abs = _unary("Abs")
    _op_sign = _unary("Sign")
    _op_erf = _unary("Erf")
    _op_sin = _unary("Sin")
    _op_cos = _unary("Cos")

    def _op_clamp(self, x, lo, hi):
        return _make("opset1", "Clamp", [x.handle], {"min": lo, "max": hi})

    _op_eltwise_add = _binary("Add")
    _op_eltwise_sub = _binary("Subtract")
    _op_eltwise_mul = _binary("Multiply")
    _op_eltwise_div = _binary("Divide")
    _op_power = _binary("Power")
    _op_maximum = _binary("Maximum")
    _op_minimum = _binary("Minimum")

    def _compare(self, op_type: str, a: Node, b: Node) -> ov.Output:
        cmp = _make("opset1", op_type, [a.handle, b.handle], _NUMPY)
        return _make("opset1", "Convert", [cmp], {"destination_type": _NP_TO_OV[a.dtype]})

    def _op_equal(self, a, b):
        return self._compare("Equal", a, b)

    def _op_not_equal(self, a, b):
        return self._compare("NotEqual", a, b)

    def _op_less(self, a, b):
        return self._compare("Less", a, b)

    def _op_less_equal(self, a, b):
        return self._compare("LessEqual", a, b)

    def _op_greater(self, a, b):
        return self._compare("Greater", a, b)

    def _op_greater_equal(self, a, b):
        return self._compare("GreaterEqual", a, b)

    def _op_select(self, cond, a, b, shape):
        c = cond.handle
        if cond.dtype != np.bool_:
            c = _make("opset1", "Convert", [c], {"destination_type": ov.Type.boolean})
        return _make("opset1", "Select", [c, a.handle, b.handle], _NUMPY)

    _op_reduce_sum = _reduction("ReduceSum")
    _op_reduce_mean = _reduction("ReduceMean")
    _op_reduce_max = _reduction("ReduceMax")
    _op_reduce_min = _reduction("ReduceMin")
    _op_reduce_prod = _reduction("ReduceProd")

    def _op_reshape(self, x, shape):
        if not shape:  # to 0-d: Reshape to [] after a MatMul crashes the CPU plugin's compile; Squeeze does not
            axes = _i64(list(range(len(x.shape))))
            return _make("opset15", "Squeeze", [x.handle, axes], {"allow_axis_skip": False})
        return _make("opset1", "Reshape", [x.handle, _i64(shape)], {"special_zero": False})

    def _op_transpose(self, x, order):
        return _make("opset1", "Transpose", [x.handle, _i64(order)])

    def _op_broadcast(self, x, shape):
        return _make("opset3", "Broadcast", [x.handle, _i64(shape)], {"mode": "NUMPY"})

    def _op_slice(self, x, begin, end, stride):
        # StridedSlice-1, the op Intel's NNFactory.slice builds (zero masks).
        zeros = [0] * len(begin)
        masks = {
            "begin_mask": zeros,
            "end_mask": zeros,
            "new_axis_mask": [],
            "shrink_axis_mask": [],
            "ellipsis_mask": [],
        }
        return _make("opset1", "StridedSlice", [x.handle, _i64(begin), _i64(end), _i64(stride)], masks)

    def _op_concat(self, xs, axis):
        return _make("opset1", "Concat", [x.handle for x in xs], {"axis": axis})

    def _op_gather(self, data, indices, axis, batch_dims):
        return _make("opset8", "Gather", [data.handle, indices.handle, _i64(axis)], {"batch_dims": batch_dims})

    def _op_log1p(self, x):
        # The composition, then x itself where x is zero: log1p(±0.0) is ±0.0, whose sign the
        # arithmetic loses (OpenVINO's CPU plugin does not keep the sign of a zero through Subtract).
        y = GraphBuilder._op_log1p(self, x)
        zero = ov.op.Constant(np.asarray(0.0, dtype=x.dtype)).output(0)
        is_zero = _make("opset1", "Equal", [x.handle, zero], _NUMPY)
        return _make("opset1", "Select", [is_zero, x.handle, y], _NUMPY)

    def _op_gather_elements(self, data, indices, axis):
        return _make("opset6", "GatherElements", [data.handle, indices.handle], {"axis": axis})

    def _op_topk(self, x, k, axis, largest):
        # TopK-11 (stable: ties go to the lower index) ignores NaN, which torch counts as the largest
        # number: sort the row with NaN set aside (-inf, or +inf for the smallest), then a stable
        # TopK of the NaN flags in that order puts the NaNs first (last for the smallest).
        mode = "max" if largest else "min"
        nan = _make("opset10", "IsNaN", [x.handle])
        aside = ov.op.Constant(np.asarray(-np.inf if largest else np.inf, dtype=x.dtype)).output(0)
        key = _make("opset1", "Select", [nan, aside, x.handle], _NUMPY)
        order = self._topk_node(key, x.shape[axis], axis, mode)
        flags = _make("opset1", "Convert", [nan], {"destination_type": ov.Type.f32})
        flags = _make("opset6", "GatherElements", [flags, order], {"axis": axis})
        picks = self._topk_node(flags, k, axis, mode)
        return _make("opset6", "GatherElements", [order, picks], {"axis": axis})

    @staticmethod
    def _topk_node(x: ov.Output, k: int, axis: int, mode: str) -> ov.Output:
        attrs = {"axis": axis, "mode": mode, "sort": "value", "index_element_type": ov.Type.i64, "stable": True}
        k_node = ov.op.Constant(np.asarray(k, dtype=np.int64)).output(0)
        return _NodeFactory("opset11").create("TopK", [x, k_node], attrs).output(1)

    # The spatial ops (rare in the transformer graphs, several defaults each) go through OpenVINO's opset functions.

    def _op_convolution(self, x, w, strides, pads_begin, pads_end, dilations, groups):
        conv = ops.group_convolution if groups > 1 else ops.convolution
        return conv(x.handle, w.handle, strides, pads_begin, pads_end, dilations).output(0)

    def _op_convolution_transpose(self, x, w, strides, pads_begin, pads_end, dilations, groups, output_padding):
        args = {"pads_begin": pads_begin, "pads_end": pads_end, "dilations": dilations}
        args["output_padding"] = output_padding
        if groups == 1:
            return ops.convolution_backprop_data(x.handle, w.handle, strides, **args).output(0)
        c, o, *k = w.shape  # torch's [C, O/groups, *k] -> [groups, C/groups, O/groups, *k]
        grouped = _make("opset1", "Reshape", [w.handle, _i64([groups, c // groups, o, *k])], {"special_zero": False})
        return ops.group_convolution_backprop_data(x.handle, grouped, strides, **args).output(0)

    def _op_pad(self, x, begin, end, value):
        fill = ov.op.Constant(np.asarray(value, dtype=x.dtype)).output(0)
        return _make("opset12", "Pad", [x.handle, _i64(begin), _i64(end), fill], {"pad_mode": "CONSTANT"})

    def _op_max_pool(self, x, kernel, strides, pads_begin, pads_end, dilations):
        return opset8.max_pool(x.handle, strides, dilations, pads_begin, pads_end, kernel).output(0)

    def _op_avg_pool(self, x, kernel, strides, pads_begin, pads_end):
        # AvgPool-1, as NNFactory builds it (AvgPool-14 crashes the CPU plugin with some pads)
        return opset1.avg_pool(x.handle, strides, pads_begin, pads_end, kernel, exclude_pad=False).output(0)

    def _op_convert(self, x, dtype):
        return _make("opset1", "Convert", [x.handle], {"destination_type": _NP_TO_OV[dtype]})

    def _compile(self, params: list[Node], results: list[Node]) -> OpenVINOCompiledGraph:
        model = ov.Model([ov.op.Result(r.handle) for r in results], self._parameters, "forge_nnfactory")
        compiled = self.runtime.compile_model(model)
        graph = OpenVINOCompiledGraph(self.runtime, compiled, [p.spec for p in params], [r.spec for r in results])
        graph.shared_arrays = self._shared_arrays
        return graph


_COMPRESSED_TYPES = frozenset({"i8", "u8", "i4", "u4"})


def compressed_matmul_rows(model: ov.Model) -> int:
    """The most rows any matmul over a compressed weight (an integer constant behind its decompression) has in
    `model`, the bodies of its `If` ops included: 1 for a decode step, the chunk for a prefill."""
    rows = 0
    for op in model.get_ordered_ops():
        kind = op.get_type_name()
        if kind == "If":
            rows = max(rows, compressed_matmul_rows(op.get_then_body()), compressed_matmul_rows(op.get_else_body()))
        elif kind == "MatMul" and _reads_compressed(op.input(1).get_source_output().get_node()):
            rows = max(rows, _left_rows(op))
    return rows


def _left_rows(matmul: Any) -> int:
    """The rows of a MatMul's left operand: every dim but the contracted one (a dynamic dim counts as several)."""
    dims = [d.get_length() if d.is_static else 2 for d in matmul.get_input_partial_shape(0)]
    if len(dims) > 1 and matmul.get_attributes()["transpose_a"]:
        dims[-2], dims[-1] = dims[-1], dims[-2]
    return math.prod(dims[:-1])


def _reads_compressed(node: Any, depth: int = 4) -> bool:
    """Whether `node` is an integer constant or its decompression (Convert, Multiply by scales, Reshape)."""
    if node.get_type_name() == "Constant":
        return node.get_element_type().get_type_name() in _COMPRESSED_TYPES
    if depth == 0 or node.get_type_name() not in ("Convert", "Multiply", "Subtract", "Reshape", "Transpose"):
        return False
    return _reads_compressed(node.input(0).get_source_output().get_node(), depth - 1)


def stable_names(model: ov.Model, prefix: str = "") -> None:
    """Name every node and the graph's input and output tensors by position, for OpenVINO's compiled-model
    cache (CACHE_DIR): its key hashes the serialized graph, whose auto-generated names (`Parameter_1234`,
    numbered per process) otherwise differ at every build of the same graph, so every load missed it.
    The bodies of `If` ops (a graph group's joint model) are named the same way under their node's name."""
    for i, op in enumerate(model.get_ordered_ops()):
        op.set_friendly_name(f"{prefix}n{i}")
        if op.get_type_name() == "If":
            stable_names(op.get_then_body(), f"{prefix}n{i}t")
            stable_names(op.get_else_body(), f"{prefix}n{i}e")
    for i, port in enumerate(model.inputs):
        port.get_tensor().set_names({f"{prefix}in{i}"})
    for i, port in enumerate(model.outputs):
        port.get_tensor().set_names({f"{prefix}out{i}"})


class OpenVINOCompiledGraph(CompiledGraph):
    def __init__(
        self,
        runtime: Runtime,
        compiled: ov.CompiledModel,
        input_specs: list[TensorSpec],
        output_specs: list[TensorSpec],
    ):
        super().__init__(runtime, input_specs, output_specs)
        self.compiled_model = compiled
        self._request = compiled.create_infer_request()
        # Cache of ov.Tensor wrappers of the last input arrays (same array -> no rebind).
        self._input_arrays: list[np.ndarray | None] = [None] * len(input_specs)

    def _bind_output(self, index: int, array: np.ndarray) -> None:
        self._request.set_output_tensor(index, ov.Tensor(array, shared_memory=True))

    def _execute(self, inputs: list[np.ndarray]) -> None:
        bind_inputs(self._request, self._input_arrays, range(len(inputs)), inputs)
        run_request(self._request)  # the request writes into the bound output arrays


class OpenVINORuntime(Runtime):
    """NNFactory-shaped graphs on OpenVINO for any device (``CPU``, ``GPU``, ``NPU``).

    ``precision`` (``f32``, ``bf16``, ``f16``) and ``weights`` (``None``, ``int8``, ``int4``) are
    the reduced-precision modes (:mod:`forge.precision`); ``properties`` are passed to
    ``compile_model`` on top of the defaults (the module docstring lists them).
    """

    name = "openvino"
    builder_class = OpenVINOGraphBuilder

    def __init__(
        self,
        device: str = "CPU",
        properties: dict[str, Any] | None = None,
        precision: str = "f32",
        weights: str | None = None,
        threads: int | None = None,
        activations: str | None = None,
    ):
        super().__init__(device)
        self.precision = check_precision(precision)
        self.weights = check_weights(weights)
        self.activations = check_activations(activations, self.weights)
        base = device.split(".")[0].split(":")[0]
        if base in ("CPU", "GPU", "NPU") and not _device_available(base):
            raise RuntimeUnavailable(
                f"OpenVINO device {device!r} is not available here (available: {', '.join(core().available_devices)})"
            )
        if base == "NPU" and self.precision == "bf16":
            raise PrecisionError("precision 'bf16': the NPU computes in f16 (use f16 or the default)")
        self.properties: dict[str, Any] = {}
        self.runs_as = self.precision
        if base == "CPU":
            self.runs_as = resolve_precision(self.precision, cpu_capabilities()).runs_as
            self.properties.update(runtime_properties(self.runs_as, self.weights, threads))
        elif base == "GPU":
            self.properties["INFERENCE_PRECISION_HINT"] = self.precision
        self.properties.update(properties or {})
        self.effective: dict[str, Any] = {}

    def graph_group(self, top: int | None = None) -> GraphGroup:
        """Graphs compiled as one OpenVINO model that holds their shared weights once (`openvino_group`); graph
        `top` outside the `If` ops, run on every call."""
        return OpenVINOGraphGroup(self, top)

    def compile_model(self, model: ov.Model) -> ov.CompiledModel:
        """`model` compiled for the device with the runtime's properties (named stably for OpenVINO's cache);
        with `activations="int8"`, dynamic quantization where a compressed-weight matmul has several rows."""
        if "CACHE_DIR" in self.properties:
            stable_names(model)
        properties = self.properties
        if self.activations is not None and self.device.startswith("CPU") and compressed_matmul_rows(model) > 1:
            properties = {**properties, "DYNAMIC_QUANTIZATION_GROUP_SIZE": DYNAMIC_QUANTIZATION_GROUP}
        compiled = core().compile_model(model, self.device, properties)
        self.record_compiled(compiled)
        return compiled

    def record_compiled(self, compiled: ov.CompiledModel) -> None:
        """Read the settings back from the first compiled graph (what the plugin really uses)."""
        if self.effective:
            return
        for key in self.properties:
            try:
                self.effective[key] = _plain(compiled.get_property(key))
            except RuntimeError:  # a property the compiled model does not report
                continue

    def config(self) -> dict[str, Any]:
        """The settings; `runs_as` is the precision the device computes in (read back from the compiled
        graph when there is one), with `substitution` saying why when it is not the requested one."""
        npu = self.device.startswith("NPU")
        runs_as = "f16" if npu else str(self.effective.get("INFERENCE_PRECISION_HINT", self.runs_as))
        config = {
            "runtime": self.name,
            "device": self.device,
            "precision": "f16 (NPU native)" if npu else self.precision,
            "runs_as": runs_as,
            "weights": self.weights or "f32",
            "activations": self.activations or "f32",
            "requested": {k: _plain(v) for k, v in self.properties.items()},
            "effective": dict(self.effective),
        }
        if self.activations is not None and self.device.startswith("CPU") and not cpu_quantizes_activations():
            config["activations_run_as"] = "f32"  # what OpenVINO does here, not what was asked
            config["activations_substitution"] = (
                f"activations {self.activations} requested; OpenVINO's CPU kernels here do not quantize a matmul's "
                "input rows (no int8 dot products on this instruction set): they run as f32"
            )
        note = None if npu else PrecisionResolution(self.precision, runs_as).note
        return {**config, "substitution": note} if note else config


def _device_available(base: str) -> bool:
    """Whether OpenVINO has device `base` (CPU, GPU, NPU). The CPU is there when its plugin loads
    (`get_versions`: that plugin only, which the compile loads anyway); `available_devices` would
    load and probe every plugin (~50 ms cold)."""
    if base == "CPU":
        try:
            return bool(core().get_versions("CPU"))
        except RuntimeError:
            return False
    return base in {d.split(".")[0] for d in core().available_devices}


def _plain(value: Any) -> Any:
    """An OpenVINO property value as JSON (enums and element types as their names)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, ov.Type):
        return value.get_type_name()
    return getattr(value, "name", None) or str(value)
