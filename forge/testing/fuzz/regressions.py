"""Regression cases: each failure the fuzzer found, minimized, as a small JSON file in
tests/fuzz/regressions/ that `make test` replays (tests/fuzz/test_regressions.py).

A file holds the case (forge.testing.fuzz.cases: the overload and its arguments, tensors by value)
and what it found (`found`: stage, status, detail), so the file says why it is there. Replaying
runs every case on the interpreter and both runtimes, one batch per overload; a case must then pass,
show a documented deviation (forge.testing.fuzz.deviations), or be refused with a clear error.

A failure not fixed yet is listed in the file's `open` (stage -> failure kind, numbers dropped):
the replay then requires exactly that failure, so an open failure is written down and pinned
(docs/coverage.md lists them), a fix shows as a test to update (`python -m forge.testing.fuzz
--replay --refresh` rewrites `open` from what the cases give now), and any other failure fails.
"""

from __future__ import annotations

import json

from forge.testing.fuzz.regression_files import DIRECTORY, Regression, _write, file_name, load, save
from forge.testing.fuzz.run import Outcome, run_cases

__all__ = ["DIRECTORY", "Regression", "failures_now", "file_name", "load", "refresh", "replay", "save"]

def replay(regressions: list[Regression]) -> list[Outcome]:
    """Each regression's outcome now, on the interpreter and both runtimes: one batch per overload (the
    batch splits by itself around a case that fails a whole stage)."""
    by_op: dict[str, list[int]] = {}
    for i, r in enumerate(regressions):
        by_op.setdefault(r.case.op, []).append(i)
    outcomes: list[Outcome | None] = [None] * len(regressions)
    for index in by_op.values():
        for i, outcome in zip(index, run_cases([regressions[i].case for i in index]), strict=True):
            outcomes[i] = outcome
    return [o for o in outcomes if o is not None]


def failures_now(outcome: Outcome) -> dict[str, str]:
    """stage -> failure kind, for each stage the case fails (wrong or error) now."""
    from forge.testing.fuzz.reduce import failure_kind  # lazy: reduce imports the strategies

    return {stage: failure_kind(status, detail) for stage, (status, detail) in outcome.failures().items()}


def refresh(regressions: list[Regression], outcomes: list[Outcome]) -> int:
    """Rewrite each file's `open` from its outcome now; returns how many files changed."""
    changed = 0
    for r, outcome in zip(regressions, outcomes, strict=True):
        now = failures_now(outcome)
        if now != r.open:
            entry = json.loads(r.path.read_text())
            entry.pop("open", None)
            _write(r.path, {"found": entry["found"], **({"open": now} if now else {}), "case": entry["case"]})
            changed += 1
    return changed
