"""A saved model's files: their names and format, and reading each back with its checks.

`forge.load` (forge/driver/artifact.py) reads a directory `CompiledModel.save` wrote: meta.json (format, runtime,
device, inputs, call signature, cast policy, report, the SHA-256 of the other files), model.mlir (the
planned buffer IR, parsed and verified) and model.safetensors (its weights), or the external safetensors
files a `compile_meta` artifact names. Anything wrong is a `LoadError` naming the file and what is wrong.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from forge.analysis.dominance import verify_module
from forge.diagnostics import one_line
from forge.driver.compile_errors import LoadError
from forge.driver.registry import make_context
from forge.frontend.export import CallSignature, CastPolicy
from forge.frontend.fx_importer import InputSpec
from forge.weights import WeightsError, WeightStore

SAVED_FORMAT = "forge-compiled-model/1"
SAVED_IR, SAVED_WEIGHTS, SAVED_META = "model.mlir", "model.safetensors", "meta.json"


@dataclass
class SavedFiles:
    """A saved directory's files, read and checked against each other (before anything is emitted)."""

    meta: dict[str, Any]
    module: ModuleOp
    weights: WeightStore
    external: dict[str, Any] | None
    """The manifest of the external weights bound into `weights` (None: all in model.safetensors)."""
    inputs: list[InputSpec]
    results: int
    """How many results the forward function returns."""
    checked: Callable[[], None]
    """Waits for the files' checksums (`check_files`), a LoadError when one changed: call it before using the model."""


def read_saved(directory: Path, weights_from: Any = None, shared: WeightStore | None = None) -> SavedFiles:
    """Every file of `directory` read and checked: meta.json, the checksums (hashed in a thread meanwhile:
    `SavedFiles.checked` waits for them), the IR, the weights (the
    external ones bound from `weights_from` or the files meta.json names; the shared ones from the file
    meta.json's `shared_weights` names, or `shared`, that file already read and checked by the caller), the
    inputs against the IR's function, and every weight the IR reads against the store."""
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        raise LoadError(f"{directory}: {what}; not a saved Forge model (no {SAVED_META})")
    meta = _read_meta(directory)
    checked = _start_checksums(directory, meta.get("files"))
    with changed_file_first(checked):
        return _read_checked(directory, meta, weights_from, shared, checked)


def _read_checked(directory: Path, meta: dict[str, Any], weights_from: Any, shared: WeightStore | None,
                  checked: Callable[[], None]) -> SavedFiles:
    module = _read_ir(directory / SAVED_IR)
    weights = _read_weights(directory / SAVED_WEIGHTS)
    entry = meta.get("shared_weights")
    if entry is not None:
        source = shared if shared is not None else _read_shared(directory, entry)
        try:
            weights.adopt(source, entry["names"])
        except (KeyError, ValueError) as err:
            raise LoadError(f"{directory / SAVED_META}: shared weights: {err}") from None
    external = _bind_external(directory, meta, weights, weights_from)
    if external is not None:
        weights, external = external
    fn = _forward_function(directory / SAVED_IR, module)
    inputs = _meta_inputs(directory, meta["inputs"], fn)
    _check_weights(directory, module, weights)
    return SavedFiles(meta, module, weights, external, inputs, len(fn.function_type.outputs), checked)


def _read_shared(directory: Path, entry: Any) -> WeightStore:
    """The weights file `shared_weights` names (relative to `directory`), checked against its digest."""
    where = directory / SAVED_META
    well_formed = isinstance(entry, dict) and isinstance(entry.get("file"), str)
    if not well_formed or not isinstance(entry.get("names"), list):
        raise LoadError(f"{where}: 'shared_weights' should be {{file, sha256, names}}, not {entry!r}")
    return read_checked_weights(directory / entry["file"], entry.get("sha256"), where)


def read_checked_weights(path: Path, digest: str | None, named_by: Path) -> WeightStore:
    """The weights file `path`, refused unless its SHA-256 is `digest` (which `named_by` records; None: not
    checked)."""
    try:
        found = sha256(path)
    except OSError as err:
        raise LoadError(f"{path}: cannot read ({err.strerror or err}; named by {named_by})") from None
    if digest not in (None, found):
        raise LoadError(f"{path}: changed since it was saved (SHA-256 differs from {named_by})")
    return _read_weights(path)


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


def meta_call(directory: Path, meta: dict[str, Any], inputs: list[InputSpec], results: int):
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


def saved_weights(value: Any) -> str | None:
    """A quantization mode (weights, activations) a saved report names, as the options take it (f32: None)."""
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


def sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _start_checksums(directory: Path, files: Any) -> Callable[[], None]:
    """Start checking that the IR and weights files are the ones `save` wrote (when meta.json has their
    checksums); the wait (`check_files`)."""
    if files is None:
        return lambda: None  # saved before checksums, or removed on purpose to load an edited model
    meta = directory / SAVED_META
    expected = {SAVED_IR, SAVED_WEIGHTS}
    if not isinstance(files, dict) or set(files) != expected or not all(isinstance(v, str) for v in files.values()):
        raise LoadError(f"{meta}: 'files' should map {SAVED_IR} and {SAVED_WEIGHTS} to SHA-256 digests, not {files!r}")
    return check_files(directory, {name: files[name] for name in sorted(expected)},
                       f"; remove 'files' from {SAVED_META} to load an edited model")


def check_files(directory: Path, files: dict[str, str], hint: str = "") -> Callable[[], None]:
    """Start checking, in a thread, that each of `files` (name in `directory` -> SHA-256) is as saved; the
    function returned waits for the check and raises the LoadError of the first file that differs (`hint`
    ends its message) or cannot be read. A load hashes its files while it parses and compiles: hashlib lets
    go of the GIL while it hashes, and the zoo Llama's 800 MB of weights took 0.57 s of a 3.9 s load."""
    failed: list[LoadError] = []

    def check() -> None:
        for name, digest in files.items():
            path = directory / name
            try:
                found = sha256(path)
            except OSError as err:
                failed.append(LoadError(f"{path}: cannot read ({err.strerror or err})"))
                return
            if found != digest:
                failed.append(LoadError(f"{path}: changed since it was saved (SHA-256 differs from "
                                        f"{directory / SAVED_META}){hint}"))
                return

    thread = threading.Thread(target=check, name="forge-check-files", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if failed:
            raise failed[0]

    return wait


@contextmanager
def changed_file_first(checked: Callable[[], None]) -> Iterator[None]:
    """A LoadError inside waits for `checked` (`check_files`) first: a file changed since the save, which an
    IR that no longer parses may merely follow from, is the error a load reports."""
    try:
        yield
    except LoadError:
        checked()
        raise


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
        shape, dtype = weights.shape_and_dtype(name)
        if shape != shape_of(ty) or dtype != dtype_of(ty):
            raise LoadError(
                f"{directory / SAVED_WEIGHTS}: weight {name!r} is {dtype} {list(shape)}, "
                f"but {directory / SAVED_IR} reads it as {ty}"
            )
