"""One place where every Forge dialect and pass is registered.

`forge-opt`, the model compiler, the xDSL plug-in entry point and the tests all build their
context and pass table from here, so a new dialect or pass only has to be added once.
Entries are lazy (callables) so that importing `forge.context` stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from xdsl.context import Context
from xdsl.ir import Dialect
from xdsl.passes import ModulePass

from forge import xdsl_fixes

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


def _plugin_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Third-party passes registered through the `forge.passes` entry point group.

    An entry point loads to a `ModulePass` subclass; it is registered under its `name`.
    """
    found: dict[str, Callable[[], type[ModulePass]]] = {}
    for ep in entry_points(group="forge.passes"):
        found[ep.name] = lambda ep=ep: ep.load()
    return found


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass Forge knows: its own and the plug-ins (Forge's win on a name clash)."""
    return {**_plugin_passes(), **_forge_passes()}


def make_context(allow_unregistered: bool = False) -> Context:
    """A context with builtin, func, arith and all Forge dialects loaded."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = Context(allow_unregistered=allow_unregistered)
    for dialect in (Builtin, Func, Arith):
        ctx.load_dialect(dialect)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx
