"""The runtime interface of the NNFactory backend.

A *runtime* builds and runs one static-shape dataflow graph per NPU segment through an
NNFactory-shaped API (the programming model of Intel's NPU acceleration library: a
factory object whose methods add ops and return nodes, then ``compile()``). Two runtimes
implement it:

* ``openvino`` (:mod:`.openvino_runtime`, default, always installed): the same graph
  built with OpenVINO's Python opsets, compiled for any OpenVINO device string.
* ``nnfactory`` (:mod:`.intel_runtime`, optional): Intel's own
  ``intel_npu_acceleration_library.backend.NNFactory`` (install it with
  ``scripts/install_nnfactory.sh``), so emitted programs are proven on the real API.

A new runtime is one module (a :class:`Runtime` subclass with its :class:`GraphBuilder`, and a module-level
``is_available()``) plus one :func:`register_runtime` call, or an entry point in the ``forge.runtimes`` group;
everything that names a runtime looks it up here.

Usage::

    rt = get_runtime("openvino", device="CPU")
    g = rt.builder()
    x = g.parameter((4, 16), np.float32)
    y = g.gelu(g.linear(x, g.constant(w), g.constant(b)))
    g.result(y)
    prog = g.compile()
    (out,) = prog.run([x_array])                      # fresh arrays
    prog.run([x_array], outputs=[preallocated])       # written in place, no allocation

Every public op of :class:`GraphBuilder` is either *native* (a runtime hook calling one
op of the underlying API) or a *composition* of other public ops written once in this
file; a runtime may override any composition with a native hook.
:meth:`Runtime.native_ops` lists what is native on a runtime. Conventions that differ
from Intel's NNFactory on purpose:

* ``matmul(a, b, trA=False, trB=False)``: torch's default; Intel's defaults to ``trB=True``.
* ``linear(x, weight, bias)`` takes weight/bias *nodes* (torch layout ``[out, in]``);
  Intel's ``linear`` creates its own weight parameters, so it is not used.
* ``concat(nodes, axis)`` takes any number of nodes (Intel's takes two).
* Comparisons return 0/1 in the dtype of their inputs, not booleans: Intel's NNFactory
  has no boolean element type. ``select(cond, a, b)`` takes any cond, nonzero = true.
* ``slice`` indices follow Python slicing (negative, clamped ends); stride > 0.

The builder is :class:`GraphBuilder` (``graph_builder.py``), its values and errors live in
``graph_values.py``; this module holds what runs: :class:`Runtime`, :class:`CompiledGraph` and
:func:`get_runtime`. Errors while building a graph raise :class:`GraphBuildError`, whose message starts with
the public op name and its input shapes (nested compositions name every level), and
wraps the underlying library's exception.
"""

from __future__ import annotations

import abc
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .graph_builder import COMPOSITE_HOOKS, PUBLIC_OPS, GraphBuilder
from .graph_values import TensorSpec, contiguous, short_dtype

__all__ = [
    "CompiledGraph",
    "GraphGroup",
    "Runtime",
    "RuntimeInputError",
    "RuntimeUnavailable",
    "available_runtimes",
    "get_runtime",
]


class RuntimeUnavailable(RuntimeError):
    """The requested runtime (or device) cannot be used in this environment."""


class RuntimeInputError(ValueError):
    """``CompiledGraph.run`` got inputs or output buffers that do not match its specs."""


# --------------------------------------------------------------------------- compiled


