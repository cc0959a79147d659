"""Per-model compiler figures in one run: export vs import time, op counts, the six passes,
memory plan and device transitions, parity. Not part of the test suite.

    python bench/pipeline_report.py                    # every zoo model, both attentions, full size
    python bench/pipeline_report.py --models gpt2 --attn eager --repeat 5 --json out/pipeline.json

Pass times are medians over --repeat runs of the six passes on fresh imports of the same model
(GC paused, as in forge.compile). The affinity row uses the CPU-pinned policy (embeddings and the
final norm on the CPU, as in the published setup) to show what scheduling does to transitions.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
from pathlib import Path

import torch

from forge.driver.compilation import Compilation
from forge.driver.options import CompileOptions
from forge.driver.stages import IMPORT_MODULE, passes_stage
from forge.models import ATTN_IMPLS, CORE_ZOO, ZOO, build_model, example_inputs
from forge.pipelines import CLEANUP, LOWER_ATEN, LOWERING_PIPELINE, OPTIMIZATION_PASSES, PLAN_MEMORY, SCHEDULE_DEVICES
from forge.report import count_body_ops

PINNED_POLICY = LOWER_ATEN + "{cpu-ops=gather pin-final-norm=true}"


def _fresh_import(model, inputs):
    return Compilation(CompileOptions(), model=model, args=tuple(inputs)).run((IMPORT_MODULE,))


def measure(name: str, attn: str, *, layers: int | None, seq_len: int, repeat: int) -> dict:
    model = build_model(name, attn=attn, layers=layers)
    inputs = example_inputs(name, seq_len=seq_len)
    c = _fresh_import(model, inputs)
    row = {"model": name, "attn": attn, "layers": model.config.num_hidden_layers,
           "export_ms": c.imported.export_ms, "import_ms": c.imported.import_ms,
           "ops_imported": count_body_ops(c.module)}
    pass_ms: dict[str, list[float]] = {}
    totals = []
    for i in range(repeat):
        if i:
            c = _fresh_import(model, inputs)
        gc.collect()
        records = c.run((passes_stage("optimization passes", OPTIMIZATION_PASSES),)).records
        totals.append(sum(r.wall_ms for r in records))
        for r in records:
            pass_ms.setdefault(r.name, []).append(r.wall_ms)
    row["passes"] = [{"name": r.name, "ms": statistics.median(pass_ms[r.name]), "ops_before": r.ops_before,
                      "ops_after": r.ops_after} for r in records]
    row["six_passes_ms_median"] = statistics.median(totals)
    c.run((passes_stage("cleanup", CLEANUP),))
    row["ops_optimized"] = count_body_ops(c.module)
    row["reduction"] = 1 - row["ops_optimized"] / row["ops_imported"]
    row["fused_attention"] = sum(1 for op in c.module.walk() if op.name == "aten.scaled_dot_product_attention")
    optimized_text = str(c.module)
    c.run((passes_stage("lowering", LOWERING_PIPELINE, "lower_ms"),))
    row["lower_ms"] = c.clock.ms["lower_ms"]
    row["plan"] = _plan(c.module)
    row["pinned_plan"] = _pinned_plan(optimized_text, c.weights)
    return row


def _plan(module) -> dict:
    from forge.analysis import metrics

    summary = metrics.report(module)
    return {"vregs": summary["plan"]["vregs"], "buffers": summary["buffers"],
            "peak_bytes_naive": summary["peak_bytes_naive"], "peak_bytes_planned": summary["peak_bytes_planned"],
            "transitions_before": summary["schedule"]["transitions_before"],
            "transitions_after": summary["schedule"]["transitions_after"]}


def _pinned_plan(optimized_text: str, weights) -> dict:
    from xdsl.parser import Parser

    from forge.context import make_context

    module = Parser(make_context(), optimized_text).parse_module()
    pinned = Compilation.of_module(module, weights)
    pinned.run((passes_stage("pinned lowering", [PINNED_POLICY, *SCHEDULE_DEVICES, *PLAN_MEMORY], "lower_ms"),))
    return _plan(pinned.module)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="*", default=list(CORE_ZOO), choices=ZOO)
    parser.add_argument("--attn", nargs="*", default=list(ATTN_IMPLS), choices=ATTN_IMPLS)
    parser.add_argument("--layers", type=int)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = [measure(m, a, layers=args.layers, seq_len=args.seq_len, repeat=args.repeat)
            for m in args.models for a in args.attn]
    print(f"{'model':<14}{'L':>3}{'export ms':>11}{'import ms':>11}{'ops':>6}{'->':>4}{'opt':>5}{'reduct':>8}"
          f"{'sdpa':>6}{'6 passes ms':>13}{'lower ms':>10}{'vregs':>7}{'bufs':>6}{'peak naive':>13}{'planned':>12}"
          f"{'trans (pinned)':>16}")
    for r in rows:
        p, q = r["plan"], r["pinned_plan"]
        print(f"{r['model'] + '-' + r['attn']:<14}{r['layers']:>3}{r['export_ms']:>11.0f}{r['import_ms']:>11.1f}"
              f"{r['ops_imported']:>6}{'':>4}{r['ops_optimized']:>5}{r['reduction']:>8.1%}{r['fused_attention']:>6}"
              f"{r['six_passes_ms_median']:>13.1f}{r['lower_ms']:>10.1f}{p['vregs']:>7}{p['buffers']:>6}"
              f"{p['peak_bytes_naive']:>13,}{p['peak_bytes_planned']:>12,}"
              f"{q['transitions_before']:>8} -> {q['transitions_after']:<4}")
    for r in rows:
        passes = ", ".join(f"{p['name']} {p['ms']:.1f} ms ({p['ops_before']}->{p['ops_after']})" for p in r["passes"])
        print(f"\n{r['model']}-{r['attn']}: " + passes)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
