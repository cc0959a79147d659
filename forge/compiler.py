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
clock). Nothing here decides how a stage works; it only sequences them.
"""

from __future__ import annotations

import gc
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline

from forge.analysis import metrics
from forge.analysis.dominance import verify_module
from forge.context import get_all_passes, make_context
from forge.diagnostics import one_line
from forge.frontend.errors import ImportError_
from forge.frontend.export import CallError, CallSignature, CastPolicy, ExportError, cast_policy, export_model
from forge.frontend.fx_importer import ImportedProgram, InputSpec, import_program
from forge.pipeline import PassRecord, PipelineRunner
from forge.pipelines import DEFAULT_PIPELINE, LOWER_TO_NPUIR, PLAN_MEMORY
from forge.weights import WeightsError, WeightStore, attach_weights

Progress = Callable[[str], None]


class CompileError(Exception):
    """A user-facing compilation failure, naming the stage that failed."""


@dataclass
class StageTimes:
    export_ms: float = 0.0
    decompose_ms: float = 0.0
    import_ms: float = 0.0
    passes_ms: float = 0.0
    lower_ms: float = 0.0
    emit_ms: float = 0.0
    device_compile_ms: float = 0.0
    check_ms: float = 0.0


STAGE_KEYS = (
    "export_ms", "decompose_ms", "import_ms", "passes_ms", "lower_ms", "emit_ms", "device_compile_ms", "check_ms",
)
"""The report's named stages; with `other_ms` (the rest of the wall clock) they add up to `total_ms`."""


