"""`load(dir)`: a model saved by `CompiledModel.save`, re-emitted for a device without compiling it again
(the EMIT stage alone; forge/driver/artifact_files.py reads the directory back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forge.diagnostics import one_line
from forge.driver.artifact import CompiledModel
from forge.driver.artifact_files import SAVED_IR, SAVED_META, SAVED_WEIGHTS, meta_call, read_saved, saved_weights
from forge.driver.compilation import Compilation
from forge.driver.compile_errors import LoadError
from forge.driver.options import CompileOptions
from forge.driver.stages import EMIT
from forge.mapped_pages import return_freed_heap

OV_CACHE = "ov_cache"
"""The folder of OpenVINO's compiled-model cache inside an artifact directory (`load`'s `cache_dir`)."""


def ov_cache_dir(directory: Path, cache_dir: str | Path | bool | None, device: str = "CPU") -> str | None:
    """Where OpenVINO caches the compiled graphs of the artifact in `directory`: `cache_dir` when a path,
    none when False, else (True) `directory/ov_cache`, or the user cache dir when the artifact is read-only.
    None (the default) is True for a device other than the CPU and False for the CPU: a device compiler's
    blob (the NPU's) is what the cache saves; on the CPU a warm-cache load measured no faster than
    compiling (4-layer GPT-2: 1.21 s against 1.12-1.30 s) and the imported blob is a second resident copy
    of the weights (+256 MiB: 833 against 579 MiB after the load).

    Inside the artifact by default: the cache belongs to that model (OpenVINO keys each entry by the graph,
    its weights, the device, the properties and its own version, so a copied or stale entry is a miss, never a
    wrong program), goes with it when it is copied and is deleted with it; a user-wide folder would keep
    the blobs of deleted artifacts forever."""
    if cache_dir is None:
        cache_dir = device.split(".")[0].split(":")[0].upper() != "CPU"
    if cache_dir is False:
        return None
    if cache_dir is not True:
        return str(cache_dir)
    import os

    inside = directory / OV_CACHE
    if os.access(directory, os.W_OK) or os.access(inside, os.W_OK):
        return str(inside)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return str(base / "forge" / "openvino")


def load(
    directory: str | Path,
    *,
    runtime: str | None = None,
    device: str | None = None,
    weights_from: Any = None,
    cache_dir: str | Path | bool | None = None,
) -> Any:
    """Load what `save` wrote: a static model (`CompiledModel`), a dynamic model's buckets
    (`DynamicCompiledModel`) or a generator's graphs (`Generator`), as meta.json's format says.

    `cache_dir`: OpenVINO's compiled-model cache (`ov_cache_dir`; by default on for devices other than the
    CPU): the first load compiles each graph for the device and stores it there, later loads import it
    instead of compiling again."""
    from forge.driver.load_kinds import load_dynamic, load_generator
    from forge.driver.saved_kinds import DYNAMIC_FORMAT, GENERATOR_FORMAT, read_meta_json

    directory = Path(directory)
    meta = read_meta_json(directory)
    kind = meta.get("format")
    if kind in (DYNAMIC_FORMAT, GENERATOR_FORMAT) and weights_from is not None:
        raise LoadError(f"{directory}: weights_from= applies to a static model; {directory / SAVED_META} is {kind}")
    if kind == DYNAMIC_FORMAT:
        return load_dynamic(directory, meta, runtime, device, load_static, cache_dir)
    if isinstance(kind, str) and kind.split("/")[0] == GENERATOR_FORMAT.split("/")[0] and kind != GENERATOR_FORMAT:
        raise LoadError(
            f"{directory / SAVED_META}: a generator saved as {kind}; this Forge reads {GENERATOR_FORMAT} (its decode "
            "graph's inputs changed): compile the generator and save it again"
        )
    if kind == GENERATOR_FORMAT:
        saved_device = (meta.get("options") or {}).get("device") if isinstance(meta.get("options"), dict) else None
        where = ov_cache_dir(directory, cache_dir, device or saved_device or "CPU")
        return load_generator(directory, meta, runtime, device, where)
    return load_static(directory, runtime=runtime, device=device, weights_from=weights_from, cache_dir=cache_dir)


def load_static(
    directory: str | Path,
    *,
    runtime: str | None = None,
    device: str | None = None,
    weights_from: Any = None,
    cache_dir: str | Path | bool | None = None,
    shared: Any = None,
    group: Any = None,
) -> CompiledModel:
    """Load a model saved by `CompiledModel.save`: parse its buffer IR, re-emit, compile for the device.
    (`shared`, `group`: a dynamic model's load, forge/driver/load_kinds.py: the weights file its buckets share,
    read once, and the GraphGroup their graphs join, which the caller compiles and then gives the mapped pages
    back.)

    No optimization or planning pass runs again: the plan in the IR is used as saved. Anything
    wrong with the directory (missing, corrupt or inconsistent files) is a `LoadError` naming
    the file. A model saved by `compile_meta` binds its external weights from the safetensors files
    meta.json names (or `weights_from`, which overrides them), memory-mapped.
    """
    directory = Path(directory)
    saved = read_saved(directory, weights_from, shared)
    meta = saved.meta
    target = f"runtime {runtime or meta['runtime']!r} ({'given' if runtime else SAVED_META}), "
    target += f"device {device or meta['device']!r} ({'given' if device else SAVED_META})"
    runtime = runtime or meta["runtime"]
    device = device or meta["device"]
    modes = meta.get("report", {})  # the precision modes it was compiled with
    options = CompileOptions(
        runtime=runtime,
        device=device,
        precision=modes.get("precision", "f32"),
        weights=saved_weights(modes.get("weights")),
        activations=saved_weights(modes.get("activations")),
        cache_dir=ov_cache_dir(directory, cache_dir, device),
    )
    c = Compilation(options, imported=saved)
    c.extras["graph_group"] = group
    try:
        c.run((EMIT,))
    except Exception as err:  # the emitter's EmitError, the runtime's errors for a bad device
        saved.checked()  # a file changed since the save is the error to report
        raise LoadError(
            f"{directory}: cannot build the program of {SAVED_IR} with {SAVED_WEIGHTS} for {target}: "
            f"{type(err).__name__}: {one_line(str(err))}"
        ) from err
    saved.checked()
    executor = c.executor
    report = {**modes, **{key: round(c.clock.ms[key], 3) for key in ("emit_ms", "device_compile_ms")}}
    if group is None:
        report["released_weight_bytes"] = saved.weights.release_mapped_pages()  # the device holds its copy now
        return_freed_heap()
    signature, cast, notes = meta_call(directory, meta, saved.inputs, saved.results)
    if notes:
        report["notes"] = [*report.get("notes", []), *notes]
    return CompiledModel(
        executor,
        saved.module,
        saved.weights,
        saved.inputs,
        report=report,
        runtime=runtime,
        device=device,
        signature=signature,
        cast=cast,
        external_weights=saved.external,
    )
