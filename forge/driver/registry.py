"""One place where every Forge dialect and pass is registered.

`forge-opt`, the model compiler, the xDSL plug-in entry point and the tests all build their
context and pass table from here, so a new dialect or pass only has to be added once.
Entries are lazy (callables) so that importing `forge.driver.registry` stays cheap, and the contexts are
`ForgeContext`s (dialects/context.py), which go one step further for the `aten` dialect: an `aten`
op class is built when an op of that name is first parsed or looked up, not the whole dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass

from dialects.context import ForgeContext
from forge import xdsl_fixes

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

xdsl_fixes.apply()


def _aten() -> Dialect:
    from dialects.aten import Aten

    return Aten


def _npuir() -> Dialect:
    from dialects.npuir import NPUIR

    return NPUIR


def _buffer() -> Dialect:
    from dialects.buffer import Buffer

    return Buffer


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Forge's own dialects by name (builtin/func/arith come from xDSL)."""
    return {"aten": _aten, "npuir": _npuir, "buffer": _buffer}


def _forge_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Forge's own passes by name. Each pass lives in its own module, imported lazily."""
    from forge.transforms import PASSES as transform_passes
    from lowering import PASSES as lowering_passes

    return {**transform_passes, **lowering_passes}


def entry_points(group: str) -> Iterable[EntryPoint]:
    """`importlib.metadata.entry_points(group=...)`, imported on first use: `forge-opt` and a compile
    read entry points only when a pass name is not Forge's own (`PassTable`)."""
    from importlib.metadata import entry_points as read

    return read(group=group)


def _plugin_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Third-party passes registered through the `forge.passes` entry point group.

    An entry point loads to a `ModulePass` subclass; it is registered under its `name`.
    """
    found: dict[str, Callable[[], type[ModulePass]]] = {}
    for ep in entry_points(group="forge.passes"):
        found[ep.name] = lambda ep=ep: ep.load()
    return found


_REGISTERED_PASSES: dict[str, type[ModulePass]] = {}
"""Passes registered at run time with `register_pass` (e.g. by `forge-opt --load-pass-plugin`)."""


def register_pass(pass_cls: type[ModulePass]) -> type[ModulePass]:
    """Register a pass under its `name` (usable as a class decorator); ValueError on a name clash.

    This is how a Python file loaded with `forge-opt --load-pass-plugin=FILE` offers its passes.
    """
    name = getattr(pass_cls, "name", None)
    if not isinstance(pass_cls, type) or not issubclass(pass_cls, ModulePass) or not isinstance(name, str):
        raise TypeError(f"register_pass expects a ModulePass subclass with a name, got {pass_cls!r}")
    known = _REGISTERED_PASSES.get(name)
    if known is None and name in get_all_passes() or known is not None and _origin(known) != _origin(pass_cls):
        raise ValueError(f"a pass named '{name}' is already registered")
    _REGISTERED_PASSES[name] = pass_cls
    return pass_cls


def _origin(cls: type) -> tuple[str, str]:
    """Where a class was defined: loading the same plug-in file again re-registers, not clashes."""
    return cls.__module__, cls.__qualname__


PassFactory = Callable[[], type[ModulePass]]


class PassTable(Mapping[str, PassFactory]):
    """Every pass Forge knows, by name: its own, the passes registered at run time and the plug-ins'
    (`forge.passes` entry points); on a name clash Forge's own win, then the registered ones.

    Lazy on purpose: reading the entry points scans the metadata of every installed package (20-30 ms
    cold, paid by every `forge.compile` and `forge-opt` run), and a lookup of one of Forge's own or a
    registered pass cannot be answered differently by a plug-in (those win a clash). So the plug-ins
    are read only when a lookup misses (`name in table`, `table[name]`) or the whole table is listed
    (iteration, `len`, `keys()`, `items()`), once per table."""

    def __init__(self, known: dict[str, PassFactory]):
        self._known = known
        self._every: dict[str, PassFactory] | None = None

    @property
    def known(self) -> dict[str, PassFactory]:
        """Forge's own and the registered passes: what the table answers without reading the plug-ins."""
        return self._known

    def _all(self) -> dict[str, PassFactory]:
        if self._every is None:
            self._every = {**_plugin_passes(), **self._known}
        return self._every

    def __getitem__(self, name: str) -> PassFactory:
        found = self._known.get(name)
        return found if found is not None else self._all()[name]

    def __contains__(self, name: object) -> bool:
        return name in self._known or name in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


def get_all_passes() -> PassTable:
    """Every pass Forge knows: its own, the plug-ins and the passes registered at run time
    (Forge's win on a name clash); the plug-ins are read on the first lookup that needs them (`PassTable`)."""
    registered = {name: (lambda cls=cls: cls) for name, cls in _REGISTERED_PASSES.items()}
    return PassTable({**registered, **_forge_passes()})


def _arith() -> Dialect:
    from xdsl.dialects.arith import Arith

    return Arith


def make_context(allow_unregistered: bool = False) -> Context:
    """A context with builtin and func loaded, arith and all Forge dialects registered (loaded on their
    first op: no compile pipeline builds arith, whose import was ~30 ms of every cold `forge.compile`)."""
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = ForgeContext(allow_unregistered=allow_unregistered)
    for dialect in (Builtin, Func):
        ctx.load_dialect(dialect)
    ctx.register_dialect("arith", _arith)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx
