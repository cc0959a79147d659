"""Models without weights: parameters on the meta device at compile time, bound from safetensors at load time.

An 8B-parameter model has 32 GB of float32 weights; compiling its graph needs none of their values.
`init_empty_weights()` builds a model whose *parameters* are meta-device tensors (shape and dtype,
no storage) while its buffers stay real (rotary `inv_freq` tables are computed from the config and
are not in checkpoints). torch.export traces such a model as it is, the importer records each meta
parameter in the WeightStore as an *external* weight (`WeightStore.has_data` is False), and the
passes that compute with weight values (fold, fuse-attention's constant analysis, batch-norm
folding, layout's weight transposes) leave external weights alone.

`SafetensorsSource` is the weights' home: one or more ``.safetensors`` files (a file, a directory
of them, or a list), of which only the JSON headers are read when compiling. `check_external`
proves every external weight the IR reads is in the files with the same shape and dtype, and
`external_manifest` is what the saved artifact records instead of the data (name -> file, shape,
dtype; per file its size and the SHA-256 of its header). `bind` replaces the external entries of
a store by tensors that *are* the files' bytes (one copy-on-write memory map per file; nothing is
read until a page is touched): `forge.load` calls it, so loading never copies the checkpoint
through Python (the runtime may still copy what it compiles into its own layout). A bf16/f16
model compiles in f32 (`compile`'s cast policy); its checkpoint's tensors are then converted when
bound (a copy: `SafetensorsSource.cast`, the manifest's "cast").

Errors (`WeightBindError`) name the tensor and the file: a missing tensor, a shape or dtype that
differs from what the model was compiled with, an unreadable or corrupt header.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from forge.weights import WeightStore

__all__ = [
    "SafetensorsSource",
    "TensorEntry",
    "WeightBindError",
    "bind",
    "check_external",
    "external_manifest",
    "external_names",
    "file_keys",
    "init_empty_weights",
    "source_from_manifest",
]

# safetensors dtype codes (the header's "dtype") and the torch dtypes they hold
_DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}
_HEADER_LIMIT = 100 * 2**20  # safetensors refuses headers above 100 MB too
# Copy-on-write, without reserving swap for the whole file (Linux's MAP_NORESERVE; Python 3.11 lacks the
# constant): a private writable map of a 32 GB checkpoint is otherwise refused on a 24 GB machine.
_PRIVATE_MAP = mmap.MAP_PRIVATE | getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform == "linux" else 0)


class WeightBindError(Exception):
    """External weights that cannot be bound: the message names the tensor and the file."""


@contextmanager
def init_empty_weights() -> Iterator[None]:
    """Build modules with their parameters on the meta device (buffers stay real tensors).

    Inside the block every `nn.Module.register_parameter` moves the parameter to ``meta`` (as
    `accelerate.init_empty_weights` does), so ``LlamaForCausalLM(config)`` at 8B costs no weight
    memory; buffers computed at construction (rotary tables) keep their values.
    """
    original = torch.nn.Module.register_parameter

    def register_on_meta(module: torch.nn.Module, name: str, param: torch.nn.Parameter | None) -> None:
        original(module, name, param)
        if param is not None and param.device.type != "meta":
            kwargs = {"requires_grad": param.requires_grad}
            module._parameters[name] = type(param)(param.to("meta"), **kwargs)

    torch.nn.Module.register_parameter = register_on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = original


def external_names(store: WeightStore, used: Iterable[str] | None = None) -> list[str]:
    """The canonical names of the external (meta) entries of `store` (among `used`, when given)."""
    names = store.names() if used is None else sorted({store.resolve(n) for n in used if n in store})
    return [n for n in names if not store.has_data(n)]


@dataclass(frozen=True)
class TensorEntry:
    """One tensor of a safetensors file, from its header: where its bytes are, what they hold."""

    file: Path
    key: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    start: int
    """Absolute byte offset of the data in `file`."""
    nbytes: int


class SafetensorsSource:
    """The tensors of a set of safetensors files, by name (headers only; see the module docstring)."""

    def __init__(
        self, files: list[Path], entries: dict[str, TensorEntry], header_sha256: dict[Path, str], cast: bool = False
    ):
        self.files = files
        self.entries = entries
        self.header_sha256 = header_sha256
        self.cast = cast
        """Whether a floating-point tensor may be stored in another floating-point dtype than the model
        was compiled with (a bf16 checkpoint of a model compiled in f32): bound as a converted copy."""

    @classmethod
    def open(
        cls, weights_from: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *, cast: bool = False
    ) -> SafetensorsSource:
        """Read the headers of `weights_from`: a ``.safetensors`` file, a directory (every
        ``*.safetensors`` in it), or a list of files. A name in two files is an error."""
        files = _files_of(weights_from)
        entries: dict[str, TensorEntry] = {}
        digests: dict[Path, str] = {}
        for path in files:
            header, digests[path] = _read_header(path)
            for key, entry in header.items():
                if key in entries:
                    raise WeightBindError(f"tensor {key!r} is in two weights files: {entries[key].file} and {path}")
                entries[key] = entry
        return cls(files, entries, digests, cast)

    def entry(self, name: str, shape: tuple[int, ...], dtype: torch.dtype) -> TensorEntry:
        """The entry for weight `name`, checked against the shape and dtype the model was compiled with."""
        entry = self.entries.get(name)
        if entry is None:
            where = ", ".join(str(f) for f in self.files)
            what = _describe(dtype, shape)
            raise WeightBindError(f"weight {name!r} ({what}) is in none of the weights files: {where}")
        cast = self.cast and entry.dtype.is_floating_point and dtype.is_floating_point
        if entry.shape != tuple(shape) or (entry.dtype != dtype and not cast):
            raise WeightBindError(
                f"weight {name!r} in {entry.file} is {_describe(entry.dtype, entry.shape)}, but the model was "
                f"compiled with {_describe(dtype, shape)}"
            )
        return entry


def file_keys(store: WeightStore, source: SafetensorsSource, names: Iterable[str]) -> dict[str, str]:
    """The key in `source` of each weight among `names`: its own name, else one of its aliases (a tied
    weight is saved once, under either name: `save_pretrained` keeps the embedding, drops the LM head)."""
    aliases: dict[str, list[str]] = {}
    for alias, canonical in store.aliases.items():
        aliases.setdefault(canonical, []).append(alias)
    keys = {}
    for name in names:
        found = [k for k in (name, *sorted(aliases.get(name, ()))) if k in source.entries]
        keys[name] = found[0] if found else name
    return keys


def check_external(store: WeightStore, source: SafetensorsSource, names: Iterable[str]) -> dict[str, str]:
    """Every external weight among `names` is in `source` (under its name or an alias) with its compiled
    shape and dtype (the error names the first that is not, and how many more are missing). Returns
    `file_keys`."""
    keys = file_keys(store, source, names)
    missing = [n for n, key in keys.items() if key not in source.entries]
    if missing:
        try:
            source.entry(missing[0], tuple(store[missing[0]].shape), store[missing[0]].dtype)
        except WeightBindError as err:
            more = f" (and {len(missing) - 1} more weights missing)" if len(missing) > 1 else ""
            raise WeightBindError(f"{err}{more}") from None
    for name, key in keys.items():
        tensor = store[name]
        source.entry(key, tuple(tensor.shape), tensor.dtype)
    return keys


def external_manifest(store: WeightStore, source: SafetensorsSource, names: Iterable[str]) -> dict[str, Any]:
    """What a saved artifact records for its external weights (JSON): the files (absolute path, size,
    SHA-256 of the header) and, per weight, its file, shape and dtype."""
    keys = check_external(store, source, names)
    used_files = sorted({source.entries[k].file for k in keys.values()}, key=source.files.index)
    index = {path: i for i, path in enumerate(used_files)}
    return {
        **({"cast": True} if source.cast else {}),
        "files": [
            {"path": str(path.resolve()), "bytes": path.stat().st_size, "header_sha256": source.header_sha256[path]}
            for path in used_files
        ],
        "tensors": {
            n: {"file": index[source.entries[k].file], **({"key": k} if k != n else {}),
                "shape": list(store[n].shape), "dtype": str(store[n].dtype)}
            for n, k in keys.items()
        },
    }


def source_from_manifest(manifest: dict[str, Any], weights_from: Any = None) -> SafetensorsSource:
    """The source a saved artifact names (or `weights_from`, which overrides it); recorded files
    whose header changed since the compile are refused."""
    cast = bool(manifest.get("cast", False))
    if weights_from is not None:
        return SafetensorsSource.open(weights_from, cast=cast)
    files = [Path(f["path"]) for f in manifest["files"]]
    source = SafetensorsSource.open(files, cast=cast)
    for recorded in manifest["files"]:
        path = Path(recorded["path"])
        if source.header_sha256[path] != recorded["header_sha256"]:
            raise WeightBindError(f"weights file {path} changed since the model was compiled (its header differs)")
    return source


def bind(
    store: WeightStore, source: SafetensorsSource, names: Iterable[str] | None = None,
    keys: dict[str, str] | None = None,
) -> WeightStore:
    """A store with the external entries (those among `names`, default all) replaced by memory-mapped
    tensors of `source` (copy-on-write: a write never reaches the file), read under `keys` (name ->
    key in the files; default `file_keys`); aliases are kept."""
    external = list(external_names(store) if names is None else names)
    keys = {**file_keys(store, source, external), **(keys or {})}
    maps: dict[Path, mmap.mmap] = {}
    result = WeightStore()
    for name, tensor in store.items():
        if name in external:
            mapped = _mapped(source.entry(keys[name], tuple(tensor.shape), tensor.dtype), maps)
            tensor = mapped if mapped.dtype == tensor.dtype else mapped.to(tensor.dtype)  # cast: a copy
        result.add(name, tensor)
    for alias, canonical in store.aliases.items():
        result._aliases[alias] = canonical
    return result


# --- safetensors files -----------------------------------------------------------------------------


def _files_of(weights_from: Any) -> list[Path]:
    if isinstance(weights_from, (str, os.PathLike)):
        path = Path(weights_from)
        if path.is_dir():
            files = sorted(path.glob("*.safetensors"))
            if not files:
                raise WeightBindError(f"weights directory {path} holds no *.safetensors files")
            return files
        candidates = [path]
    else:
        try:
            candidates = [Path(p) for p in weights_from]
        except TypeError:
            raise WeightBindError(
                f"weights_from: expected a .safetensors file, a directory or a list of files, "
                f"got {type(weights_from).__name__}"
            ) from None
        if not candidates:
            raise WeightBindError("weights_from: an empty list of weights files")
    for path in candidates:
        if not path.is_file():
            raise WeightBindError(f"weights file not found: {path}")
    return candidates


def _read_header(path: Path) -> tuple[dict[str, TensorEntry], str]:
    """The tensors of one safetensors file (8-byte little-endian header length, JSON header, data)."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            prefix = f.read(8)
            (length,) = struct.unpack("<Q", prefix) if len(prefix) == 8 else (-1,)
            if not 0 < length <= min(_HEADER_LIMIT, size - 8):
                raise WeightBindError(f"weights file {path}: not a safetensors file (bad header length)")
            raw = f.read(length)
    except OSError as err:
        raise WeightBindError(f"weights file {path}: cannot read ({err.strerror or err})") from None
    try:
        header = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as err:
        raise WeightBindError(f"weights file {path}: corrupt header ({err})") from None
    if not isinstance(header, dict):
        raise WeightBindError(f"weights file {path}: corrupt header (not a JSON object)")
    base = 8 + length
    entries = {}
    for key, info in header.items():
        if key != "__metadata__":
            entries[key] = _entry(path, key, info, base, size)
    return entries, hashlib.sha256(raw).hexdigest()


