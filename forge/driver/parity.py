"""Parity of a compiled model against PyTorch eager: max |difference| over every output tensor and the
mean KL divergence of the first output's softmax, in float64 (`forge.compile(check=True)`'s
`report["parity"]`, the zoo tests, bench/fidelity.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.utils._pytree as pytree

if TYPE_CHECKING:
    from forge.driver.artifact import CompiledModel


def measure_parity(
    model: torch.nn.Module, compiled: CompiledModel, args: Sequence[Any], kwargs: dict[str, Any] | None = None
) -> dict[str, float]:
    """`parity` of the compiled model against eager `model` on (args, kwargs). A model compiled under
    a cast policy is compared in the compute dtype (its outputs before they are cast back, against
    `model` on the cast inputs): what the compiler changed, not the rounding to bf16."""
    kwargs = dict(kwargs or {})
    defaults = compiled.signature.defaults if compiled.signature is not None else {}
    eager_kwargs = {**defaults, **kwargs}
    if compiled.cast is not None:
        eager_args, eager_kwargs = compiled.cast.apply(tuple(args), eager_kwargs)
    else:
        eager_args = tuple(args)
    with torch.no_grad():
        expected = model(*eager_args, **eager_kwargs)
    got = compiled.run(tuple(args), kwargs, cast_back=False)
    return parity(expected, got)


def parity(expected: Any, got: Any) -> dict[str, float]:
    """Max |difference| over every tensor of the outputs (tensors, tuples, dicts, ModelOutputs) and the
    mean KL(softmax(eager) || softmax(forge)) over the last dim of the first (logits, hidden state)."""
    expected_leaves = [t for t in pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)]
    got_leaves = [t for t in pytree.tree_leaves(got) if isinstance(t, torch.Tensor)]
    if len(expected_leaves) != len(got_leaves):
        raise ValueError(f"eager returns {len(expected_leaves)} tensor(s), the compiled model {len(got_leaves)}")
    if len(expected_leaves) != 1:
        first = parity(expected_leaves[0], got_leaves[0])
        max_abs = max(_max_abs(e, g) for e, g in zip(expected_leaves, got_leaves, strict=True))
        return {"max_abs": max_abs, "kl": first["kl"]}
    from forge.driver.accuracy import mean_kl  # lazy: imported when a check runs, not before

    expected, got = expected_leaves[0].double(), got_leaves[0].double()
    return {"max_abs": _max_abs(expected, got), "kl": mean_kl(expected, got)}


def _max_abs(expected: torch.Tensor, got: torch.Tensor) -> float:
    if expected.shape != got.shape:
        raise ValueError(f"eager returns a {tuple(expected.shape)} tensor, the compiled model {tuple(got.shape)}")
    if expected.numel() == 0:
        return 0.0
    return (expected.double() - got.double()).abs().max().item()
