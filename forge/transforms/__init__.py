"""Optimization passes on the `aten` dialect, one pass per module.

`PASSES` maps each pass name to a lazy loader, so the pass table costs nothing to build.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass

PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
