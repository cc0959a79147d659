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

from forge.driver.artifact import CompiledModel
from forge.driver.artifact_files import SAVED_META
from forge.driver.compilation import Compilation, Stage
from forge.driver.compile_errors import CompileError
from forge.driver.options import CompileOptions, Progress
from forge.driver.report import call_report, pass_rows, plan_metrics, used_weights
from forge.driver.stages import EXPORT_IMPORT, INPUTS, LOWER, OPTIMIZE, PLAN
from forge.frontend.fx_importer import ImportedProgram


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
    options = CompileOptions.of(
        pipeline=pipeline,
        disable=tuple(disable),
        device=device,
        runtime=runtime,
        name=name,
        progress=progress,
        lowering=lowering,
        reuse_blocks=reuse_blocks,
    )
    c = Compilation(options, model=model, args=args, kwargs=kwargs)
    c.extras.update(save_to=save_to, weights_from=weights_from)
    c.run(META)
    c.account_wall_clock()  # the save included (in other_ms; save_ms says how much)
    meta_path = c.result / SAVED_META
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "report": c.report}, indent=2))
    return c.result


def _open_weights(c: Compilation) -> None:
    """The safetensors files' headers (a meta model's copy under the cast policy costs nothing)."""
    from forge.frontend.meta_weights import SafetensorsSource, WeightBindError  # lazy: only a meta compile

    try:
        c.extras["source"] = SafetensorsSource.open(c.extras["weights_from"], cast=c.cast is not None)
    except WeightBindError as err:
        raise CompileError(str(err)) from None


def _check_checkpoint(c: Compilation) -> None:
    """Before the passes: a checkpoint that does not fit the model fails fast, naming the tensor and the file."""
    from forge.frontend.meta_weights import WeightBindError, check_external, external_names

    constants = _meta_constants(c.imported)
    if constants:
        store = c.imported.weights
        first = store[constants[0]]
        more = f" (and {len(constants) - 1} more)" if len(constants) > 1 else ""
        raise CompileError(
            f"constant {constants[0]!r} ({str(first.dtype).removeprefix('torch.')} {list(first.shape)}){more} was "
            "created by the model while it was traced, on the meta device, so its values are lost (a traced "
            "constant is no parameter or buffer: no checkpoint holds it); create it on the CPU or compute it "
            "from a buffer (forge.init_empty_weights() keeps buffers real)"
        )
    try:
        check_external(c.weights, c.extras["source"], external_names(c.weights))
    except WeightBindError as err:
        raise CompileError(f"{err}{_meta_buffer_hint(c.imported, c.extras['source'])}") from None


def _save(c: Compilation) -> None:
    from forge.frontend.meta_weights import WeightBindError, external_manifest, external_names

    external = external_names(c.weights, used_weights(c.module))
    try:
        manifest = external_manifest(c.weights, c.extras["source"], external)
    except WeightBindError as err:
        raise CompileError(str(err)) from None
    c.result, c.report = _save_meta_artifact(c, external, manifest)


META = (
    INPUTS,
    Stage("weights files", _open_weights),
    EXPORT_IMPORT,
    Stage("checkpoint check", _check_checkpoint),
    OPTIMIZE,
    LOWER,
    PLAN,
    Stage("save", _save),
)
"""`compile_meta`'s stage list: `compile`'s up to the memory plan, the checkpoint checked, saved instead of emitted."""


def _meta_buffer_hint(imported: ImportedProgram, source) -> str:
    """Why a meta *buffer* is not in the files, when one is the cause (a model built under
    `torch.device("meta")`: its rotary tables and other computed buffers lost their values)."""
    buffers = sorted(
        name
        for name, (kind, _) in imported.weight_sources.items()
        if kind == "BUFFER" and not imported.weights.has_data(name) and name not in source.entries
    )
    if not buffers:
        return ""
    return (
        f"; buffer(s) {', '.join(repr(b) for b in buffers[:3])}{' ...' if len(buffers) > 3 else ''} are on the "
        "meta device: buffers computed at construction are not in checkpoints; build the model under "
        "forge.init_empty_weights(), which keeps buffers real"
    )


def _meta_constants(imported: ImportedProgram) -> list[str]:
    """Lifted *constants* without values: tensors the model created while it was traced (not parameters or
    buffers, so no checkpoint holds them), on the meta device. (An empty one, such as a KV cache's initial
    `torch.tensor([])`, is materialized by the importer and is not among them.)"""
    return sorted(
        name
        for name, (kind, _) in imported.weight_sources.items()
        if kind == "CONSTANT_TENSOR" and not imported.weights.has_data(name)
    )


def _save_meta_artifact(c: Compilation, external: list[str], manifest: Any) -> tuple[Path, dict[str, Any]]:
    """`compile_meta`'s report and saved artifact (no executor: nothing is emitted)."""
    store = c.weights
    report = {
        "model": c.options.name or type(c.model).__name__,
        "runtime": c.options.runtime,
        "device": c.options.device,
        "passes": pass_rows(c.records),
        "ops_imported": c.counts["ops_imported"],
        "ops_optimized": c.counts["ops_optimized"],
        **plan_metrics(c.module),
        "blocks": c.imported.blocks,
        "precision": "f32",
        "weights": "f32",
        "weights_external": len(external),
        "weight_bytes_external": sum(store[n].numel() * store[n].element_size() for n in external),
        **call_report(c.signature, c.cast),
    }
    report["notes"] = [*c.notes, *report.get("notes", [])]
    artifact = CompiledModel(
        None,
        c.module,
        store,
        c.imported.inputs,
        report=report,
        runtime=c.options.runtime,
        device=c.options.device,
        signature=c.signature,
        cast=c.cast,
        external_weights=manifest,
    )
    start = time.perf_counter()
    directory = artifact.save(c.extras["save_to"])
    report["save_ms"] = round((time.perf_counter() - start) * 1e3, 3)
    return directory, report
