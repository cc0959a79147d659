"""Decompose exactly the ATen ops the `aten` dialect lacks, to a fixpoint.

A decomposition may introduce ops we lack as well (`upsample_bicubic2d` -> `_unsafe_index`,
`clamp_min`, `isfinite`, ...), so `decompose_missing` repeats: find the ops we lack that have a
decomposition, run exactly those, look again; it stops when nothing we lack is decomposable (or
after MAX_ROUNDS, or when a round leaves the same set of missing ops). Nothing runs when nothing
is missing: `run_decompositions` re-traces the whole program (about a second on GPT-2).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import torch
from torch.export import ExportedProgram

from forge.frontend.errors import ImportError_

MAX_ROUNDS = 8


@cache
def _tables() -> tuple[Any, dict[Any, Callable]]:
    """torch.export's default (core ATen) decompositions, then torch._decomp's wider table."""
    from torch._decomp import decomposition_table  # start-up: imported only when something is missing

    return torch.export.default_decompositions(), decomposition_table


def decomposition_for(op: Any) -> Callable | None:
    core, wider = _tables()
    if op in core:
        return core[op]
    return wider.get(op)


def decompose_missing(
    program: ExportedProgram, missing_ops: Callable[[ExportedProgram], set[Any]]
) -> tuple[ExportedProgram, int]:
    """The program with every decomposable missing op decomposed (to a fixpoint), and the number of
    `run_decompositions` rounds it took. `missing_ops(program)` is the set of targets we lack."""
    rounds = 0
    previous: set[Any] | None = None
    while rounds < MAX_ROUNDS:
        missing = missing_ops(program)
        ours = {op: fn for op in missing if (fn := decomposition_for(op)) is not None}
        if not ours or missing == previous:
            break
        previous = missing
        with warnings.catch_warnings():
            # torch 2.13's run_decompositions deep-copies a pytree LeafSpec and warns about its own
            # deprecated API; the user can do nothing about it, so it is not shown to them.
            warnings.filterwarnings("ignore", r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning)
            try:
                program = program.run_decompositions(ours)
            except Exception as err:  # a decomposition torch cannot trace here: report, never crash
                names = ", ".join(sorted(str(op) for op in ours))
                first_line = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
                raise ImportError_(f"decomposing {names} failed: {first_line}") from None
        rounds += 1
    return program, rounds
