"""One place where every Forge dialect and pass is registered.

`forge-opt`, the model compiler, the xDSL plug-in entry point and the tests all build their
context and pass table from here, so a new dialect or pass only has to be added once.
Entries are lazy (callables) so that importing `forge.context` stays cheap, and `ForgeContext`
goes one step further for the `aten` dialect (426 ops, ~0.1 s to define them all): it builds
an `aten` op class when an op of that name is first parsed or looked up, not the whole dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

from xdsl.context import Context
from xdsl.ir import Dialect, Operation
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


class ForgeContext(Context):
    """xDSL's Context, with the ops of the `aten` dialect looked up one by one (`dialects.aten.op_named`)
    instead of loading the whole dialect on its first op. Loading the dialect later (e.g.
    `load_registered_dialect("aten")`) still works: an op already looked up is the same class."""

    def _get_known_op(self, name: str) -> type[Operation] | None:
        known = self._loaded_ops.get(name)
        if known is not None:
            return known
        if name.startswith("aten.") and "aten" in self._registered_dialects and "aten" not in self._loaded_dialects:
            from dialects.aten import op_named

            found = op_named(name)  # the dialect has no other ops: None is its answer, no need to load it
            if found is not None:
                self._loaded_ops[name] = found
            return found
        return super()._get_known_op(name)

    def load_op(self, op: type[Operation]) -> None:
        if self._loaded_ops.get(op.name) is op:  # looked up before its dialect was loaded
            return
        super().load_op(op)

    def clone(self) -> ForgeContext:
        ctx = ForgeContext(self.allow_unregistered)
        for field in ("_loaded_dialects", "_loaded_ops", "_loaded_attrs", "_loaded_types", "_registered_dialects"):
            setattr(ctx, field, getattr(self, field).copy())
        return ctx


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


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass Forge knows: its own, the plug-ins and the passes registered at run time
    (Forge's win on a name clash)."""
    registered = {name: (lambda cls=cls: cls) for name, cls in _REGISTERED_PASSES.items()}
    return {**_plugin_passes(), **registered, **_forge_passes()}


def make_context(allow_unregistered: bool = False) -> Context:
    """A context with builtin, func, arith and all Forge dialects loaded."""
    from xdsl.dialects.arith import Arith
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    ctx = ForgeContext(allow_unregistered=allow_unregistered)
    for dialect in (Builtin, Func, Arith):
        ctx.load_dialect(dialect)
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    return ctx
