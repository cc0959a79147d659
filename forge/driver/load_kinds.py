"""`forge.load` of the two compiled objects that are more than one program (forge/driver/saved_kinds.py says
what their directories hold and writes them): a dynamic model's buckets back into a `DynamicCompiledModel`, a
generator's graphs into a `Generator`. (Apart from saved_kinds.py, which dynamic.py and generation.py import
to save: reading them back imports those modules.)"""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from forge.diagnostics import one_line
from forge.driver.artifact_files import (
    SAVED_META,
    SAVED_WEIGHTS,
    _check_weights,
    _read_ir,
    _read_weights,
    changed_file_first,
    check_files,
    read_checked_weights,
    sha256,
)
from forge.driver.compile_errors import CompileError, LoadError
from forge.driver.emit import graph_group
from forge.driver.saved_kinds import GENERATOR_GRAPHS, _field, _options_from
from forge.mapped_pages import return_freed_heap


def load_dynamic(
    directory: Path, meta: dict[str, Any], runtime: str | None, device: str | None, load_static, cache_dir: Any = None
) -> Any:
    from forge.driver.dynamic import DynamicCompiledModel, DynamicDim, OutputPlan

    path = directory / SAVED_META
    dim_entry = _field(meta, path, "dim", dict)
    buckets = _field(meta, path, "buckets", dict)
    files = meta.get("files")
    try:
        dim = DynamicDim(
            str(dim_entry["name"]),
            int(dim_entry["min"]),
            int(dim_entry["max"]),
            tuple((str(n), int(d)) for n, d in dim_entry["uses"]),
        )
        lengths = sorted(int(b) for b in buckets)
        seq_dims = {str(k): tuple(int(d) for d in v) for k, v in _field(meta, path, "seq_dims", dict).items()}
        parameters = [
            inspect.Parameter(p["name"], getattr(inspect.Parameter, p["kind"]))
            for p in _field(meta, path, "parameters", list)
        ]
        example: dict[str, Any] = {}
        for entry in _field(meta, path, "example", list):
            if "value" in entry:
                example[entry["name"]] = entry["value"]
            else:
                dtype = getattr(torch, entry["dtype"].removeprefix("torch."))
                example[entry["name"]] = torch.zeros(entry["shape"], dtype=dtype)
        positional = tuple(str(n) for n in _field(meta, path, "positional", list))
        pads = {str(k): v for k, v in meta.get("pad_values", {}).items()}
    except LoadError:
        raise
    except Exception as err:
        raise LoadError(f"{path}: corrupt ({type(err).__name__}: {one_line(str(err))})") from None
    if dim.max not in lengths:
        raise LoadError(f"{path}: 'buckets' {lengths} lack the Dim's max {dim.max}")
    options = _options_from(path, meta.get("options"), runtime, device)
    shared = None  # the weights every bucket reads alike (saved before: each bucket holds all of its own)
    if isinstance(files, dict) and SAVED_WEIGHTS in files:
        shared = read_checked_weights(directory / SAVED_WEIGHTS, files[SAVED_WEIGHTS], path)
    group = _graph_group(options, path)
    loaded = {}
    for length in lengths:
        sub = directory / str(buckets[str(length)])
        if isinstance(files, dict):
            digest = files.get(buckets[str(length)])
            if not (sub / SAVED_META).exists():
                raise LoadError(f"{directory}: missing {buckets[str(length)]}/{SAVED_META} (bucket {length})")
            if digest != sha256(sub / SAVED_META):
                raise LoadError(f"{sub / SAVED_META}: changed since it was saved (SHA-256 differs from {path})")
        loaded[length] = load_static(sub, runtime=runtime, device=device, cache_dir=cache_dir, shared=shared,
                                     group=group)
    _compile_group(group, directory)
    for compiled in loaded.values():  # the device holds its copy now
        compiled.report["released_weight_bytes"] = compiled.weights.release_mapped_pages()
    return_freed_heap()
    signature = inspect.Signature(parameters)
    result = DynamicCompiledModel(
        None,
        example,
        positional,
        dim,
        tuple(lengths),
        pads,
        OutputPlan(seq_dims),
        options,
        static_compile=_no_compile,
        _signature=signature,
    )
    result.model_name = str(meta.get("model", "model"))
    result.group = group
    from forge.driver.dynamic import Bucket

    for length, compiled in loaded.items():
        result._compiled[length] = Bucket(length, compiled, 0.0)
    return result


def _no_compile(*args: Any, **kwargs: Any) -> Any:
    raise LoadError("a loaded dynamic model has the buckets it was saved with; compile the model for others")


