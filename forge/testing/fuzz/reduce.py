"""Shrinking a failing case to a minimal one that still fails the same way (a regression case).

`minimize(case, still_fails)` tries simplifications one at a time and keeps each that leaves a valid
call (torch's kernel accepts it) failing alike, until none helps or the budget of trials is spent:
optional arguments back to their defaults, tensors cut down along one dimension (alone, or with
every tensor that shares that dimension), tensor values replaced by zeros and ones (half a tensor
at a time), Python numbers by simpler ones. Each trial compiles the case at the failing stage only,
so a budget of 60 costs about half a minute.

Hypothesis' own shrinker would need the failure inside its test function, one case per compile;
the fuzzer batches hundreds of cases per compile and shrinks only the few that fail.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils import _pytree as pytree

from forge.testing.fuzz.cases import Case
from forge.testing.fuzz.run import Outcome, run_cases
from forge.testing.fuzz.strategies import valid

BUDGET = 60


def failure_kind(status: str, detail: str) -> str:
    """What a failure is, without the numbers: `wrong: NaN differs at`, `error: compile: PassFailure`."""
    head = re.split(r"[;(]", detail, maxsplit=1)[0]
    head = re.sub(r"\[[^\]]*\]|-?\d[\d.e+-]*|'[^']*'|\"[^\"]*\"", "#", head)
    return f"{status}: {' '.join(head.split()[:6])}"


def same_failure(stage: str, kind: str) -> Callable[[Case], bool]:
    """A predicate: the case fails at `stage` with a failure of `kind` (runs that stage only)."""
    runtimes = [stage] if stage != "interpret" else []

    def check(case: Case) -> bool:
        outcome = run_cases([case], runtimes=runtimes)[0]
        got = outcome.stages.get(stage)
        return got is not None and failure_kind(*got) == kind

    return check


def minimize(case: Case, still_fails: Callable[[Case], bool], budget: int = BUDGET) -> Case:
    """The smallest case found that `still_fails`, trying at most `budget` candidates."""
    trials = 0
    changed = True
    while changed and trials < budget:
        changed = False
        for candidate in _simpler(case):
            if trials >= budget:
                break
            if not valid(candidate):
                continue
            trials += 1
            if still_fails(candidate):
                case, changed = candidate, True
                break
    return case


def minimize_outcome(outcome: Outcome, budget: int = BUDGET) -> tuple[Case, str, str]:
    """The minimized case of a failing outcome, with the stage and failure kind it keeps."""
    stage, (status, detail) = next(iter(outcome.failures().items()))
    kind = failure_kind(status, detail)
    return minimize(outcome.case, same_failure(stage, kind), budget), stage, kind


# --- simplifications ------------------------------------------------------------------------------------


def _simpler(case: Case) -> Iterator[Case]:
    yield from _defaults(case)
    yield from _smaller_tensors(case)
    yield from _simpler_values(case)
    yield from _simpler_numbers(case)


def _defaults(case: Case) -> Iterator[Case]:
    for key in list(case.kwargs):
        kwargs = {k: v for k, v in case.kwargs.items() if k != key}
        yield Case(case.op, case.args, kwargs)


def _smaller_tensors(case: Case) -> Iterator[Case]:
    tensors = case.tensors()
    for i, t in enumerate(tensors):
        for d in range(t.dim()):
            size = t.shape[d]
            if size > 1:
                for start, keep in {(0, 1), (size - 1, 1), (0, size // 2), (size // 2, size - size // 2)}:
                    yield case.with_tensors(_replace(tensors, i, t.narrow(d, start, keep)))
                    together = [
                        x.narrow(x.dim() - t.dim() + d, start, keep)
                        if x.dim() - t.dim() + d >= 0 and x.shape[x.dim() - t.dim() + d] == size else x
                        for x in tensors
                    ]
                    yield case.with_tensors(together)
        if t.dim() > 0 and t.numel() == 1:
            yield case.with_tensors(_replace(tensors, i, t.reshape(())))


def _simpler_values(case: Case) -> Iterator[Case]:
    tensors = case.tensors()
    for i, t in enumerate(tensors):
        if t.numel() == 0:
            continue
        for fill in (0, 1):
            if not bool((t == fill).all()):
                yield case.with_tensors(_replace(tensors, i, torch.full_like(t, fill)))
        flat = t.reshape(-1)
        n = flat.numel()
        chunk = n // 2
        while chunk >= 1:
            for start in range(0, n, chunk):
                part = flat.clone()
                if bool((part[start : start + chunk] == 0).all()):
                    continue
                part[start : start + chunk] = 0
                yield case.with_tensors(_replace(tensors, i, part.reshape(t.shape)))
            chunk //= 2


def _simpler_numbers(case: Case) -> Iterator[Case]:
    leaves, spec = pytree.tree_flatten((case.args, case.kwargs))
    for i, x in enumerate(leaves):
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            continue
        for simpler in _numbers_below(x):
            changed = list(leaves)
            changed[i] = simpler
            args, kwargs = pytree.tree_unflatten(changed, spec)
            yield Case(case.op, tuple(args), dict(kwargs))


def _numbers_below(x: float) -> list[Any]:
    out: list[Any] = []
    for candidate in (0, 1, -1, 2):
        if candidate != x and abs(candidate) < (abs(x) if not math.isnan(x) else math.inf):
            out.append(type(x)(candidate))
    if isinstance(x, float) and math.isfinite(x) and not x.is_integer():
        out.append(float(math.floor(x)))
    return out


def _replace(tensors: list[torch.Tensor], i: int, new: torch.Tensor) -> list[torch.Tensor]:
    return [new.contiguous() if j == i else t for j, t in enumerate(tensors)]
