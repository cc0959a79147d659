"""Every system the benchmarks compare, built one way, in one place.

A builder takes a model and the shared input batch and returns a `Built`: a `run(input_ids)`
callable returning the logits as a new torch tensor, and the stage times (ms) of getting there.
Every build starts from a fresh state, so no system profits from an earlier one's caches:

* ``forge``: `forge.compile` (torch.export + import + passes + lowering + emission, then the
  device compile of its OpenVINO segments). `own_ms` is everything after torch.export and before
  the device compile, measured as the wall time of `forge.compile` minus those two, so nothing
  Forge does (GC, report) escapes the clock.
* ``openvino``: OpenVINO's own PyTorch path, `ov.convert_model(torch.export.export(...))`, then
  the model reshaped to the example inputs' static shapes (convert_model leaves them dynamic),
  `compile_model(..., "CPU")` on a new `ov.Core` (plugin loaded outside the clock). Same
  `INFERENCE_PRECISION_HINT=f32` as Forge's runtime: on AMX/AVX512-BF16 CPUs OpenVINO's default
  is bf16, which would trade accuracy for speed.
* ``onnxruntime``: `torch.onnx.export(..., dynamo=True)` (its own torch.export inside, plus
  onnxscript's optimizer, the default), then serialization and a new `InferenceSession` with
  the CPU provider.
* ``torch.compile``: inductor, default mode; compile time is the first call. Dynamo is reset,
  inductor's FX-graph and AOT-autograd caches are off and it gets a new, empty cache directory.
* ``eager``: the model itself (no compile).

All systems run fp32 on the CPU; inference under `no_grad`. Threads and streams are set explicitly and
alike (issue 15 item 3): Forge's segments and the OpenVINO peer compile with
`forge.precision.peer_properties()` (`INFERENCE_NUM_THREADS` = the cores of this process, `NUM_STREAMS` 1,
`PERFORMANCE_HINT` LATENCY; the CPU plugin's default core pinning on both), ONNX Runtime gets
`intra_op_num_threads` = the same cores and one inter-op thread (sequential execution), torch (eager and
inductor) runs with `torch.get_num_threads()` (the same cores by default; `THREADS` records all of them).
"""

from __future__ import annotations

import gc
import logging
import os
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from forge.precision import cores, peer_properties

SYSTEMS: tuple[str, ...] = ("forge", "openvino", "onnxruntime", "torch.compile", "eager")
PEERS: tuple[str, ...] = ("openvino", "onnxruntime", "torch.compile", "eager")
COMPILERS: tuple[str, ...] = ("forge", "openvino", "onnxruntime", "torch.compile")
"""The systems that compile (eager has nothing to compile)."""

OV_CPU_PROPERTIES = {"INFERENCE_PRECISION_HINT": "f32", **peer_properties()}
"""The OpenVINO peer's compile properties: f32, and the thread/stream settings Forge's runtime uses."""
THREADS = {"openvino": OV_CPU_PROPERTIES["INFERENCE_NUM_THREADS"], "onnxruntime": cores(),
           "torch": torch.get_num_threads()}
"""The intra-op threads of each system (Forge's segments: `OV_CPU_PROPERTIES`, as the OpenVINO peer)."""


@dataclass
class Built:
    """A runnable model and what building it cost (all times in ms)."""

    system: str
    run: Callable[[torch.Tensor], torch.Tensor]
    stages: dict[str, float] = field(default_factory=dict)
    """Named stage times, in order (e.g. export, convert, device_compile)."""
    to_artifact_ms: float | None = None
    """nn.Module to an executable artifact, without the device compile (None: not separable)."""
    to_runnable_ms: float = 0.0
    """nn.Module to something that has produced its first output (or is ready to)."""
    extra: dict[str, Any] = field(default_factory=dict)


@contextmanager
def quiet() -> Iterator[None]:
    """Third-party deprecation chatter (onnxscript, inductor) is not a benchmark result."""
    onnx_log = logging.getLogger("torch.onnx")
    level = onnx_log.level
    onnx_log.setLevel(logging.ERROR)  # "torchvision is not installed" notices
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        onnx_log.setLevel(level)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


# --- forge -----------------------------------------------------------------------------------------