def _entry(path: Path, key: str, info: Any, base: int, size: int) -> TensorEntry:
    bad = WeightBindError(f"weights file {path}: corrupt header entry for tensor {key!r}: {info!r}")
    if not isinstance(info, dict):
        raise bad
    dtype = _DTYPES.get(info.get("dtype"))
    if dtype is None:
        raise WeightBindError(f"weights file {path}: tensor {key!r} has dtype {info.get('dtype')!r}, "
                              f"which Forge cannot bind (supported: {', '.join(_DTYPES)})")
    shape, offsets = info.get("shape"), info.get("data_offsets")
    if not (isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape)
            and isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
        raise bad
    start, end = base + offsets[0], base + offsets[1]
    numel = 1
    for d in shape:
        numel *= d
    if not base <= start <= end <= size or end - start != numel * torch.empty((), dtype=dtype).element_size():
        raise WeightBindError(f"weights file {path}: tensor {key!r}'s data offsets {offsets} do not fit "
                              f"{_describe(dtype, tuple(shape))} in a {size}-byte file")
    return TensorEntry(path, key, dtype, tuple(shape), start, end - start)


def _mapped(entry: TensorEntry, maps: dict[Path, mmap.mmap]) -> torch.Tensor:
    """The tensor whose storage is `entry`'s bytes in a copy-on-write map of its file."""
    if entry.nbytes == 0:
        return torch.empty(entry.shape, dtype=entry.dtype)
    if entry.file not in maps:
        with open(entry.file, "rb") as f:
            maps[entry.file] = mmap.mmap(f.fileno(), 0, flags=_PRIVATE_MAP, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    flat = torch.frombuffer(maps[entry.file], dtype=torch.uint8, count=entry.nbytes, offset=entry.start)
    return flat.view(entry.dtype).view(entry.shape)


def _describe(dtype: torch.dtype, shape: tuple[int, ...]) -> str:
    return f"{str(dtype).removeprefix('torch.')} {list(shape)}"