@dataclass
class CompiledModel:
    """A compiled model: callable like the original, with `.report` and `.save(dir)`."""

    executor: Any
    buffer_module: ModuleOp
    weights: WeightStore
    inputs: list[InputSpec]
    report: dict[str, Any] = field(default_factory=dict)
    runtime: str = "openvino"
    device: str = "CPU"
    stages: dict[str, str] = field(default_factory=dict)
    """Printed IR after optimization (`aten`), scheduling (`npuir`) and planning (`buffer`),
    when compiled with `keep_stages=True`."""
    signature: CallSignature | None = None
    """How the model is called and what it returns (None: a program compiled from an import, called
    with its positional tensors)."""
    cast: CastPolicy | None = None
    external_weights: dict[str, Any] | None = None
    """The manifest of the weights bound from safetensors files at load time (`compile_meta`): saved
    in meta.json instead of their data (forge/frontend/meta_weights.py)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run as the model runs: the same arguments (checked against the compiled ones), the same
        output structure; a reduced-precision model's float outputs come back in its dtype."""
        return self.run(args, kwargs)

    def run(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None, *, cast_back: bool = True) -> Any:
        """`__call__` with the arguments as a tuple and a dict (`cast_back=False`: outputs in the compute dtype)."""
        if self.signature is None:
            if kwargs:
                raise CallError(f"this compiled program takes positional inputs only, got keyword(s) {sorted(kwargs)}")
            _check_inputs(self.inputs, args)
            outputs = self.executor(*args)
            return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs
        tensors = self.signature.flatten(tuple(args), kwargs)
        tensors = [t if t.dtype == s.dtype else t.to(s.dtype) for t, s in zip(tensors, self.inputs, strict=True)]
        outputs = self.executor(*tensors)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if self.cast is not None and cast_back:
            outputs = self.cast.restore(outputs)
        return self.signature.unflatten(outputs)

    def save(self, directory: str | Path) -> Path:
        """Write the buffer-level IR, its weights and the plan's metadata to `directory`.

        meta.json records the call signature (input names and structure, the output TreeSpec) and the
        cast policy, so the loaded model is called and returns as this one; and the SHA-256 of the IR
        and weights files: `load` refuses changed files (a flipped weight byte is otherwise
        invisible); drop its "files" entry to load edited IR. External weights (`compile_meta`) are
        referenced by their manifest, not copied.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / SAVED_IR).write_text(str(self.buffer_module))
        external = set(self.external_weights["tensors"]) if self.external_weights else set()
        self.weights.subset(_used_weights(self.buffer_module) - external).save(directory / SAVED_WEIGHTS)
        meta = {
            "format": SAVED_FORMAT,
            "runtime": self.runtime,
            "device": self.device,
            "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": str(s.dtype)} for s in self.inputs],
            **({"call": self.signature.to_json()} if self.signature is not None else {}),
            **({"cast": self.cast.to_json()} if self.cast is not None else {}),
            **({"external_weights": self.external_weights} if self.external_weights else {}),
            "files": {name: _sha256(directory / name) for name in (SAVED_IR, SAVED_WEIGHTS)},
            "report": self.report,
        }
        (directory / "meta.json").write_text(json.dumps(meta, indent=2))
        return directory


def _check_inputs(specs: Sequence[InputSpec], args: Sequence[Any]) -> None:
    """Static shapes are part of the compiled program: say which input differs, and how."""
    if len(args) != len(specs):
        raise ValueError(f"expected {len(specs)} input(s) ({', '.join(s.name for s in specs)}), got {len(args)}")
    for spec, arg in zip(specs, args, strict=True):
        if not isinstance(arg, torch.Tensor) or tuple(arg.shape) != spec.shape or arg.dtype != spec.dtype:
            got = f"{arg.dtype} {tuple(arg.shape)}" if isinstance(arg, torch.Tensor) else type(arg).__name__
            raise ValueError(
                f"input '{spec.name}' was compiled for {spec.dtype} {spec.shape}, got {got} "
                "(Forge compiles static shapes; recompile for a new shape)"
            )


# --- stages ----------------------------------------------------------------------------------------


def parse_pipeline(
    spec: Sequence[str] | str, disable: Sequence[str] = (), available: dict[str, Any] | None = None
) -> tuple[list[ModulePass], list[str]]:
    """Pass instances and their spellings for a pipeline spec, without the disabled passes
    (`available`: the pass registry, `get_all_passes()` unless given)."""
    text = spec if isinstance(spec, str) else ",".join(spec)
    available = get_all_passes() if available is None else available
    unknown = sorted(set(disable) - set(available))
    if unknown:
        raise CompileError(f"--disable names unknown pass(es): {', '.join(unknown)}")
    try:
        passes = list(PassPipeline.parse_spec(available, text).passes)
    except Exception as err:  # xDSL reports unknown passes and bad options as assorted errors
        raise CompileError(f"invalid pass pipeline '{text}': {err}") from None
    kept = [p for p in passes if p.name not in set(disable)]
    return kept, [str(p.pipeline_pass_spec()) for p in kept]


def run_passes(
    module: ModuleOp, spec: Sequence[str] | str, disable: Sequence[str] = (), available: dict[str, Any] | None = None
) -> list[PassRecord]:
    """Run a pipeline on `module` in place through the instrumented runner."""
    passes, names = parse_pipeline(spec, disable, available)
    runner = PipelineRunner(make_context(), passes, names=names)
    return runner.run(module)


@contextmanager
def _gc_paused():
    """No garbage collection inside the compiler's stages.

    torch.export leaves millions of objects behind; a generation-2 collection that happens to
    fall inside a pass then adds ~1 s to that pass's time (seen: cse 33 ms -> 1,124 ms on
    GPT-2). Freeze what exists and pause collection while compiling. No collection up front:
    walking export's leftovers cost 470-790 ms per compile (bench/compile_time.py's profile);
    the garbage is collected after the compile, outside its timed stages.
    """
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()  # what the stages allocated joins the frozen objects: unfrozen, all go to the oldest
        gc.unfreeze()  # generation unscanned (left young, the first allocation after enable scanned them: ~50 ms)
        if was_enabled:
            gc.enable()


@contextmanager
def _gc_frozen():
    """Collections during export and import scan only what they allocate: the objects that existed before
    (the model, torch, the imported libraries: ~0.4 M for GPT-2) are frozen, so a full collection falling
    in export or import (200-600 ms on GPT-2 12L) does not walk them again. Unfrozen afterwards."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _timed(stage: str, times: StageTimes, attr: str, progress: Progress | None, fn: Callable[[], Any]) -> Any:
    if progress is not None:
        progress(stage)
    start = time.perf_counter()
    try:
        return fn()
    finally:
        setattr(times, attr, getattr(times, attr) + (time.perf_counter() - start) * 1e3)


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
    args, kwargs = _example_inputs(args, kwargs)
    if accuracy and kwargs:  # forge.precision.evaluate_accuracy draws positional inputs only
        raise CompileError("accuracy= measures models called with positional inputs; drop kwargs= or accuracy=")
    exported_model, cast = cast_policy(model, args, kwargs, dtype)
    xargs, xkwargs = cast.apply(args, kwargs) if cast is not None else (args, kwargs)
    times = StageTimes()
    with _gc_frozen():
        signature, imported, fallback = _export_and_import(
            exported_model, xargs, xkwargs, times, progress, reuse_blocks=reuse_blocks
        )
    if cast is not None:
        signature = signature.retyped(args, kwargs)
    with _gc_paused():
        result = _compile_imported(
            exported_model, xargs, imported, times, pipeline=pipeline, disable=disable, device=device,
            runtime=runtime, check=False, name=name, keep_stages=keep_stages, progress=progress,
            lowering=lowering, modes=modes, signature=signature, cast=cast,
        )
    if fallback is not None:
        result.report["notes"].insert(0, fallback)
    result.report["blocks"] = imported.blocks
    if check:
        check_start = time.perf_counter()
        result.report["parity"] = measure_parity(exported_model, result, args, kwargs)
        times.check_ms = (time.perf_counter() - check_start) * 1e3
    _account_wall_clock(result.report, times, start)
    return result


