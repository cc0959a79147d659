"""Scaling (issue 7 item 3, issue 14 item 6): cold compile time against depth, fitted as
time = a * layers^k.

Both families at 2, 4, 8, 16 and 32 layers (full width, seeded weights), Forge and OpenVINO's
own PyTorch path, every build cold in a fresh process of its own (`bench.worker.cold_sample`, the
protocol of `bench.compile_time`: the model is built untimed, then the library's import + compile +
first call are timed), alternating F O F at each depth (Forge `FORGE_ROUNDS` samples at a depth, medians;
OpenVINO one). The fit is least squares on log time against log layers, for:

* Forge's own work (after torch.export, before the device compile) and Forge to artifact
  (`import forge` + `forge.compile` minus the device compile, the issue's "Forge compile"), and to
  runnable (+ device compile + first call);
* OpenVINO's `convert_model`, `import openvino` + torch.export + `convert_model`, and + `compile_model`
  (f32) + first inference.

A fixed part (embeddings, LM head, imports) makes k < 1; k > 1 means some stage grows faster than
the graph. The 32-layer Llama point is also the issue's "to artifact >= 10x on a 32-layer
Llama-style model" target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import common
from bench.worker import cold_sample

LAYERS = (2, 4, 8, 16, 32)
QUICK_LAYERS = (1, 2)
FORGE_ROUNDS = {2: 2, 4: 2, 8: 2, 16: 1, 32: 1}
"""Forge's cold samples per depth (one at 16 and 32, where a sample costs most); OpenVINO: one."""
TARGET_K = 0.5
"""Issue 14: the exponent of Forge's cold compile time (to artifact) in layers, 2..32."""
TARGET_OWN_K = 1.05
"""Issue 7: Forge's own work grows no faster than the graph."""
TARGET_DEEP_RATIO = 10.0
DEEP = ("llama-sdpa", 32)
"""Issue 14: to artifact >= 10x OpenVINO on the 32-layer Llama-style model."""

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
    config = {"layers": list(layers), "forge_rounds": {n: 1 if quick else FORGE_ROUNDS[n] for n in layers},
              "openvino_rounds": 1, "seq_len": common.seq_len(quick), "small_models": quick,
              "models": [m.label for m in common.models(quick)], "process_per_measurement": True, "cold": True}
    with common.recorded("scaling", quick, config) as result:
        result["models"] = {spec.label: _measure(spec, quick, layers, config["forge_rounds"])
                            for spec in common.models(quick)}
    return result


def _measure(spec: common.ModelSpec, quick: bool, layers: tuple[int, ...], forge_rounds: dict[int, int]
             ) -> dict[str, Any]:
    points = []
    for n in layers:
        order = ["forge", "openvino"] + ["forge"] * (forge_rounds[n] - 1)
        samples: dict[str, list[dict[str, float]]] = {"forge": [], "openvino": []}
        for system in order:
            sample = cold_sample(system, spec.name, spec.attn, quick=quick, layers=n)
            if "error" in sample:
                raise RuntimeError(f"scaling: {system} failed on {spec.label} at {n} layers:\n{sample['traceback']}")
            samples[system].append(_flat(sample))
        medians = {s: {k: common.median([r[k] for r in runs]) for k in runs[0]} for s, runs in samples.items()}
        points.append({"layers": n, "samples": samples, "medians": medians})
    xs = [p["layers"] for p in points]
    fits = {name: common.fit_power_law(xs, [p["medians"][system][key] for p in points])
            for name, (system, key) in SERIES.items()}
    return {"points": points, "fits": fits}


def _flat(sample: dict[str, Any]) -> dict[str, float]:
    row = dict(sample["stages"])
    for key in ("to_artifact_ms", "to_runnable_ms", "own_ms"):
        if key in sample:
            row[key] = sample[key]
    return row


