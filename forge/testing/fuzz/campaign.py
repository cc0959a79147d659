"""The long fuzz campaign (`make fuzz`): every overload until it has run its target number of cases
on the interpreter and both runtimes, in worker processes, resumable.

The state (tests/fuzz/campaign-state.json by default) records per overload the cases run, the next seed,
the outcome counts per stage and the failures found; a campaign started again goes on where it stopped.
It is kept in the repository: a campaign is hours of worker time, it goes on across machines and sessions,
and docs/coverage.md's per-overload table is regenerated from it (`--docs`).
A unit of work is one overload: a worker draws `batch` cases per seed (forge.testing.fuzz.strategies),
runs them as one batch (forge.testing.fuzz.run), reports the counts, and, for each failure of a kind
the overload has not shown before, shrinks the case (forge.testing.fuzz.reduce) and saves it as a
regression case (forge.testing.fuzz.regressions) that `make test` replays.

Workers are `python -m forge.testing.fuzz --worker` children that read one unit per line on stdin
and print one JSON line per event. A worker that dies (a native crash in a runtime) is blamed for
the seed it was running and restarted; the seed is then run again one case at a time, so the case
that crashes is found and saved like any other failure.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.testing.fuzz.run import ERROR, STAGES

DEFAULT_STATE = Path("tests/fuzz/campaign-state.json")
UNIT_TIMEOUT_S = 900.0
MAX_EMPTY_SEEDS = 3
"""An overload whose draws found no valid call for this many seeds in a row stops early."""


@dataclass
class OpState:
    """What the campaign knows of one overload."""

    cases: int = 0
    next_seed: int = 1
    stages: dict[str, dict[str, int]] = field(default_factory=dict)
    """stage -> status -> cases."""
    status: dict[str, int] = field(default_factory=dict)
    """overall status -> cases."""
    failures: list[dict[str, Any]] = field(default_factory=list)
    """One entry per distinct failure kind: stage, kind, detail, the regression file."""
    crashed_seeds: list[int] = field(default_factory=list)
    empty_seeds: int = 0
    seconds: float = 0.0

    def add(self, result: dict[str, Any]) -> None:
        self.cases += result["cases"]
        self.next_seed = max(self.next_seed, result["seed"] + 1)
        self.seconds += result.get("seconds", 0.0)
        self.empty_seeds = 0 if result["cases"] else self.empty_seeds + 1
        for stage, counts in result["stages"].items():
            mine = self.stages.setdefault(stage, {})
            for status, n in counts.items():
                mine[status] = mine.get(status, 0) + n
        for status, n in result["status"].items():
            self.status[status] = self.status.get(status, 0) + n
        known = {(f["stage"], f["kind"]) for f in self.failures}
        for failure in result.get("failures", []):
            if (failure["stage"], failure["kind"]) not in known:
                self.failures.append(failure)

    def known_kinds(self) -> list[list[str]]:
        return [[f["stage"], f["kind"]] for f in self.failures]


class State:
    """The campaign's state file: one OpState per overload, written after every unit."""

    def __init__(self, path: Path):
        self.path = path
        self.ops: dict[str, OpState] = {}
        if path.exists():
            for op, entry in json.loads(path.read_text())["ops"].items():
                self.ops[op] = OpState(**entry)

    def op(self, name: str) -> OpState:
        return self.ops.setdefault(name, OpState())

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"ops": {k: v.__dict__ for k, v in sorted(self.ops.items())}}, indent=1))
        tmp.replace(self.path)


def pending(state: State, ops: list[str], target: int) -> list[str]:
    """The overloads that still need cases (fewest first)."""
    todo = [op for op in ops if state.op(op).cases < target and state.op(op).empty_seeds < MAX_EMPTY_SEEDS]
    return sorted(todo, key=lambda op: state.op(op).cases)


