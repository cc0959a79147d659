"""Per-pass profile (issue 7 item 4, the published metric): for every pass `forge.compile`
runs, its time, the nodes it removed, and nodes removed per millisecond.

One torch.export per model; each of `REPEATS` rounds imports that program afresh and runs the
default optimization pipeline and the lowering pipeline on it with the GC paused (as
`forge.compile` does), through the pipeline's instrumentation (`PassRecord`). Times are medians
over the rounds; op counts are the same every round (the passes are deterministic).
"""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

from bench import common, peers
from forge.pipelines import DEFAULT_PIPELINE, LOWERING_PIPELINE

REPEATS = 5
QUICK_REPEATS = 2


def run(quick: bool = False) -> dict[str, Any]:
    repeats = QUICK_REPEATS if quick else REPEATS
    config = {"repeats": repeats, "seq_len": common.seq_len(quick), "small_models": quick,
              "models": [m.label for m in common.models(quick)], "pipeline": list(DEFAULT_PIPELINE),
              "lowering": list(LOWERING_PIPELINE)}
    with common.recorded("pass_profile", quick, config) as result:
        result["models"] = {spec.label: _measure(spec, quick, repeats) for spec in common.models(quick)}
    return result


def _measure(spec: common.ModelSpec, quick: bool, repeats: int) -> dict[str, Any]:
    from forge.driver.compilation import Compilation
    from forge.driver.stages import passes_stage
    from forge.frontend.fx_importer import import_program

    model, inputs = common.model_and_inputs(spec, quick)
    program = peers.export(model, inputs)
    rounds: list[list[Any]] = []
    for _ in range(repeats):
        imported = import_program(program)
        gc.collect()
        c = Compilation.of_module(imported.module, imported.weights)
        optimized = c.run((passes_stage("optimization", DEFAULT_PIPELINE),)).records
        lowered = c.run((passes_stage("lowering", LOWERING_PIPELINE, "lower_ms"),)).records[len(optimized):]
        records = [("optimization", r) for r in optimized] + [("lowering", r) for r in lowered]
        rounds.append(records)
    passes = []
    for i, (stage, record) in enumerate(rounds[0]):
        times = [r[i][1].wall_ms for r in rounds]
        ms = common.median(times)
        removed = record.ops_before - record.ops_after
        passes.append({
            "position": i + 1, "name": record.name, "stage": stage, "ms": ms, "samples_ms": times,
            "ops_before": record.ops_before, "ops_after": record.ops_after, "removed": removed,
            "removed_per_ms": removed / ms if ms > 0 else 0.0, "fired": dict(record.fired),
        })
    return {"layers": model.config.num_hidden_layers, "passes": passes}


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Per-pass profile\n",
           f"Every pass `forge.compile` runs, in order: median wall time over {cfg['repeats']} fresh imports, "
           "ops before and after, nodes removed and nodes removed per ms (the published metric; a lowering "
           "pass converts ops, so its count change is a conversion, not a removal).\n"]
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        rows = []
        for p in mr["passes"]:
            fired = sorted(p["fired"].items(), key=lambda kv: kv[1], reverse=True)[:3]
            lowering = p["stage"] == "lowering"
            rows.append([p["position"], f"`{p['name']}`", p["stage"], f"{p['ms']:.1f}", p["ops_before"], p["ops_after"],
                         f"({-p['removed']:+d} converted)" if lowering else p["removed"],
                         "-" if lowering else f"{p['removed_per_ms']:.2f}",
                         ", ".join(f"{k} x{v}" for k, v in fired) or "-"])
        opt = [p for p in mr["passes"] if p["stage"] == "optimization"]
        total_ms = sum(p["ms"] for p in opt)
        removed = sum(p["removed"] for p in opt)
        rows.append(["", "**optimization total**", "", f"{total_ms:.1f}", opt[0]["ops_before"], opt[-1]["ops_after"],
                     removed, f"{removed / total_ms:.2f}" if total_ms else "-", ""])
        out.append(f"### {label} ({mr['layers']} layers)\n")
        out.append(common.table(["#", "pass", "stage", "ms", "ops before", "ops after", "removed", "removed/ms",
                                 "top patterns fired"], rows))
    return "\n".join(out)


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, len(labels), figsize=(5.8 * len(labels), 3.8), squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        passes = result["models"][label]["passes"]
        names = [f"{p['position']}. {p['name']}" for p in passes]
        colors = ["#d62728" if p["stage"] == "optimization" else "#7f7f7f" for p in passes]
        ax.barh(range(len(passes)), [p["ms"] for p in passes], color=colors)
        for i, p in enumerate(passes):
            if p["stage"] == "optimization":
                ax.text(p["ms"], i, f" -{p['removed']} ops", va="center", fontsize=7)
        ax.set_yticks(range(len(passes)), names, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("ms (median)")
        ax.set_title(f"{label}: time per pass (grey: lowering)", fontsize=10)
        ax.margins(x=0.2)
    fig.tight_layout()
    return common.save_figure(fig, figures, "pass_profile", "time per pass")
