"""Weights live outside the IR, in a `WeightStore`, and the IR names them.

Printed IR must stay readable and diffable, so parameters, buffers and lifted constants never go
into it: an op such as ``aten.weight`` carries the *name* of a store entry.  A compiled model is
therefore a pair of files side by side::

    model.mlir           the IR (text, parsed and printed with xDSL)
    model.safetensors    the WeightStore (safetensors; Forge metadata in its header)

Tied weights (GPT-2's ``wte`` and ``lm_head``) are one tensor under two names.  `WeightStore.add`
recognises that by storage identity and keeps one entry; the second name becomes an *alias* that
`resolve` maps to the canonical name, and that survives `save`/`load`.

Compressed weights (`weights="int8"|"int4"`, forge/quantize.py): `WeightStore.compress` replaces an
entry's float tensor by its `CompressedWeight` (integers and scales); `store[name]` then dequantizes
on demand, `compressed(name)` gives the stored form to the runtime, `nbytes` counts the compressed
bytes, and the file holds the integers under the entry's name and the scales beside them
(`<name>::scale`), described in the header metadata (`forge.compressed`, format `forge-weights/2`).
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from xdsl.parser import Parser
from xdsl.printer import Printer

from forge.quantize import CompressedWeight, compressed_from

if TYPE_CHECKING:
    import torch
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

WEIGHTS_SUFFIX = ".safetensors"
FORMAT_VERSION = "forge-weights/1"
COMPRESSED_FORMAT_VERSION = "forge-weights/2"  # a file with compressed entries (older readers refuse it)
_FORMATS = (FORMAT_VERSION, COMPRESSED_FORMAT_VERSION)
_SCALE_SUFFIX = "::scale"  # the scales of compressed entry <name> are the file's entry <name>::scale
# Keys in the safetensors header metadata (a str -> str map).
_META_FORMAT = "forge.format"
_META_ALIASES = "forge.aliases"  # JSON object: alias name -> canonical name
_META_ORDER = "forge.order"  # JSON list: canonical names in insertion order
_META_COMPRESSED = "forge.compressed"  # JSON object: name -> CompressedWeight.describe()


class WeightsError(Exception):
    """A weights file is missing, unreadable, or inconsistent.  The message names the path."""


_StorageKey = "tuple[int, int, tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]"


def _storage_key(tensor: torch.Tensor) -> _StorageKey | None:
    """What makes two tensors the same weight: same storage bytes, offset, shape, stride, dtype.

    A meta tensor (an external weight) has no bytes but a storage object: tied meta parameters
    share it, so its identity is the key. None when identity is meaningless (empty or fake
    tensors), so such tensors are never merged.
    """
    try:
        storage = tensor.untyped_storage()
        ptr = storage.data_ptr()
        if ptr == 0 and tensor.device.type == "meta" and storage.nbytes():
            ptr = storage._cdata  # the StorageImpl: alive (so unique) while the store holds the tensor
        elif ptr == 0 or storage.nbytes() == 0:
            return None
    except (RuntimeError, NotImplementedError):
        return None
    return (ptr, tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()),
            tensor.dtype, tensor.device)


def _same_storageless(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors without a storage key (empty, meta) are interchangeable."""
    return (a.shape == b.shape and a.dtype == b.dtype and a.device == b.device
            and a.numel() == 0 and b.numel() == 0)


def _same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and bytes (bitwise: -0.0 is not 0.0, a NaN equals the same NaN); False for meta tensors."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype or "meta" in (a.device.type, b.device.type):
        return False
    as_bytes = [t.detach().contiguous().reshape(-1).view(torch.uint8) for t in (a, b)]
    return bool(torch.equal(*as_bytes))