def _example_inputs(args: Any, kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """torch.export's forms: args a tuple (a list is taken as one), kwargs a dict of str keys."""
    if isinstance(args, torch.Tensor):
        raise CompileError("args: expected a tuple of example inputs, got a tensor (write (x,) for one input)")
    if not isinstance(args, (tuple, list)):
        raise CompileError(f"args: expected a tuple of example inputs, got {type(args).__name__}")
    if kwargs is not None and (not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs)):
        raise CompileError(f"kwargs: expected a dict of keyword inputs by name, got {type(kwargs).__name__}")
    return tuple(args), dict(kwargs or {})


def _export(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]):
    try:
        program, signature, _ = export_model(model, args, kwargs)
    except ExportError as err:
        raise CompileError(str(err)) from err
    return program, signature


def _export_and_import(model, args, kwargs, times: StageTimes, progress: Progress | None, reuse_blocks=False):
    """Export and import; a `transformers` model whose default (cache-returning) forward fails is
    compiled as its cache-free forward, `use_cache=False` (a default of the call, and a note).
    `reuse_blocks`: each distinct repeated block traced once (forge/frontend/blocks.py), else as usual."""

    def once(call_kwargs):
        reused, off = _reusing_blocks(model, args, call_kwargs, times, progress) if reuse_blocks else (None, "off")
        if reused is not None:
            return reused
        program, signature = _timed(
            "torch.export", times, "export_ms", progress, lambda: _export(model, args, call_kwargs)
        )
        imported = _timed("import (aten)", times, "import_ms", progress, lambda: import_program(program))
        times.decompose_ms += imported.decompose_ms
        times.import_ms -= imported.decompose_ms
        imported.blocks = {"distinct": 0, "instances": 0, "reused": 0, "off": off}
        return signature, imported

    try:
        signature, imported = once(kwargs)
        return signature, imported, None
    except (CompileError, ImportError_) as err:
        if not _may_drop_cache(model, kwargs):
            raise
        why = one_line(str(err))
    signature, imported = once({**kwargs, "use_cache": False})
    note = (
        f"the cache-returning forward (use_cache default) did not compile ({why}); compiled the cache-free "
        "forward: use_cache=False is a default of the call"
    )
    return replace(signature, defaults={"use_cache": False}), imported, note


def _reusing_blocks(model, args, kwargs, times: StageTimes, progress: Progress | None):
    """(signature, imported) exported and imported with block reuse, or (None, why not): the caller exports
    the whole model (the time spent counts as export)."""
    from forge.frontend.blocks import export_and_import

    if progress is not None:
        progress("torch.export (reusing blocks)")
    start = time.perf_counter()
    try:
        signature, imported = export_and_import(model, args, kwargs)
    except Exception as err:  # not provably sound, or the skeleton failed: the whole export decides
        times.export_ms += (time.perf_counter() - start) * 1e3
        return None, f"{type(err).__name__}: {one_line(str(err))}"
    times.export_ms += imported.export_ms
    times.decompose_ms += imported.decompose_ms
    times.import_ms += (time.perf_counter() - start) * 1e3 - imported.export_ms - imported.decompose_ms
    return (signature, imported), None