def load_generator(
    directory: Path, meta: dict[str, Any], runtime: str | None, device: str | None, cache_dir: str | None = None
) -> Any:
    """A saved generator, its files checked against meta.json's digests while its graphs are read and compiled."""
    path = directory / SAVED_META
    options = _options_from(path, meta.get("options"), runtime, device, cache_dir)
    files = meta.get("files")
    if files is not None and not (isinstance(files, dict) and all(isinstance(v, str) for v in files.values())):
        raise LoadError(f"{path}: 'files' should map file names to SHA-256 digests, not {files!r}")
    checked = check_files(directory, files or {})
    with changed_file_first(checked):
        gen = _load_generator(directory, meta, path, options)
    checked()
    return gen


def _load_generator(directory: Path, meta: dict[str, Any], path: Path, options: Any) -> Any:
    """The generator's IR read and emitted, its device program compiled."""
    from backends.nnfactory.executor import StateStore  # lazy: start-up cost (openvino)
    from forge.driver.compilation import Compilation
    from forge.driver.generation import CompiledStep, Generator
    from forge.driver.stages import EMIT
    from forge.frontend.fx_importer import ImportedProgram

    batch = _field(meta, path, "batch", int)
    chunk = _field(meta, path, "chunk", int)
    cache_len = _field(meta, path, "cache_len", int)
    weights = _read_weights(directory / SAVED_WEIGHTS)
    states = StateStore()
    sharing = _field(meta, path, "sharing", dict) if "sharing" in meta else {"one_program": True}
    group = _graph_group(options, path, sharing)
    steps = {}
    reports = meta.get("reports") if isinstance(meta.get("reports"), dict) else {}
    for name in GENERATOR_GRAPHS:
        ir = directory / f"{name}.mlir"
        module = _read_ir(ir)
        _check_weights(directory, module, weights)
        c = Compilation(options, imported=ImportedProgram(module, weights, inputs=[]))
        c.extras.update(states=states, graph_group=group)
        try:
            c.run((EMIT,))
        except Exception as err:
            raise LoadError(
                f"{ir}: cannot build the program with {SAVED_WEIGHTS} for runtime {options.runtime!r}, device "
                f"{options.device!r}: {type(err).__name__}: {one_line(str(err))}"
            ) from err
        report = {**reports.get(name, {}), "emit_ms": round(c.clock.ms["emit_ms"], 3),
                  "runtime_config": c.executor.program.runtime.config()}  # this machine's, not the saving one's
        step = CompiledStep(name, c.executor, module, c.imported, 0.0, report)
        steps[name] = step
    _compile_group(group, directory)
    steps["decode"].report["released_weight_bytes"] = weights.release_mapped_pages()  # the device holds its copy
    return_freed_heap()
    hf = SimpleNamespace(generation_config=_generation_config(path, meta.get("generation_config")))
    gen = Generator(hf, batch, chunk, cache_len, steps["prefill"], steps["decode"], states, options, group, sharing)
    gen.compiles = 0
    return gen


def _compile_group(group: Any, directory: Path) -> None:
    """The device compile of a loaded model's graphs, one program (OpenVINO's message when it fails)."""
    try:
        group.compile()
    except Exception as err:
        raise LoadError(f"{directory}: the device compile of the saved graphs failed: {one_line(str(err))}") from err


def _graph_group(options: Any, path: Path, sharing: dict[str, Any] | None = None) -> Any:
    """The GraphGroup a loaded model's graphs join: one device program, one copy of the weights; a generator's
    as the saved generator chose (its meta's `sharing`: two programs, or the decode step on top)."""
    try:
        if sharing is None:
            return graph_group(options)
        from forge.driver.generation import generator_group  # lazy, as in _load_generator

        if sharing.get("top_level") not in (None, *GENERATOR_GRAPHS):
            raise LoadError(f"{path}: sharing.top_level must be null or one of {list(GENERATOR_GRAPHS)}, "
                            f"got {sharing.get('top_level')!r}")
        return generator_group(options, sharing)
    except CompileError as err:
        raise LoadError(f"{path}: {err}") from None


class SavedGenerationConfig(SimpleNamespace):
    """A loaded generator's `generation_config`: the saved settings (transformers' `GenerationConfig.to_dict()`)
    as attributes, which is all decoding reads, without importing transformers for it (0.6 s of a 3.9 s load of
    the zoo's Llama generator in a fresh process). `GenerationConfig.from_dict(config.to_dict())` gives
    transformers' object."""

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def _generation_config(path: Path, entry: Any) -> SavedGenerationConfig | None:
    if entry is None:
        return None
    if not isinstance(entry, dict) or not all(isinstance(k, str) and k.isidentifier() for k in entry):
        raise LoadError(f"{path}: corrupt 'generation_config' (a mapping of setting names to values expected)")
    return SavedGenerationConfig(**entry)
