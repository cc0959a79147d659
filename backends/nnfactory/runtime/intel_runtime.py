"""The ``nnfactory`` runtime: the interface on Intel's own NNFactory.

``intel_npu_acceleration_library.backend.NNFactory`` (release 1.4.0, the last one) is a
ctypes binding of a C++ ``ModelFactory`` that builds an OpenVINO model and compiles it
for the NPU, falling back to the CPU plugin when the machine has no NPU. Installing it
needs a build against the venv's OpenVINO plus fixes: ``scripts/install_nnfactory.sh``.

Native on this runtime (one NNFactory call each): parameter, constant, matmul,
scaled_dot_product_attention (``_simple`` without mask), softmax, log_softmax, gelu,
gelu_erf, relu, sigmoid, swish, tanh, exp, log, sqrt, negative, abs, sign, erf, sin, cos,
clamp, eltwise_add/mul/div, power, reduce_sum/mean/max/min/prod, reshape, transpose,
slice, concat (chained pairwise), gather, convert (``to``). Everything else is a
composition from :mod:`.runtime` (eltwise_sub = add(negative), comparisons via sign of
the difference plus a NaN test, select via a batched gather, broadcast via concat doubling,
maximum/minimum via select, layer_norm/rms_norm via reductions, linear via matmul+add).
An SDPA ``scale`` is folded into q (the native op has none).
Convolution is native (unequal pads pad the input first); a transposed convolution is one
1x1 convolution per kernel tap, its result zero-interleaved, padded into place and summed (only real
inputs meet the weights), and ``pad`` concatenates constant blocks.
Pooling is native (MaxPool-1/AvgPool-1 through the C entry points, which take unequal pads);
a dilated max pool is the maximum of strided slices; ``interpolate`` is constant-index gathers
(nearest) or constant interpolation-matrix matmuls (linear) on both runtimes.

How the library is used safely:

* It is imported without running the package ``__init__`` (which imports transformers
  and neural-compressor and patches torch): stub parent packages point at the installed
  directory and only ``backend.bindings``/``backend.factory`` are loaded.
* OpenVINO exceptions inside the C++ library abort the process, so every op is first
  built on a *shadow* graph with OpenVINO's Python API (the same op semantics; its errors
  are Python exceptions) and only then on the NNFactory; the NNFactory's own shape and
  dtype of each result are checked against the shadow's.
* No boolean element type exists there (no bool parameters/constants/outputs).
* The CPU plugin's ReduceMax/ReduceMin skip NaN and saturate a row of infinities to the finite range:
  both are fixed up to torch's amax/amin (``_reduce_extreme``); a Gather with ``batch_dims`` over a batch of
  one element crashes the process or reads garbage: ``GraphBuilder.gather`` builds a plain Gather there.
* ``compile()`` writes ``./cache``: it runs in a temporary directory (removed afterwards)
  or in ``$FORGE_NNFACTORY_CACHE_DIR`` when set (kept, e.g. to cache NPU blobs).
* Precision: the library's CPU fallback compiles with ``inference_precision(f32)`` and the
  THROUGHPUT hint, fixed in its C++ (``scripts/nnfactory_patch.py`` pins f32) and not settable
  through its API, so ``precision`` is ``f32`` only here (``bf16``/``f16`` are a
  ``PrecisionError`` pointing at the openvino runtime); on an NPU the library computes in f16.
  Weight-only ``int8`` works (the store's int8 constant, ``to(f32)`` and a multiply by the scales:
  ``backends.nnfactory.runtime.quantize.weight_node``); ``int4`` does not (NNFactory's ``constant`` takes the shape
  of the packed bytes, so an i4 constant cannot be expressed): a ``PrecisionError``. The library's own
  quantized layer (``NNFactory.linear(..., wt_dtype=np.int8|np.uint8)``, ``QLinear``) takes the weights and
  scales as *inputs* of the graph, passed on every ``run`` (``run(X, (W, scale))``), not as constants: it would
  make each compressed weight a per-call binding of the segment, which this runtime's constant-weight
  segments do not have (the graph would also differ per weight: shapes come from the call, not from data).
* ``run()`` reuses the same output arrays every call; results are copied unless the
  caller passes its own output buffers, which are bound with ``set_output``.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import importlib.machinery
import importlib.util
import math
import os
import shutil
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import numpy as np

from backends.nnfactory.runtime import CompiledGraph, Runtime, RuntimeUnavailable
from forge.precision import PrecisionError, check_precision, check_weights

from .graph_builder import GraphBuilder
from .graph_values import Node, TensorSpec
from .openvino_runtime import OpenVINOGraphBuilder

__all__ = ["IntelNNFactoryGraphBuilder", "IntelNNFactoryRuntime", "is_available", "load_backend"]

PACKAGE = "intel_npu_acceleration_library"
INSTALL_HINT = "install it with scripts/install_nnfactory.sh (into the active venv)"
_STAMP = ".forge-nnfactory-stamp"
_LIBS = ("libintel_npu_acceleration_library.so", "libopenvino.so")


def _package_dir() -> Path | None:
    """The installed package directory, found without importing the package."""
    module = sys.modules.get(PACKAGE)
    if module is not None and getattr(module, "__path__", None):
        return Path(list(module.__path__)[0])
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _missing() -> str | None:
    """Why the runtime is unusable, or None."""
    if sys.platform != "linux":
        return f"the nnfactory runtime supports Linux only (this is {sys.platform})"
    pkg = _package_dir()
    if pkg is None:
        return f"{PACKAGE} is not installed"
    for lib in _LIBS:
        if not (pkg / "lib" / lib).exists():
            return f"{pkg / 'lib' / lib} is missing"
    if not (pkg / "lib" / _STAMP).exists():
        return f"{PACKAGE} at {pkg} was not built by scripts/install_nnfactory.sh (unpatched)"
    return None


def is_available() -> bool:
    return _missing() is None


def _stub_package(name: str, path: Path) -> None:
    spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(path)]
    module = importlib.util.module_from_spec(spec)
    module.__file__ = None
    sys.modules[name] = module


@functools.cache
def load_backend() -> SimpleNamespace:
    """Import NNFactory and its ctypes library without the package ``__init__``."""
    reason = _missing()
    if reason is not None:
        raise RuntimeUnavailable(f"the nnfactory runtime is unavailable: {reason}; {INSTALL_HINT}")
    pkg = _package_dir()
    assert pkg is not None
    if PACKAGE not in sys.modules:
        _stub_package(PACKAGE, pkg)
    if f"{PACKAGE}.backend" not in sys.modules:
        _stub_package(f"{PACKAGE}.backend", pkg / "backend")
    saved_path = list(sys.path)  # bindings.py inserts <pkg>/external and appends <pkg>/lib
    try:
        with warnings.catch_warnings():
            # "OpenVINO library is already loaded": it is the very same libopenvino
            # (the package's lib/libopenvino.so links to the wheel's).
            warnings.simplefilter("ignore")
            bindings = importlib.import_module(f"{PACKAGE}.backend.bindings")
            backend = sys.modules[f"{PACKAGE}.backend"]
            if not hasattr(backend, "lib"):
                backend.lib = bindings.lib  # what tensor.py imports from the package
            factory = importlib.import_module(f"{PACKAGE}.backend.factory")
    except OSError as e:
        raise RuntimeUnavailable(f"cannot load the NNFactory library: {e}; {INSTALL_HINT}") from e
    finally:
        sys.path[:] = saved_path
    return SimpleNamespace(NNFactory=factory.NNFactory, lib=bindings.lib, package_dir=pkg)


_compile_lock = threading.Lock()


@contextlib.contextmanager
def _compile_directory():
    """cwd for NNFactory.compile(), which sets OpenVINO's cache_dir to ./cache."""
    keep = os.environ.get("FORGE_NNFACTORY_CACHE_DIR")
    directory = keep or tempfile.mkdtemp(prefix="forge-nnfactory-")
    os.makedirs(directory, exist_ok=True)
    previous = os.getcwd()
    with _compile_lock:
        os.chdir(directory)
        try:
            yield
        finally:
            os.chdir(previous)
            if not keep:
                shutil.rmtree(directory, ignore_errors=True)


