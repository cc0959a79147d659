"""forge-opt `--timing` (`--mlir-timing`): where the wall clock of a run went, row by row.

The rows add up to the run's wall clock, from the process start to the report: the start-up
(interpreter and imports, before `main`), the set-up (flags, dialects, pass registry), each
`--load-pass-plugin` file, then per chunk the parse, the companion weights (the header when the file
is attached; the tensors, with torch, when a pass first asks for them: that time is taken out of the
pass's row and shown as its own), the verifier, each pass, the pipeline's own work between passes
(IR copies for reproducers, `--verify-each`, debug output), `--verify-semantics` and the output;
`other` is what none of them covers (reading the input, ...). In-process callers (tests) have no
start-up row and their clock starts at `main`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from forge.pipeline import PassRecord, format_timing


class RunTiming:
    """The rows of one forge-opt run's --timing report."""

    def __init__(self, started: float, startup_ms: float | None):
        self.started = started
        """`time.perf_counter()` when `main` began."""
        self.startup_ms = startup_ms
        self._before: dict[str, float] = {}
        self._after: dict[str, float] = {}
        self.records: list[PassRecord] = []

    def add(self, name: str, ms: float, *, after_passes: bool = False) -> None:
        """Add `ms` to the row `name` (rows of the same name, e.g. of several chunks, are summed)."""
        rows = self._after if after_passes else self._before
        rows[name] = rows.get(name, 0.0) + ms

    @contextmanager
    def phase(self, name: str, *, after_passes: bool = False) -> Iterator[None]:
        """Time the block into the row `name`."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - start) * 1e3, after_passes=after_passes)

    def add_pipeline(self, records: Sequence[PassRecord], run_ms: float, *, checker_ms: float = 0.0,
                     loads: Sequence[tuple[str, int, float]] = ()) -> None:
        """A pipeline run: its pass records, the time of the whole run (`run_ms`), the
        --verify-semantics checker's share and the weight loads `(row, pass index, ms)` that happened
        inside a pass (taken out of that pass's row)."""
        inside: dict[int, float] = {}
        for row, index, ms in loads:
            self.add(row, ms)
            inside[index] = inside.get(index, 0.0) + ms
        adjusted = [dataclasses.replace(r, wall_ms=max(r.wall_ms - inside.get(r.index, 0.0), 0.0)) for r in records]
        self.records += adjusted
        if not records:
            return
        overhead = run_ms - sum(r.wall_ms for r in records) - checker_ms
        self.add("pipeline (IR copies for reproducers, --verify-each, debug output)", max(overhead, 0.0),
                 after_passes=True)
        if checker_ms:
            self.add("verify-semantics", checker_ms, after_passes=True)

    def wall_ms(self) -> float:
        """The wall clock so far: the start-up plus the time since `main` began."""
        return (self.startup_ms or 0.0) + (time.perf_counter() - self.started) * 1e3

    def report(self) -> str:
        """The table, its rows adding up to the wall clock (`other`: what no row covers)."""
        before = [("start-up (process start to main)", self.startup_ms)] if self.startup_ms is not None else []
        before += [(n, ms) for n, ms in self._before.items() if ms > 0 or n == "parse"]
        after = [(n, ms) for n, ms in self._after.items() if ms > 0 or n == "output"]
        covered = sum(ms for _, ms in before) + sum(ms for _, ms in after) + sum(r.wall_ms for r in self.records)
        after.append(("other (reading the input, ...)", max(self.wall_ms() - covered, 0.0)))
        return format_timing(self.records, before, after=after)
