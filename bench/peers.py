"""Every system the benchmarks compare, built one way, in one place.

A builder takes a model and the shared input batch and returns a `Built`: a `run(input_ids)`
callable returning the logits as a new torch tensor, and the stage times (ms) of getting there.
Every builder times its own library import (`lib_import`, the first stage: ~0 ms once the library is
loaded, the real cost in a fresh process, see `bench.worker.cold_sample`), and *to runnable* ends
after the first call (`first_call`), as a user's first compile-and-run does. Every build starts from
a fresh state, so no system profits from an earlier one's caches:

* ``forge``: `import forge; forge.compile` (torch.export + import + passes + lowering + emission,
  then the device compile of its OpenVINO segments). `own_ms` is everything after torch.export and
  before the device compile, measured as the wall time of `forge.compile` minus those two, so nothing
  Forge does (lazy imports, GC, report) escapes the clock. `report_sum_ms` is what the report's own
  stages (`STAGE_KEYS` + `other_ms`) add up to, to check against that wall clock.
* ``openvino``: OpenVINO's own PyTorch path, `import openvino; ov.convert_model(torch.export.export(...))`,
  then the model reshaped to the example inputs' static shapes (convert_model leaves them dynamic),
  `compile_model(..., "CPU")` on a new `ov.Core` (its plugin load included), first inference. Same
  `INFERENCE_PRECISION_HINT=f32` as Forge's runtime: on AMX/AVX512-BF16 CPUs OpenVINO's default
  is bf16, which would trade accuracy for speed.
* ``openvino-default``: the same, with OpenVINO's default precision (no precision hint; the
  precision the plugin chose is recorded as `inference_precision`).
* ``onnxruntime``: `import onnxruntime; torch.onnx.export(..., dynamo=True)` (its own torch.export
  inside, plus onnxscript's optimizer, the default), then serialization and a new `InferenceSession`
  with the CPU provider, first run.
* ``torch.compile``: inductor, default mode; compile time is the first call. Dynamo is reset,
  inductor's FX-graph and AOT-autograd caches are off and it gets a new, empty cache directory.
* ``torch-mlir``: an import-stage peer, not a compiler to runnable: the steps of
  `torch_mlir.fx.export_and_import` (torch.export, its default decompositions, the FX import to the
  `torch` dialect) timed one by one, and the module printed as MLIR text (weights elided). Optional
  (`pip install '.[bench]'`); when it is missing or fails, the section records why.
* ``eager``: the model itself (no compile).

All systems run fp32 on the CPU (except `openvino-default`); inference under `no_grad`. Threads and
streams are set explicitly and
alike (issue 15 item 3; `THREADS` records them, `ORT_SESSION_CONFIG` ONNX Runtime's): Forge's segments and
the OpenVINO peer compile with `backends.nnfactory.runtime.openvino_settings.peer_properties()`
(`INFERENCE_NUM_THREADS` = the cores of this process, `NUM_STREAMS` 1, `PERFORMANCE_HINT` LATENCY,
`ENABLE_CPU_PINNING` False, `TBB_PARTITIONER` AUTO: work split dynamically, not evenly up front), ONNX Runtime gets
`intra_op_num_threads` = the same cores and one inter-op thread (sequential execution; with an explicit
thread count it sets no affinity; `ORT_SESSION_CONFIG` for its spin-waiting), torch (eager and inductor) is
set to the same cores (`torch.set_num_threads` before every build; OpenMP unpinned). No system pins its
threads to cores.
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

from backends.nnfactory.runtime.openvino_settings import cores, peer_properties

SYSTEMS: tuple[str, ...] = ("forge", "openvino", "onnxruntime", "torch.compile", "eager")
"""The systems of the latency-style sections (built in one process)."""
PEERS: tuple[str, ...] = ("openvino", "onnxruntime", "torch.compile", "eager")
COMPILERS: tuple[str, ...] = ("forge", "openvino", "onnxruntime", "torch.compile")
"""The systems that compile (eager has nothing to compile)."""
COLD_SYSTEMS: tuple[str, ...] = ("forge", "openvino", "openvino-default", "onnxruntime", "torch.compile",
                                 "torch-mlir")
"""What the compile-time section measures cold, each build in a fresh process."""

OV_CPU_PROPERTIES = {"INFERENCE_PRECISION_HINT": "f32", **peer_properties()}
"""The OpenVINO peer's compile properties: f32, and the thread/stream settings Forge's runtime uses."""
OV_LLM_F32_PROPERTIES = {**OV_CPU_PROPERTIES, "KV_CACHE_PRECISION": "f32"}
"""An LLM's f32 properties: the KV cache in f32 too. The CPU plugin keeps a stateful model's (and GenAI's) KV cache
in u8 by default whatever the inference precision (read back from the compiled model: `KV_CACHE_PRECISION`
u8 with `INFERENCE_PRECISION_HINT` f32 on the AMD EPYC), so an f32 comparison pins it; the int8 GenAI system keeps
GenAI's default. GPT-2 12L through GenAI: 20.1 ms a token with the u8 cache, 20.4 with f32 (in-process A/B)."""
THREADS = {"openvino": OV_CPU_PROPERTIES["INFERENCE_NUM_THREADS"], "onnxruntime": cores(), "torch": cores(),
           "pinned": False}
"""The intra-op threads of each system (Forge's segments: `OV_CPU_PROPERTIES`, as the OpenVINO peer), and
whether any pins them to cores (none does)."""
ORT_SESSION_CONFIG = {"session.intra_op.allow_spinning": "1", "session.force_spinning_stop": "1"}
"""ONNX Runtime session config entries, set explicitly. Its threads spin-wait while a `Run()` lasts (its
default, `allow_spinning` 1) but stop when it returns (`force_spinning_stop` 1): with the default, 0, they keep
spinning ~40-50 ms after each call, through the next interleaved system's timed call (measured in
`bench/node_profile.py`'s findings; `tests/bench/test_quiet_after_call.py` checks it)."""


@dataclass
class Built:
    """A runnable model and what building it cost (all times in ms)."""

    system: str
    run: Callable[[torch.Tensor], torch.Tensor] | None
    """None for an import-stage peer (torch-mlir), which builds nothing that runs."""
    stages: dict[str, float] = field(default_factory=dict)
    """Named stage times, in order (e.g. export, convert, device_compile)."""
    to_artifact_ms: float | None = None
    """nn.Module to an executable artifact, without the device compile (None: not separable)."""
    to_runnable_ms: float | None = 0.0
    """nn.Module to something that has produced its first output (None: builds nothing that runs)."""
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


FORGE_REPORT_STAGES = {"decompose": "decompose_ms", "import": "import_ms", "passes": "passes_ms",
                       "lowering": "lower_ms", "emit": "emit_ms", "check": "check_ms"}
"""Forge's own named stages (bench name: report key), between its export and its device compile."""


def build_forge(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    start = time.perf_counter()
    import forge

    lib_ms = _ms(start)
    compiled = forge.compile(model, inputs)
    total = _ms(start)
    r = compiled.report
    start = time.perf_counter()
    with torch.no_grad():
        compiled(*inputs)
    first_ms = _ms(start)
    own = total - r["export_ms"] - r["device_compile_ms"]
    named = {name: r.get(key, 0.0) for name, key in FORGE_REPORT_STAGES.items()}
    stages = {"lib_import": lib_ms, "export": r["export_ms"], **named, "other": own - sum(named.values()),
              "device_compile": r["device_compile_ms"], "first_call": first_ms}
    from forge.stage_clock import STAGE_KEYS

    report_sum = sum(r.get(key, 0.0) for key in STAGE_KEYS) + r.get("other_ms", 0.0)
    return Built("forge", compiled, stages, to_artifact_ms=total - r["device_compile_ms"],
                 to_runnable_ms=total + first_ms,
                 extra={"own_ms": own, "wall_ms": total, "report_sum_ms": report_sum, "report": r})


# --- openvino --------------------------------------------------------------------------------------


def export(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> torch.export.ExportedProgram:
    with torch.no_grad():
        return torch.export.export(model, inputs)


def static_shapes(inputs: tuple[torch.Tensor, ...]) -> dict[int, list[int]]:
    """The example inputs' shapes by input index, for `ov.Model.reshape` (a static model, as Forge's)."""
    return {i: list(x.shape) for i, x in enumerate(inputs)}


def build_openvino(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    """OpenVINO f32 (pinned, as Forge's runtime)."""
    return _build_openvino("openvino", model, inputs, OV_CPU_PROPERTIES)


def build_openvino_default(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    """OpenVINO with its default precision (bf16 on AMX/AVX512-BF16 CPUs), the same threads and streams."""
    properties = {k: v for k, v in OV_CPU_PROPERTIES.items() if k != "INFERENCE_PRECISION_HINT"}
    return _build_openvino("openvino-default", model, inputs, properties)


def _build_openvino(system: str, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...],
                    properties: dict[str, Any]) -> Built:
    start = time.perf_counter()
    import openvino as ov

    lib_ms = _ms(start)
    start = time.perf_counter()
    program = export(model, inputs)
    export_ms = _ms(start)
    start = time.perf_counter()
    ov_model = ov.convert_model(program)
    ov_model.reshape(static_shapes(inputs))  # convert_model leaves the inputs dynamic; Forge's are static
    convert_ms = _ms(start)
    start = time.perf_counter()
    compiled = ov.Core().compile_model(ov_model, "CPU", properties)  # a new Core: its plugin load is timed
    request = compiled.create_infer_request()
    device_ms = _ms(start)

    def run(input_ids: torch.Tensor) -> torch.Tensor:
        result = request.infer({0: input_ids.numpy()})
        return torch.from_numpy(result[0])

    first_ms = _first_call(run, inputs)
    stages = {"lib_import": lib_ms, "export": export_ms, "convert_model": convert_ms, "device_compile": device_ms,
              "first_call": first_ms}
    artifact = lib_ms + export_ms + convert_ms
    return Built(system, run, stages, to_artifact_ms=artifact, to_runnable_ms=artifact + device_ms + first_ms,
                 extra={"inference_precision": _type_name(compiled.get_property("INFERENCE_PRECISION_HINT"))})


def _type_name(value: Any) -> str:
    """An OpenVINO element type as its short name (`f32`, `bf16`)."""
    to_string = getattr(value, "to_string", None)
    return to_string() if callable(to_string) else str(value)


def _first_call(run: Callable[[torch.Tensor], torch.Tensor], inputs: tuple[torch.Tensor, ...]) -> float:
    start = time.perf_counter()
    run(inputs[0])
    return _ms(start)


# --- onnxruntime -----------------------------------------------------------------------------------


def build_onnxruntime(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    start = time.perf_counter()
    import onnxruntime as ort

    lib_ms = _ms(start)
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
    for key, value in ORT_SESSION_CONFIG.items():
        options.add_session_config_entry(key, value)
    session = ort.InferenceSession(proto, options, providers=["CPUExecutionProvider"])
    device_ms = _ms(start)
    input_name = session.get_inputs()[0].name
    output_name = session.get_outputs()[0].name

    def run(input_ids: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(session.run([output_name], {input_name: input_ids.numpy()})[0])

    first_ms = _first_call(run, inputs)
    stages = {"lib_import": lib_ms, "onnx_export": export_ms, "session": device_ms, "first_call": first_ms}
    return Built("onnxruntime", run, stages, to_artifact_ms=lib_ms + export_ms,
                 to_runnable_ms=lib_ms + export_ms + device_ms + first_ms, extra={"onnx_bytes": len(proto)})


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
    start = time.perf_counter()  # dynamo's and inductor's imports are part of a user's first call
    with cold_inductor():
        compiled = torch.compile(model, backend="inductor")
        with torch.no_grad():
            compiled(*inputs)
        first_call_ms = _ms(start)

    def run(input_ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return compiled(input_ids)

    return Built("torch.compile", run, {"first_call": first_call_ms}, to_artifact_ms=None,
                 to_runnable_ms=first_call_ms)


# --- torch-mlir ------------------------------------------------------------------------------------


def build_torch_mlir(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    """torch-mlir's FX importer, the peer of Forge's import stage: the steps of
    `torch_mlir.fx.export_and_import(model, *args)` (raw `torch` dialect output), timed one by one:
    torch.export, its default decompositions (`run_decompositions`), `FxImporter.import_frozen_program`,
    then the module printed as MLIR text with the weights elided (as Forge's IR prints them out of
    line). Raises ImportError when torch-mlir is not installed."""
    start = time.perf_counter()
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    from torch_mlir.extras.fx_importer import FxImporter

    lib_ms = _ms(start)
    start = time.perf_counter()
    program = export(model, inputs)
    export_ms = _ms(start)
    start = time.perf_counter()
    program = program.run_decompositions(get_decomposition_table())
    decompose_ms = _ms(start)
    start = time.perf_counter()
    context = ir.Context()
    torch_d.register_dialect(context)
    importer = FxImporter(context=context)
    importer.import_frozen_program(program, func_name="main")
    import_ms = _ms(start)
    start = time.perf_counter()
    text = importer.module.operation.get_asm(large_elements_limit=16, large_resource_limit=16)
    print_ms = _ms(start)
    stages = {"lib_import": lib_ms, "export": export_ms, "decompose": decompose_ms, "import": import_ms,
              "print": print_ms}
    return Built("torch-mlir", None, stages, to_artifact_ms=sum(stages.values()), to_runnable_ms=None,
                 extra={"mlir_chars": len(text), "torch_ops": text.count("torch.aten.")})


# --- eager -----------------------------------------------------------------------------------------


def build_eager(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    def run(input_ids: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return model(input_ids)

    return Built("eager", run, {}, to_artifact_ms=0.0, to_runnable_ms=0.0)


BUILDERS: dict[str, Callable[[torch.nn.Module, tuple[torch.Tensor, ...]], Built]] = {
    "forge": build_forge,
    "openvino": build_openvino,
    "openvino-default": build_openvino_default,
    "onnxruntime": build_onnxruntime,
    "torch.compile": build_torch_compile,
    "torch-mlir": build_torch_mlir,
    "eager": build_eager,
}


def build(system: str, model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> Built:
    """Build `system` after a full garbage collection (outside the clock), in a fresh state.

    Peers build with third-party warnings silenced (their deprecation notices are not results,
    and pytest's `-W error` would turn them into failures); Forge's own warnings stay on.
    """
    gc.collect()
    torch.set_num_threads(THREADS["torch"])
    if system == "forge":
        return build_forge(model, inputs)
    with quiet():
        return BUILDERS[system](model, inputs)


