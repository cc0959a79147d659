"""Run OpInfo entries in worker processes, so that a native crash (a segfault of a runtime) or a
hang fails that one entry with a classified reason and the others still run.

`run_isolated(ids, workers=2)` starts `python -m forge.coverage --worker` children, each given a
share of the ids on stdin (`op`, or `op@dtype` for another dtype than float32); a child prints one
JSON line per event (`{"start": id}`, `{"samples": n}`, `{"stage": s}`, `{"result": {...}}`). A child
that dies is blamed for the entry and stage it was in (all its samples: `error`) and restarted on the
ids it had left.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from forge.coverage.opinfo import (
    DTYPES,
    ERROR,
    RUNTIMES,
    OpResult,
    SampleResult,
    entry_result,
    op_database,
    op_id,
    run_op,
)

OP_TIMEOUT_S = 900.0
"""An entry's whole batch (up to 1440 samples, split when a stage fails) within this time."""


def run_isolated(
    op_ids: Sequence[str],
    *,
    workers: int = 2,
    progress: Callable[[OpResult], None] | None = None,
    timeout_s: float = OP_TIMEOUT_S,
    limit: int | None = None,
    runtimes: Sequence[str] = RUNTIMES,
) -> list[OpResult]:
    """`run_op` for each id in `workers` child processes, so that a crash (a segfault of a native
    runtime) or a hang fails that op with a classified reason and the others still run.
    `limit`: each entry's first samples only; `runtimes`: the compiled stages.

    A worker that dies is restarted on the ops it had left. Results come back in `op_ids` order.
    """
    chunks = [list(op_ids[i::workers]) for i in range(max(1, workers))]
    options = [*(["--samples", str(limit)] if limit else []), "--runtimes", ",".join(runtimes)]
    procs = [_Worker(chunk, options) for chunk in chunks if chunk]
    results: dict[str, OpResult] = {}
    selector = selectors.DefaultSelector()
    for w in procs:
        w.start(selector)
    while selector.get_map():
        events = selector.select(timeout=1.0)
        for key, _ in events:
            w = key.data
            for result in w.read(selector):
                results[result.op] = result
                if progress is not None:
                    progress(result)
        for w in procs:
            for result in w.check(selector, timeout_s):
                results[result.op] = result
                if progress is not None:
                    progress(result)
    missing = [i for i in op_ids if i not in results]
    for i in missing:
        results[i] = _failed(i, "sample", "worker: no result (unknown op id)")
    return [results[i] for i in op_ids]


class _Worker:
    """One `python -m forge.coverage --worker` child and the ops it still has to run."""

    def __init__(self, ops: list[str], options: list[str]):
        self.todo = ops
        self.options = options
        self.samples = 1
        self.proc: subprocess.Popen[bytes] | None = None
        self.current: str | None = None
        self.stage = "sample"
        self.since = time.monotonic()
        self.buffer = b""

    def start(self, selector: selectors.BaseSelector) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-W", "error", "-m", "forge.coverage", "--worker", *self.options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONHASHSEED": "0"},  # reasons that print a set read the same every run
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(("\n".join(self.todo) + "\n").encode())
        self.proc.stdin.close()
        self.current, self.stage, self.since, self.buffer = None, "sample", time.monotonic(), b""
        os.set_blocking(self.proc.stdout.fileno(), False)
        selector.register(self.proc.stdout, selectors.EVENT_READ, self)

    def read(self, selector: selectors.BaseSelector) -> list[OpResult]:
        assert self.proc is not None and self.proc.stdout is not None
        chunk = self.proc.stdout.read()  # None: nothing to read yet; b"": end of file
        if chunk is None:
            return []
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        done = [r for r in (self._line(line) for line in lines) if r is not None]
        if not chunk:  # end of file: the worker exited
            selector.unregister(self.proc.stdout)
            done += self._exited(selector)
        return done

    def _line(self, line: bytes) -> OpResult | None:
        message = json.loads(line)
        if "start" in message:
            self.current, self.stage, self.since = message["start"], "sample", time.monotonic()
            self.samples = 1
            return None
        if "samples" in message:
            self.samples = max(1, message["samples"])
            return None
        if "stage" in message:
            self.stage = message["stage"]
            return None
        result = OpResult.from_json(message["result"])
        self.todo.remove(result.op)
        self.current = None
        return result

    def _exited(self, selector: selectors.BaseSelector, reason: str | None = None) -> list[OpResult]:
        assert self.proc is not None and self.proc.stdout is not None
        code = self.proc.wait()
        self.proc.stdout.close()
        if not self.todo:
            return []
        if self.current is None:  # died before starting an op: its start-up failed; do not loop
            failed = [_failed(op, "sample", f"worker failed to start (exit {code})") for op in self.todo]
            self.todo = []
            return failed
        why = reason or (f"crash: the process died of signal {-code}" if code < 0 else f"crash: exit {code}")
        failed = _failed(self.current, self.stage, why, self.samples)
        self.todo.remove(self.current)
        if self.todo:
            self.start(selector)
        return [failed]

    def check(self, selector: selectors.BaseSelector, timeout_s: float) -> list[OpResult]:
        """Kill a worker stuck on one op for longer than `timeout_s`."""
        if self.proc is None or self.proc.poll() is not None or self.current is None:
            return []
        if time.monotonic() - self.since < timeout_s:
            return []
        self.proc.kill()
        assert self.proc.stdout is not None
        selector.unregister(self.proc.stdout)
        return self._exited(selector, f"timeout: no result after {timeout_s:.0f} s")


def _failed(op: str, stage: str, reason: str, samples: int = 1) -> OpResult:
    """An entry the runner lost: every one of its samples an error."""
    return entry_result(op, [SampleResult(i, ERROR, stage, reason) for i in range(samples)], 0)


def worker_main(limit: int | None = None, runtimes: Sequence[str] = RUNTIMES) -> int:
    """Run the op ids read from stdin; one JSON line per event on stdout (see `_Worker`)."""
    wanted = [line.strip() for line in sys.stdin if line.strip()]
    by_id = {op_id(o): o for o in op_database()}
    out = sys.stdout

    def emit(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    for name in wanted:
        emit({"start": name})
        entry, _, dtype = name.partition("@")  # `id@int64`: the entry's int64 samples
        info = by_id.get(entry)
        if info is None or (dtype and dtype not in DTYPES):
            result = _failed(name, "sample", "unknown OpInfo id")
        else:
            result = run_op(
                info,
                on_stage=lambda s: emit({"stage": s}),
                dtype=DTYPES[dtype or "float32"],
                limit=limit,
                runtimes=runtimes,
                on_samples=lambda n: emit({"samples": n}),
            )
        emit({"result": result.to_json()})
    return 0