class CompiledGraph(abc.ABC):
    """A compiled graph with a reusable inference request.

    ``run(inputs)`` returns fresh arrays. ``run(inputs, outputs)`` writes into the given
    preallocated arrays (C-contiguous, exact shape/dtype, writeable) and returns them:
    no output memory is allocated per call. Inputs are numpy arrays or CPU torch
    tensors of the exact shape and dtype; non-contiguous ones are copied.
    """

    def __init__(self, runtime: Runtime, input_specs: Sequence[TensorSpec], output_specs: Sequence[TensorSpec]):
        self.runtime = runtime
        self.input_specs: tuple[TensorSpec, ...] = tuple(input_specs)
        self.output_specs: tuple[TensorSpec, ...] = tuple(output_specs)
        self._bound: list[np.ndarray | None] = [None] * len(self.output_specs)
        self._own_outputs = [np.empty(s.shape, s.dtype) for s in self.output_specs]

    @property
    def device(self) -> str:
        return self.runtime.device

    def run(
        self,
        inputs: Sequence[Any],
        outputs: Sequence[np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        arrays = self._prepare_inputs(inputs)
        if outputs is None:
            self._bind_outputs(self._own_outputs)
            self._execute(arrays)
            return [o.copy() for o in self._own_outputs]
        outs = self._check_outputs(outputs)
        self._bind_outputs(outs)
        self._execute(arrays)
        return outs

    __call__ = run

    def check_arrays(self, inputs: Sequence[np.ndarray], outputs: Sequence[np.ndarray]) -> None:
        """Raise `RuntimeInputError` unless `run_prepared(inputs, outputs)` may run: numpy arrays of the specs'
        shapes and dtypes, C-contiguous, the outputs writeable."""
        if not all(isinstance(x, np.ndarray) and x.flags.c_contiguous for x in inputs):
            raise RuntimeInputError("prepared inputs must be C-contiguous ndarrays")
        self._prepare_inputs(inputs)
        self._check_outputs(outputs)

    def run_prepared(self, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        """`run(inputs, outputs)` without the checks, for arrays `check_arrays` accepted (or made like them): an
        executor's planned buffers, checked once when it is built, then passed on every call. (The checks of
        a GPT-2 decode step's 29 inputs and 25 outputs took ~70 us a step, after the step's weights evicted
        the caches.)"""
        self._bind_outputs(outputs)
        self._execute(inputs)

    def _prepare_inputs(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        if len(inputs) != len(self.input_specs):
            raise RuntimeInputError(f"expected {len(self.input_specs)} inputs, got {len(inputs)}")
        arrays = []
        for i, (value, spec) in enumerate(zip(inputs, self.input_specs, strict=True)):
            if type(value).__module__ == "torch" and hasattr(value, "detach"):
                if value.device.type != "cpu":
                    raise RuntimeInputError(f"input #{i}: tensor on {value.device}, expected cpu")
                value = value.detach().numpy()
            if not isinstance(value, np.ndarray):
                raise RuntimeInputError(f"input #{i}: expected an ndarray or tensor, got {type(value).__name__}")
            if value.dtype != spec.dtype or value.shape != spec.shape:
                raise RuntimeInputError(
                    f"input #{i}: expected {spec}, got {short_dtype(value.dtype)}{list(value.shape)}"
                )
            arrays.append(contiguous(value))
        return arrays

    def _check_outputs(self, outputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if len(outputs) != len(self.output_specs):
            raise RuntimeInputError(f"expected {len(self.output_specs)} output buffers, got {len(outputs)}")
        outs = list(outputs)
        for i, (out, spec) in enumerate(zip(outs, self.output_specs, strict=True)):
            if not isinstance(out, np.ndarray):
                raise RuntimeInputError(f"output #{i}: expected an ndarray, got {type(out).__name__}")
            if out.dtype != spec.dtype or out.shape != spec.shape:
                raise RuntimeInputError(f"output #{i}: expected {spec}, got {short_dtype(out.dtype)}{list(out.shape)}")
            if not (out.flags.c_contiguous and out.flags.writeable):
                raise RuntimeInputError(f"output #{i}: buffer must be C-contiguous and writeable")
        return outs

    def _bind_outputs(self, outs: list[np.ndarray]) -> None:
        for i, out in enumerate(outs):
            if self._bound[i] is not out:
                self._bind_output(i, out)
                self._bound[i] = out  # keeps the buffer alive while the runtime writes it

    @abc.abstractmethod
    def _bind_output(self, index: int, array: np.ndarray) -> None: ...

    @abc.abstractmethod
    def _execute(self, inputs: list[np.ndarray]) -> None: ...


class GraphGroup:
    """Graphs of one runtime compiled as one program, so the device prepares the weights they share once
    (a generator's prefill and decode graphs, a dynamic model's buckets: the same weights at other shapes).

    ``builder.compile(group)`` adds a graph and returns its :class:`CompiledGraph` at once; ``compile()``
    compiles what was added (again with every graph added before: the group stays one program), and a graph
    of a group not yet compiled compiles it on its first run. This base compiles each graph alone as it is
    added (``shares_weights`` False): a runtime whose device can do better returns its own group from
    :meth:`Runtime.graph_group`.
    """

    shares_weights: ClassVar[bool] = False

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self.compile_ms = 0.0
        """Milliseconds the group's compiles took (the device compiles of its graphs)."""
        self.graphs = 0
        """How many graphs joined the group."""
        self.shared: dict[str, Any] = {}
        """What the emits of the group's graphs compute once for all of them (the quantized weights)."""

    def join(self, builder: GraphBuilder, params: list[Any], results: list[Any]) -> CompiledGraph:
        """The compiled graph of `builder` (params and results: its nodes), part of this group."""
        self.graphs += 1
        return builder._compile(params, results)

    def report(self) -> dict[str, Any]:
        """What the group is: its graphs, whether they are one device program, its compiles' milliseconds."""
        return {"graphs": self.graphs, "one_program": self.shares_weights, "compile_ms": round(self.compile_ms, 1)}

    @property
    def pending(self) -> bool:
        """Whether graphs were added since the last compile."""
        return False

    def compile(self) -> None:
        """Compile the group (nothing to do in this base: each graph compiled when it was added)."""
        return None


# --------------------------------------------------------------------------- runtimes


class Runtime(abc.ABC):
    """A runtime bound to a device. ``builder()`` starts a new graph.

    ``precision`` (the element type it computes in) and ``weights`` (weight-only quantization of
    matmul weights, read by the emitter; ``None``: f32) are the modes of :mod:`forge.precision`;
    ``config()`` reports them with the runtime's thread/stream settings.
    """

    name: ClassVar[str]
    builder_class: ClassVar[type[GraphBuilder]]
    pyemit_native: ClassVar[bool] = False
    """pyemit writes this runtime's programs as Intel NNFactory calls (True) or as GraphBuilder calls."""
    precision: str = "f32"
    weights: str | None = None

    def __init__(self, device: str = "CPU"):
        self.device = device

    def config(self) -> dict[str, Any]:
        """The runtime's settings (``report["runtime_config"]``)."""
        return {"runtime": self.name, "device": self.device, "precision": self.precision, "runs_as": self.precision,
                "weights": self.weights or "f32"}

    def record_compiled(self, compiled: Any) -> None:
        """Called with each graph's compiled model (a runtime may read its settings back)."""
        return None

    def builder(self) -> GraphBuilder:
        return self.builder_class(self)

    def graph_group(self, top: int | None = None) -> GraphGroup:
        """A new group of graphs compiled as one program (:class:`GraphGroup`). `top`: the graph the program runs
        on every call, where the runtime's program selects among its graphs (this base compiles each alone)."""
        return GraphGroup(self)

    @classmethod
    def native_ops(cls) -> frozenset[str]:
        """Public ops that map to one op of the underlying API on this runtime."""
        b = cls.builder_class
        native = set()
        for op in PUBLIC_OPS:
            hook = getattr(b, f"_op_{op}", None)
            if hook is None:
                continue
            if op not in COMPOSITE_HOOKS or hook is not getattr(GraphBuilder, f"_op_{op}"):
                native.add(op)
        return frozenset(native)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} on {self.device}>"


@dataclass(frozen=True)
class RuntimeEntry:
    """Where a runtime lives: `target` is "module:Class" (a `Runtime` subclass), imported on first use;
    `prepare` runs before that import (openvino's: import it without its model-conversion tool)."""

    target: str
    prepare: Callable[[], Any] | None = None


_REGISTRY: dict[str, RuntimeEntry] = {}
ENTRY_POINT_GROUP = "forge.runtimes"
"""A pip-installed runtime registers itself here: `[project.entry-points."forge.runtimes"] name = "module:Class"`."""


def register_runtime(name: str, target: str, *, prepare: Callable[[], Any] | None = None) -> None:
    """Make a runtime usable by name everywhere a runtime is named (`forge.compile(runtime=...)`, the CLIs'
    `--runtime`, `forge.load`, pyemit): a new runtime is its module plus this one call (or an entry point)."""
    if not isinstance(name, str) or not name or ":" not in target:
        raise ValueError(f"register_runtime: want a name and 'module:Class', got {name!r}, {target!r}")
    _REGISTRY[name] = RuntimeEntry(target, prepare)


def runtime_names() -> tuple[str, ...]:
    """Every registered runtime's name (built-ins first, then entry points), usable or not on this machine."""
    _discover_entry_points()
    return tuple(_REGISTRY)


def _discover_entry_points() -> None:
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINT_GROUP):
        _REGISTRY.setdefault(point.name, RuntimeEntry(point.value))


def _load(name: str) -> Any:
    entry = _REGISTRY[name]
    if entry.prepare is not None:
        entry.prepare()
    module_name, _, attr = entry.target.partition(":")
    return importlib.import_module(module_name), attr


_OVC = "openvino.tools.ovc"


def import_openvino() -> Any:
    """`openvino`, imported without its model-conversion tool: openvino's `__init__` imports
    `openvino.tools.ovc` only to offer `openvino.convert_model` (its CLI parser, telemetry, numpy.ma and
    the TensorFlow front end's helpers: ~140 ms of a cold `forge.compile`, which never converts a model).
    `openvino.convert_model` still works: a module `__getattr__` imports the tool on first access, and
    `import openvino.tools.ovc` works as before. A no-op when openvino is already imported."""
    if "openvino" in sys.modules or _OVC in sys.modules:
        return importlib.import_module("openvino")
    sys.modules[_OVC] = None  # type: ignore[assignment]  # openvino's guarded `from openvino.tools.ovc import` skips it
    try:
        import openvino
    finally:
        if sys.modules.get(_OVC, False) is None:
            del sys.modules[_OVC]
    if "convert_model" not in vars(openvino) and "__getattr__" not in vars(openvino):
        openvino.__getattr__ = _openvino_tool  # PEP 562: looked up only for names the module lacks
    return openvino


def _openvino_tool(name: str) -> Any:
    if name == "convert_model":
        from openvino.tools.ovc import convert_model

        return convert_model
    raise AttributeError(f"module 'openvino' has no attribute {name!r}")


register_runtime("openvino", "backends.nnfactory.runtime.openvino_runtime:OpenVINORuntime", prepare=import_openvino)
register_runtime("nnfactory", "backends.nnfactory.runtime.intel_runtime:IntelNNFactoryRuntime")


def available_runtimes() -> list[str]:
    """Names of the runtimes usable here (``openvino`` first)."""
    names = []
    for name in runtime_names():
        try:
            module, _ = _load(name)
        except ImportError:
            continue
        if getattr(module, "is_available", lambda: True)():
            names.append(name)
    return names


def get_runtime(name: str = "openvino", device: str = "CPU", **options: Any) -> Runtime:
    """A runtime by name (``openvino`` or ``nnfactory``) for ``device``.

    Raises :class:`RuntimeUnavailable` when it is not installed (the message says how to
    install it) or the device does not exist.
    """
    if name not in _REGISTRY and name not in runtime_names():
        raise ValueError(f"unknown runtime {name!r}; known: {', '.join(_REGISTRY)}")
    try:
        module, attr = _load(name)
    except ImportError as e:
        raise RuntimeUnavailable(f"runtime {name!r} cannot be imported: {e}") from e
    return getattr(module, attr)(device=device, **options)