def run_campaign(
    ops: list[str], *, target: int, batch: int, jobs: int, state_path: Path = DEFAULT_STATE,
    hours: float | None = None, progress: Callable[[str], None] = print,
) -> State:
    """Run every overload of `ops` up to `target` cases (or until `hours` have passed)."""
    state = State(state_path)
    deadline = time.monotonic() + hours * 3600 if hours else None
    workers = [_Worker() for _ in range(max(1, jobs))]
    selector = selectors.DefaultSelector()

    def feed_idle() -> None:
        busy = {w.unit["op"] for w in workers if w.unit is not None}
        for worker in workers:
            if worker.unit is not None or (deadline is not None and time.monotonic() > deadline):
                continue
            todo = [op for op in pending(state, ops, target) if op not in busy]
            if not todo:
                return
            s = state.op(todo[0])
            busy.add(todo[0])
            worker.assign(selector, {
                "op": todo[0], "seed": s.next_seed, "batch": batch, "single": s.next_seed in s.crashed_seeds,
                "known": s.known_kinds(),
            })

    feed_idle()
    while any(w.unit is not None for w in workers):
        for key, _ in selector.select(timeout=1.0):
            worker: _Worker = key.data
            for event in worker.read(selector):
                _handle(event, state, progress)
        for worker in workers:
            event = worker.check_timeout(selector)
            if event is not None:
                _handle(event, state, progress)
        feed_idle()
    for w in workers:
        w.close()
    return state


def _handle(event: dict[str, Any], state: State, progress: Callable[[str], None]) -> None:
    op = event["op"]
    s = state.op(op)
    if "result" in event:
        result = event["result"]
        s.add(result)
        line = f"{op} seed {result['seed']}: {result['cases']} cases in {result['seconds']:.0f} s, {result['status']}"
        for f in result.get("failures", []):
            line += f"\n  NEW {f['stage']}: {f['kind']} -> {f.get('file')}"
        progress(line)
    else:  # the worker died or hung
        seed = event["seed"]
        if seed in s.crashed_seeds or event.get("case") is not None:
            failure = {"stage": event["stage"], "kind": f"{ERROR}: crash: {event['why']}", "detail": event["why"],
                       "file": event.get("file")}
            s.add({"seed": seed, "cases": 0, "stages": {}, "status": {}, "failures": [failure]})
            s.crashed_seeds = [x for x in s.crashed_seeds if x != seed]
        else:
            s.crashed_seeds.append(seed)
        progress(f"{op} seed {seed}: CRASH at {event['stage']}: {event['why']}")
    state.save()


