"""The accuracy every precision mode reports: `evaluate_accuracy(model, compiled, example_args)` runs eager
f32 and the compiled model on `SEQUENCES` (100) seeded inputs of the compiled shapes and returns max |diff|,
mean KL and top-1 agreement; `accuracy_report` adds the mode's bounds (forge/precision.py) and whether
they hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from forge.precision import SEQUENCES, bounds, mode_name, within_bounds

TOKEN_KWARGS = ("input_ids", "decoder_input_ids")
"""Keyword inputs drawn per sequence; other keyword inputs (masks, positions, caches) keep their example value."""


def sequence_inputs(model: Any, example_args: Sequence[Any], seed: int) -> tuple[Any, ...]:
    """Inputs shaped like `example_args`, drawn by `seed`: integer tensors uniform over the model's
    vocabulary (`config.vocab_size`, else [0, max example value]), floating ones standard normal."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    return tuple(_draw(a, gen, vocab) for a in example_args)


def sequence_kwargs(model: Any, example_kwargs: dict[str, Any], seed: int) -> dict[str, Any]:
    """`example_kwargs` with the token inputs (`TOKEN_KWARGS`) drawn by `seed` (a stream apart from
    the positional inputs'), the rest as given."""
    import torch

    gen = torch.Generator().manual_seed(10_000_019 + seed)
    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    return {k: _draw(v, gen, vocab) if k in TOKEN_KWARGS and isinstance(v, torch.Tensor) else v
            for k, v in example_kwargs.items()}


def _draw(a: Any, gen: Any, vocab: int | None) -> Any:
    import torch

    if a.is_floating_point():
        return torch.randn(a.shape, generator=gen, dtype=a.dtype)
    high = int(vocab) if vocab else int(a.max().item()) + 1
    return torch.randint(0, max(high, 1), a.shape, generator=gen, dtype=a.dtype)


def mean_kl(expected: Any, got: Any) -> float:
    """Mean over positions of KL(softmax(expected) || softmax(got)) along the last dim, in float64;
    clamped at 0 (rounding can make an exact match slightly negative), NaN kept as NaN."""
    import torch

    log_p = torch.log_softmax(expected.double(), dim=-1)
    log_q = torch.log_softmax(got.double(), dim=-1)
    kl = (log_p.exp() * (log_p - log_q)).sum(-1).mean().item()
    return max(kl, 0.0) if not math.isnan(kl) else kl


def compare(expected: Any, got: Any) -> dict[str, float]:
    """Max |diff|, mean KL (`mean_kl`), top-1 agreement (fraction of positions whose argmax
    agrees), in float64."""
    expected, got = expected.double(), got.double()
    agree = (expected.argmax(-1) == got.argmax(-1)).double()
    return {"max_abs": (expected - got).abs().max().item(), "kl_mean": mean_kl(expected, got),
            "top1": agree.mean().item(), "positions": int(agree.numel())}


def _logits(out: Any) -> Any:
    if isinstance(out, (list, tuple)):
        out = out[0]
    return getattr(out, "logits", out)


def evaluate_accuracy(model: Any, compiled: Any, example_args: Sequence[Any], *, sequences: int = SEQUENCES,
                      seed: int = 0, reference: Any = None, kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """`compiled` against eager f32 `model` on `sequences` seeded inputs (seeds seed..seed+n-1):
    positional inputs drawn like `example_args`, keyword inputs `kwargs` with their token ids drawn
    (`sequence_kwargs`); outputs may be tensors, tuples (first element) or have `.logits`.

    Returns max |diff| (max over sequences), mean KL and top-1 agreement (over all positions),
    the worst sequence's seed and the number of sequences and positions. `reference` (a callable)
    replaces the eager model as the f32 reference, e.g. cached logits.
    """
    import torch

    if sequences < 1:
        raise ValueError(f"evaluate_accuracy: sequences must be >= 1, got {sequences}")
    rows = []
    with torch.no_grad():
        for s in range(seed, seed + sequences):
            args = sequence_inputs(model, example_args, s)
            kw = sequence_kwargs(model, kwargs, s) if kwargs else {}
            expected = _logits(reference(*args, **kw) if reference is not None else model(*args, **kw))
            row = compare(expected.float(), _logits(compiled(*args, **kw)).float())
            row["seed"] = s
            rows.append(row)
    positions = sum(r["positions"] for r in rows)
    worst = max(rows, key=lambda r: r["max_abs"])
    return {
        "sequences": sequences,
        "positions": positions,
        "max_abs": worst["max_abs"],
        "worst_seed": worst["seed"],
        "kl_mean": sum(r["kl_mean"] * r["positions"] for r in rows) / positions,
        "top1": sum(r["top1"] * r["positions"] for r in rows) / positions,
    }


def accuracy_report(model: Any, compiled: Any, example_args: Sequence[Any], precision: str, weights: str | None,
                    *, sequences: int = SEQUENCES, kwargs: dict[str, Any] | None = None,
                    activations: str | None = None) -> dict[str, Any]:
    """`report["accuracy"]`: `evaluate_accuracy` plus the mode, its bounds and whether they hold."""
    acc = evaluate_accuracy(model, compiled, example_args, sequences=sequences, kwargs=kwargs)
    b = bounds(precision, weights, activations)
    acc.update(mode=mode_name(precision, weights, activations),
               bounds={"max_abs": b.max_abs, "kl_mean": b.kl_mean, "top1": b.top1, "why": b.why},
               within_bounds=within_bounds(acc, b))
    return acc
