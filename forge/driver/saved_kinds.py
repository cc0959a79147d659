"""Saving and loading the two compiled objects that are more than one program: a dynamic model's buckets and
a generator's prefill + decode graphs (`forge.load` reads all three kinds; meta.json's "format" says which).

* a dynamic model (`DynamicCompiledModel.save`): meta.json (format `forge-dynamic-model/1`: the Dim, the
  bucket lengths, pad values, the output plan, the forward's parameter names and the example inputs'
  shapes) and one directory per bucket, `bucket_<length>/`, each a saved static model (`CompiledModel.save`,
  every bucket compiled first);
* a generator (`Generator.save`): meta.json (format `forge-generator/1`: batch, chunk, cache length, the
  compile options, the generation config with its EOS / pad tokens, both graphs' reports and the SHA-256 of
  the files), prefill.mlir and decode.mlir (the planned buffer IR of both graphs) and model.safetensors
  (the weights both read, stored once). The KV cache is not saved: its states start at zeros, as compiled.

Anything wrong is a `LoadError` naming the file, as for a static model (forge/driver/artifact_files.py).
"""

from __future__ import annotations

import inspect
import json
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
    _reject_constant,
    sha256,
)
from forge.driver.compile_errors import LoadError

DYNAMIC_FORMAT = "forge-dynamic-model/1"
GENERATOR_FORMAT = "forge-generator/1"
GENERATOR_GRAPHS = ("prefill", "decode")


def read_meta_json(directory: Path) -> dict[str, Any]:
    """meta.json of `directory` as a dict (a LoadError naming it when missing or not JSON)."""
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        raise LoadError(f"{directory}: {what}; not a saved Forge model (no {SAVED_META})")
    path = directory / SAVED_META
    if not path.exists():
        raise LoadError(f"{directory}: not a saved Forge model (no {SAVED_META})")
    try:
        meta = json.loads(path.read_text(), parse_constant=_reject_constant)
    except (OSError, ValueError) as err:
        raise LoadError(f"{path}: corrupt ({err})") from None
    if not isinstance(meta, dict):
        raise LoadError(f"{path}: unknown format {meta!r}")
    return meta


