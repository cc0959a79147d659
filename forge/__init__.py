"""Forge: a transparent, pass-by-pass compiler from torch.export graphs to NNFactory on OpenVINO.

The top-level names are imported lazily so that `import forge` stays cheap for the CLI; the first
access imports its module with garbage collection paused (see `_import`).
"""

from __future__ import annotations

import gc
import sys
from importlib import import_module
from typing import Any

_LAZY = {
    "compile": ("forge.compiler", "compile"),
    "compile_meta": ("forge.compiler", "compile_meta"),
    "init_empty_weights": ("forge.frontend.meta_weights", "init_empty_weights"),
    "generate": ("forge.generation", "generate"),
    "load": ("forge.compiler", "load"),
    "CompiledModel": ("forge.compiler", "CompiledModel"),
    "import_module": ("forge.frontend.fx_importer", "import_module"),
    "import_program": ("forge.frontend.fx_importer", "import_program"),
    "interpret": ("forge.interpreter", "interpret"),
    "WeightStore": ("forge.weights", "WeightStore"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'forge' has no attribute '{name}'")
    module_name, attr = _LAZY[name]
    module = sys.modules.get(module_name)
    return getattr(module if module is not None else _import(module_name), attr)


def _import(module_name: str) -> Any:
    """Import `module_name` without collecting: importing forge.compiler (xDSL, the dialects) allocates
    ~0.3 M long-lived objects, and the collections that triggers walked them 50+ times (~20-40 ms of a
    cold `forge.compile`, more when a full collection falls in it). Afterwards everything goes to the
    oldest generation unscanned (freeze, then unfreeze), so resuming does not scan it either."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return import_module(module_name)
    finally:
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()


__all__ = sorted(_LAZY)