def build_forge(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    import forge

    start = time.perf_counter()
    compiled = forge.compile(model, inputs)
    total = _ms(start)
    r = compiled.report
    own = total - r["export_ms"] - r["device_compile_ms"]
    stages = {
        "export": r["export_ms"],
        "import": r["import_ms"],
        "passes": r["passes_ms"],
        "lowering": r["lower_ms"],
        "emit": r["emit_ms"],
        "other": own - r["import_ms"] - r["passes_ms"] - r["lower_ms"] - r["emit_ms"],
        "device_compile": r["device_compile_ms"],
    }
    return Built("forge", compiled, stages, to_artifact_ms=total - r["device_compile_ms"], to_runnable_ms=total,
                 extra={"own_ms": own, "report": r})


# --- openvino --------------------------------------------------------------------------------------


def export(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(model, inputs)


def static_shapes(inputs: tuple[torch.Tensor, ...]) -> dict[int, list[int]]:
    """The example inputs' shapes by input index, for `ov.Model.reshape` (a static model, as Forge's)."""
    return {i: list(x.shape) for i, x in enumerate(inputs)}


def build_openvino(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    import openvino as ov

    core = ov.Core()
    core.get_property("CPU", "FULL_DEVICE_NAME")  # loads the CPU plugin outside the clock
    start = time.perf_counter()
    program = export(model, inputs)
    export_ms = _ms(start)
    start = time.perf_counter()
    ov_model = ov.convert_model(program)
    ov_model.reshape(static_shapes(inputs))  # convert_model leaves the inputs dynamic; Forge's are static
    convert_ms = _ms(start)
    start = time.perf_counter()
    compiled = core.compile_model(ov_model, "CPU", OV_CPU_PROPERTIES)
    device_ms = _ms(start)
    request = compiled.create_infer_request()

    def run(input_ids: torch.Tensor) -> torch.Tensor:
        result = request.infer({0: input_ids.numpy()})
        return torch.from_numpy(result[0])

    stages = {"export": export_ms, "convert_model": convert_ms, "device_compile": device_ms}
    return Built("openvino", run, stages, to_artifact_ms=export_ms + convert_ms,
                 to_runnable_ms=export_ms + convert_ms + device_ms)


# --- onnxruntime -----------------------------------------------------------------------------------


def build_onnxruntime(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    import onnxruntime as ort

    start = time.perf_counter()
    with torch.no_grad():
        program = torch.onnx.export(model, inputs, dynamo=True, verbose=False)
    export_ms = _ms(start)
    start = time.perf_counter()
    proto = program.model_proto.SerializeToString()
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.intra_op_num_threads = THREADS["onnxruntime"]
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    session = ort.InferenceSession(proto, options, providers=["CPUExecutionProvider"])
    device_ms = _ms(start)
    input_name = session.get_inputs()[0].name
    output_name = session.get_outputs()[0].name

    def run(input_ids: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(session.run([output_name], {input_name: input_ids.numpy()})[0])

    stages = {"onnx_export": export_ms, "session": device_ms}
    return Built("onnxruntime", run, stages, to_artifact_ms=export_ms, to_runnable_ms=export_ms + device_ms,
                 extra={"onnx_bytes": len(proto)})


# --- torch.compile ---------------------------------------------------------------------------------


@contextmanager
def cold_inductor() -> Iterator[None]:
    """Dynamo reset, no FX-graph/AOT caches, an empty inductor cache dir, no in-memory code cache."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config
    from torch._inductor import codecache

    torch._dynamo.reset()
    for cache in (codecache.PyCodeCache, codecache.CppCodeCache, codecache.CppPythonBindingsCodeCache):
        cache.cache_clear()
    previous = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="forge-bench-inductor-") as cache_dir:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
        try:
            with inductor_config.patch(fx_graph_cache=False, autotune_local_cache=False), \
                    functorch_config.patch(enable_autograd_cache=False):
                yield
        finally:
            if previous is None:
                os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            else:
                os.environ["TORCHINDUCTOR_CACHE_DIR"] = previous


def build_torch_compile(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    with cold_inductor():
        compiled = torch.compile(model, backend="inductor")
        start = time.perf_counter()
        with torch.no_grad():
            compiled(*inputs)
        first_call_ms = _ms(start)

    def run(input_ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return compiled(input_ids)

    return Built("torch.compile", run, {"first_call": first_call_ms}, to_artifact_ms=None,
                 to_runnable_ms=first_call_ms)


# --- eager -----------------------------------------------------------------------------------------


def build_eager(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    def run(input_ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(input_ids)

    return Built("eager", run, {}, to_artifact_ms=0.0, to_runnable_ms=0.0)


BUILDERS: dict[str, Callable[[torch.nn.Module, tuple[torch.Tensor, ...]], Built]] = {
    "forge": build_forge,
    "openvino": build_openvino,
    "onnxruntime": build_onnxruntime,
    "torch.compile": build_torch_compile,
    "eager": build_eager,
}


def build(system: str, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    """Build `system` after a full garbage collection (outside the clock), in a fresh state.

    Peers build with third-party warnings silenced (their deprecation notices are not results,
    and pytest's `-W error` would turn them into failures); Forge's own warnings stay on.
    """
    gc.collect()
    if system == "forge":
        return build_forge(model, inputs)
    with quiet():
        return BUILDERS[system](model, inputs)


