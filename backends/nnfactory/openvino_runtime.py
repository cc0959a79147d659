"""The ``openvino`` runtime: the NNFactory interface on OpenVINO's Python API.

Every primitive of :class:`~.runtime.GraphBuilder` is one OpenVINO op (opset 1-16), and
so are ``eltwise_sub``, ``maximum``/``minimum``, the comparisons (a boolean op plus a
``Convert`` to the input dtype), ``select`` and ``broadcast``. Graphs compile for any
OpenVINO device string (``CPU`` here, ``NPU`` on Intel AI Boost machines, ``GPU``).

Precision and threads: on CPUs with AVX512-BF16/AMX the CPU plugin's default inference
precision is bf16, which puts f32 graphs ~1e-2 off torch. CPU and GPU compiles therefore pin
``INFERENCE_PRECISION_HINT`` to the runtime's ``precision`` (``f32`` unless ``bf16``/``f16`` is
asked for; graphs stay f32 at their boundaries); NPU computes in f16. CPU compiles also set the
threads and streams explicitly (``forge.precision.runtime_properties``: ``INFERENCE_NUM_THREADS``
= the cores of this process, ``NUM_STREAMS`` 1, ``PERFORMANCE_HINT`` LATENCY), and with
``weights`` (int8/int4 weight-only quantization) no dynamic quantization of activations.
``properties`` override any of them. ``Runtime.config()`` reports the requested settings and the
values the first compiled graph reads back.

Weight-only int4 constants: ``int4_constant(packed, shape)`` (OpenVINO ``i4``, two values a
byte, converted to f32 in the graph; see ``forge.precision.weight_node``).

Running: one ``InferRequest`` per compiled graph, inputs and outputs bound as
``ov.Tensor(array, shared_memory=True)``: the request reads the caller's input arrays and
writes straight into preallocated output arrays (rebinding only when a different array
object is passed).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as opset1
import openvino.opset8 as opset8
import openvino.opset16 as ops

from forge.precision import PrecisionError, check_precision, check_weights, runtime_properties

from .graph_builder import GraphBuilder
from .graph_values import Node, TensorSpec
from .runtime import CompiledGraph, Runtime, RuntimeUnavailable

__all__ = ["OpenVINOGraphBuilder", "OpenVINOCompiledGraph", "OpenVINORuntime", "core", "is_available"]

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


def _i64(values: Any) -> ov.Node:
    return ops.constant(np.asarray(values, dtype=np.int64))


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
        return tuple(pshape.to_shape()), _OV_TO_NP[etype]

    # Every hook returns the op's first output.

    def _op_parameter(self, shape, dtype):
        p = ops.parameter(list(shape), _NP_TO_OV[dtype])
        self._parameters.append(p)
        return p.output(0)

    # Constants at least this large share the caller's memory instead of being copied: GPT-2's
    # weights are ~500 MB, and a copy here doubled emission time. The arrays are kept alive
    # by the builder and then by the compiled graph.
    SHARE_CONSTANTS_FROM_BYTES = 1 << 16

    def _op_constant(self, array):
        if array.nbytes >= self.SHARE_CONSTANTS_FROM_BYTES and array.flags.c_contiguous:
            self._shared_arrays.append(array)
            return ops.constant(array, shared_memory=True).output(0)
        return ops.constant(array).output(0)

    def int4_constant(self, packed: np.ndarray, shape: Sequence[int]) -> Node:
        """An ``i4`` constant of ``shape`` from ``packed`` bytes (low nibble first), converted to f32."""
        packed = np.ascontiguousarray(packed, dtype=np.uint8)
        self._shared_arrays.append(packed)
        const = ops.constant(ov.Tensor(packed, list(shape), ov.Type.i4))
        return self._node(ops.convert(const, ov.Type.f32).output(0))

    def _op_matmul(self, a, b, trA, trB):
        return ops.matmul(a.handle, b.handle, trA, trB).output(0)

    def _op_scaled_dot_product_attention(self, q, k, v, mask, is_causal, scale):
        scale_node = None if scale is None else ops.constant(np.asarray(scale, dtype=q.dtype))
        return ops.scaled_dot_product_attention(
            q.handle,
            k.handle,
            v.handle,
            attention_mask=None if mask is None else mask.handle,
            scale=scale_node,
            causal=is_causal,
        ).output(0)

    def _op_softmax(self, x, axis):
        return ops.softmax(x.handle, axis).output(0)

    def _op_log_softmax(self, x, axis):
        return ops.log_softmax(x.handle, axis).output(0)

    def _op_gelu(self, x):
        return ops.gelu(x.handle, "tanh").output(0)

    def _op_gelu_erf(self, x):
        return ops.gelu(x.handle, "erf").output(0)

    def _op_relu(self, x):
        return ops.relu(x.handle).output(0)

    def _op_sigmoid(self, x):
        return ops.sigmoid(x.handle).output(0)

    def _op_swish(self, x):
        return ops.swish(x.handle).output(0)

    def _op_tanh(self, x):
        return ops.tanh(x.handle).output(0)

    def _op_exp(self, x):
        return ops.exp(x.handle).output(0)

    def _op_log(self, x):
        return ops.log(x.handle).output(0)

    def _op_sqrt(self, x):
        return ops.sqrt(x.handle).output(0)

    def _op_negative(self, x):
        return ops.negative(x.handle).output(0)

    def _op_abs(self, x):
        return ops.abs(x.handle).output(0)

    def _op_sign(self, x):
        return ops.sign(x.handle).output(0)

    def _op_erf(self, x):
        return ops.erf(x.handle).output(0)

    def _op_sin(self, x):
        return ops.sin(x.handle).output(0)

    def _op_cos(self, x):
        return ops.cos(x.handle).output(0)

    def _op_clamp(self, x, lo, hi):
        return ops.clamp(x.handle, lo, hi).output(0)

    def _op_eltwise_add(self, a, b):
        return ops.add(a.handle, b.handle).output(0)

    def _op_eltwise_sub(self, a, b):
        return ops.subtract(a.handle, b.handle).output(0)

    def _op_eltwise_mul(self, a, b):
        return ops.multiply(a.handle, b.handle).output(0)

    def _op_eltwise_div(self, a, b):
        return ops.divide(a.handle, b.handle).output(0)

    def _op_power(self, a, b):
        return ops.power(a.handle, b.handle).output(0)

    def _op_maximum(self, a, b):
        return ops.maximum(a.handle, b.handle).output(0)

    def _op_minimum(self, a, b):
        return ops.minimum(a.handle, b.handle).output(0)

    def _compare(self, fn, a: Node, b: Node) -> ov.Output:
        return ops.convert(fn(a.handle, b.handle), _NP_TO_OV[a.dtype]).output(0)

    def _op_equal(self, a, b):
        return self._compare(ops.equal, a, b)

    def _op_not_equal(self, a, b):
        return self._compare(ops.not_equal, a, b)

    def _op_less(self, a, b):
        return self._compare(ops.less, a, b)

    def _op_less_equal(self, a, b):
        return self._compare(ops.less_equal, a, b)

    def _op_greater(self, a, b):
        return self._compare(ops.greater, a, b)

    def _op_greater_equal(self, a, b):
        return self._compare(ops.greater_equal, a, b)

    def _op_select(self, cond, a, b, shape):
        c = cond.handle if cond.dtype == np.bool_ else ops.convert(cond.handle, ov.Type.boolean)
        return ops.select(c, a.handle, b.handle).output(0)

    def _op_reduce_sum(self, x, axes, keep_dims):
        return ops.reduce_sum(x.handle, _i64(axes), keep_dims).output(0)

    def _op_reduce_mean(self, x, axes, keep_dims):
        return ops.reduce_mean(x.handle, _i64(axes), keep_dims).output(0)

    def _op_reduce_max(self, x, axes, keep_dims):
        return ops.reduce_max(x.handle, _i64(axes), keep_dims).output(0)

    def _op_reduce_min(self, x, axes, keep_dims):
        return ops.reduce_min(x.handle, _i64(axes), keep_dims).output(0)

    def _op_reduce_prod(self, x, axes, keep_dims):
        return ops.reduce_prod(x.handle, _i64(axes), keep_dims).output(0)

    def _op_reshape(self, x, shape):
        if not shape:  # to 0-d: Reshape to [] after a MatMul crashes the CPU plugin's compile; Squeeze does not
            return ops.squeeze(x.handle, _i64(list(range(len(x.shape))))).output(0)
        return ops.reshape(x.handle, _i64(shape), special_zero=False).output(0)

    def _op_transpose(self, x, order):
        return ops.transpose(x.handle, _i64(order)).output(0)

    def _op_broadcast(self, x, shape):
        return ops.broadcast(x.handle, _i64(shape)).output(0)

    def _op_slice(self, x, begin, end, stride):
        # StridedSlice-1, the op Intel's NNFactory.slice builds (zero masks).
        zeros = [0] * len(begin)
        return opset1.strided_slice(
            x.handle, _i64(begin), _i64(end), _i64(stride), zeros, zeros
        ).output(0)

    def _op_concat(self, xs, axis):
        return ops.concat([x.handle for x in xs], axis).output(0)

    def _op_gather(self, data, indices, axis, batch_dims):
        return opset8.gather(data.handle, indices.handle, _i64(axis), batch_dims).output(0)

    def _op_convolution(self, x, w, strides, pads_begin, pads_end, dilations, groups):
        conv = ops.group_convolution if groups > 1 else ops.convolution
        return conv(x.handle, w.handle, strides, pads_begin, pads_end, dilations).output(0)

    def _op_convolution_transpose(self, x, w, strides, pads_begin, pads_end, dilations, groups, output_padding):
        args = {"pads_begin": pads_begin, "pads_end": pads_end, "dilations": dilations}
        args["output_padding"] = output_padding
        if groups == 1:
            return ops.convolution_backprop_data(x.handle, w.handle, strides, **args).output(0)
        c, o, *k = w.shape  # torch's [C, O/groups, *k] -> [groups, C/groups, O/groups, *k]
        grouped = ops.reshape(w.handle, _i64([groups, c // groups, o, *k]), special_zero=False)
        return ops.group_convolution_backprop_data(x.handle, grouped, strides, **args).output(0)

    def _op_pad(self, x, begin, end, value):
        fill = ops.constant(np.asarray(value, dtype=x.dtype))
        return ops.pad(x.handle, _i64(begin), _i64(end), "constant", fill).output(0)

    def _op_max_pool(self, x, kernel, strides, pads_begin, pads_end, dilations):
        return opset8.max_pool(x.handle, strides, dilations, pads_begin, pads_end, kernel).output(0)

    def _op_avg_pool(self, x, kernel, strides, pads_begin, pads_end):
        # AvgPool-1, as NNFactory builds it (AvgPool-14 crashes the CPU plugin with some pads)
        return opset1.avg_pool(x.handle, strides, pads_begin, pads_end, kernel, exclude_pad=False).output(0)

    def _op_convert(self, x, dtype):
        return ops.convert(x.handle, _NP_TO_OV[dtype]).output(0)

    def _compile(self, params: list[Node], results: list[Node]) -> OpenVINOCompiledGraph:
        model = ov.Model([ops.result(r.handle) for r in results], self._parameters, "forge_nnfactory")
        compiled = core().compile_model(model, self.runtime.device, self.runtime.properties)
        graph = OpenVINOCompiledGraph(
            self.runtime, compiled, [p.spec for p in params], [r.spec for r in results]
        )
        graph.shared_arrays = self._shared_arrays
        self.runtime.record_compiled(compiled)
        return graph


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
        for i, array in enumerate(inputs):
            if self._input_arrays[i] is not array:
                self._request.set_input_tensor(i, ov.Tensor(array, shared_memory=True))
                self._input_arrays[i] = array
        self._request.infer()


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
    ):
        super().__init__(device)
        self.precision = check_precision(precision)
        self.weights = check_weights(weights)
        base = device.split(".")[0].split(":")[0]
        if base in ("CPU", "GPU", "NPU") and base not in {d.split(".")[0] for d in core().available_devices}:
            raise RuntimeUnavailable(
                f"OpenVINO device {device!r} is not available here "
                f"(available: {', '.join(core().available_devices)})"
            )
        if base == "NPU" and self.precision == "bf16":
            raise PrecisionError("precision 'bf16': the NPU computes in f16 (use f16 or the default)")
        self.properties: dict[str, Any] = {}
        if base == "CPU":
            self.properties.update(runtime_properties(self.precision, self.weights, threads))
        elif base == "GPU":
            self.properties["INFERENCE_PRECISION_HINT"] = self.precision
        self.properties.update(properties or {})
        self.effective: dict[str, Any] = {}

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
        return {
            "runtime": self.name,
            "device": self.device,
            "precision": "f16 (NPU native)" if self.device.startswith("NPU") else self.precision,
            "weights": self.weights or "f32",
            "requested": {k: _plain(v) for k, v in self.properties.items()},
            "effective": dict(self.effective),
        }


def _plain(value: Any) -> Any:
    """An OpenVINO property value as JSON (enums and element types as their names)."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, ov.Type):
        return value.get_type_name()
    return getattr(value, "name", None) or str(value)
