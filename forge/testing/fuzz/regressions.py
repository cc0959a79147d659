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
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.testing.fuzz.cases import Case
from forge.testing.fuzz.run import Outcome, run_cases

ROOT = Path(__file__).resolve().parents[3]
DIRECTORY = ROOT / "tests" / "fuzz" / "regressions"


def file_name(case: Case) -> str:
    """`aten.div.Scalar_mode-1a2b3c4d5e6f.json`: the overload and the case's digest."""
    return f"{case.name}-{case.key()}.json"


def save(case: Case, found: dict[str, Any], directory: Path = DIRECTORY) -> Path:
    """Write the case (and what it found, per stage) as a regression file; returns its path. The same
    case found failing at another stage adds that stage to the file's `found`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name(case)
    old = json.loads(path.read_text()) if path.exists() else {}
    stages = old.get("found", {})
    stages[found["stage"]] = {k: v for k, v in found.items() if k != "stage"}
    _write(path, {"found": stages, **({"open": old["open"]} if old.get("open") else {}), "case": case.to_json()})
    return path


def _write(path: Path, entry: dict[str, Any]) -> None:
    path.write_text(_SHORT_LIST.sub(_one_line, json.dumps(entry, indent=1, allow_nan=False)) + "\n")


_SHORT_LIST = re.compile(r"\[[^\[\]{}]*\]")


def _one_line(match: re.Match[str]) -> str:
    """A list of numbers or strings on one line (values stay readable, files short)."""
    return "[" + ", ".join(x.strip() for x in match.group(0)[1:-1].split(",") if x.strip()) + "]"


@dataclass
class Regression:
    """One regression file: its case, what it found when saved, and the failures still open."""

    path: Path
    case: Case
    found: dict[str, Any]
    open: dict[str, str]
    """stage -> failure kind (forge.testing.fuzz.reduce.failure_kind) the case still shows."""


def load(directory: Path = DIRECTORY) -> list[Regression]:
    """Every regression file, sorted by file name."""
    out = []
    for path in sorted(directory.glob("*.json")):
        entry = json.loads(path.read_text())
        out.append(Regression(path, Case.from_json(entry["case"]), entry.get("found", {}), entry.get("open", {})))
    return out


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
