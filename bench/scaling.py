"""Scaling (issue 7 item 3): compile time against depth, fitted as time = a * layers^k.

Both families at 2, 4, 8, 16 and 32 layers (full width, seeded weights), Forge and OpenVINO's
own PyTorch path built from a fresh state on the same model and input, each system in a worker
process of its own (`bench.worker`), builds alternating between them. The fit is least squares
on log time against log layers, for:

* Forge's own work (after torch.export, before the device compile) and Forge to artifact
  (torch.export + own work, the issue's "Forge compile"), and to runnable (+ device compile);
* OpenVINO's `convert_model`, torch.export + `convert_model`, and + `compile_model`.

A fixed part (embeddings, LM head, imports of each stage) makes k < 1 at small depths; k > 1
means some stage grows faster than the graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import common
from bench.worker import Worker

LAYERS = (2, 4, 8, 16, 32)
QUICK_LAYERS = (1, 2)
REPEATS = {"forge": 3, "openvino": 1}
QUICK_REPEATS = {"forge": 1, "openvino": 1}
TARGET_K = 1.05

SERIES = {
    "forge own work": ("forge", "own_ms"),
    "forge to artifact": ("forge", "to_artifact_ms"),
    "forge to runnable": ("forge", "to_runnable_ms"),
    "openvino convert_model": ("openvino", "convert_model"),
    "openvino to artifact": ("openvino", "to_artifact_ms"),
    "openvino to runnable": ("openvino", "to_runnable_ms"),
    "torch.export": ("forge", "export"),
}


def run(quick: bool = False) -> dict[str, Any]:
    layers = QUICK_LAYERS if quick else LAYERS
    repeats = QUICK_REPEATS if quick else REPEATS
    config = {"layers": list(layers), "repeats": repeats, "seq_len": common.seq_len(quick), "small_models": quick,
              "models": [m.label for m in common.models(quick)], "process_per_system": True}
    with common.recorded("scaling", quick, config) as result:
        with Worker("forge") as forge, Worker("openvino") as openvino:
            workers = {"forge": forge, "openvino": openvino}
            result["models"] = {spec.label: _measure(spec, quick, layers, repeats, workers)
                                for spec in common.models(quick)}
    return result


def _measure(spec: common.ModelSpec, quick: bool, layers: tuple[int, ...], repeats: dict[str, int],
             workers: dict[str, Worker]) -> dict[str, Any]:
    points = []
    for n in layers:
        for worker in workers.values():
            worker.request("load", model=spec.name, attn=spec.attn, quick=quick, layers=n)
        samples: dict[str, list[dict[str, float]]] = {s: [] for s in workers}
        for rep in range(max(repeats.values())):
            for system, worker in workers.items():
                if rep < repeats[system]:
                    samples[system].append(_flat(worker.request("build")))
        medians = {s: {k: common.median([r[k] for r in runs]) for k in runs[0]} for s, runs in samples.items()}
        points.append({"layers": n, "samples": samples, "medians": medians})
    xs = [p["layers"] for p in points]
    fits = {name: common.fit_power_law(xs, [p["medians"][system][key] for p in points])
            for name, (system, key) in SERIES.items()}
    return {"points": points, "fits": fits}


def _flat(sample: dict[str, Any]) -> dict[str, float]:
    row = dict(sample["stages"])
    row["to_artifact_ms"] = sample["to_artifact_ms"]
    row["to_runnable_ms"] = sample["to_runnable_ms"]
    if "own_ms" in sample:
        row["own_ms"] = sample["own_ms"]
    return row


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, mr in result["models"].items():
        fits = mr["fits"]
        for series in ("forge to artifact", "forge own work"):
            rows.append(common.target_row(
                f"{label}: scaling exponent k, {series}", fits[series]["k"], TARGET_K, higher_is_better=False,
                why=_why(mr, series)))
    return rows


def _why(mr: dict[str, Any], series: str) -> str:
    """Which stage grows fastest: the per-stage k of Forge, from the same points."""
    points = mr["points"]
    xs = [p["layers"] for p in points]
    stage_k = {}
    for stage in ("export", "import", "passes", "lowering", "emit", "other"):
        ys = [p["medians"]["forge"][stage] for p in points]
        if min(ys) > 0:
            stage_k[stage] = common.fit_power_law(xs, ys)["k"]
    worst = sorted(stage_k.items(), key=lambda kv: kv[1], reverse=True)
    return ("per-stage k: " + ", ".join(f"{s} {k:.2f}" for s, k in worst)
            + f"; OpenVINO convert_model k = {mr['fits']['openvino convert_model']['k']:.2f}")


# --- rendering -------------------------------------------------------------------------------------


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Scaling with depth\n",
           f"Compile time at {', '.join(map(str, cfg['layers']))} layers (medians of {cfg['repeats']['forge']} Forge / "
           f"{cfg['repeats']['openvino']} OpenVINO builds per depth), fitted as time = a * layers^k "
           "(least squares in log-log).\n"]
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        rows = [[name, f"{f['k']:.3f}", f"{f['r2']:.3f}"] for name, f in mr["fits"].items()]
        out.append(f"### {label}\n")
        out.append(common.table(["series", "k", "R^2"], rows))
        head = ["layers", *(f"{n} ms" for n in SERIES)]
        rows = [[p["layers"], *(common.ms(p["medians"][s][k]) for s, k in SERIES.values())] for p in mr["points"]]
        out.append("\n" + common.table(head, rows))
    return "\n".join(out)


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, len(labels), figsize=(5.8 * len(labels), 4.0), squeeze=False)
    styles = {"forge own work": ("#d62728", "o"), "forge to artifact": ("#8c1d1d", "s"),
              "openvino convert_model": ("#1f77b4", "o"), "openvino to artifact": ("#0b3c61", "s"),
              "torch.export": ("#9467bd", "^")}
    for ax, label in zip(axes[0], labels, strict=True):
        mr = result["models"][label]
        xs = [p["layers"] for p in mr["points"]]
        for name, (color, marker) in styles.items():
            system, key = SERIES[name]
            ys = [p["medians"][system][key] / 1e3 for p in mr["points"]]
            fit = mr["fits"][name]
            ax.plot(xs, ys, marker=marker, color=color, ls="none", label=f"{name} (k={fit['k']:.2f})")
            ax.plot(xs, [fit["a"] * x ** fit["k"] / 1e3 for x in xs], color=color, lw=1, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("layers")
        ax.set_ylabel("seconds (median)")
        ax.set_title(f"{label}: compile time vs depth", fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return common.save_figure(fig, figures, "scaling", "compile time vs layers")
