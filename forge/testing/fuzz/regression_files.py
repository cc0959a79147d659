"""The regression files themselves (tests/fuzz/regressions/): where they live, how a case is written
and read back. No fuzz machinery: the oracle reads them too (forge.testing.fuzz.regressions replays them)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
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
