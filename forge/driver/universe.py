"""Forge's dialects and passes for xDSL's own `xdsl-opt` (entry point group `xdsl.universe`).

xDSL refuses a universe whose names clash with its own, and Forge has its own `dce` and `cse`:
those are offered to xdsl-opt as `forge-dce` and `forge-cse` (subclasses carrying the new name,
since xDSL checks that a pass spec names the pass class).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass
from xdsl.transforms import get_all_passes
from xdsl.universe import Universe

from forge.driver.registry import _forge_passes, get_all_dialects


def _renamed(loader: Callable[[], type[ModulePass]], name: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        cls = loader()
        return type(f"Xdsl{cls.__name__}", (cls,), {"name": name, "__doc__": cls.__doc__})

    return load


def xdsl_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Forge's passes under names that do not clash with xDSL's."""

    taken = set(get_all_passes())
    return {
        (f"forge-{name}" if name in taken else name): (_renamed(loader, f"forge-{name}") if name in taken else loader)
        for name, loader in _forge_passes().items()
    }


class _ForgeUniverse(Universe):
    """Built lazily: xDSL reads the entry point whenever any xdsl-opt starts."""

    def __init__(self) -> None:
        super().__init__(all_dialects=get_all_dialects(), all_passes=xdsl_passes())


FORGE_UNIVERSE = _ForgeUniverse()
