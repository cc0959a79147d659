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
import torch.utils._pytree as pytree
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


@contextmanager
def flat_outputs(program: ExportedProgram) -> Iterator[None]:
    """While inside, `program` returns its outputs as a flat tuple (its call signature's `out_spec`; restored
    after). torch's re-trace runs the program's module, which rebuilds the outputs' containers: a transformers
    `DynamicCache` (a default `use_cache=True` call returns one) starts from empty tensor literals, which the
    re-trace lifts as new constants it then does not find ("Constant tensor lifted_tensor_0 is not in the
    constants dictionary"). The graph and its outputs are the same either way."""
    calls = program.module_call_graph
    signature = calls[0].signature if calls else None
    if signature is None:
        yield
        return
    spec = signature.out_spec
    signature.out_spec = pytree.tree_structure(tuple(range(spec.num_leaves)))
    try:
        yield
    finally:
        signature.out_spec = spec


def run_torch_decompositions(program: ExportedProgram, table: dict[Any, Callable], failure: str) -> ExportedProgram:
    """`program.run_decompositions(table)` (re-traced with `flat_outputs`, the result given the program's output
    structure back); a graph torch cannot re-trace is an FrontendError `"{failure}: {torch's first line}"`, never
    a crash."""
    with quiet_treespec_deprecation(), flat_outputs(program):
        try:
            result = program.run_decompositions(table)
        except Exception as err:  # torch's re-trace rejects some graphs with assorted errors
            first_line = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
            raise FrontendError(f"{failure}: {first_line}") from None
    if program.module_call_graph and result.module_call_graph:
        result.module_call_graph[0].signature.out_spec = program.module_call_graph[0].signature.out_spec
    return result


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
