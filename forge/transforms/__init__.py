"""Optimization passes on the `aten` dialect, one pass per module named after the pass.

`PASSES` maps each pass name to a lazy loader, so building the pass table imports nothing.
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

DEFAULT_PIPELINE = ("dce", "cse", "fold", "fuse-attention", "fuse-ops", "layout", "dce", "cse")
"""The optimization pipeline the model compiler runs (dce/cse again to clean up after fusion)."""
