"""One system's builds in a process of its own, driven line by line over stdin/stdout.

Compile-time measurements run each system in its own worker process so that no system pays for
another's state: a full garbage collection (which `forge.compile` does before its passes) walks
every live object, and a process that has also imported inductor, onnxscript and OpenVINO's
frontend holds far more of them than a user's process does. The parent keeps one worker per
system and sends `build` requests round-robin, so the workers still take turns on the CPU.

    python -m bench.worker forge     # then JSON lines on stdin, one JSON reply line per request

`cold_sample(system, spec, ...)` is the cold protocol (`../shared/bench/cold_compile.py`'s): a fresh
worker builds the model (not timed), then times one build, whose clock starts before the library's
own import (see `bench.peers`), so the sample is what a user's first compile in a new process costs;
then the worker exits. A build that fails (e.g. an optional peer not installed) is a sample with an
`error` line, not an exception, so one peer's failure is recorded and the others still run.

Requests: ``{"op": "load", "model": "gpt2", "attn": "eager", "quick": false, "layers": null}``,
``{"op": "build", "sanity": true}``, ``{"op": "profile"}`` (Forge only), ``{"op": "exit"}``.
Replies: the request's result, or ``{"error": "<traceback>"}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parent.parent


class WorkerError(RuntimeError):
    """A request failed inside a worker (the message carries the worker's traceback)."""


class Worker:
    """The parent's handle on one worker process."""

    def __init__(self, system: str):
        self.system = system
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", system], cwd=ROOT, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": path},
        )

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise WorkerError(f"{self.system} worker exited (code {self.process.wait()}) during '{op}'")
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerError(f"{self.system} worker failed in '{op}':\n{reply['error']}")
        return reply

    def close(self) -> None:
        """Ask the worker to exit (kill it if it does not within two minutes) and close the pipes."""
        try:
            if self.process.poll() is None:
                try:
                    self.request("exit")
                except (WorkerError, OSError, ValueError):
                    pass
                try:
                    self.process.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            for pipe in (self.process.stdin, self.process.stdout):
                if pipe is not None:
                    pipe.close()

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def cold_sample(system: str, model: str, attn: str, *, quick: bool, layers: int | None = None,
                sanity: bool = False) -> dict[str, Any]:
    """One cold build of `system` in a fresh worker: the reply of `build` plus the model's size,
    or `{"error": <last line of the failure>, "traceback": ...}` if the build failed."""
    with Worker(system) as worker:
        info = worker.request("load", model=model, attn=attn, quick=quick, layers=layers)
        try:
            sample = worker.request("build", sanity=sanity)
        except WorkerError as err:
            text = str(err).strip()
            return {**info, "error": text.splitlines()[-1], "traceback": text}
    return {**info, **sample}


def cold_profile(model: str, attn: str, *, quick: bool, layers: int | None = None) -> dict[str, Any]:
    """cProfile of Forge's first compile in a fresh worker (`bench.compile_time.profile_forge`)."""
    with Worker("forge") as worker:
        worker.request("load", model=model, attn=attn, quick=quick, layers=layers)
        return worker.request("profile")


# --- the worker side -------------------------------------------------------------------------------


class _State:
    def __init__(self, system: str):
        self.system = system
        self.model = None
        self.inputs = None
        self.expected = None


def _handle(state: _State, request: dict[str, Any]) -> dict[str, Any]:
    import torch

    from bench import common, peers

    op = request["op"]
    if op == "load":
        from forge.models import parameter_count

        state.model = state.inputs = state.expected = None
        spec = common.ModelSpec(request["model"], request["attn"])
        state.model, state.inputs = common.model_and_inputs(spec, request["quick"], layers=request.get("layers"))
        return {"layers": state.model.config.num_hidden_layers, "parameters": parameter_count(state.model)}
    if op == "build":
        built = peers.build(state.system, state.model, state.inputs)
        sample = {"stages": built.stages, "to_artifact_ms": built.to_artifact_ms,
                  "to_runnable_ms": built.to_runnable_ms}
        sample.update({k: v for k, v in built.extra.items() if isinstance(v, (int, float, str))})
        if request.get("sanity") and built.run is not None:  # it computes the model (else its time means nothing)
            from forge.driver.parity import parity

            if state.expected is None:
                with torch.no_grad():
                    state.expected = state.model(*state.inputs)
            sample["sanity_max_abs"] = parity(state.expected, built.run(state.inputs[0]))["max_abs"]
        del built
        return sample
    if op == "profile":
        from bench.compile_time import profile_forge

        return profile_forge(state.model, state.inputs)
    raise ValueError(f"unknown request {op!r}")


def serve(system: str, requests: TextIO, replies: TextIO) -> None:
    state = _State(system)
    for line in requests:
        request = json.loads(line)
        if request["op"] == "exit":
            replies.write("{}\n")
            replies.flush()
            return
        try:
            reply = _handle(state, request)
        except Exception:
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


def main() -> None:
    # Replies get the real stdout; everything else (libraries print progress) goes to stderr.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.argv[1], sys.stdin, replies)


if __name__ == "__main__":
    main()
