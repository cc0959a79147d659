"""The memory plan of zoo models against its lower bound, per planner (issue 14, item 4).

For each model (one per process when run as `python -m bench.memory_plan MODEL ...`): export and
import, the default optimization pipeline, the lowering to npuir, then `lower-npuir-to-buffer`
with every planner on a clone (no emission, no device compile: the plan is all that is read) and
the allocation checker on each result. Prints one JSON line per model:

    {"model": "gpt2", "small": false, "seq_len": 128, "bound": ..., "naive": ...,
     "planned": {"best": ..., "offset-by-size": ..., ...}, "ratio": best / bound, "plan_ms": {...},
     "planned_before": ..., "bound_segments": ..., "direct": {...}}

`bound` is the report's `peak_bytes_lower_bound` (op by op: every value dead after its last
reader) and the target (`ratio` = best / bound <= 1.05). `planned_before` is the previous rule's
best plan, which kept every NPU segment output out of its inputs' bytes, returned ones included
(`lowering.liveness.segment_conflicts(live_out=True)` as hard conflicts); `bound_segments` is
`lowering.liveness.segment_bound` under that rule (what no plan keeping all those pairs apart
beats). `plan_ms` is the pass per planner; `plan_only_ms` times `npuir_to_buffer.plan` alone on
the buffer IR's intervals, the current rule (`after`) against the previous one (`before`).

`direct` is what the arena would need if the values the executor writes straight into the
caller's tensor (`backends.nnfactory.program.direct_outputs`) had no arena bytes: the candidates
are the returned values an NPU exec writes (the plan-independent half of those rules; the dtype
half is decided at emission), `bytes` their size, `bound` and `planned` the bound and the best
plan of the other values. The pass still plans them (the executor's fallback, copy-out, needs
the bytes): the figure is reported, not the target.

`--all` runs every zoo family, each in a fresh subprocess (`--small` for the test sizes), and ends
with a table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from dialects import buffer as B
from dialects import npuir as N
from forge import models
from forge.driver.compilation import Compilation
from forge.driver.options import CompileOptions
from forge.driver.stages import IMPORT_MODULE, LOWER, OPTIMIZE, passes_stage
from lowering.check_allocation import check_allocation
from lowering.liveness import LIVE_OUT, Interval, buffer_segments, peak_live_bytes, segment_bound
from lowering.npuir_to_buffer import PLANNERS, plan
from lowering.stats import functions


def measure(name: str, small: bool, seq_len: int, layers: int | None) -> dict:
    model = models.build_model(name, small=small, layers=layers)
    inputs = models.example_inputs(name, seq_len=seq_len, small=small)
    c = Compilation(CompileOptions(), model=model, args=tuple(inputs)).run((IMPORT_MODULE, OPTIMIZE, LOWER))
    del model
    module = c.module
    planned: dict[str, int] = {}
    plan_ms: dict[str, float] = {}
    row: dict = {"model": name, "small": small, "seq_len": seq_len, "layers": layers}
    for planner in PLANNERS:
        planning = Compilation.of_module(module.clone(), c.weights)
        start = time.perf_counter()
        stage = passes_stage(planner, f"lower-npuir-to-buffer{{planner={planner}}}", "lower_ms")
        lowered = planning.run((stage,)).module
        plan_ms[planner] = round((time.perf_counter() - start) * 1e3, 1)
        check_allocation(lowered)
        plan = {k: v.value.data for k, v in lowered.attributes["buffer.plan"].data.items()}
        planned[planner] = plan["peak_bytes_planned"]
        row.update(bound=plan["peak_bytes_lower_bound"], naive=plan["peak_bytes_naive"], values=plan["values"])
        if planner == "best":
            row.update(_rules(lowered))
    row.update(planned=planned, plan_ms=plan_ms)
    row["ratio"] = round(planned["best"] / row["bound"], 4) if row["bound"] else 1.0
    return row


def _rules(lowered) -> dict:
    """The previous rule's plan and bound, the plan-only times, and the direct-output figures
    (module docstring), summed over the functions of the lowered module."""
    out = {"planned_before": 0, "bound_segments": 0, "plan_only_ms": {"before": 0.0, "after": 0.0}}
    direct = {"values": 0, "bytes": 0, "bound": 0, "planned": 0}
    for fn in functions(lowered):
        ivs, pairs = buffer_segments(fn.body.block, live_out=True)
        held, _ = buffer_segments(fn.body.block, hold_segments=True, live_out=True)
        hard, soft = _pairs(ivs, pairs)
        merged = {i: hard.get(i, []) + soft.get(i, []) for i in set(hard) | set(soft)}
        start = time.perf_counter()
        out["planned_before"] += plan(ivs, "best", merged, held).planned_bytes
        mid = time.perf_counter()
        plan(ivs, "best", hard, held, soft)
        out["plan_only_ms"]["before"] += (mid - start) * 1e3
        out["plan_only_ms"]["after"] += (time.perf_counter() - mid) * 1e3
        out["bound_segments"] += segment_bound(ivs, pairs)
        keep = [n for n, iv in enumerate(ivs) if not _direct_candidate(iv)]
        rest, rest_held = [ivs[n] for n in keep], [held[n] for n in keep]
        rest_hard, _ = _pairs(rest, [(o, i) for o, i in pairs if any(iv.key == o for iv in rest)])
        direct["values"] += len(ivs) - len(rest)
        direct["bytes"] += sum(iv.size for iv in ivs) - sum(iv.size for iv in rest)
        direct["bound"] += peak_live_bytes(rest)
        direct["planned"] += plan(rest, "best", rest_hard, rest_held).planned_bytes if rest else 0
    out["plan_only_ms"] = {k: round(v, 1) for k, v in out["plan_only_ms"].items()}
    return {**out, "direct": direct}


def _direct_candidate(iv: Interval) -> bool:
    """A returned value an NPU exec writes."""
    owner = iv.key.owner
    return iv.end == LIVE_OUT and isinstance(owner, B.ExecOp) and owner.device.data is N.Device.NPU


def _pairs(ivs: list[Interval], pairs: list[tuple]) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """(output, input) pairs as the pass's index conflicts: (hard, soft: the output is returned)."""
    index = {iv.key: n for n, iv in enumerate(ivs)}
    hard: dict[int, list[int]] = {}
    soft: dict[int, list[int]] = {}
    for o, i in pairs:
        if o in index and i in index:
            kind = soft if ivs[index[o]].end == LIVE_OUT else hard
            kind.setdefault(index[o], []).append(index[i])
            kind.setdefault(index[i], []).append(index[o])
    return hard, soft


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
    rows = []
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
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(table(rows))
    return 1 if failed else 0


def table(rows: list[dict]) -> str:
    """A markdown table of the rows (MB = 2**20 bytes)."""
    mb = 1 << 20
    lines = ["| model | bound MB | naive MB | planned before MB | planned MB | ratio | before/bound | "
             "without direct: bound MB | planned MB | plan ms before/after |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        d, ms = r["direct"], r["plan_only_ms"]
        lines.append(
            f"| {r['model']} | {r['bound'] / mb:.2f} | {r['naive'] / mb:.1f} | {r['planned_before'] / mb:.2f} | "
            f"{r['planned']['best'] / mb:.2f} | {r['ratio']:.3f} | {r['planned_before'] / r['bound']:.3f} | "
            f"{d['bound'] / mb:.2f} | {d['planned'] / mb:.2f} | {ms['before']:.0f}/{ms['after']:.0f} |"
        )
    worst = max(rows, key=lambda r: r["ratio"], default=None)
    if worst is not None:
        lines.append(f"\nworst ratio: {worst['model']} {worst['ratio']:.4f}; over 1.05: "
                     + (", ".join(r["model"] for r in rows if r["ratio"] > 1.05) or "none"))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