class _H(NamedTuple):
    """A value on both graphs: the NNFactory ``Tensor`` and the shadow OpenVINO output."""

    native: Any
    shadow: Any


class IntelNNFactoryGraphBuilder(GraphBuilder):
    supported_dtypes = frozenset(
        np.dtype(t) for t in ("float16", "float32", "float64", "int8", "int16", "int32", "int64")
    )

    def __init__(self, runtime: IntelNNFactoryRuntime):
        super().__init__(runtime)
        self._backend = load_backend()
        self._f = self._backend.NNFactory(profile=False, device=runtime.device)
        self._shadow = OpenVINOGraphBuilder(runtime)

    def _spec_of(self, handle: _H) -> tuple[tuple[int, ...], np.dtype]:
        return self._shadow._spec_of(handle.shadow)

    def _sh(self, x: Node) -> Node:
        return Node(self._shadow, x.handle.shadow, x.shape, x.dtype)

    def _emit(self, op: str, inputs: tuple, extra: tuple, native) -> _H:
        """Build ``op`` on the shadow graph (validates, raises Python errors), then on
        the NNFactory via ``native()``."""
        shadow_args = [self._sh(a) if isinstance(a, Node) else a for a in inputs]
        return self._finish(getattr(self._shadow, f"_op_{op}")(*shadow_args, *extra), native)

    def _finish(self, shadow: Any, native) -> _H:
        shape, dtype = self._shadow._spec_of(shadow)
        if dtype not in self.supported_dtypes:
            raise TypeError(f"result dtype {dtype.name} has no NNFactory element type")
        tensor = native()
        got_shape = tuple(self._f.get_tensor_shape(tensor.node))
        got_dtype = np.dtype(self._f.get_tensor_dtype(tensor.node))
        if got_shape != shape or got_dtype != dtype:
            raise RuntimeError(
                f"NNFactory built {got_dtype.name}{list(got_shape)} where OpenVINO infers "
                f"{dtype.name}{list(shape)} (is the install patched?)"
            )
        return _H(tensor, shadow)

    def _unary_native(self, op: str, method: str, x: Node) -> _H:
        return self._emit(op, (x,), (), lambda: getattr(self._f, method)(x.handle.native))

    # ---- primitives ---------------------------------------------------------------

    def _op_parameter(self, shape, dtype):
        return self._emit("parameter", (), (shape, dtype), lambda: self._f.parameter(list(shape), dtype))

    def _op_constant(self, array):
        return self._emit("constant", (), (array,), lambda: self._f.constant(array))

    def _op_matmul(self, a, b, trA, trB):
        return self._emit(
            "matmul", (a, b), (trA, trB), lambda: self._f.matmul(a.handle.native, b.handle.native, trA, trB)
        )

    def _op_scaled_dot_product_attention(self, q, k, v, mask, is_causal, scale):
        if scale is not None:
            # native SDPA always scales by 1/sqrt(E): pre-scale q to get `scale`
            factor = scale * math.sqrt(q.shape[-1])
            if factor != 1.0:
                q = self.eltwise_mul(q, self._scalar(factor, q))
        n = [t.handle.native for t in (q, k, v)]
        if mask is None:
            call = lambda: self._f.scaled_dot_product_attention_simple(*n, is_causal)  # noqa: E731
        else:
            call = lambda: self._f.scaled_dot_product_attention(*n, mask.handle.native, is_causal)  # noqa: E731
        return self._emit("scaled_dot_product_attention", (q, k, v, mask), (is_causal, None), call)

    def _op_softmax(self, x, axis):
        return self._emit("softmax", (x,), (axis,), lambda: self._f.softmax(x.handle.native, axis))

    def _op_log_softmax(self, x, axis):
        return self._emit("log_softmax", (x,), (axis,), lambda: self._f.log_softmax(x.handle.native, axis))

    def _op_gelu(self, x):
        return self._unary_native("gelu", "gelu", x)

    def _op_gelu_erf(self, x):
        return self._unary_native("gelu_erf", "gelu_erf", x)

    def _op_relu(self, x):
        return self._unary_native("relu", "relu", x)

    def _op_sigmoid(self, x):
        return self._unary_native("sigmoid", "sigmoid", x)

    def _op_swish(self, x):
        return self._unary_native("swish", "swish", x)

    def _op_tanh(self, x):
        return self._unary_native("tanh", "tanh", x)  # tanh_act

    def _op_exp(self, x):
        return self._unary_native("exp", "exp", x)  # exp_act

    def _op_log(self, x):
        return self._unary_native("log", "log", x)  # log_act

    def _op_sqrt(self, x):
        return self._unary_native("sqrt", "sqrt", x)  # sqrt_act

    def _op_negative(self, x):
        return self._unary_native("negative", "negative", x)

    def _op_abs(self, x):
        return self._unary_native("abs", "abs", x)  # abs_act

    def _op_sign(self, x):
        return self._unary_native("sign", "sign", x)

    def _op_erf(self, x):
        return self._unary_native("erf", "erf", x)  # erf_act

    def _op_sin(self, x):
        return self._unary_native("sin", "sin", x)  # sin_act

    def _op_cos(self, x):
        return self._unary_native("cos", "cos", x)  # cos_act

    def _op_clamp(self, x, lo, hi):
        return self._emit("clamp", (x,), (lo, hi), lambda: self._f.clamp(x.handle.native, lo, hi))

    def _op_eltwise_add(self, a, b):
        return self._emit("eltwise_add", (a, b), (), lambda: self._f.eltwise_add(a.handle.native, b.handle.native))

    def _op_eltwise_mul(self, a, b):
        return self._emit("eltwise_mul", (a, b), (), lambda: self._f.eltwise_mul(a.handle.native, b.handle.native))

    def _op_eltwise_div(self, a, b):
        return self._emit("eltwise_div", (a, b), (), lambda: self._f.eltwise_div(a.handle.native, b.handle.native))

    def _op_power(self, a, b):
        # NNFactory.power's Python wrapper demands equal shapes (and reads the exponent's
        # shape with the input's rank); the C++ op broadcasts numpy-style, so call it
        # through the factory's generic op entry point.
        return self._emit(
            "power", (a, b), (), lambda: self._f._call_backend_op("power", a.handle.native, b.handle.native)
        )

    def _reduce_native(self, op: str, x: Node, axes: list[int], keep_dims: bool) -> _H:
        return self._emit(op, (x,), (axes, keep_dims), lambda: getattr(self._f, op)(x.handle.native, axes, keep_dims))

    def _op_reduce_sum(self, x, axes, keep_dims):
        return self._reduce_native("reduce_sum", x, axes, keep_dims)

    def _op_reduce_mean(self, x, axes, keep_dims):
        return self._reduce_native("reduce_mean", x, axes, keep_dims)

    def _op_reduce_max(self, x, axes, keep_dims):
        return self._reduce_extreme("reduce_max", x, axes, keep_dims, -np.inf)

    def _op_reduce_min(self, x, axes, keep_dims):
        return self._reduce_extreme("reduce_min", x, axes, keep_dims, np.inf)

    def _reduce_extreme(self, op: str, x: Node, axes: list[int], keep_dims: bool, identity: float) -> _H:
        """ReduceMax/ReduceMin as torch's amax/amin: the library's CPU reduction skips NaN (torch's
        propagates it) and gives the lowest (highest) finite float for a row of -inf (+inf): a row
        holding a NaN is NaN, a row of nothing but `identity` is `identity`. Integers are native."""
        r = self._reduce_native(op, x, axes, keep_dims)
        if not np.issubdtype(x.dtype, np.floating):
            return r
        # Arithmetic, not selects: r * (1 + only + 0 / (1 - nan)). A row of infinities reduces to
        # the finite extreme, doubled to the infinity; a row with a NaN multiplies by 0 / 0; any other
        # row multiplies by exactly 1 (the sign of a zero kept).
        only = self._node(self._reduce_native("reduce_min", self.equal(x, identity), axes, keep_dims))
        has_nan = self._node(self._reduce_native("reduce_max", self.not_equal(x, x), axes, keep_dims))
        poison = self.eltwise_div(self.constant(np.zeros((), x.dtype)), self.eltwise_add(self.negative(has_nan), 1.0))
        return self.eltwise_mul(self._node(r), self.eltwise_add(self.eltwise_add(only, 1.0), poison)).handle

    def _op_reduce_prod(self, x, axes, keep_dims):
        return self._reduce_native("reduce_prod", x, axes, keep_dims)

    def _op_reshape(self, x, shape):
        if not shape:
            # to 0-d: Reshape to [] after a MatMul crashes the CPU plugin; a one-element reduction does not.
            # A product, not a sum: 0 + -0.0 would be +0.0, 1 * x is x for every x (-0.0, NaN, inf, ints).
            return self._reduce_native("reduce_prod", x, list(range(len(x.shape))), False)
        return self._emit("reshape", (x,), (shape,), lambda: self._f.reshape(x.handle.native, list(shape)))

    def _op_transpose(self, x, order):
        return self._emit("transpose", (x,), (order,), lambda: self._f.transpose(x.handle.native, list(order)))

    def _op_slice(self, x, begin, end, stride):
        return self._emit(
            "slice", (x,), (begin, end, stride), lambda: self._f.slice(x.handle.native, begin, end, stride)
        )

    def _op_concat(self, xs, axis):
        def native():
            acc = xs[0].handle.native
            for x in xs[1:]:
                acc = self._f.concat(acc, x.handle.native, axis)
            return acc

        return self._finish(self._shadow._op_concat([self._sh(x) for x in xs], axis), native)

    def _op_gather(self, data, indices, axis, batch_dims):
        def native():
            axis_node = self._f.constant(axis)
            return self._f.gather(data.handle.native, indices.handle.native, axis_node, batch_dims)

        return self._emit("gather", (data, indices), (axis, batch_dims), native)

    def _op_convolution(self, x, w, strides, pads_begin, pads_end, dilations, groups):
        # NNFactory.convolution pads both ends of a dim alike: unequal pads pad the input first.
        # No bias (GraphBuilder.convolution adds it); grouped weights arrive in the grouped layout.
        if pads_begin != pads_end:
            x = self.pad(x, [0, 0, *pads_begin], [0, 0, *pads_end], 0.0)
            pads_begin = pads_end = [0] * len(strides)
        n = len(strides)

        def native():
            return self._f.convolution(
                x.handle.native, w.handle.native, None, strides, pads_begin, dilations, groups, x.dtype, n
            )

        args = (strides, pads_begin, pads_end, dilations, groups)
        return self._emit("convolution", (x, w), args, native)

    def _pool_native(self, op: str, x: Node, kernel, strides, pads_begin, pads_end, *flags: Any):
        # The C entry point directly: the Python wrapper pads both ends alike.
        arrays = [np.asarray(v, dtype=np.uint32) for v in (strides, pads_begin, pads_end, kernel)]
        sized = [item for a in arrays for item in (a.size, a)]
        return lambda: self._f._call_backend_op(op, x.handle.native, *sized, *flags, 0, 0)  # floor, explicit

    def _op_max_pool(self, x, kernel, strides, pads_begin, pads_end, dilations):
        if any(d != 1 for d in dilations):  # NNFactory's MaxPool-1 has no dilations
            return GraphBuilder._op_max_pool(self, x, kernel, strides, pads_begin, pads_end, dilations)
        native = self._pool_native("max_pooling", x, kernel, strides, pads_begin, pads_end)
        return self._emit("max_pool", (x,), (kernel, strides, pads_begin, pads_end, dilations), native)

    def _op_avg_pool(self, x, kernel, strides, pads_begin, pads_end):
        native = self._pool_native("avg_pooling", x, kernel, strides, pads_begin, pads_end, False)  # exclude_pad
        return self._emit("avg_pool", (x,), (kernel, strides, pads_begin, pads_end), native)

    def _op_convert(self, x, dtype):
        return self._emit("convert", (x,), (dtype,), lambda: self._f.to(x.handle.native, dtype))

    # ---- compile ------------------------------------------------------------------

    def _compile(self, params: list[Node], results: list[Node]) -> IntelNNFactoryCompiledGraph:
        f = self._f
        # Outputs are exactly the marked results, in order (NNFactory would otherwise
        # take every unconsumed node and drop consumed ones).
        f.output_nodes = [r.handle.native.node for r in results]
        with _compile_directory():
            f.compile()
        out_specs = [r.spec for r in results]
        for i, (array, spec) in enumerate(zip(f.out, out_specs, strict=True)):
            if array.shape != spec.shape or array.dtype != spec.dtype:
                raise RuntimeError(f"NNFactory output #{i} is {array.dtype}{list(array.shape)}, expected {spec}")
        return IntelNNFactoryCompiledGraph(self.runtime, f, self._backend.lib, [p.spec for p in params], out_specs)