def _may_drop_cache(model: torch.nn.Module, kwargs: dict[str, Any]) -> bool:
    """A transformers model called without use_cache, whose forward takes it."""
    import inspect

    if "use_cache" in kwargs or not any(c.__module__.startswith("transformers.") for c in type(model).__mro__):
        return False
    try:
        return "use_cache" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _account_wall_clock(report: dict[str, Any], times: StageTimes, start: float) -> None:
    """The stages' ms and `other_ms` (lazy imports, set-up, the report: the rest of the wall clock),
    which add up to `total_ms`. The wall clock includes the import of this module by the first
    `forge.compile` access, which happens before `compile` starts (`lazy_import_ms`, in `other_ms`)."""
    import forge

    before = forge.take_import_ms()
    report["lazy_import_ms"] = round(before, 3)
    for key in STAGE_KEYS:
        report[key] = round(getattr(times, key), 3)
    total = (time.perf_counter() - start) * 1e3 + before
    report["total_ms"] = round(total, 3)
    report["other_ms"] = round(total - sum(getattr(times, key) for key in STAGE_KEYS), 3)


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
    with _gc_paused():
        return _compile_imported(
            model.eval(), tuple(example_args), imported, times, pipeline=None, disable=(), device=device,
            runtime=runtime, check=False, name=name, keep_stages=False, progress=None,
        )


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
    from forge.frontend.meta_weights import (
        SafetensorsSource,
        WeightBindError,
        check_external,
        external_manifest,
        external_names,
    )

    start = time.perf_counter()
    args, kwargs = _example_inputs(args, kwargs)
    times = StageTimes()
    exported_model, cast = cast_policy(model, args, kwargs, torch.float32)  # a copy of a meta model costs nothing
    try:
        source = SafetensorsSource.open(weights_from, cast=cast is not None)
    except WeightBindError as err:
        raise CompileError(str(err)) from None
    xargs, xkwargs = cast.apply(args, kwargs) if cast is not None else (args, kwargs)
    signature, imported, fallback = _export_and_import(
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
    ops_imported = _count_body_ops(module)
    available = get_all_passes()
    with _gc_paused():
        spec = pipeline if pipeline is not None else DEFAULT_PIPELINE
        records = _timed("optimization passes", times, "passes_ms", progress,
                         lambda: run_passes(module, spec, disable, available))
        ops_optimized = _count_body_ops(module)
        lower_spec = lowering if lowering is not None else LOWER_TO_NPUIR
        _timed("lowering to npuir", times, "lower_ms", progress, lambda: run_passes(module, lower_spec, (), available))
        _timed("memory planning", times, "lower_ms", progress, lambda: run_passes(module, PLAN_MEMORY, (), available))
        external = external_names(store, _used_weights(module))
        try:
            manifest = external_manifest(store, source, external)
        except WeightBindError as err:
            raise CompileError(str(err)) from None
        directory, report = _save_meta_artifact(
            save_to, model, imported, module, records, ops_imported, ops_optimized, external, manifest,
            runtime=runtime, device=device, name=name, signature=signature, cast=cast, fallback=fallback,
        )
    _account_wall_clock(report, times, start)  # the save included (in other_ms; save_ms says how much)
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
        "passes": [{"name": r.name, "ms": round(r.wall_ms, 3), "fired": dict(r.fired)} for r in records],
        "ops_imported": ops_imported, "ops_optimized": ops_optimized, **_plan_metrics(module),
        "blocks": imported.blocks, "precision": "f32", "weights": "f32", "weights_external": len(external),
        "weight_bytes_external": sum(store[n].numel() * store[n].element_size() for n in external),
        **_call_report(signature, cast),
    }
    if fallback is not None:
        report["notes"].insert(0, fallback)
    artifact = CompiledModel(None, module, store, imported.inputs, report=report, runtime=runtime, device=device,
                             signature=signature, cast=cast, external_weights=manifest)
    start = time.perf_counter()
    directory = artifact.save(save_to)
    report["save_ms"] = round((time.perf_counter() - start) * 1e3, 3)
    return directory, report


def _used_weights(module: ModuleOp) -> set[str]:
    """The names of the weights the IR reads (`aten.weight`, `npuir.weight`, `buffer.weight`)."""
    return {op.properties["name"].data for op in module.walk() if op.name.endswith(".weight")}


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
    model, example_args, imported, times, *, pipeline, disable, device, runtime, check, name, keep_stages, progress,
    lowering=None, modes=None, signature=None, cast=None,
) -> CompiledModel:
    """Everything after import: passes, lowering (`lowering` overrides the aten → npuir →
    schedule part, e.g. with affinity options), emission, device compile, report."""
    module = imported.module
    attach_weights(module, imported.weights)
    ops_imported = _count_body_ops(module)
    spec = pipeline if pipeline is not None else DEFAULT_PIPELINE
    available = get_all_passes()  # once per compile: reading the plug-in entry points costs ~30 ms
    records = _timed(
        "optimization passes", times, "passes_ms", progress, lambda: run_passes(module, spec, disable, available)
    )
    ops_optimized = _count_body_ops(module)
    fused_attention = _count_ops_named(module, "aten.scaled_dot_product_attention")
    stages: dict[str, str] = {}
    if keep_stages:
        stages["aten"] = str(module)
    lower_spec = lowering if lowering is not None else LOWER_TO_NPUIR
    _timed("lowering to npuir", times, "lower_ms", progress, lambda: run_passes(module, lower_spec, (), available))
    if keep_stages:
        stages["npuir"] = str(module)
    _timed("memory planning", times, "lower_ms", progress, lambda: run_passes(module, PLAN_MEMORY, (), available))
    if keep_stages:
        stages["buffer"] = str(module)
    modes = modes or {"precision": "f32", "weights": None, "accuracy": None}
    compiled = _emit(
        module, imported.weights, runtime=runtime, device=device, times=times, progress=progress,
        precision=modes["precision"], weights_mode=modes["weights"],
    )
    result = CompiledModel(
        compiled, module, imported.weights, imported.inputs, runtime=runtime, device=device, stages=stages,
        signature=signature, cast=cast,
    )
    result.report = _report(
        name or type(model).__name__, imported, records, times, module, compiled,
        ops_imported=ops_imported, ops_optimized=ops_optimized, fused_attention=fused_attention,
        runtime=runtime, device=device,
    )
    result.report.update(_call_report(signature, cast))
    result.report.update(
        precision=modes["precision"], weights=modes["weights"] or "f32",
        runtime_config=compiled.program.runtime.config(),
    )
    if check:
        result.report["parity"] = measure_parity(model, result, example_args)
    if modes["accuracy"]:
        from forge.precision import accuracy_report

        result.report["accuracy"] = accuracy_report(
            model, result, example_args, modes["precision"], modes["weights"], sequences=modes["accuracy"]
        )
    return result


