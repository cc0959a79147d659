"""`model.mlir` comes with `model.safetensors`: forge-opt's side of the companion weights file.

The input's companion weights are attached to the module (passes find them with `weights_of`), and
each IR file forge-opt writes (`-o out.mlir`, a reproducer) gets the module's WeightStore beside it.
Importing `forge.weights` loads torch (seconds), so it is imported only when there is a weights file:
until then no module can have a store.
"""

from __future__ import annotations

import os
import sys

from xdsl.dialects.builtin import ModuleOp

from forge.cli.errors import ForgeOptError
from forge.diagnostics import one_line

WEIGHTS_SUFFIX = ".safetensors"
"""forge.weights.WEIGHTS_SUFFIX, repeated so that a run without weights does not import torch."""


def attach_companion_weights(input_file: str | None, module: ModuleOp) -> None:
    """Give `module` the WeightStore of the input's companion weights file, if there is one."""
    if not input_file:
        return
    path = os.path.splitext(input_file)[0] + WEIGHTS_SUFFIX
    if not os.path.exists(path):
        return
    from forge.weights import WeightsError, WeightStore, attach_weights  # lazy: start-up cost (torch)

    try:
        attach_weights(module, WeightStore.load(path))
    except WeightsError as e:
        raise ForgeOptError(one_line(str(e))) from None


def save_companion_weights(mlir_path: str, module: ModuleOp) -> None:
    """Write the WeightStore of `module`, if it has one, beside the IR file `mlir_path`."""
    if "forge.weights" not in sys.modules:  # no store was attached: nothing imported it
        return
    from forge.weights import companion_weights_path, weights_of  # lazy: start-up cost (torch)

    if (store := weights_of(module)) is not None:
        store.save(companion_weights_path(mlir_path))
