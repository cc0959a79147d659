"""Compressed weights (issue 32 item 2): size, latency and accuracy of `weights=None|"int8"|"int4"`.

`python -m bench.weight_compression [--model llama] [--rounds 30] [--accuracy 100] [--json out.json]`

One process, one model (the zoo's default size, seeded random weights), OpenVINO CPU with
`INFERENCE_PRECISION_HINT` f32 (activations stay f32: weight-only modes, no dynamic quantization):

* size: `report["weight_bytes"]` and the bytes of the saved artifact directory (`CompiledModel.save`), per mode,
  and their ratios to f32;
* latency: the three modes compiled at sequence 64 (a prompt) and at sequence 1 (one token: a decode step
  reads every weight once, so it is weight-bandwidth bound), warmed up, then timed in interleaved rounds
  (every mode once per round, in a seeded random order: `bench.latency.call_orders`); medians and the
  f32/mode ratios of those medians (tokens/s ratios at sequence 1);
* kernels: the FullyConnected (and Gather) layers of OpenVINO's runtime model by weight element type (a
  compressed-weight FullyConnected reads i8/i4 weights itself: no Multiply/Convert left on the weight path);
* accuracy: `forge.compile(..., accuracy=N)` at sequence 32 (forge/driver/accuracy.py: eager f32 on N seeded
  sequences) against the mode's bounds in forge/precision.py.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

import forge
from bench.latency import call_orders
from forge.models import build_model, example_inputs

MODES: dict[str, str | None] = {"f32": None, "int8": "int8", "int4": "int4"}


def runtime_kernels(compiled: Any) -> dict[str, int]:
    """`layer[weight element type]` -> count over the runtime models of the compiled segments."""
    found: collections.Counter = collections.Counter()
    for seg in compiled.executor.program.segments:
        for node in seg.graph.compiled_model.get_runtime_model().get_ordered_ops():
            layer = node.get_rt_info()["layerType"].astype(str)
            if layer == "FullyConnected":
                found[f"FullyConnected[{node.input(1).get_element_type().get_type_name()}]"] += 1
            elif layer == "Gather":
                found[f"Gather[{node.input(0).get_element_type().get_type_name()}]"] += 1
    return dict(found)


def artifact_bytes(compiled: Any) -> int:
    with tempfile.TemporaryDirectory() as d:
        compiled.save(d)
        return sum(p.stat().st_size for p in Path(d).rglob("*") if p.is_file())


def time_modes(built: dict[str, Any], inputs: tuple[torch.Tensor, ...], rounds: int, warmup: int = 3) -> dict:
    for c in built.values():
        for _ in range(warmup):
            c(*inputs)
    times: dict[str, list[float]] = {k: [] for k in built}
    for order in call_orders(rounds, tuple(built)):
        for k in order:
            start = time.perf_counter()
            built[k](*inputs)
            times[k].append((time.perf_counter() - start) * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "median_ms": med,
        "range_ms": {k: [min(v), max(v)] for k, v in times.items()},
        "speedup_vs_f32": {k: med["f32"] / med[k] for k in med},
    }


def run(model_name: str = "llama", rounds: int = 30, accuracy: int = 100) -> dict[str, Any]:
    model = build_model(model_name)
    params = sum(p.numel() for p in model.parameters())
    result: dict[str, Any] = {
        "model": model_name,
        "parameters": params,
        "cpu": platform.processor() or platform.machine(),
        "cores": len(os.sched_getaffinity(0)),
        "activations": "f32 (INFERENCE_PRECISION_HINT f32)",
    }
    for seq in (64, 1):
        inputs = example_inputs(model_name, seq_len=seq)
        built = {label: forge.compile(model, inputs, weights=mode) for label, mode in MODES.items()}
        if seq == 64:
            result["weight_bytes"] = {k: c.report["weight_bytes"] for k, c in built.items()}
            result["artifact_bytes"] = {k: artifact_bytes(c) for k, c in built.items()}
            result["kernels"] = {k: runtime_kernels(c) for k, c in built.items()}
            result["runtime_config"] = built["int8"].report["runtime_config"]["effective"]
        result[f"seq{seq}"] = time_modes(built, inputs, rounds if seq == 1 else max(5, rounds // 3))
        print(json.dumps({f"seq{seq}": result[f"seq{seq}"]}), flush=True)
        del built
    for k in ("weight_bytes", "artifact_bytes"):
        result[f"{k}_ratio"] = {m: v / result[k]["f32"] for m, v in result[k].items()}
    if accuracy:
        inputs = example_inputs(model_name, seq_len=32)
        result["accuracy"] = {
            k: forge.compile(model, inputs, weights=mode, accuracy=accuracy).report["accuracy"]
            for k, mode in MODES.items()
        }
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="llama")
    ap.add_argument("--rounds", type=int, default=30, help="interleaved rounds at sequence 1 (a third at 64)")
    ap.add_argument("--accuracy", type=int, default=100, help="seeded sequences per mode (0: skip)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    result = run(args.model, args.rounds, args.accuracy)
    text = json.dumps(result, indent=1, default=str)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
