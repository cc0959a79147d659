"""Regression cases: each failure the fuzzer found, minimized, as a small JSON file in
tests/fuzz/regressions/ that `make test` replays (tests/fuzz/test_regressions.py).

A file holds the case (forge.testing.fuzz.cases: the overload and its arguments, tensors by value)
and what it found (`found`: stage, status, detail), so the file says why it is there. Replaying
runs every case on the interpreter and both runtimes, all in one batch; a case must then pass or
show a documented deviation (forge.testing.fuzz.deviations), or be refused with a clear error:
never a wrong value or a crash again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from forge.testing.fuzz.cases import Case

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
    stages = json.loads(path.read_text())["found"] if path.exists() else {}
    stages[found["stage"]] = {k: v for k, v in found.items() if k != "stage"}
    entry = {"found": stages, "case": case.to_json()}
    path.write_text(_SHORT_LIST.sub(_one_line, json.dumps(entry, indent=1, allow_nan=False)) + "\n")
    return path


_SHORT_LIST = re.compile(r"\[[^\[\]{}]*\]")


def _one_line(match: re.Match[str]) -> str:
    """A list of numbers or strings on one line (values stay readable, files short)."""
    return "[" + ", ".join(x.strip() for x in match.group(0)[1:-1].split(",") if x.strip()) + "]"


def load(directory: Path = DIRECTORY) -> list[tuple[Path, Case, dict[str, Any]]]:
    """Every regression file: (path, case, found), sorted by file name."""
    out = []
    for path in sorted(directory.glob("*.json")):
        entry = json.loads(path.read_text())
        out.append((path, Case.from_json(entry["case"]), entry.get("found", {})))
    return out
