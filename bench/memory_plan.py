"""The memory plan of zoo models against its lower bound, per planner (issue 14, item 4).

For each model (one per process when run as `python -m bench.memory_plan MODEL ...`): export and
import, the default optimization pipeline, the lowering to npuir, then `lower-npuir-to-buffer`
with every planner on a clone (no emission, no device compile: the plan is all that is read) and
the allocation checker on each result. Prints one JSON line per model:

    {"model": "gpt2", "small": false, "seq_len": 128, "bound": ..., "naive": ...,
     "planned": {"best": ..., "offset-by-size": ..., ...}, "ratio": best / bound, "plan_ms": {...},
     "bound_op_by_op": ...}

`bound` is the report's `peak_bytes_lower_bound` (op by op: every value dead after its last
reader); `bound_segments` is `lowering.liveness.segment_bound`, what no plan beats that keeps an
NPU segment's outputs out of its inputs' bytes (as the offset planners do, so that the executor
never stages and copies an output); `ratio_segments` = best / bound_segments.

`--all` runs every zoo family, each in a fresh subprocess (`--small` for the test sizes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from forge import models
from forge.frontend.fx_importer import import_module
from forge.pass_stages import run_passes
from forge.pipelines import DEFAULT_PIPELINE, LOWER_TO_NPUIR
from forge.weights import attach_weights
from lowering.check_allocation import check_allocation
from lowering.liveness import buffer_segments, segment_bound
from lowering.npuir_to_buffer import PLANNERS
from lowering.stats import functions


def measure(name: str, small: bool, seq_len: int, layers: int | None) -> dict:
    model = models.build_model(name, small=small, layers=layers)
    inputs = models.example_inputs(name, seq_len=seq_len, small=small)
    imported = import_module(model, inputs)
    del model
    module = imported.module
    attach_weights(module, imported.weights)
    run_passes(module, DEFAULT_PIPELINE)
    run_passes(module, LOWER_TO_NPUIR)
    planned: dict[str, int] = {}
    plan_ms: dict[str, float] = {}
    row: dict = {"model": name, "small": small, "seq_len": seq_len, "layers": layers}
    for planner in PLANNERS:
        lowered = module.clone()
        start = time.perf_counter()
        run_passes(lowered, f"lower-npuir-to-buffer{{planner={planner}}}")
        plan_ms[planner] = round((time.perf_counter() - start) * 1e3, 1)
        check_allocation(lowered)
        plan = {k: v.value.data for k, v in lowered.attributes["buffer.plan"].data.items()}
        planned[planner] = plan["peak_bytes_planned"]
        row.update(bound=plan["peak_bytes_lower_bound"], naive=plan["peak_bytes_naive"], values=plan["values"])
        row["bound_segments"] = sum(segment_bound(*buffer_segments(fn.body.block)) for fn in functions(lowered))
    row.update(planned=planned, plan_ms=plan_ms)
    row["ratio"] = round(planned["best"] / row["bound"], 4) if row["bound"] else 1.0
    row["ratio_segments"] = round(planned["best"] / row["bound_segments"], 4) if row["bound_segments"] else 1.0
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="zoo family names (default with --all: every family)")
    parser.add_argument("--all", action="store_true", help="every zoo family, each in a fresh process")
    parser.add_argument("--small", action="store_true", help="the test sizes")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--layers", type=int, default=None)
    args = parser.parse_args(argv)
    names = args.models or (list(models._REGISTRY) if args.all else [])
    if not names:
        parser.error("name a model or pass --all")
    if len(names) == 1:
        print(json.dumps(measure(names[0], args.small, args.seq_len, args.layers)), flush=True)
        return 0
    failed = 0
    for name in names:  # one fresh process per model: RSS and caches do not carry over
        cmd = [sys.executable, "-m", "bench.memory_plan", name, "--seq-len", str(args.seq_len)]
        cmd += ["--small"] if args.small else []
        cmd += ["--layers", str(args.layers)] if args.layers is not None else []
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            failed += 1
            tail = done.stderr.strip().splitlines()[-1:] or ["(no output)"]
            print(json.dumps({"model": name, "error": tail[0]}), flush=True)
        else:
            print(done.stdout.strip(), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