def _emit(
    module: ModuleOp, weights: WeightStore, *, runtime: str, device: str, times: StageTimes, progress: Progress | None,
    precision: str = "f32", weights_mode: str | None = None,
):
    from backends.nnfactory.emitter import emit  # lazy: start-up cost (openvino), paid only when emitting
    from backends.nnfactory.executor import CompiledNPUExecutor  # lazy: start-up cost (openvino)
    from backends.nnfactory.runtime import get_runtime  # lazy: start-up cost (openvino)
    from forge.precision import PrecisionError

    external = [n for n in sorted(_used_weights(module)) if n in weights and not weights.has_data(n)]
    if external:
        raise CompileError(
            f"{len(external)} weight(s) are on the meta device (first: {external[0]!r}): compile the model with "
            "forge.compile_meta(model, args, save_to=..., weights_from=...) and forge.load the artifact"
        )
    try:  # the runtime carries the precision modes (and refuses those it cannot run)
        rt = get_runtime(runtime, device, precision=precision, weights=weights_mode)
    except PrecisionError as err:
        raise CompileError(f"runtime {runtime!r}: {err}") from None
    program = _timed(
        "emit NNFactory segments", times, "emit_ms", progress,
        lambda: emit(module, weights, runtime=rt, device=device),
    )
    times.device_compile_ms += program.compile_ms
    times.emit_ms -= program.compile_ms
    return CompiledNPUExecutor(program)


def _count_body_ops(module: ModuleOp) -> int:
    """Ops inside functions (what a graph has), not counting the module/func wrappers."""
    return sum(1 for op in module.walk() if op.name not in ("builtin.module", "func.func", "func.return"))


