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


CHECK_RTOL = 1e-4
"""`check=True` fails beyond the mode's bound plus this fraction of the output's scale (max |eager|): the f32
zoo families stay within 1e-4 at scales 0.3-10 (tests/compiler/test_zoo_families.py)."""


def check_parity(model: torch.nn.Module, compiled: CompiledModel, args: Sequence[Any], kwargs: dict[str, Any] | None,
                 bound: float) -> dict[str, Any]:
    """`measure_parity` judged: `scale` (max |eager output|), `tolerance` (`bound` + CHECK_RTOL * scale) and
    `ok`; a NaN difference is never ok."""
    measured, expected = _measured(model, compiled, args, kwargs)
    scale = max((finite_scale(t) for t in pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)), default=0.0)
    tolerance = bound + CHECK_RTOL * scale
    return {**measured, "scale": scale, "tolerance": tolerance, "ok": measured["max_abs"] <= tolerance}


def finite_scale(t: torch.Tensor) -> float:
    """max |t| over its finite elements (0 for an empty or all-NaN/inf tensor): what a difference is set against."""
    values = t.detach().double()
    finite = values[torch.isfinite(values)]
    return finite.abs().max().item() if finite.numel() else 0.0


def measure_parity(
    model: torch.nn.Module, compiled: CompiledModel, args: Sequence[Any], kwargs: dict[str, Any] | None = None
) -> dict[str, float]:
    """`parity` of the compiled model against eager `model` on (args, kwargs). A model compiled under
    a cast policy is compared in the compute dtype (its outputs before they are cast back, against
    `model` on the cast inputs): what the compiler changed, not the rounding to bf16."""
    return _measured(model, compiled, args, kwargs)[0]


def _measured(model, compiled, args, kwargs) -> tuple[dict[str, float], Any]:
    """(parity, eager outputs) of `measure_parity`."""
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
    return parity(expected, got), expected


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
