"""Seeded inputs and weight copies for comparing IR before and after a rewrite.

Kept apart from `forge.testing.check` so that `forge-opt --verify-semantics` needs no
hypothesis (a dev extra): this module needs only torch.
"""

from __future__ import annotations

import torch
from xdsl.dialects import func

from dialects.torch_types import dtype_of, shape_of
from forge.weights import WeightStore


def random_inputs(function: func.FuncOp, seed: int = 0) -> list[torch.Tensor]:
    """Seeded random tensors matching a function's argument types (floats normal, ints in [0, 5),
    bools fair coins): inputs for comparing a hand-written function before and after a rewrite."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for ty in function.function_type.inputs.data:
        shape, dtype = shape_of(ty), dtype_of(ty)
        if dtype == torch.bool:
            inputs.append(torch.rand(shape, generator=gen) > 0.5)
        elif dtype.is_floating_point:
            inputs.append(torch.randn(shape, generator=gen).to(dtype))
        else:
            inputs.append(torch.randint(0, 5, shape, generator=gen, dtype=dtype))
    return inputs


def copy_weights(store: WeightStore) -> WeightStore:
    """A copy of `store` (tensors cloned, aliases kept) so a pass cannot disturb the reference."""
    copy = WeightStore()
    for name, tensor in store.items():
        copy.add(name, tensor.clone())
    for alias, canonical in store.aliases.items():
        copy.add(alias, copy[canonical])
    return copy