def _count_ops_named(module: ModuleOp, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def _report(model_name, imported, records, times, module, executor, **fields) -> dict[str, Any]:
    program = executor.program
    return {
        "model": model_name,
        "runtime": fields["runtime"],
        "device": fields["device"],
        "export_ms": round(times.export_ms, 3),
        "import_ms": round(times.import_ms, 3),
        "passes": [
            {
                "name": r.name,
                "ms": round(r.wall_ms, 3),
                "ops_before": r.ops_before,
                "ops_after": r.ops_after,
                "fired": dict(r.fired),
            }
            for r in records
        ],
        "passes_ms": round(times.passes_ms, 3),
        "lower_ms": round(times.lower_ms, 3),
        "emit_ms": round(times.emit_ms, 3),
        "device_compile_ms": round(times.device_compile_ms, 3),
        "ops_imported": fields["ops_imported"],
        "ops_optimized": fields["ops_optimized"],
        "fused_attention": fields["fused_attention"],
        **_plan_metrics(module),
        **cpu_steps(module),
        "segments": len(program.segments),
        "weights": len(imported.weights),
        "weight_bytes": imported.weights.nbytes,
    }


def _call_report(signature: CallSignature | None, cast: CastPolicy | None) -> dict[str, Any]:
    """What the inputs were (names, shapes, dtypes, positional or keyword), the output structure,
    the cast policy, and one-line notes on how the model's call was compiled."""
    if signature is None:
        return {"cast_policy": cast.to_json() if cast is not None else None}
    notes = []
    caches = sorted({t.__name__ for t in _spec_types(signature.out_spec) if "Cache" in t.__name__})
    if caches:
        notes.append(
            f"the model returns its KV cache ({', '.join(caches)}, use_cache default): its key/value tensors are "
            "outputs, returned as the same cache type; pass kwargs={'use_cache': False} to compile without them"
        )
    if cast is not None:
        notes.append(cast.note())
    return {
        "inputs": signature.describe(),
        "outputs": signature.output_structure(),
        "cast_policy": cast.to_json() if cast is not None else None,
        "notes": notes,
    }


def _spec_types(spec: pytree.TreeSpec) -> list[type]:
    if spec is None or spec.is_leaf():
        return []
    return [spec.type, *(t for child in spec.children() for t in _spec_types(child))]


def _plan_metrics(module: ModuleOp) -> dict[str, int]:

    summary = metrics.report(module)
    return {
        "vregs": summary["plan"]["vregs"],
        "buffers": summary["buffers"],
        "peak_bytes_naive": summary["peak_bytes_naive"],
        "peak_bytes_planned": summary["peak_bytes_planned"],
        "peak_bytes_lower_bound": summary["plan"]["peak_bytes_lower_bound"],
        "transitions_before": summary["schedule"]["transitions_before"],
        "transitions_after": summary["schedule"]["transitions_after"],
    }


def cpu_steps(module: ModuleOp) -> dict[str, Any]:
    """What runs on the CPU after lowering, read off the buffer IR's `buffer.exec` steps.

    `cpu_fallback`: {aten op name: count} of the `aten` kind (an op with no NPU lowering, run
    unchanged on the host); `cpu_ops`: every compute step on the CPU, fallback or not (a kind
    the affinity scheduler kept on the host counts here too).
    """
    fallback: dict[str, int] = {}
    cpu_ops = 0
    for op in module.walk():
        if op.name != "buffer.exec" or op.device.data.value != "cpu":
            continue
        cpu_ops += 1
        if op.kind.data == "aten":
            name = op.params.data["op"].data
            fallback[name] = fallback.get(name, 0) + 1
    return {"cpu_fallback": dict(sorted(fallback.items())), "cpu_ops": cpu_ops}


# --- parity ----------------------------------------------------------------------------------------


def measure_parity(
    model: torch.nn.Module, compiled: CompiledModel, args: Sequence[Any], kwargs: dict[str, Any] | None = None
) -> dict[str, float]:
    """`parity` of the compiled model against eager `model` on (args, kwargs). A model compiled under
    a cast policy is compared in the compute dtype (its outputs before they are cast back, against
    `model` on the cast inputs): what the compiler changed, not the rounding to bf16."""
    kwargs = dict(kwargs or {})
    defaults = compiled.signature.defaults if compiled.signature is not None else {}
    eager_kwargs = {**defaults, **kwargs}
    if compiled.cast is not None:
        eager_args, eager_kwargs = compiled.cast.apply(tuple(args), eager_kwargs)
    else:
        eager_args = tuple(args)
    with torch.no_grad():
        expected = model(*eager_args, **eager_kwargs)
    got = compiled.run(tuple(args), kwargs, cast_back=False)
    return parity(expected, got)


def parity(expected: Any, got: Any) -> dict[str, float]:
    """Max |difference| over every tensor of the outputs (tensors, tuples, dicts, ModelOutputs) and the
    mean KL(softmax(eager) || softmax(forge)) over the last dim of the first (logits, hidden state)."""
    expected_leaves = [t for t in pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
    got_leaves = [t for t in pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    if len(expected_leaves) != len(got_leaves):
        raise ValueError(f"eager returns {len(expected_leaves)} tensor(s), the compiled model {len(got_leaves)}")
    if len(expected_leaves) != 1:
        first = parity(expected_leaves[0], got_leaves[0])
        max_abs = max(_max_abs(e, g) for e, g in zip(expected_leaves, got_leaves, strict=True))
        return {"max_abs": max_abs, "kl": first["kl"]}
    from forge.precision import mean_kl  # lazy, as the other forge.precision imports here

    expected, got = expected_leaves[0].double(), got_leaves[0].double()
    return {"max_abs": _max_abs(expected, got), "kl": mean_kl(expected, got)}


def _max_abs(expected: torch.Tensor, got: torch.Tensor) -> float:
    if expected.shape != got.shape:
        raise ValueError(f"eager returns a {tuple(expected.shape)} tensor, the compiled model {tuple(got.shape)}")
    if expected.numel() == 0:
        return 0.0
    return (expected.double() - got.double()).abs().max().item()


# --- loading a saved model -------------------------------------------------------------------------


class LoadError(Exception):
    """A saved model directory that cannot be loaded (missing or corrupt files), with the path."""


SAVED_FORMAT = "forge-compiled-model/1"
SAVED_IR, SAVED_WEIGHTS, SAVED_META = "model.mlir", "model.safetensors", "meta.json"


def load(
    directory: str | Path, *, runtime: str | None = None, device: str | None = None, weights_from: Any = None
) -> CompiledModel:
    """Load a model saved by `CompiledModel.save`: parse its buffer IR, re-emit, compile for the device.

    No optimization or planning pass runs again: the plan in the IR is used as saved. Anything
    wrong with the directory (missing, corrupt or inconsistent files) is a `LoadError` naming
    the file. A model saved by `compile_meta` binds its external weights from the safetensors files
    meta.json names (or `weights_from`, which overrides them), memory-mapped.
    """
    directory = Path(directory)
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        raise LoadError(f"{directory}: {what}; not a saved Forge model (no {SAVED_META})")
    meta = _read_meta(directory)
    _check_checksums(directory, meta.get("files"))
    module = _read_ir(directory / SAVED_IR)
    weights = _read_weights(directory / SAVED_WEIGHTS)
    external = _bind_external(directory, meta, weights, weights_from)
    if external is not None:
        weights, external = external
    fn = _forward_function(directory / SAVED_IR, module)
    inputs = _meta_inputs(directory, meta["inputs"], fn)
    _check_weights(directory, module, weights)
    target = f"runtime {runtime or meta['runtime']!r} ({'given' if runtime else SAVED_META}), "
    target += f"device {device or meta['device']!r} ({'given' if device else SAVED_META})"
    runtime = runtime or meta["runtime"]
    device = device or meta["device"]
    times = StageTimes()
    try:
        saved = meta.get("report", {})  # the precision modes it was compiled with
        executor = _emit(
            module, weights, runtime=runtime, device=device, times=times, progress=None,
            precision=saved.get("precision", "f32"), weights_mode=_saved_weights(saved.get("weights")),
        )
    except Exception as err:  # the emitter's EmitError, the runtime's errors for a bad device

        raise LoadError(
            f"{directory}: cannot build the program of {SAVED_IR} with {SAVED_WEIGHTS} for {target}: "
            f"{type(err).__name__}: {one_line(str(err))}"
        ) from err
    report = {
        **meta.get("report", {}),
        "emit_ms": round(times.emit_ms, 3),
        "device_compile_ms": round(times.device_compile_ms, 3),
    }
    signature, cast, notes = _meta_call(directory, meta, inputs, len(fn.function_type.outputs))
    if notes:
        report["notes"] = [*report.get("notes", []), *notes]
    return CompiledModel(
        executor, module, weights, inputs, report=report, runtime=runtime, device=device, signature=signature,
        cast=cast, external_weights=external,
    )


def _bind_external(directory: Path, meta: dict[str, Any], weights: WeightStore, weights_from: Any):
    """(the store with meta.json's external weights bound, their manifest), or None for a model whose
    weights are all in model.safetensors."""
    from forge.frontend.meta_weights import WeightBindError, bind, external_manifest, source_from_manifest

    manifest = meta.get("external_weights")
    if manifest is None:
        if weights_from is not None:
            raise LoadError(f"{directory}: weights_from= given, but the model's weights are in {SAVED_WEIGHTS}")
        return None
    try:
        for name, entry in manifest["tensors"].items():
            dtype = getattr(torch, entry["dtype"].removeprefix("torch."))
            placeholder = torch.empty(entry["shape"], dtype=dtype, device="meta")
            weights.add(name, placeholder)
            if entry.get("key", name) != name:  # a tied weight stored under its other name
                weights.add(entry["key"], placeholder)
        source = source_from_manifest(manifest, weights_from)
        names = list(manifest["tensors"])
        return bind(weights, source, names), external_manifest(weights, source, names)
    except WeightBindError as err:
        raise LoadError(f"{directory}: {err}") from None
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise LoadError(f"{directory / SAVED_META}: corrupt 'external_weights' ({type(err).__name__}: {err})") from None


def _meta_call(directory: Path, meta: dict[str, Any], inputs: list[InputSpec], results: int):
    """The saved call signature and cast policy (None for a model saved before they were stored: it is
    called with its positional tensors). An output class that cannot be imported here comes back as a
    dict with the same keys (said in the notes)."""
    path = directory / SAVED_META
    signature, notes = None, []
    try:
        if "call" in meta:
            signature, notes = CallSignature.from_json(meta["call"])
        cast = CastPolicy.from_json(meta["cast"]) if "cast" in meta else None
    except Exception as err:  # json shapes, TreeSpec parsing, dtypes: all mean a corrupt entry
        raise LoadError(
            f"{path}: corrupt 'call' or 'cast' entry ({type(err).__name__}: {one_line(str(err))})"
        ) from None
    if signature is not None:
        tensors = [leaf for leaf in signature.inputs if leaf.is_tensor]
        if [leaf.shape for leaf in tensors] != [spec.shape for spec in inputs]:
            raise LoadError(
                f"{path}: 'call' takes {', '.join(leaf.describe() for leaf in tensors) or 'no tensors'}, but "
                f"'inputs' are {', '.join(f'{s.name} {list(s.shape)}' for s in inputs) or 'none'}"
            )
        if signature.out_spec.num_leaves != results:
            raise LoadError(f"{path}: 'call' returns {signature.out_spec.num_leaves} outputs, the model {results}")
    return signature, cast, [f"loaded: {note}" for note in notes]


def _saved_weights(value: Any) -> str | None:
    return None if value in (None, "f32") else value


def _read_meta(directory: Path) -> dict[str, Any]:
    path = directory / SAVED_META
    if not path.exists():
        raise LoadError(f"{directory}: not a saved Forge model (no {SAVED_META})")
    try:
        meta = json.loads(path.read_text(), parse_constant=_reject_constant)
    except (OSError, ValueError) as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise LoadError(f"{path}: corrupt ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != SAVED_FORMAT:
        raise LoadError(f"{path}: unknown format {meta.get('format') if isinstance(meta, dict) else meta!r}")
    for key, kind in (("runtime", str), ("device", str), ("inputs", list)):
        if key not in meta:
            raise LoadError(f"{path}: missing '{key}'")
        if not isinstance(meta[key], kind):
            raise LoadError(f"{path}: '{key}' should be a {kind.__name__}, not {meta[key]!r}")
    if not isinstance(meta.get("report", {}), dict):
        raise LoadError(f"{path}: 'report' should be an object, not {meta['report']!r}")
    return meta


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _sha256(path: Path) -> str:

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _check_checksums(directory: Path, files: Any) -> None:
    """The IR and weights files are the ones `save` wrote (when meta.json has their checksums)."""
    if files is None:
        return  # saved before checksums, or removed on purpose to load an edited model
    meta = directory / SAVED_META
    expected = {SAVED_IR, SAVED_WEIGHTS}
    if not isinstance(files, dict) or set(files) != expected or not all(isinstance(v, str) for v in files.values()):
        raise LoadError(f"{meta}: 'files' should map {SAVED_IR} and {SAVED_WEIGHTS} to SHA-256 digests, not {files!r}")
    for name in sorted(expected):
        path = directory / name
        try:
            digest = _sha256(path)
        except OSError as err:
            raise LoadError(f"{path}: cannot read ({err.strerror or err})") from None
        if digest != files[name]:
            raise LoadError(
                f"{path}: changed since it was saved (SHA-256 differs from {meta}); "
                f"remove 'files' from {SAVED_META} to load an edited model"
            )


def _read_ir(path: Path) -> ModuleOp:

    try:
        text = path.read_text()
    except FileNotFoundError:
        raise LoadError(f"{path.parent}: missing {path.name}") from None
    except (OSError, ValueError) as err:  # a directory, unreadable, not UTF-8
        raise LoadError(f"{path}: cannot read ({err})") from None
    try:
        module = Parser(make_context(), text, str(path)).parse_module()
        verify_module(module)
    except Exception as err:  # parse and verify errors carry their own location
        raise LoadError(f"{path}: {err}") from None
    return module


def _read_weights(path: Path) -> WeightStore:

    try:
        return WeightStore.load(path)
    except WeightsError as err:
        raise LoadError(str(err)) from None


def _forward_function(path: Path, module: ModuleOp):
    """The function the emitter runs: the only one, or @forward."""
    from xdsl.dialects import func

    fns = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    chosen = fns if len(fns) == 1 else [f for f in fns if f.sym_name.data == "forward"]
    if len(chosen) != 1:
        raise LoadError(f"{path}: expected one function (or @forward), found {len(fns)}")
    return chosen[0]


def _meta_inputs(directory: Path, entries: list[Any], fn) -> list[InputSpec]:
    """meta.json's inputs, checked against the function's arguments (the compiled shapes)."""
    from xdsl.dialects.builtin import TensorType

    from dialects.torch_types import dtype_of

    meta = directory / SAVED_META
    args = fn.body.block.args
    if len(entries) != len(args):
        raise LoadError(
            f"{meta}: {len(entries)} input(s), but @{fn.sym_name.data} in {directory / SAVED_IR} takes {len(args)}"
        )
    specs = []
    for i, (entry, arg) in enumerate(zip(entries, args, strict=True)):
        spec = _input_spec(meta, i, entry)
        if (
            not isinstance(arg.type, TensorType)
            or tuple(arg.type.get_shape()) != spec.shape
            or dtype_of(arg.type) != spec.dtype
        ):
            raise LoadError(
                f"{meta}: input {i} is {spec.dtype} {list(spec.shape)}, but {directory / SAVED_IR} takes {arg.type}"
            )
        specs.append(spec)
    return specs


def _input_spec(meta: Path, index: int, entry: Any) -> InputSpec:
    bad = LoadError(
        f"{meta}: input {index} should be {{name: str, shape: [int, ...], dtype: 'torch.<dtype>'}}, not {entry!r}"
    )
    if not isinstance(entry, dict):
        raise bad
    name, shape, dtype_name = entry.get("name"), entry.get("shape"), entry.get("dtype")
    if not isinstance(name, str) or not isinstance(shape, list) or not isinstance(dtype_name, str):
        raise bad
    if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise bad
    dtype = getattr(torch, dtype_name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise LoadError(f"{meta}: input {index} has unknown dtype {dtype_name!r}")
    return InputSpec(name, tuple(shape), dtype)


def _check_weights(directory: Path, module: ModuleOp, weights: WeightStore) -> None:
    """Every weight the IR reads is in the store, with the type the IR reads it as."""
    from dialects.torch_types import dtype_of, shape_of

    for op in module.walk():
        if op.name != "buffer.weight":
            continue
        name = op.properties["name"].data
        ty = op.results[0].type
        if name not in weights:
            raise LoadError(f"{directory / SAVED_IR} reads weight {name!r}, which {directory / SAVED_WEIGHTS} lacks")
        tensor = weights[name]
        if tuple(tensor.shape) != shape_of(ty) or tensor.dtype != dtype_of(ty):
            raise LoadError(
                f"{directory / SAVED_WEIGHTS}: weight {name!r} is {tensor.dtype} {list(tensor.shape)}, "
                f"but {directory / SAVED_IR} reads it as {ty}"
            )


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
