"""Optimization passes on the `aten` dialect, one pass per module named after the pass.

`PASSES` maps each pass name to a lazy loader, so building the pass table imports nothing. The
other modules are not passes: they hold what the passes' patterns share (`ir_queries`,
`linear_layers`) and the pieces `fuse_attention` matches with (`attention_matching`,
`attention_constants`). Every pass walks the IR with the one driver in `forge.patterns`.
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(import_module(f"forge.transforms.{module}"), cls)


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "dce": _lazy("dce", "DcePass"),
    "cse": _lazy("cse", "CsePass"),
    "fold": _lazy("fold", "FoldPass"),
    "fuse-attention": _lazy("fuse_attention", "FuseAttentionPass"),
    "fuse-ops": _lazy("fuse_ops", "FuseOpsPass"),
    "layout": _lazy("layout", "LayoutPass"),
}
