"""`forge.compile_meta`: compile a model whose parameters are on the meta device to a saved artifact whose
weights stay in their safetensors files, never allocated (`forge.load` binds them, memory-mapped).

It runs `compile`'s stages up to the memory plan (export, import, passes, lowering, planning: the
shared stage functions) and saves instead of emitting; the checkpoint is checked against the IR's
weights before the passes, so a checkpoint that does not fit fails fast, naming the tensor and the file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from forge.artifact import CompiledModel
from forge.artifact_files import SAVED_META
from forge.context import get_all_passes
from forge.errors import CompileError
from forge.export_import import example_inputs, export_and_import
from forge.frontend.export import cast_policy
from forge.frontend.fx_importer import ImportedProgram
from forge.pass_stages import lower_and_plan, optimize
from forge.report import call_report, count_body_ops, pass_rows, plan_metrics, used_weights
from forge.stage_times import Progress, StageTimes, account_wall_clock, gc_paused
from forge.weights import attach_weights


def compile_meta(
    model: torch.nn.Module,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    *,
    save_to: str | Path,
    weights_from: Any,
    pipeline: Sequence[str] | str | None = None,
    disable: Sequence[str] = (),
    device: str = "CPU",
    runtime: str = "openvino",
    name: str | None = None,
    progress: Progress | None = None,
    lowering: Sequence[str] | str | None = None,
    reuse_blocks: bool = True,
) -> Path:
    """Compile a model whose parameters are on the meta device (`forge.frontend.meta_weights.
    init_empty_weights`) to a saved artifact in `save_to`, its weights referenced in `weights_from`
    (safetensors: a file, a directory of them, or a list), never allocated.

    Export (each repeated block once with `reuse_blocks`), import, passes, lowering and memory planning
    run as in `compile`; passes that need weight values skip the external weights. Each weight the IR
    reads is checked against the files' headers (name, shape, dtype: a CompileError naming the tensor
    and the file). No program is emitted: that needs the values, which `load(save_to)` binds from the
    files (memory-mapped) before it emits. A bf16/f16 model compiles in f32 (the cast policy of
    `compile`), its checkpoint converted when bound. Returns `save_to`; meta.json's report has the
    stage times, `blocks` and the external weights' count and bytes.
    """
    from forge.frontend.meta_weights import (  # lazy: only a meta compile reads safetensors headers
        SafetensorsSource,
        WeightBindError,
        check_external,
        external_manifest,
        external_names,
    )

    start = time.perf_counter()
    args, kwargs = example_inputs(args, kwargs)
    times = StageTimes()
    exported_model, cast = cast_policy(model, args, kwargs, torch.float32)  # a copy of a meta model costs nothing
    try:
        source = SafetensorsSource.open(weights_from, cast=cast is not None)
    except WeightBindError as err:
        raise CompileError(str(err)) from None
    xargs, xkwargs = cast.apply(args, kwargs) if cast is not None else (args, kwargs)
    signature, imported, fallback = export_and_import(
        exported_model, xargs, xkwargs, times, progress, reuse_blocks=reuse_blocks
    )
    if cast is not None:
        signature = signature.retyped(args, kwargs)
    module, store = imported.module, imported.weights
    try:  # before the passes: a checkpoint that does not fit the model fails fast
        check_external(store, source, external_names(store))
    except WeightBindError as err:
        raise CompileError(f"{err}{_meta_buffer_hint(imported, source)}") from None
    attach_weights(module, store)
    ops_imported = count_body_ops(module)
    available = get_all_passes()
    with gc_paused():
        records = optimize(module, times, progress, pipeline=pipeline, disable=disable, available=available)
        ops_optimized = count_body_ops(module)
        lower_and_plan(module, times, progress, lowering=lowering, available=available)
        external = external_names(store, used_weights(module))
        try:
            manifest = external_manifest(store, source, external)
        except WeightBindError as err:
            raise CompileError(str(err)) from None
        directory, report = _save_meta_artifact(
            save_to, model, imported, module, records, ops_imported, ops_optimized, external, manifest,
            runtime=runtime, device=device, name=name, signature=signature, cast=cast, fallback=fallback,
        )
    account_wall_clock(report, times, start)  # the save included (in other_ms; save_ms says how much)
    meta_path = directory / SAVED_META
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "report": report}, indent=2))
    return directory


def _meta_buffer_hint(imported: ImportedProgram, source) -> str:
    """Why a meta *buffer* is not in the files, when one is the cause (a model built under
    `torch.device("meta")`: its rotary tables and other computed buffers lost their values)."""
    buffers = sorted(
        name for name, (kind, _) in imported.weight_sources.items()
        if kind == "BUFFER" and not imported.weights.has_data(name) and name not in source.entries
    )
    if not buffers:
        return ""
    return (
        f"; buffer(s) {', '.join(repr(b) for b in buffers[:3])}{' ...' if len(buffers) > 3 else ''} are on the "
        "meta device: buffers computed at construction are not in checkpoints; build the model under "
        "forge.init_empty_weights(), which keeps buffers real"
    )


def _save_meta_artifact(
    save_to, model, imported, module, records, ops_imported, ops_optimized, external, manifest, *, runtime, device,
    name, signature, cast, fallback,
) -> tuple[Path, dict[str, Any]]:
    """`compile_meta`'s report and saved artifact (no executor: nothing is emitted)."""
    store = imported.weights
    report = {
        "model": name or type(model).__name__, "runtime": runtime, "device": device,
        "passes": pass_rows(records),
        "ops_imported": ops_imported, "ops_optimized": ops_optimized, **plan_metrics(module),
        "blocks": imported.blocks, "precision": "f32", "weights": "f32", "weights_external": len(external),
        "weight_bytes_external": sum(store[n].numel() * store[n].element_size() for n in external),
        **call_report(signature, cast),
    }
    if fallback is not None:
        report["notes"].insert(0, fallback)
    artifact = CompiledModel(None, module, store, imported.inputs, report=report, runtime=runtime, device=device,
                             signature=signature, cast=cast, external_weights=manifest)
    start = time.perf_counter()
    directory = artifact.save(save_to)
    report["save_ms"] = round((time.perf_counter() - start) * 1e3, 3)
    return directory, report
