"""Where Forge's one-sweep `cse`/`dce` are exactly xDSL's, and where they hand over to xDSL's.

Forge's `cse` and `dce` take xDSL's names, so on any IR they must do what xDSL's do; their single
linear sweeps are faster (about 10x for CSE) but only equivalent on *plain dataflow* modules:

- the only ops with regions are `builtin.module` and `func.func`, each region one block (no
  control flow, no graph region other than the module body, no nested scopes), and
- every op's effects are static: an op that is not effect-free by its class's traits is also
  not effect-free, nor read-only, by xDSL's dynamic effect query (xDSL's CSE merges read-only ops
  in one block when no write lies between; Forge's sweep never does).

Forge's models (the aten, npuir and buffer dialects under `func.func`) are plain dataflow. On any
other module the passes run xDSL's own implementation (`cse` entirely; `dce` first, before the
eval-mode aten patterns, which fire on aten ops only), so a graph region, a multi-block region or
a read-only op gets xDSL's semantics.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Operation
from xdsl.traits import (
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    NoMemoryEffect,
    is_side_effect_free,
    only_has_effect,
)

_STATIC_PURE: dict[type[Operation], bool] = {}


def _statically_pure(cls: type[Operation]) -> bool:
    cached = _STATIC_PURE.get(cls)
    if cached is None:
        effects = cls.get_traits_of_type(MemoryEffect)
        cached = _STATIC_PURE[cls] = bool(effects) and all(isinstance(t, NoMemoryEffect) for t in effects)
    return cached


def _plain_op(op: Operation) -> bool:
    if op.regions:
        return isinstance(op, (ModuleOp, FuncOp)) and all(len(r.blocks) <= 1 for r in op.regions)
    if _statically_pure(type(op)) or op.has_trait(IsTerminator):
        return True
    return not is_side_effect_free(op) and not only_has_effect(op, MemoryEffectKind.READ)


def is_plain_dataflow(root: Operation) -> bool:
    """Whether Forge's one-sweep `cse`/`dce` give exactly xDSL's result on `root` (see above)."""
    return all(_plain_op(op) for op in root.walk())
