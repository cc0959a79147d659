"""`model.mlir` comes with `model.safetensors`: forge-opt's side of the companion weights file.

The input's companion weights are attached to the module (passes find them with `weights_of`), and
each IR file forge-opt writes (`-o out.mlir`, a reproducer) gets the module's WeightStore beside it.
The file's header is checked when it is attached (no torch: a bad file is an error before any pass
runs), but its tensors are read (with torch, which takes seconds to import) only when a pass first
asks for them; a run that never does copies the file to `out.safetensors` unread.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp

from forge.cli.errors import ForgeOptError
from forge.diagnostics import one_line
from forge.weights import (
    WEIGHTS_SUFFIX,
    WeightsError,
    WeightStore,
    attach_weights_loader,
    check_weights_file,
    companion_weights_path,
    pending_weights_loader,
    weights_of,
)

LoadObserver = Callable[[str, float], None]
"""Told `(weights file, ms)` when the tensors of an attached weights file are read (for --timing)."""

def companion_of(input_file: str | None) -> str | None:
    """The companion weights file of an input, if it has one."""
    if not input_file:
        return None
    path = os.path.splitext(input_file)[0] + WEIGHTS_SUFFIX
    return path if os.path.exists(path) else None


def attach_companion_weights(
    input_file: str | None, module: ModuleOp, on_load: LoadObserver | None = None
) -> str | None:
    """Give `module` the WeightStore of the input's companion weights file, if there is one (its header
    checked now, its tensors read on first use); returns the file."""
    path = companion_of(input_file)
    if path is None:
        return None
    try:
        check_weights_file(path)
    except WeightsError as e:
        raise ForgeOptError(one_line(str(e))) from None

    attach_weights_loader(module, _CompanionLoader(path, on_load))
    return path


class _CompanionLoader:
    """Reads the companion file into a WeightStore (with torch) when a pass first asks for it."""

    def __init__(self, path: str, on_load: LoadObserver | None):
        self.path = path
        self.on_load = on_load

    def __call__(self) -> WeightStore:
        start = time.perf_counter()
        try:
            store = WeightStore.load(self.path)
        except WeightsError as e:
            raise ForgeOptError(one_line(str(e))) from None
        if self.on_load is not None:
            self.on_load(self.path, (time.perf_counter() - start) * 1e3)
        return store


def save_companion_weights(mlir_path: str, module: ModuleOp) -> None:
    """Write the WeightStore of `module`, if it has one, beside the IR file `mlir_path` (a store that was
    never read is the input's file, copied)."""
    target = companion_weights_path(mlir_path)
    loader = pending_weights_loader(module)
    if loader is not None:
        source = getattr(loader, "path", None)
        if source is not None and os.path.abspath(source) != os.path.abspath(target):
            shutil.copyfile(source, target)
        return
    if (store := weights_of(module)) is not None:
        store.save(target)