class WeightStore:
    """An ordered mapping from weight name to `torch.Tensor`, with tied weights stored once.

    Every name is either *canonical* (it owns an entry) or an *alias* of a canonical name.
    ``store[name]`` and ``name in store`` accept both; iteration, ``len``, ``names()``, ``items()``
    and ``nbytes`` cover canonical entries only, so each tensor is counted and saved once.
    Tensors are kept by reference (detached, not copied).
    """

    def __init__(self) -> None:
        self._tensors: dict[str, torch.Tensor | CompressedWeight] = {}
        self._aliases: dict[str, str] = {}
        self._by_key: dict[_StorageKey, str] = {}
        self._counters: dict[str, int] = {}

    # -- building -------------------------------------------------------------------------------

    def add(self, name: str, tensor: torch.Tensor) -> str:
        """Add ``tensor`` under ``name``; return the name the IR should use.

        If the same data is already stored (same storage, offset, shape, stride and dtype, as for
        tied parameters), nothing is copied: ``name`` becomes an alias and the existing canonical
        name is returned.  Re-adding an existing name with the same data is a no-op; with different
        data it is a `ValueError`.
        """
        import torch

        if not isinstance(name, str) or not name:
            raise ValueError(f"weight name must be a non-empty str, got {name!r}")
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(
                f"weight {name!r}: expected a torch.Tensor, got {type(tensor).__name__}"
            )
        tensor = tensor.detach()
        key = _storage_key(tensor)
        if name in self:
            existing = self.resolve(name)
            if key is not None and self._by_key.get(key) == existing:
                return existing
            held = self._tensors[existing]
            if key is None and not isinstance(held, CompressedWeight) and _same_storageless(held, tensor):
                return existing
            raise ValueError(f"weight {name!r} is already in the store with different data")
        if key is not None and key in self._by_key:
            canonical = self._by_key[key]
            self._aliases[name] = canonical
            return canonical
        self._tensors[name] = tensor
        if key is not None:
            self._by_key[key] = name
        return name

    def subset(self, names: Iterable[str]) -> WeightStore:
        """A store with only the entries `names` resolve to (and the aliases of those entries).

        Passes can leave entries unused (fold replaces GPT-2's position-embedding lookup by a
        new constant); saving a compiled model keeps only what its IR references.
        """
        result = WeightStore()
        result.adopt(self, names)
        return result

    def adopt(self, other: WeightStore, names: Iterable[str]) -> None:
        """Hold `other`'s entries for `names` by reference (float tensors, compressed forms and the aliases that
        resolve to them): graphs saved with one weights file share its memory. A name already here with other
        data is a `ValueError`."""
        keep = {other.resolve(n) for n in names}
        for name in other.names():
            if name not in keep:
                continue
            held = other._tensors[name]
            if isinstance(held, CompressedWeight):
                if name in self and not self.same_entry(name, other):
                    raise ValueError(f"weight {name!r} is already in the store with different data")
                self._tensors[name] = held
            else:
                self.add(name, held)
        for alias, canonical in other._aliases.items():
            if canonical in keep and alias not in self:
                self._aliases[alias] = self.resolve(canonical)

    def same_entry(self, name: str, other: WeightStore) -> bool:
        """Whether `name` holds the same values here and in `other`: the same memory, or the same shape, dtype
        and bytes (NaN payloads included); a compressed entry: the same form with the same integers and scales."""
        a, b = self._tensors[self.resolve(name)], other._tensors[other.resolve(name)]
        if isinstance(a, CompressedWeight) or isinstance(b, CompressedWeight):
            if not (isinstance(a, CompressedWeight) and isinstance(b, CompressedWeight)):
                return False
            return a is b or ((a.mode, a.k_axis) == (b.mode, b.k_axis)
                              and _same_bytes(a.data, b.data) and _same_bytes(a.scale, b.scale))
        key = _storage_key(a)
        return (key is not None and key == _storage_key(b)) or _same_bytes(a, b)

    def compress(self, name: str, compressed: CompressedWeight) -> None:
        """Hold `name`'s entry (and so its aliases) as `compressed` instead of its float tensor, which the
        store then no longer references. The shape must be the entry's."""
        canonical = self.resolve(name)
        held = self._tensors[canonical]
        if tuple(held.shape) != tuple(compressed.shape):
            raise ValueError(f"weight {name!r}: compressed shape {list(compressed.shape)} is not the entry's "
                             f"{list(held.shape)}")
        if not isinstance(held, CompressedWeight):
            self._by_key = {k: v for k, v in self._by_key.items() if v != canonical}
        self._tensors[canonical] = compressed

    def compressed(self, name: str) -> CompressedWeight | None:
        """The compressed form of `name`'s entry, None when it holds a tensor."""
        held = self._tensors[self.resolve(name)]
        return held if isinstance(held, CompressedWeight) else None

    def add_all(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> dict[str, str]:
        """`add` each pair; return a map from every given name to the name to use in the IR."""
        return {name: self.add(name, tensor) for name, tensor in named_tensors}

    def fresh_name(self, prefix: str = "const") -> str:
        """A name ``<prefix>_<n>`` not used by any entry or alias of this store."""
        n = self._counters.get(prefix, 0)
        while f"{prefix}_{n}" in self:
            n += 1
        self._counters[prefix] = n + 1
        return f"{prefix}_{n}"

    def add_constant(self, tensor: torch.Tensor, prefix: str = "const") -> str:
        """Add a tensor created at compile time (e.g. by constant folding) under a fresh name."""
        return self.add(self.fresh_name(prefix), tensor)

    # -- reading --------------------------------------------------------------------------------

    def resolve(self, name: str) -> str:
        """The canonical name for ``name`` (itself if it is canonical).  KeyError if unknown."""
        if name in self._tensors:
            return name
        try:
            return self._aliases[name]
        except KeyError:
            raise KeyError(f"no weight named {name!r} in the store") from None

    @property
    def aliases(self) -> dict[str, str]:
        """Alias name -> canonical name (a copy)."""
        return dict(self._aliases)

    def __getitem__(self, name: str) -> torch.Tensor:
        """The entry's tensor (a compressed entry is dequantized: a new f32 tensor each call)."""
        held = self._tensors[self.resolve(name)]
        return held.dequantize() if isinstance(held, CompressedWeight) else held

    def shape_and_dtype(self, name: str) -> tuple[tuple[int, ...], torch.dtype]:
        """The entry's shape and dtype as the IR reads it (a compressed entry: its f32 shape), without
        dequantizing it (a load checks every weight: dequantizing them all cost time and a transient f32 copy)."""
        held = self._tensors[self.resolve(name)]
        return tuple(held.shape), held.dtype

    def has_data(self, name: str) -> bool:
        """Whether the entry holds values: False for an *external* weight, a meta-device tensor
        (name, shape and dtype only) bound from safetensors files when the compiled model is loaded
        (forge/frontend/meta_weights.py). Passes that compute with weight values skip such entries."""
        held = self._tensors[self.resolve(name)]
        return isinstance(held, CompressedWeight) or held.device.type != "meta"

    def __contains__(self, name: object) -> bool:
        return name in self._tensors or name in self._aliases

    def __len__(self) -> int:
        return len(self._tensors)

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def names(self) -> list[str]:
        """Canonical names, in insertion order."""
        return list(self._tensors)

    def items(self) -> Iterator[tuple[str, torch.Tensor]]:
        """(name, tensor) of the canonical entries; compressed ones dequantized (`compressed` for the form)."""
        return ((name, self[name]) for name in self._tensors)

    def held_tensors(self) -> Iterator[torch.Tensor]:
        """The tensors the canonical entries hold, as stored (a compressed entry's integers and scales)."""
        for t in self._tensors.values():
            yield from (t.data, t.scale) if isinstance(t, CompressedWeight) else (t,)

    def release_mapped_pages(self) -> int:
        """Drop the resident pages of the entries that are memory-mapped from an unwritten file (read back
        from the file when touched again: `forge.mapped_pages`); the bytes released. For after a device
        compile has taken its own copy."""
        from forge.mapped_pages import release

        return release(self.held_tensors())

    @property
    def nbytes(self) -> int:
        """Bytes held by the canonical entries (aliases cost nothing; a compressed entry its integers and scales)."""
        return sum(t.nbytes if isinstance(t, CompressedWeight) else t.numel() * t.element_size()
                   for t in self._tensors.values())

    def __repr__(self) -> str:
        return (f"WeightStore({len(self)} tensors, {len(self._aliases)} aliases, "
                f"{self.nbytes / 2**20:.1f} MiB)")

    # -- persistence ----------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the store to a ``.safetensors`` file (atomically); aliased data is written once.

        The header metadata records the aliases and the insertion order of the entries.
        """
        from safetensors.torch import save_file  # lazy: start-up cost, only files need safetensors

        path = Path(path)
        tensors: dict[str, torch.Tensor] = {}
        seen_storages: set[int] = set()
        compressed: dict[str, dict[str, object]] = {}
        for name, tensor in self._tensors.items():
            if isinstance(tensor, CompressedWeight):
                compressed[name] = tensor.describe()
                tensors[name] = tensor.data.contiguous()
                tensors[name + _SCALE_SUFFIX] = tensor.scale.contiguous()
                continue
            t = tensor.detach().to("cpu").contiguous()
            # safetensors refuses entries sharing memory; distinct entries that are views of one
            # storage (not aliases: they differ in offset/shape) get their own copy on disk.
            ptr = t.untyped_storage().data_ptr() if t.numel() else 0
            if ptr:
                if ptr in seen_storages:
                    t = t.clone()
                else:
                    seen_storages.add(ptr)
            tensors[name] = t
        metadata = {
            _META_FORMAT: COMPRESSED_FORMAT_VERSION if compressed else FORMAT_VERSION,
            _META_ALIASES: json.dumps(self._aliases),
            _META_ORDER: json.dumps(list(self._tensors)),
        }
        if compressed:
            metadata[_META_COMPRESSED] = json.dumps(compressed)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Write beside the target then rename: a crash never leaves a half-written file, and a
        # store that was loaded (memory-mapped) from `path` stays valid while it is overwritten.
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.close(fd)
        try:
            save_file(tensors, tmp, metadata=metadata)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WeightStore:
        """Read a store written by `save` (or any safetensors file: then it has no aliases).

        Raises `WeightsError` naming ``path`` if the file is missing, unreadable or inconsistent.
        """
        from safetensors import safe_open  # lazy: start-up cost, only files need safetensors

        path = Path(path)
        if not path.is_file():
            raise WeightsError(f"weights file not found: {path}")
        try:
            with safe_open(str(path), framework="pt", device="cpu") as f:
                metadata = f.metadata() or {}
                tensors = {name: f.get_tensor(name) for name in f.keys()}
        except Exception as e:  # SafetensorError, OSError, bad dtype/shape in the header, ...
            raise WeightsError(f"cannot read weights file {path}: {e}") from e

        aliases, order, compressed = _forge_metadata(path, list(tensors), metadata)
        store = cls()
        for name in order:
            if name in compressed:
                c = compressed[name]
                try:
                    store._tensors[name] = compressed_from(c["mode"], tensors[name], tensors[name + _SCALE_SUFFIX],
                                                           c["k_axis"], tuple(c["shape"]))
                except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
                    raise WeightsError(f"weights file {path}: compressed entry {name!r}: {e}") from e
            else:
                store.add(name, tensors[name])
        store._aliases.update(aliases)
        return store


def _forge_metadata(path: Path, names: list[str],
                    metadata: dict[str, str]) -> tuple[dict[str, str], list[str], dict[str, dict]]:
    """The aliases, the entry order and the compressed entries a weights file records (Forge's header
    metadata), checked against the tensors it holds; `WeightsError` naming `path` when they are inconsistent."""
    fmt = metadata.get(_META_FORMAT)
    if fmt is not None and fmt not in _FORMATS:
        raise WeightsError(f"weights file {path}: unsupported format {fmt!r} "
                           f"(expected one of {', '.join(map(repr, _FORMATS))})")
    try:
        aliases = json.loads(metadata.get(_META_ALIASES, "{}"))
        order = json.loads(metadata.get(_META_ORDER, "null"))
        compressed = json.loads(metadata.get(_META_COMPRESSED, "{}"))
    except json.JSONDecodeError as e:
        raise WeightsError(f"weights file {path}: corrupt Forge metadata: {e}") from e
    if not isinstance(compressed, dict) or not all(
        isinstance(v, dict) and k + _SCALE_SUFFIX in names for k, v in compressed.items()
    ):
        raise WeightsError(f"weights file {path}: corrupt compressed-entry table")
    names = [n for n in names if not (n.endswith(_SCALE_SUFFIX) and n[: -len(_SCALE_SUFFIX)] in compressed)]
    if not isinstance(aliases, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in aliases.items()
    ):
        raise WeightsError(f"weights file {path}: corrupt alias table")
    if order is None:
        order = list(names)
    if (not isinstance(order, list) or not all(isinstance(n, str) for n in order)
            or sorted(order) != sorted(names)):
        raise WeightsError(f"weights file {path}: entry list does not match the stored tensors")
    for alias, target in aliases.items():
        if target not in names or alias in names:
            raise WeightsError(f"weights file {path}: alias {alias!r} -> {target!r} is invalid")
    if not set(compressed) <= set(order):
        raise WeightsError(f"weights file {path}: a compressed entry is not in the entry list")
    return aliases, order, compressed


_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "U32": 4, "U64": 8}


def check_weights_file(path: str | os.PathLike[str]) -> list[str]:
    """The entry names of a weights file, read from its safetensors header without torch (a few ms
    where `WeightStore.load` imports torch, seconds): the same `WeightsError`s as `load` for a missing,
    truncated or inconsistent file, so that a bad file is reported before anything needs its tensors."""
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"weights file not found: {path}")
    try:
        with open(path, "rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if size <= 0 or size > os.path.getsize(path) - 8:
                raise ValueError(f"header size {size} does not fit the file")
            header = json.loads(f.read(size))
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
        metadata = header.pop("__metadata__", None) or {}
        data_bytes = os.path.getsize(path) - 8 - size
        for name, entry in header.items():
            start, end = entry["data_offsets"]
            count = 1
            for dim in entry["shape"]:
                count *= dim
            if entry["dtype"] not in _DTYPE_BYTES or end - start != count * _DTYPE_BYTES[entry["dtype"]] \
                    or not 0 <= start <= end <= data_bytes:
                raise ValueError(f"entry {name!r} does not fit its dtype, shape or the file")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise WeightsError(f"cannot read weights file {path}: {e}") from e
    _, order, _ = _forge_metadata(path, list(header), metadata)
    return order


# -- model.mlir + model.safetensors ---------------------------------------------------------------


def companion_weights_path(mlir_path: str | os.PathLike[str]) -> Path:
    """The weights file that goes with an IR file: ``model.mlir`` -> ``model.safetensors``."""
    return Path(mlir_path).with_suffix(WEIGHTS_SUFFIX)


def save_module(module: str | ModuleOp, store: WeightStore,
                mlir_path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write ``module`` (IR text or a ModuleOp) to ``mlir_path`` and ``store`` beside it.

    Returns ``(mlir_path, weights_path)``.
    """
    mlir_path = Path(mlir_path)
    if isinstance(module, str):
        text = module
    else:
        buf = io.StringIO()
        Printer(stream=buf).print_op(module)
        text = buf.getvalue()
    if not text.endswith("\n"):
        text += "\n"
    weights_path = store.save(companion_weights_path(mlir_path))
    mlir_path.parent.mkdir(parents=True, exist_ok=True)
    mlir_path.write_text(text)
    return mlir_path, weights_path


def load_module(ctx: Context, mlir_path: str | os.PathLike[str]) -> tuple[ModuleOp, WeightStore]:
    """Read ``mlir_path`` and its companion weights, parsing in ``ctx`` (the caller's: drivers pass
    `forge.driver.registry.make_context()`, which knows every Forge dialect).

    A missing or corrupt weights file raises `WeightsError`; IR parse errors are xDSL's.
    """
    mlir_path = Path(mlir_path)
    text = mlir_path.read_text()
    store = WeightStore.load(companion_weights_path(mlir_path))
    module = Parser(ctx, text, name=str(mlir_path)).parse_module()
    return module, store


__all__ = [
    "WeightStore",
    "WeightsError",
    "companion_weights_path",
    "load_module",
    "save_module",
]


# --- the WeightStore of a module, for passes -------------------------------------------------------
# xDSL passes receive only (ctx, module). Passes that read or create weights (fold, layout) find the
# module's store here; forge-opt attaches the companion weights file, the compiler its import's store.

_STORES: weakref.WeakKeyDictionary[ModuleOp, WeightStore] = weakref.WeakKeyDictionary()
_LOADERS: weakref.WeakKeyDictionary[ModuleOp, Callable[[], WeightStore]] = weakref.WeakKeyDictionary()


def attach_weights(module: ModuleOp, store: WeightStore) -> None:
    """Make `store` the WeightStore of `module` (what `weights_of` returns)."""
    _LOADERS.pop(module, None)
    _STORES[module] = store


def attach_weights_loader(module: ModuleOp, load: Callable[[], WeightStore]) -> None:
    """Give `module` a WeightStore that `load()` makes when `weights_of` first asks for it: forge-opt
    attaches a companion weights file this way, so a run whose passes never read weights never
    imports torch."""
    _STORES.pop(module, None)
    _LOADERS[module] = load


def pending_weights_loader(module: ModuleOp) -> Callable[[], WeightStore] | None:
    """The loader of `module`'s store while it has not run (`attach_weights_loader`), else None."""
    return _LOADERS.get(module)


def weights_of(module: ModuleOp) -> WeightStore | None:
    """The WeightStore attached to `module`, or None when the IR came without weights."""
    load = _LOADERS.pop(module, None)
    if load is not None:
        _STORES[module] = load()
    return _STORES.get(module)
