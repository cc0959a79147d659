"""Forge: a transparent, pass-by-pass compiler from torch.export graphs to NNFactory on OpenVINO.

The top-level names are imported lazily so that `import forge` stays cheap for the CLI; the first
access imports its module with garbage collection paused (see `_import`).
"""

from __future__ import annotations

import gc
import sys
import time
from importlib import import_module
from typing import Any

_LAZY = {
    "compile": ("forge.compiler", "compile"),
    "compile_meta": ("forge.meta_compile", "compile_meta"),
    "init_empty_weights": ("forge.frontend.meta_weights", "init_empty_weights"),
    "generate": ("forge.generation", "generate"),
    "load": ("forge.driver.load", "load"),
    "CompiledModel": ("forge.artifact", "CompiledModel"),
    "import_module": ("forge.frontend.fx_importer", "import_module"),
    "import_program": ("forge.frontend.fx_importer", "import_program"),
    "interpret": ("forge.interpreter", "interpret"),
    "WeightStore": ("forge.weights", "WeightStore"),
}


_unreported_ms = 0.0
"""Wall ms the first `forge.compile` / `forge.compile_meta` access spent importing its module (forge.compiler,
forge.meta_compile: the same stage modules), before the compile starts its clock; the compile adds it to its
report's `other_ms` (`take_import_ms`)."""


def take_import_ms() -> float:
    """The import ms not reported yet (then 0 until the next lazy import of a compile entry point)."""
    global _unreported_ms
    ms, _unreported_ms = _unreported_ms, 0.0
    return ms


def __getattr__(name: str) -> Any:
    global _unreported_ms
    if name not in _LAZY:
        raise AttributeError(f"module 'forge' has no attribute '{name}'")
    module_name, attr = _LAZY[name]
    module = sys.modules.get(module_name)
    if module is None:
        if name != "WeightStore":  # every other entry point runs on torch: one clear line for another release
            from forge.torch_support import check_torch

            check_torch()
        start = time.perf_counter()
        module = _import(module_name)
        if name in ("compile", "compile_meta"):
            _unreported_ms += (time.perf_counter() - start) * 1e3
    return getattr(module, attr)


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
