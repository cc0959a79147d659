"""Saving the two compiled objects that are more than one program: a dynamic model's buckets and
a generator's prefill + decode graphs (`forge.load` reads all three kinds; meta.json's "format" says which).

* a dynamic model (`DynamicCompiledModel.save`): meta.json (format `forge-dynamic-model/1`: the Dim, the
  bucket lengths, pad values, the output plan, the forward's parameter names and the example inputs'
  shapes), model.safetensors (the weights every bucket reading them holds with the same values: written once)
  and one directory per bucket, `bucket_<length>/`, each a saved static model (`CompiledModel.save`, every
  bucket compiled first) whose own model.safetensors holds the rest and whose meta.json names the shared
  ones (`shared_weights`);
* a generator (`Generator.save`): meta.json (format `forge-generator/2`: batch, chunk, cache length, the
  compile options, the generation config with its EOS / pad tokens, both graphs' reports and the SHA-256 of
  the files), prefill.mlir and decode.mlir (the planned buffer IR of both graphs) and model.safetensors
  (the weights both read, stored once). The KV cache is not saved: its states start at zeros, as compiled.

`forge.load` reads them back (forge/driver/load_kinds.py); anything wrong is a `LoadError` naming the file.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import torch

from forge.diagnostics import one_line
from forge.driver.artifact_files import (
    SAVED_META,
    SAVED_WEIGHTS,
    _reject_constant,
    sha256,
)
from forge.driver.compile_errors import LoadError
from forge.driver.report import used_weights

DYNAMIC_FORMAT = "forge-dynamic-model/1"
GENERATOR_FORMAT = "forge-generator/2"
"""/2: the decode graph takes the keys it attends (bool) as its mask, where /1's took the prompt's 0/1 mask."""
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
        "activations": options.activations,
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
            activations=entry.get("activations"),
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
    shared = _shared_weights(model.buckets.values())
    shared.save(directory / SAVED_WEIGHTS)
    entry = {"file": f"../{SAVED_WEIGHTS}", "sha256": sha256(directory / SAVED_WEIGHTS), "names": shared.names()}
    buckets = {}
    for length, compiled in model.buckets.items():
        sub = f"bucket_{length}"
        mine = used_weights(compiled.buffer_module)
        compiled.save(directory / sub, shared_weights={**entry, "names": sorted(n for n in mine if n in shared)})
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
        "files": {**{sub: sha256(directory / sub / SAVED_META) for sub in buckets.values()},
                  SAVED_WEIGHTS: entry["sha256"]},
    }
    (directory / SAVED_META).write_text(json.dumps(meta, indent=2))
    return directory


def _shared_weights(models: Any) -> Any:
    """The weights the compiled models read with the same values in every one that reads them (the buckets of
    one model: written once beside them); a name two of them hold with different values (a constant folded
    at one length) stays in each one's own file."""
    graphs = []
    for compiled in models:
        external = set(compiled.external_weights["tensors"]) if compiled.external_weights else set()
        graphs.append((used_weights(compiled.buffer_module) - external, compiled.weights))
    return _one_store(graphs)[0]


def _one_store(graphs: Any) -> tuple[Any, list[str]]:
    """One store of the weights several graphs read, each (names, store): every name from the first graph that
    reads it, but a name two graphs hold with different values (`WeightStore.same_entry`), which is left out
    and returned, sorted."""
    from forge.weights import WeightStore

    owner: dict[str, Any] = {}
    differs: set[str] = set()
    for names, store in graphs:
        for name in sorted(names):
            first = owner.setdefault(name, store)
            if first is not store and not first.same_entry(name, store):
                differs.add(name)
    one = WeightStore()
    for name, store in owner.items():
        if name not in differs:
            one.adopt(store, [name])
    return one, sorted(differs)


# --- generators -------------------------------------------------------------------------------------


def save_generator(gen: Any, directory: str | Path) -> Path:
    """Both graphs' buffer IR, the weights they read (once), and meta.json (module docstring)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name in GENERATOR_GRAPHS:
        (directory / f"{name}.mlir").write_text(str(getattr(gen, name).buffer_module))
    # both graphs import the same module: the same weight names (the decode graph's store, plus any only
    # the prefill reads), written once
    weights, differs = _one_store(
        (used_weights(step.buffer_module), step.imported.weights) for step in (gen.decode, gen.prefill)
    )
    if differs:  # one file holds one value per name: never save a graph with the other's
        raise ValueError(f"cannot save the generator: its prefill and decode graphs hold different values under "
                         f"the weight name(s) {', '.join(map(repr, differs[:3]))}")
    weights.save(directory / SAVED_WEIGHTS)
    config = getattr(gen.hf, "generation_config", None)
    files = [f"{n}.mlir" for n in GENERATOR_GRAPHS] + [SAVED_WEIGHTS]
    meta = {
        "format": GENERATOR_FORMAT,
        "batch": gen.batch,
        "chunk": gen.chunk,
        "cache_len": gen.cache_len,
        "options": _options_json(gen.options),
        "generation_config": config.to_dict() if config is not None else None,
        "reports": {n: getattr(gen, n).report for n in GENERATOR_GRAPHS},
        "sharing": gen.sharing,
        "files": {f: sha256(directory / f) for f in files},
    }
    (directory / SAVED_META).write_text(json.dumps(meta, indent=2, default=str))
    return directory
