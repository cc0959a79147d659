"""Forge: a transparent, pass-by-pass compiler from torch.export graphs to NNFactory on OpenVINO.

The top-level names are imported lazily so that `import forge` stays cheap for the CLI.
"""

from __future__ import annotations

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
    return getattr(import_module(module_name), attr)


__all__ = sorted(_LAZY)