class IntelNNFactoryCompiledGraph(CompiledGraph):
    def __init__(
        self, runtime: Runtime, factory: Any, lib: Any, input_specs: list[TensorSpec], output_specs: list[TensorSpec]
    ):
        super().__init__(runtime, input_specs, output_specs)
        self.factory = factory
        self._lib = lib
        # compile() allocated one array per output and bound it; use those as ours.
        self._own_outputs = list(factory.out)
        self._bound = list(factory.out)

    def _bind_output(self, index: int, array: np.ndarray) -> None:
        self._lib.set_output(self.factory._mm, array.ctypes.data_as(ctypes.c_void_p), index)

    def _execute(self, inputs: list[np.ndarray]) -> None:
        if inputs:
            self.factory.run(inputs[0], *inputs[1:])
        else:
            self._lib.run(self.factory._mm)


class IntelNNFactoryRuntime(Runtime):
    """Intel's NNFactory (``intel_npu_acceleration_library`` 1.4.0, patched build).

    ``device`` is ``NPU`` or ``CPU``; the library itself silently falls back to the CPU
    when there is no NPU, so asking for ``NPU`` without one raises here instead.
    """

    name = "nnfactory"
    builder_class = IntelNNFactoryGraphBuilder
    pyemit_native = True

    def __init__(self, device: str = "CPU", precision: str = "f32", weights: str | None = None,
                 threads: int | None = None, activations: str | None = None):
        if device not in ("CPU", "NPU"):
            raise RuntimeUnavailable(f"the nnfactory runtime runs on 'CPU' or 'NPU', not {device!r}")
        super().__init__(device)
        self.precision = check_precision(precision)
        self.weights = check_weights(weights)
        if self.precision != "f32":
            raise PrecisionError(
                f"precision {precision!r}: the nnfactory runtime's CPU build computes in f32 only (its C++ pins "
                "the inference precision; an NPU computes in f16 anyway); use runtime='openvino' for bf16/f16"
            )
        if self.weights == "int4":
            raise PrecisionError(
                "weights 'int4': the nnfactory runtime cannot express an i4 constant (NNFactory.constant takes "
                "the packed bytes' shape); use weights='int8' or runtime='openvino'"
            )
        if threads is not None:
            raise PrecisionError("threads: the nnfactory runtime does not expose thread settings")
        if activations is not None:
            raise PrecisionError(f"activations {activations!r}: the nnfactory runtime has no dynamic quantization "
                                 "of activations; use runtime='openvino'")
        backend = load_backend()
        if device == "NPU" and not backend.lib.isNPUAvailable():
            raise RuntimeUnavailable("no NPU on this machine (NNFactory would fall back to CPU); use device='CPU'")

    def config(self) -> dict[str, Any]:
        return {
            **super().config(),
            "requested": {},
            "effective": {"INFERENCE_PRECISION_HINT": "f32" if self.device == "CPU" else "f16",
                          "PERFORMANCE_HINT": "THROUGHPUT", "INFERENCE_NUM_THREADS": "plugin default",
                          "NUM_STREAMS": "plugin default"},
            "note": "fixed by the library's C++ (inference.h compile_model), not settable through its API",
        }