def _field(meta: dict[str, Any], path: Path, key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in meta:
        raise LoadError(f"{path}: missing '{key}'")
    if not isinstance(meta[key], kind):
        raise LoadError(f"{path}: '{key}' is {meta[key]!r}, of the wrong type")
    return meta[key]


def _options_json(options: Any) -> dict[str, Any]:
    return {
        "runtime": options.runtime,
        "device": options.device,
        "precision": options.precision,
        "weights": options.weights,
        "dtype": str(options.dtype),
    }


def _options_from(meta_path: Path, entry: Any, runtime: str | None, device: str | None, cache_dir: str | None = None):
    from forge.driver.options import CompileOptions

    if not isinstance(entry, dict):
        raise LoadError(f"{meta_path}: 'options' should be an object, not {entry!r}")
    try:
        return CompileOptions(
            runtime=runtime or entry["runtime"],
            device=device or entry["device"],
            precision=entry.get("precision", "f32"),
            weights=entry.get("weights"),
            dtype=getattr(torch, str(entry.get("dtype", "torch.float32")).removeprefix("torch.")),
            cache_dir=cache_dir,
        )
    except Exception as err:  # a missing key, an unknown mode
        raise LoadError(f"{meta_path}: corrupt 'options' ({type(err).__name__}: {one_line(str(err))})") from None


# --- dynamic models ---------------------------------------------------------------------------------


def save_dynamic(model: Any, directory: str | Path) -> Path:
    """Compile every bucket of `model` (a DynamicCompiledModel) and write them with meta.json."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.compile_all()
    example = []
    for name, value in model.example.items():
        if isinstance(value, torch.Tensor):
            example.append({"name": name, "shape": list(value.shape), "dtype": str(value.dtype)})
        else:
            try:
                json.dumps(value)
            except TypeError:
                raise ValueError(f"input '{name}' is the constant {value!r}, which meta.json cannot hold") from None
            example.append({"name": name, "value": value})
    if model._signature is None and model.model is not None:
        model._signature = inspect.signature(model.model.forward)
    parameters = [{"name": p.name, "kind": p.kind.name} for p in model._signature.parameters.values()]
    buckets = {}
    for length, compiled in model.buckets.items():
        sub = f"bucket_{length}"
        compiled.save(directory / sub)
        buckets[str(length)] = sub
    meta = {
        "format": DYNAMIC_FORMAT,
        "model": type(model.model).__name__ if model.model is not None else getattr(model, "model_name", "model"),
        "dim": {"name": model.dim.name, "min": model.dim.min, "max": model.dim.max, "uses": model.dim.uses},
        "buckets": buckets,
        "pad_values": model.pad_values,
        "seq_dims": model.plan.seq_dims,
        "positional": list(model.positional),
        "parameters": parameters,
        "example": example,
        "options": _options_json(model.options),
        "files": {sub: sha256(directory / sub / SAVED_META) for sub in buckets.values()},
    }
    (directory / SAVED_META).write_text(json.dumps(meta, indent=2))
    return directory


def load_dynamic(
    directory: Path, meta: dict[str, Any], runtime: str | None, device: str | None, load_static, cache_dir: Any = True
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
    loaded = {}
    for length in lengths:
        sub = directory / str(buckets[str(length)])
        if isinstance(files, dict):
            digest = files.get(buckets[str(length)])
            if not (sub / SAVED_META).exists():
                raise LoadError(f"{directory}: missing {buckets[str(length)]}/{SAVED_META} (bucket {length})")
            if digest != sha256(sub / SAVED_META):
                raise LoadError(f"{sub / SAVED_META}: changed since it was saved (SHA-256 differs from {path})")
        loaded[length] = load_static(sub, runtime=runtime, device=device, cache_dir=cache_dir)
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
    from forge.driver.dynamic import Bucket

    for length, compiled in loaded.items():
        result._compiled[length] = Bucket(length, compiled, 0.0)
    return result


def _no_compile(*args: Any, **kwargs: Any) -> Any:
    raise LoadError("a loaded dynamic model has the buckets it was saved with; compile the model for others")


# --- generators -------------------------------------------------------------------------------------


def save_generator(gen: Any, directory: str | Path) -> Path:
    """Both graphs' buffer IR, the weights they read (once), and meta.json (module docstring)."""
    from forge.driver.report import used_weights

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name in GENERATOR_GRAPHS:
        (directory / f"{name}.mlir").write_text(str(getattr(gen, name).buffer_module))
    # both graphs import the same module: the same weight names (the decode graph's store, plus any only
    # the prefill reads), written once
    prefill, decode = gen.prefill, gen.decode
    weights = decode.imported.weights.subset(used_weights(decode.buffer_module))
    for extra in sorted(used_weights(prefill.buffer_module) - set(weights.names())):
        weights.add(extra, prefill.imported.weights[extra])
    weights.save(directory / SAVED_WEIGHTS)
    config = getattr(gen.hf, "generation_config", None)
    files = [f"{n}.mlir" for n in GENERATOR_GRAPHS] + [SAVED_WEIGHTS]
    meta = {
        "format": GENERATOR_FORMAT,
        "batch": gen.batch,
        "chunk": gen.chunk,
        "cache_len": gen.cache_len,
        "options": _options_json(gen.options),
        "eos": gen.eos,
        "pad": gen.pad,
        "generation_config": config.to_dict() if config is not None else None,
        "reports": {n: getattr(gen, n).report for n in GENERATOR_GRAPHS},
        "files": {f: sha256(directory / f) for f in files},
    }
    (directory / SAVED_META).write_text(json.dumps(meta, indent=2, default=str))
    return directory


def load_generator(
    directory: Path, meta: dict[str, Any], runtime: str | None, device: str | None, cache_dir: str | None = None
) -> Any:
    from backends.nnfactory.executor import StateStore  # lazy: start-up cost (openvino)
    from forge.driver.compilation import Compilation
    from forge.driver.generation import CompiledStep, Generator
    from forge.driver.stages import EMIT
    from forge.frontend.fx_importer import ImportedProgram

    path = directory / SAVED_META
    batch = _field(meta, path, "batch", int)
    chunk = _field(meta, path, "chunk", int)
    cache_len = _field(meta, path, "cache_len", int)
    options = _options_from(path, meta.get("options"), runtime, device, cache_dir)
    files = meta.get("files")
    if files is not None:
        if not isinstance(files, dict):
            raise LoadError(f"{path}: 'files' should map file names to SHA-256 digests, not {files!r}")
        for name, digest in files.items():
            target = directory / name
            try:
                found = sha256(target)
            except OSError as err:
                raise LoadError(f"{target}: cannot read ({err.strerror or err})") from None
            if found != digest:
                raise LoadError(f"{target}: changed since it was saved (SHA-256 differs from {path})")
    weights = _read_weights(directory / SAVED_WEIGHTS)
    states = StateStore()
    steps = {}
    reports = meta.get("reports") if isinstance(meta.get("reports"), dict) else {}
    for name in GENERATOR_GRAPHS:
        ir = directory / f"{name}.mlir"
        module = _read_ir(ir)
        _check_weights(directory, module, weights)
        c = Compilation(options, imported=ImportedProgram(module, weights, inputs=[]))
        c.extras["states"] = states
        try:
            c.run((EMIT,))
        except Exception as err:
            raise LoadError(
                f"{ir}: cannot build the program with {SAVED_WEIGHTS} for runtime {options.runtime!r}, device "
                f"{options.device!r}: {type(err).__name__}: {one_line(str(err))}"
            ) from err
        report = {**reports.get(name, {}), "emit_ms": round(c.clock.ms["emit_ms"], 3)}
        step = CompiledStep(name, c.executor, module, c.imported, 0.0, report)
        steps[name] = step
    hf = SimpleNamespace(generation_config=_generation_config(path, meta.get("generation_config")))
    gen = Generator(hf, batch, chunk, cache_len, steps["prefill"], steps["decode"], states, options)
    gen.compiles = 0
    gen.eos = [int(t) for t in meta.get("eos") or []]
    gen.pad = meta.get("pad")
    return gen


def _generation_config(path: Path, entry: Any) -> Any:
    if entry is None:
        return None
    from transformers import GenerationConfig  # lazy: start-up cost (transformers)

    try:
        return GenerationConfig.from_dict(dict(entry))
    except Exception as err:
        raise LoadError(f"{path}: corrupt 'generation_config' ({type(err).__name__}: {one_line(str(err))})") from None