class _Worker:
    """One `python -m forge.testing.fuzz --worker` child, given one unit at a time."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.unit: dict[str, Any] | None = None
        self.stage = ""
        self.case: dict[str, Any] | None = None
        self.since = time.monotonic()
        self.buffer = b""

    def _start(self, selector: selectors.BaseSelector) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "forge.testing.fuzz", "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        assert self.proc.stdout is not None
        os.set_blocking(self.proc.stdout.fileno(), False)
        selector.register(self.proc.stdout, selectors.EVENT_READ, self)
        self.buffer = b""

    def assign(self, selector: selectors.BaseSelector, unit: dict[str, Any]) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._start(selector)
        assert self.proc is not None and self.proc.stdin is not None
        self.unit, self.stage, self.case, self.since = unit, "draw", None, time.monotonic()
        self.proc.stdin.write((json.dumps(unit) + "\n").encode())
        self.proc.stdin.flush()

    def read(self, selector: selectors.BaseSelector) -> Iterator[dict[str, Any]]:
        assert self.proc is not None and self.proc.stdout is not None
        chunk = self.proc.stdout.read()
        if chunk is None:
            return
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            message = json.loads(line)
            if "stage" in message:
                self.stage = message["stage"]
            elif "case" in message:
                self.case = message
            elif "result" in message and self.unit is not None:
                yield {"op": self.unit["op"], "result": message["result"]}
                self.unit = None
        if not chunk:  # the worker exited
            selector.unregister(self.proc.stdout)
            code = self.proc.wait()
            if self.unit is not None:
                why = f"the process died of signal {-code}" if code < 0 else f"exit {code}"
                yield self._died(why)

    def _died(self, why: str) -> dict[str, Any]:
        assert self.unit is not None
        event = {"op": self.unit["op"], "seed": self.unit["seed"], "stage": self.stage, "why": why}
        if self.case is not None and self.unit.get("single"):
            from forge.testing.fuzz.cases import Case
            from forge.testing.fuzz.regressions import save

            case = Case.from_json(self.case["json"])
            path = save(case, {"stage": self.stage, "status": ERROR, "detail": f"crash: {why}"})
            event.update(case=self.case["case"], file=str(path.name))
        self.unit = None
        return event

    def check_timeout(self, selector: selectors.BaseSelector) -> dict[str, Any] | None:
        if self.proc is None or self.unit is None or time.monotonic() - self.since < UNIT_TIMEOUT_S:
            return None
        self.proc.kill()
        assert self.proc.stdout is not None
        selector.unregister(self.proc.stdout)
        self.proc.wait()
        return self._died(f"timeout after {UNIT_TIMEOUT_S:.0f} s")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()


# --- the worker ----------------------------------------------------------------------------------------


def worker_main() -> int:
    """Run units read from stdin (one JSON line each); one JSON line per event on stdout."""
    out = sys.stdout

    def emit(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    for line in sys.stdin:
        if line.strip():
            emit({"result": run_unit(json.loads(line), emit)})
    return 0


def run_unit(unit: dict[str, Any], emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """One seed of one overload: draw, run, count, and shrink and save each new kind of failure."""
    from forge.testing.fuzz.reduce import failure_kind, minimize_outcome
    from forge.testing.fuzz.regressions import save
    from forge.testing.fuzz.run import run_cases
    from forge.testing.fuzz.strategies import draw_cases

    start = time.perf_counter()
    op, seed = unit["op"], unit["seed"]
    emit({"stage": "draw"})
    cases = draw_cases(op, unit["batch"], seed)
    on_stage = lambda stage: emit({"stage": stage})  # noqa: E731
    if unit.get("single"):
        outcomes = []
        for i, case in enumerate(cases):
            emit({"case": i, "json": case.to_json()})
            outcomes += run_cases([case], on_stage=on_stage)
    else:
        outcomes = run_cases(cases, on_stage=on_stage)
    stages: dict[str, dict[str, int]] = {}
    status: dict[str, int] = {}
    for o in outcomes:
        status[o.status] = status.get(o.status, 0) + 1
        for stage in STAGES:
            st_, _ = o.stages.get(stage, ("missing", ""))
            stages.setdefault(stage, {})[st_] = stages.get(stage, {}).get(st_, 0) + 1
    known = {tuple(k) for k in unit.get("known", [])}
    failures = []
    for o in outcomes:
        for stage, (st_, detail) in o.failures().items():
            kind = failure_kind(st_, detail)
            if (stage, kind) in known:
                continue
            known.add((stage, kind))
            emit({"stage": f"shrink {stage}"})
            small, _, _ = minimize_outcome(_only(o, stage))
            path = save(small, {"stage": stage, "status": st_, "detail": detail, "kind": kind})
            failures.append({"stage": stage, "kind": kind, "detail": detail, "file": path.name,
                             "case": small.describe()})
    return {"seed": seed, "cases": len(cases), "stages": stages, "status": status, "failures": failures,
            "seconds": round(time.perf_counter() - start, 2)}


def _only(outcome: Any, stage: str) -> Any:
    """The outcome with only `stage`'s failure (the one to shrink)."""
    from forge.testing.fuzz.run import Outcome

    return Outcome(outcome.case, {stage: outcome.stages[stage]})


# --- the table ---------------------------------------------------------------------------------------------


def table_rows(state: State, ops: list[str]) -> list[dict[str, Any]]:
    """One row per overload: cases, and per status the cases (over all stages: the worst)."""
    rows = []
    for op in ops:
        s = state.ops.get(op, OpState())
        rows.append({"op": op, "cases": s.cases, "status": dict(s.status), "stages": s.stages,
                     "failures": list(s.failures)})
    return rows
