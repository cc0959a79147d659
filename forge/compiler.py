"""The model compiler: `forge.compile(model, args, kwargs)` runs every stage and reports each one.

    export → import (aten) → optimization passes → lower to npuir → schedule → lower to buffer
           → emit NNFactory segments → device compile → CompiledNPUExecutor

Inputs and outputs are torch.export's (forge/frontend/export.py): `args` and `kwargs` are the example
inputs, the compiled model is called as the model is (`compiled(*args, **kwargs)`, checked against the
recorded in-spec) and returns the model's own structure (tensor, tuple, dict, `transformers` ModelOutput,
KV cache); `dynamic_shapes` hands over to `forge.dynamic.compile_dynamic`. A bf16/f16 model compiles in
float32 (numpy, and so the runtime API, cannot hold bfloat16): its weights and float inputs are cast up,
its float outputs cast back, and `report["cast_policy"]` says so.

Every stage is timed, every pass is recorded through the pipeline's instrumentation hook, and
the result carries a report dict (the `forge compile --report` JSON) with the numbers a
researcher compares across runs; its stages add up to `total_ms` (`other_ms`: the rest of the wall
clock). Nothing here decides how a stage works; it only sequences them. The stages live beside it:
forge/export_import.py (export and import, block reuse, the cache-free retry), forge/pass_stages.py
(passes, lowering, memory planning), forge/emit.py (the program), forge/report.py and forge/parity.py
(what the report says), forge/stage_times.py (the stage clock), forge/artifact.py (`CompiledModel`,
`save`, `load`); forge/meta_compile.py is `compile_meta`, the same stages saved instead of emitted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch

from forge.artifact import CompiledModel
from forge.context import get_all_passes
from forge.emit import emit_executor
from forge.errors import CompileError
from forge.export_import import example_inputs, export_and_import
from forge.frontend.export import cast_policy
from forge.frontend.fx_importer import ImportedProgram
from forge.parity import measure_parity
from forge.pass_stages import lower_and_plan, optimize
from forge.report import call_report, compile_report, count_body_ops, count_ops_named
from forge.stage_times import Progress, StageTimes, account_wall_clock, gc_frozen, gc_paused
from forge.weights import attach_weights


def compile(
    model: torch.nn.Module,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    dynamic_shapes: Any = None,
    *,
    pipeline: Sequence[str] | str | None = None,
    disable: Sequence[str] = (),
    device: str = "CPU",
    runtime: str = "openvino",
    dtype: torch.dtype = torch.float32,
    check: bool = False,
    name: str | None = None,
    keep_stages: bool = False,
    progress: Progress | None = None,
    lowering: Sequence[str] | str | None = None,
    precision: str = "f32",
    weights: str | None = None,
    accuracy: int | None = None,
    buckets: Sequence[int] | None = None,
    pad_values: dict[str, float] | None = None,
    reuse_blocks: bool = True,
) -> CompiledModel:
    """Compile `model` for the static shapes of its example inputs; see the module docstring.

    `reuse_blocks` (default on): trace, import and stitch one representative per distinct repeated block
    (forge/frontend/blocks.py: only where every instance is proven to trace alike; otherwise, or on any
    failure, the whole model is exported as usual); `report["blocks"]` = {distinct, instances, reused}.

    `args`, `kwargs` and `dynamic_shapes` mean what they mean to `torch.export.export` (the example
    positional and keyword inputs; `dynamic_shapes` not None: `forge.dynamic.compile_dynamic`, which
    compiles shape buckets (`buckets`: their lengths, `pad_values`: what each named input is padded
    with; see forge/dynamic.py) and returns a `DynamicCompiledModel`). The
    result is called as the model is and returns its output structure. `dtype` is the compute dtype
    of the compiled graph: floating weights and inputs of another dtype (a bf16/f16 model) are cast to
    it on a copy of the model (the model itself is not changed) and float outputs cast back.

    `precision` (f32, bf16, f16) and `weights` (None, int8, int4: weight-only quantization) are the
    reduced-precision modes of `forge.precision`; `accuracy=N` adds `report["accuracy"]`: the mode
    against eager f32 on N seeded inputs (`forge.precision.evaluate_accuracy`, 100 is the fixed set).
    """
    if dynamic_shapes is not None:
        from forge.dynamic import compile_dynamic  # lazy: only for dynamic shapes

        return compile_dynamic(
            model, tuple(args), dict(kwargs or {}), dynamic_shapes, static_compile=compile, pipeline=pipeline,
            disable=disable, device=device, runtime=runtime, dtype=dtype, check=check, name=name,
            keep_stages=keep_stages, progress=progress, lowering=lowering, precision=precision, weights=weights,
            accuracy=accuracy, buckets=buckets, pad_values=pad_values,
        )
    if buckets is not None or pad_values is not None:
        raise CompileError("buckets= and pad_values= need dynamic_shapes= (they shape the dynamic compile's buckets)")
    start = time.perf_counter()
    modes = _check_modes(precision, weights, accuracy)
    args, kwargs = example_inputs(args, kwargs)
    if accuracy and kwargs:  # forge.precision.evaluate_accuracy draws positional inputs only
        raise CompileError("accuracy= measures models called with positional inputs; drop kwargs= or accuracy=")
    exported_model, cast = cast_policy(model, args, kwargs, dtype)
    xargs, xkwargs = cast.apply(args, kwargs) if cast is not None else (args, kwargs)
    times = StageTimes()
    with gc_frozen():
        signature, imported, fallback = export_and_import(
            exported_model, xargs, xkwargs, times, progress, reuse_blocks=reuse_blocks
        )
    if cast is not None:
        signature = signature.retyped(args, kwargs)
    with gc_paused():
        result = _compile_imported(
            exported_model, xargs, imported, times, pipeline=pipeline, disable=disable, device=device,
            runtime=runtime, name=name, keep_stages=keep_stages, progress=progress,
            lowering=lowering, modes=modes, signature=signature, cast=cast,
        )
    if fallback is not None:
        result.report["notes"].insert(0, fallback)
    result.report["blocks"] = imported.blocks
    if check:
        check_start = time.perf_counter()
        result.report["parity"] = measure_parity(exported_model, result, args, kwargs)
        times.check_ms = (time.perf_counter() - check_start) * 1e3
    account_wall_clock(result.report, times, start)
    return result


def compile_imported(
    model: torch.nn.Module,
    example_args: Sequence[torch.Tensor],
    imported: ImportedProgram,
    *,
    device: str = "CPU",
    runtime: str = "openvino",
    name: str | None = None,
) -> CompiledModel:
    """`compile` of a program already exported and imported (its module is consumed: the passes
    rewrite it in place). For callers that also run the imported IR, e.g. the coverage harness."""
    times = StageTimes(export_ms=imported.export_ms, import_ms=imported.import_ms)
    with gc_paused():
        return _compile_imported(
            model.eval(), tuple(example_args), imported, times, pipeline=None, disable=(), device=device,
            runtime=runtime, name=name, keep_stages=False, progress=None,
        )


def _check_modes(precision: str, weights: str | None, accuracy: int | None) -> dict[str, Any]:
    """The precision options, validated (a CompileError naming the option and the valid values)."""
    from forge.precision import PrecisionError, check_precision, check_weights

    try:
        modes = {"precision": check_precision(precision), "weights": check_weights(weights)}
    except PrecisionError as err:
        raise CompileError(str(err)) from None
    if accuracy is not None and (not isinstance(accuracy, int) or isinstance(accuracy, bool) or accuracy < 1):
        raise CompileError(f"accuracy: expected a number of sequences >= 1, got {accuracy!r}")
    modes["accuracy"] = accuracy
    return modes


def _compile_imported(
    model, example_args, imported, times, *, pipeline, disable, device, runtime, name, keep_stages, progress,
    lowering=None, modes=None, signature=None, cast=None,
) -> CompiledModel:
    """Everything after import: passes, lowering (`lowering` overrides the aten → npuir →
    schedule part, e.g. with affinity options), emission, device compile, report."""
    module = imported.module
    attach_weights(module, imported.weights)
    ops_imported = count_body_ops(module)
    available = get_all_passes()  # once per compile: reading the plug-in entry points costs ~30 ms
    stages: dict[str, str] = {}
    kept = stages if keep_stages else None
    records = optimize(module, times, progress, pipeline=pipeline, disable=disable, available=available, stages=kept)
    ops_optimized = count_body_ops(module)
    fused_attention = count_ops_named(module, "aten.scaled_dot_product_attention")
    lower_and_plan(module, times, progress, lowering=lowering, available=available, stages=kept)
    modes = modes or {"precision": "f32", "weights": None, "accuracy": None}
    executor = emit_executor(
        module, imported.weights, runtime=runtime, device=device, times=times, progress=progress,
        precision=modes["precision"], weights_mode=modes["weights"],
    )
    result = CompiledModel(
        executor, module, imported.weights, imported.inputs, runtime=runtime, device=device, stages=stages,
        signature=signature, cast=cast,
    )
    result.report = compile_report(
        name or type(model).__name__, imported, records, times, module, executor,
        ops_imported=ops_imported, ops_optimized=ops_optimized, fused_attention=fused_attention,
        runtime=runtime, device=device,
    )
    result.report.update(call_report(signature, cast))
    result.report.update(
        precision=modes["precision"], weights=modes["weights"] or "f32",
        runtime_config=executor.program.runtime.config(),
    )
    if modes["accuracy"]:
        from forge.precision import accuracy_report  # lazy: only when accuracy is measured

        runs_as = result.report["runtime_config"].get("runs_as", modes["precision"])  # bounds of what ran
        result.report["accuracy"] = accuracy_report(
            model, result, example_args, runs_as, modes["weights"], sequences=modes["accuracy"]
        )
    return result


# --- torch.compile(model, backend="forge") ---------------------------------------------------------


def dynamo_backend(graph_module: torch.fx.GraphModule, example_inputs: list[torch.Tensor], **options: Any):
    """A `torch.compile` backend: re-export Dynamo's graph to ATen and compile it with Forge.

    Registered under the entry point group `torch_dynamo_backends` as `forge`. Dynamo passes the
    model's parameters as graph inputs; they are baked back in as weights (inference: fixed at
    compile time), so they become constants of the NPU segments. Options passed with
    `torch.compile(..., options={...})` go to `forge.compile` (e.g. runtime, device).
    """
    is_param = [isinstance(t, torch.nn.Parameter) for t in example_inputs]
    module = _BakedParameters(graph_module, example_inputs, is_param)
    inputs = tuple(t for t, p in zip(example_inputs, is_param, strict=True) if not p)
    compiled = compile(module, inputs, name="torch.compile graph", **options)

    def run(*args: torch.Tensor):
        out = compiled(*(a for a, p in zip(args, is_param, strict=True) if not p))
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    run.forge_compiled = compiled
    return run


class _BakedParameters(torch.nn.Module):
    """Dynamo's graph with its parameter inputs held as parameters, the rest as inputs."""

    def __init__(self, graph_module: torch.fx.GraphModule, example_inputs: list[torch.Tensor], is_param: list[bool]):
        super().__init__()
        self.graph_module = graph_module
        self.is_param = is_param
        self.params = torch.nn.ParameterList([t for t, p in zip(example_inputs, is_param, strict=True) if p])

    def forward(self, *inputs: torch.Tensor):
        params, user = iter(self.params), iter(inputs)
        args = [next(params) if p else next(user) for p in self.is_param]
        return self.graph_module(*args)
