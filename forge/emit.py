"""The emit stage, shared by `forge.compile` and `forge.load`: a planned `buffer` module and its weights
become a `CompiledNPUExecutor` on a runtime (NNFactory segments, then the device compile), timed into
`emit_ms` and `device_compile_ms`. The runtime carries the precision modes and refuses those it cannot run.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from forge.errors import CompileError
from forge.report import used_weights
from forge.stage_times import Progress, StageTimes, timed
from forge.weights import WeightStore


def emit_executor(
    module: ModuleOp, weights: WeightStore, *, runtime: str, device: str, times: StageTimes, progress: Progress | None,
    precision: str = "f32", weights_mode: str | None = None,
):
    """The executor of `module`; a CompileError for weights still on the meta device or a mode the
    runtime refuses. The whole stage counts in `emit_ms` (importing the backend, creating the runtime:
    Core and device probe, building the segments and the executor), the device compile in `device_compile_ms`."""
    return timed(
        "emit NNFactory segments", times, "emit_ms", progress,
        lambda: _emit(module, weights, runtime=runtime, device=device, times=times, precision=precision,
                      weights_mode=weights_mode),
    )


def _emit(module, weights, *, runtime, device, times, precision, weights_mode):
    from backends.nnfactory.emitter import emit  # lazy: start-up cost (openvino), paid only when emitting
    from backends.nnfactory.executor import CompiledNPUExecutor  # lazy: start-up cost (openvino)
    from backends.nnfactory.runtime import get_runtime  # lazy: start-up cost (openvino)
    from forge.precision import PrecisionError

    external = [n for n in sorted(used_weights(module)) if n in weights and not weights.has_data(n)]
    if external:
        raise CompileError(
            f"{len(external)} weight(s) are on the meta device (first: {external[0]!r}): compile the model with "
            "forge.compile_meta(model, args, save_to=..., weights_from=...) and forge.load the artifact"
        )
    try:  # the runtime carries the precision modes (and refuses those it cannot run)
        rt = get_runtime(runtime, device, precision=precision, weights=weights_mode)
    except PrecisionError as err:
        raise CompileError(f"runtime {runtime!r}: {err}") from None
    program = emit(module, weights, runtime=rt, device=device)
    times.device_compile_ms += program.compile_ms
    times.emit_ms -= program.compile_ms  # the device compile ran inside the emit timer
    return CompiledNPUExecutor(program)
