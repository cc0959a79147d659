"""Decompose exactly the ATen ops the `aten` dialect lacks, to a fixpoint.

A decomposition may introduce ops we lack as well (`upsample_bicubic2d` -> `_unsafe_index`,
`clamp_min`, `isfinite`, ...), so `decompose_missing` repeats: find the ops we lack that have a
decomposition, run exactly those, look again; it stops when nothing we lack is decomposable (or
after MAX_ROUNDS, or when a round leaves the same set of missing ops). Nothing runs when nothing
is missing: `run_decompositions` re-traces the whole program (about a second on GPT-2).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import torch
from torch.export import ExportedProgram

from forge.frontend.import_errors import FrontendError

MAX_ROUNDS = 8

TREESPEC_DEPRECATION = r"`isinstance\(treespec, LeafSpec\)` is deprecated"
"""torch 2.13's `run_decompositions` deep-copies a pytree LeafSpec and warns (FutureWarning) about
its own deprecated API; the user can do nothing about it, so it is not shown to them."""


@contextmanager
def quiet_treespec_deprecation() -> Iterator[None]:
    """Silence exactly TREESPEC_DEPRECATION (anything that runs `run_decompositions` inside)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", TREESPEC_DEPRECATION, FutureWarning)
        yield


def run_torch_decompositions(program: ExportedProgram, table: dict[Any, Callable], failure: str) -> ExportedProgram:
    """`program.run_decompositions(table)`; a graph torch cannot re-trace is an FrontendError
    `"{failure}: {torch's first line}"`, never a crash."""
    with quiet_treespec_deprecation():
        try:
            return program.run_decompositions(table)
        except Exception as err:  # torch's re-trace rejects some graphs with assorted errors
            first_line = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
            raise FrontendError(f"{failure}: {first_line}") from None


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
        names = ", ".join(sorted(str(op) for op in ours))
        program = run_torch_decompositions(program, ours, f"decomposing {names} failed")
        rounds += 1
    return program, rounds
