"""Dialect-to-dialect conversions (aten -> npuir -> buffer) and memory planning, one per module.

`PASSES` maps each conversion's pass name to a lazy loader.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass

PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
