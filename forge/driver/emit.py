"""The emit stage, shared by `forge.compile`, generation and `forge.load`: a planned `buffer` module and its
weights become a `CompiledNPUExecutor` on a runtime (NNFactory segments, then the device compile, which
charges `device_compile_ms` of the running compile's clock itself). The runtime carries the precision
modes and refuses those it cannot run.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects.builtin import ModuleOp

from forge.driver.compile_errors import CompileError
from forge.driver.report import used_weights
from forge.weights import WeightStore


def runtime_for(options: Any) -> Any:
    """The runtime `options` name (runtime, device, precision, weights, cache_dir); a CompileError for a mode
    the runtime refuses or a runtime nobody registered."""
    from backends.nnfactory.runtime import get_runtime  # lazy: start-up cost (openvino)
    from forge.precision import PrecisionError

    extra = {}
    if getattr(options, "cache_dir", None) and options.runtime == "openvino":  # the other runtimes have no cache
        extra["properties"] = {"CACHE_DIR": str(options.cache_dir)}
    try:  # the runtime carries the precision modes (and refuses those it cannot run)
        modes = {"precision": options.precision, "weights": options.weights}
        if options.activations is not None:  # a runtime registered before the mode existed need not take it
            modes["activations"] = options.activations
        return get_runtime(options.runtime, options.device, **modes, **extra)
    except PrecisionError as err:
        raise CompileError(f"runtime {options.runtime!r}: {err}") from None
    except ValueError as err:  # a runtime name nobody registered (the message lists the registered ones)
        raise CompileError(str(err)) from None


def graph_group(options: Any, one_program: bool = True, top: int | None = None) -> Any:
    """The GraphGroup a model's graphs join: one device program where the runtime makes one (the weights the
    graphs share held once; graph `top`, in the order they join, run on every call outside the program's
    selection), or with `one_program=False` each graph compiled alone."""
    runtime = runtime_for(options)
    if one_program:
        return runtime.graph_group(top)
    from backends.nnfactory.runtime import GraphGroup  # lazy: start-up cost (openvino)

    return GraphGroup(runtime)


def emit_executor(module: ModuleOp, weights: WeightStore, options: Any, states: Any = None, group: Any = None):
    """The executor of `module` for `options` (runtime, device, precision, weights); a CompileError for
    weights still on the meta device or a mode the runtime refuses. `states`: the StateStore the
    executor's state buffers come from (a generator's graphs share one). `group`: a `GraphGroup` the
    segments join (its runtime is used), so graphs of one model hold their shared weights once."""
    from backends.nnfactory.emitter import emit  # lazy: start-up cost (openvino), paid only when emitting
    from backends.nnfactory.executor import CompiledNPUExecutor  # lazy: start-up cost (openvino)

    external = [n for n in sorted(used_weights(module)) if n in weights and not weights.has_data(n)]
    if external:
        raise CompileError(
            f"{len(external)} weight(s) are on the meta device (first: {external[0]!r}): compile the model with "
            "forge.compile_meta(model, args, save_to=..., weights_from=...) and forge.load the artifact"
        )
    rt = group.runtime if group is not None else runtime_for(options)
    program = emit(module, weights, runtime=rt, device=options.device, group=group)
    return CompiledNPUExecutor(program) if states is None else CompiledNPUExecutor(program, states)