def artifact_ratio(mr: dict[str, Any], layers: int) -> float | None:
    """OpenVINO / Forge to artifact at `layers` (None: not measured)."""
    for p in mr["points"]:
        if p["layers"] == layers:
            return p["medians"]["openvino"]["to_artifact_ms"] / p["medians"]["forge"]["to_artifact_ms"]
    return None


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, mr in result["models"].items():
        fits = mr["fits"]
        span = f"{mr['points'][0]['layers']}-{mr['points'][-1]['layers']} layers"
        rows.append(common.target_row(
            f"{label}: scaling exponent k of Forge's cold compile to artifact ({span})", fits["forge to artifact"]["k"],
            TARGET_K, higher_is_better=False, why=_why(mr)))
        rows.append(common.target_row(
            f"{label}: scaling exponent k, Forge's own work ({span})", fits["forge own work"]["k"], TARGET_OWN_K,
            higher_is_better=False, why=_why(mr)))
        if label == DEEP[0] and (ratio := artifact_ratio(mr, DEEP[1])) is not None:
            rows.append(common.target_row(
                f"{label} {DEEP[1]}L cold: compile to artifact, speed-up vs openvino", ratio, TARGET_DEEP_RATIO,
                higher_is_better=True, unit="x", why=_deep_why(mr, DEEP[1])))
    return rows


def _deep_why(mr: dict[str, Any], layers: int) -> str:
    point = next(p for p in mr["points"] if p["layers"] == layers)["medians"]
    forge, ov = point["forge"], point["openvino"]
    fixed = forge["export"] + forge["lib_import"]
    return (f"OpenVINO {common.ms(ov['to_artifact_ms'])} ms (convert_model {common.ms(ov['convert_model'])} ms) vs "
            f"Forge {common.ms(forge['to_artifact_ms'])} ms, of which torch.export {common.ms(forge['export'])} ms "
            f"(shared: caps the ratio at {ov['to_artifact_ms'] / fixed:.2f}x) and own work "
            f"{common.ms(forge['own_ms'])} ms")


def _why(mr: dict[str, Any]) -> str:
    """Which stage grows fastest: the per-stage k of Forge, from the same points."""
    points = mr["points"]
    xs = [p["layers"] for p in points]
    stage_k = {}
    for stage in ("lib_import", "export", "decompose", "import", "passes", "lowering", "emit", "other"):
        ys = [p["medians"]["forge"].get(stage, 0.0) for p in points]
        if min(ys) > 0:
            stage_k[stage] = common.fit_power_law(xs, ys)["k"]
    worst = sorted(stage_k.items(), key=lambda kv: kv[1], reverse=True)
    first, last = points[0]["medians"]["forge"], points[-1]["medians"]["forge"]
    return ("per-stage k: " + ", ".join(f"{s} {k:.2f}" for s, k in worst)
            + f"; torch.export alone is {common.ms(first['export'])} -> {common.ms(last['export'])} ms "
              f"(k {mr['fits']['torch.export']['k']:.2f}) of Forge's {common.ms(first['to_artifact_ms'])} -> "
              f"{common.ms(last['to_artifact_ms'])} ms; OpenVINO convert_model k = "
              f"{mr['fits']['openvino convert_model']['k']:.2f}")


# --- rendering -------------------------------------------------------------------------------------


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Scaling with depth\n",
           f"Cold compile time at {', '.join(map(str, cfg['layers']))} layers, every build in a fresh process "
           f"(Forge: medians of {_rounds_text(cfg['forge_rounds'])} builds per depth; OpenVINO: "
           f"{cfg['openvino_rounds']}), fitted as time = a * layers^k (least squares in log-log).\n"]
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        rows = [[name, f"{f['k']:.3f}", f"{f['r2']:.3f}"] for name, f in mr["fits"].items()]
        out.append(f"### {label}\n")
        out.append(common.table(["series", "k", "R^2"], rows))
        head = ["layers", *(f"{n} ms" for n in SERIES), "to artifact, OpenVINO / Forge"]
        rows = [[p["layers"], *(common.ms(p["medians"][s][k]) for s, k in SERIES.values()),
                 common.ratio(artifact_ratio(mr, p["layers"]))] for p in mr["points"]]
        out.append("\n" + common.table(head, rows))
    return "\n".join(out)


def _rounds_text(rounds: dict[Any, int]) -> str:
    values = sorted(set(rounds.values()), reverse=True)
    if len(values) == 1:
        return str(values[0])
    return " / ".join(f"{v} ({', '.join(str(n) for n, r in rounds.items() if r == v)} layers)" for v in values)


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
