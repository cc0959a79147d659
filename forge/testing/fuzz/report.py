"""The fuzzer's section of docs/coverage.md: the campaign's table per overload (cases run, outcomes,
failures found), the documented deviations (forge.testing.fuzz.deviations) and the failures still
open (the regression cases' `open` lists). `python -m forge.testing.fuzz --docs` rewrites the
section; `make coverage` keeps it (forge.coverage.page.FUZZ_MARKER), and tests/fuzz/test_report.py
checks that every deviation and every open failure is listed, so no known difference goes unlisted.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from forge.testing.fuzz.campaign import State, table_rows
from forge.testing.fuzz.deviations import ANY, DEVIATIONS
from forge.testing.fuzz.regressions import Regression
from forge.testing.fuzz.run import STATUSES

MARKER = "<!-- fuzz: written by `python -m forge.testing.fuzz --docs`; `make coverage` keeps it -->"


def campaign_table(state: State, ops: list[str]) -> str:
    """One row per overload that ran: cases, the cases per overall status, the failure kinds found."""
    shown = list(STATUSES)
    lines = ["| overload | cases | " + " | ".join(shown) + " | failure kinds found |",
             "| --- | ---: | " + " | ".join("---:" for _ in shown) + " | --- |"]
    for row in table_rows(state, ops):
        if not row["cases"] and not row["failures"]:
            continue
        kinds = "; ".join(sorted({f"{f['stage']}: {f['kind']}" for f in row["failures"]}))
        counts = " | ".join(str(row["status"].get(s, 0)) for s in shown)
        lines.append(f"| `{row['op']}` | {row['cases']} | {counts} | {_cell(kinds)} |")
    return "\n".join(lines)


def deviations_table() -> str:
    lines = ["| deviation | overloads | runtimes | triggered by | what the runtime gives |",
             "| --- | --- | --- | --- | --- |"]
    for d in DEVIATIONS:
        named = ", ".join(sorted(p.removeprefix("aten::") for p in d.packets))
        ops = "any (checked per case)" if d.packets == ANY else named
        lines.append(f"| `{d.id}` | {ops} | {', '.join(sorted(d.stages))} | {', '.join(sorted(d.triggers))} | "
                     f"{_cell(d.what)} |")
    return "\n".join(lines)


def open_table(regressions: list[Regression]) -> str:
    """The failures not fixed yet: one row per overload and failure kind, with the stages and cases."""
    rows: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: {"stages": set(), "files": set()})
    for r in regressions:
        for stage, kind in r.open.items():
            row = rows[(r.case.op, kind)]
            row["stages"].add(stage)
            row["files"].add(r.path.name)
    lines = ["| overload | failure | stages | regression cases |", "| --- | --- | --- | ---: |"]
    for (op, kind), row in sorted(rows.items()):
        lines.append(f"| `{op}` | {_cell(kind)} | {', '.join(sorted(row['stages']))} | {len(row['files'])} |")
    return "\n".join(lines)


def section(regressions: list[Regression], state: State | None, ops: list[str], campaign_note: str) -> str:
    opened = sum(1 for r in regressions if r.open)
    parts = [
        MARKER,
        "",
        "## Differential fuzzing (issue 28)",
        "",
        "`forge/testing/fuzz` draws calls of each overload of the `aten` table from its schema (hypothesis:",
        "f32/f16/bf16/i64/i32/i8/u8/bool tensors, 0-d, size 0, broadcasting, Python numbers, NaN, ±inf, -0.0,",
        "subnormals), runs each as one `torch.ops.aten.<op>.<overload>` call exported, imported, interpreted",
        "and compiled on both runtimes, and compares with torch's kernel: dtype and shape equal, integers and",
        "bools exact, floats within a per-op tolerance (forge/testing/fuzz/compare.py), NaN positions, infinities",
        "and signed zeros exact. `make test` runs a fixed budget (forge/testing/fuzz/budget.py) and replays every",
        "saved regression case; `make fuzz` runs the resumable campaign.",
        "",
        "### Documented deviations of the runtimes",
        "",
        "Each is pinned by an example (tests/fuzz/test_deviations.py): if it disappears, the test fails.",
        "",
        deviations_table(),
        "",
        f"### Open failures ({opened} of {len(regressions)} regression cases)",
        "",
        "Found by the fuzzer, not fixed yet, each pinned by its regression case (tests/fuzz/regressions/,",
        "replayed by tests/fuzz/test_regressions.py: a fix or a new failure fails the replay). None of them is",
        "explained by a deviation above: OpenVINO's own conversion of the call does not reproduce Forge's value",
        "(or cannot convert it) and torch's float32 call does not give it either;",
        "`python -m forge.testing.fuzz.oracle NAME` shows what each gives.",
        "",
        open_table(regressions),
        "",
        "### Campaign",
        "",
        campaign_note,
        "",
    ]
    if state is not None:
        parts += [campaign_table(state, ops), ""]
    return "\n".join(parts)


def write_section(path: Path, text: str) -> None:
    """Replace the fuzz section of the page at `path` (everything from MARKER on), or append it."""
    page = path.read_text() if path.exists() else ""
    head = page.split(MARKER, 1)[0].rstrip("\n")
    path.write_text(head + "\n\n" + text.rstrip("\n") + "\n")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
