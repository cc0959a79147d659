"""Compile time: nn.Module to something that runs, Forge against OpenVINO, ONNX Runtime and
torch.compile (issue 7 item 1), plus a cProfile of one Forge compile naming the stage that
dominates.

Every system is built `REPEATS[system]` times per model, round-robin (so a noisy minute on a
shared machine hits every system alike), each from a fresh state (see `bench.peers`) in a worker
process of its own (`bench.worker`: no system pays for another's imports and live objects),
after one untimed warm-up build of every system on the small variant of the same family
(library imports, plugin loading). Reported: medians, all raw samples, ratios peer/Forge (> 1: Forge is faster).

Two comparisons, as in the issue:
* *to artifact* (no device compile on either side): Forge = torch.export + Forge's own work;
  OpenVINO = torch.export + `convert_model`; ONNX Runtime = `torch.onnx.export`.
* *to runnable* (with the device compile): + Forge's OpenVINO compile / `compile_model` /
  serialization + `InferenceSession`; torch.compile = its first call.
"""

from __future__ import annotations

import cProfile
import gc
import pstats
from pathlib import Path
from typing import Any

import torch

from bench import common, peers
from bench.worker import Worker

REPEATS = {"forge": 5, "openvino": 3, "onnxruntime": 3, "torch.compile": 1}
QUICK_REPEATS = {"forge": 1, "openvino": 1, "onnxruntime": 1, "torch.compile": 1}
TARGETS = {"artifact_vs_openvino": 5.0, "artifact_vs_onnxruntime": 8.0,
           "runnable_vs_openvino": 3.5, "runnable_vs_onnxruntime": 5.0, "own_over_export": 0.10}

FORGE_OWN_STAGES = ("import", "passes", "lowering", "emit", "other")
"""Forge's own work, split as `forge.compile` reports it; `other` is the rest of the wall time
(the importer's decompositions, the GC freeze, the report), measured as
wall time minus the named stages, not assumed; the cProfile splits it further."""

# What the profile attributes Forge's compile to: (label, file suffix, function name), cumulative.
PROFILE_STAGES = (
    ("torch.export", "torch/export/__init__.py", "export"),
    ("import (fx_importer)", "forge/frontend/fx_importer.py", "import_program"),
    ("  decompositions", "forge/frontend/fx_importer.py", "_decompose_unsupported"),
    ("gc.collect (before passes)", "~", "<built-in method gc.collect>"),
    ("passes + lowering (run_passes)", "forge/compiler.py", "run_passes"),
    ("emit (incl. device compile)", "backends/nnfactory/emitter.py", "emit"),
    ("  OpenVINO compile_model", "~", "<built-in method openvino._pyopenvino.compile_model>"),
    ("report (plan metrics)", "forge/compiler.py", "_report"),
)


def run(quick: bool = False) -> dict[str, Any]:
    repeats = QUICK_REPEATS if quick else REPEATS
    config = {"repeats": repeats, "seq_len": common.seq_len(quick), "small_models": quick,
              "models": [m.label for m in common.models(quick)], "warm_up": not quick,
              "process_per_system": True}
    with common.recorded("compile_time", quick, config) as result:
        workers = {system: Worker(system) for system in peers.COMPILERS}
        try:
            if not quick:
                _warm_up(workers)
            result["models"] = {spec.label: _measure(spec, quick, repeats, workers) for spec in common.models(quick)}
        finally:
            for worker in workers.values():
                worker.close()
    return result


def _warm_up(workers: dict[str, Worker]) -> None:
    """One untimed build of every system on the small model of each family."""
    for spec in common.MODELS:
        for worker in workers.values():
            worker.request("load", model=spec.name, attn=spec.attn, quick=True)
            worker.request("build")


def _measure(
    spec: common.ModelSpec, quick: bool, repeats: dict[str, int], workers: dict[str, Worker]
) -> dict[str, Any]:
    for worker in workers.values():
        info = worker.request("load", model=spec.name, attn=spec.attn, quick=quick)
    samples: dict[str, list[dict[str, Any]]] = {s: [] for s in peers.COMPILERS}
    for rep in range(max(repeats.values())):
        for system in peers.COMPILERS:
            if rep < repeats[system]:
                samples[system].append(workers[system].request("build", sanity=rep == 0))
    return {
        "layers": info["layers"],
        "parameters": info["parameters"],
        "samples": samples,
        "medians": _medians(samples),
        "sanity_max_abs": {s: runs[0]["sanity_max_abs"] for s, runs in samples.items()},
        "profile": workers["forge"].request("profile"),
    }


def _medians(samples: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system, runs in samples.items():
        med: dict[str, Any] = {"stages": {k: common.median([r["stages"][k] for r in runs]) for k in runs[0]["stages"]},
                               "to_runnable_ms": common.median([r["to_runnable_ms"] for r in runs])}
        if runs[0]["to_artifact_ms"] is not None:
            med["to_artifact_ms"] = common.median([r["to_artifact_ms"] for r in runs])
        if "own_ms" in runs[0]:
            med["own_ms"] = common.median([r["own_ms"] for r in runs])
        out[system] = med
    return out


# --- derived figures -------------------------------------------------------------------------------


def ratios(model_result: dict[str, Any]) -> dict[str, float]:
    """Peer median / Forge median (> 1: Forge is faster), and Forge's own work / torch.export."""
    m = model_result["medians"]
    forge = m["forge"]
    export = forge["stages"]["export"]
    out = {
        "artifact_vs_openvino": m["openvino"]["to_artifact_ms"] / forge["to_artifact_ms"],
        "artifact_vs_onnxruntime": m["onnxruntime"]["to_artifact_ms"] / forge["to_artifact_ms"],
        "runnable_vs_openvino": m["openvino"]["to_runnable_ms"] / forge["to_runnable_ms"],
        "runnable_vs_onnxruntime": m["onnxruntime"]["to_runnable_ms"] / forge["to_runnable_ms"],
        "runnable_vs_torch.compile": m["torch.compile"]["to_runnable_ms"] / forge["to_runnable_ms"],
        "own_over_export": forge["own_ms"] / export,
        "own_vs_convert_model": m["openvino"]["stages"]["convert_model"] / forge["own_ms"],
    }
    return out


def export_ceiling(model_result: dict[str, Any], peer: str, *, runnable: bool = False) -> dict[str, float]:
    """What the shared torch.export allows: the ratio if Forge's own work took 0 ms, and the
    largest own-work time (ms) that still meets the target."""
    m = model_result["medians"]
    forge = m["forge"]
    export = forge["stages"]["export"]
    device = forge["stages"]["device_compile"] if runnable else 0.0
    peer_ms = m[peer]["to_runnable_ms" if runnable else "to_artifact_ms"]
    target = TARGETS[f"{'runnable' if runnable else 'artifact'}_vs_{peer}"]
    return {"ceiling": peer_ms / (export + device), "own_budget_ms": peer_ms / target - export - device}


def dominant_own_stage(model_result: dict[str, Any]) -> tuple[str, float]:
    stages = model_result["medians"]["forge"]["stages"]
    name = max(FORGE_OWN_STAGES, key=lambda s: stages[s])
    return name, stages[name]


def _why(model_result: dict[str, Any], peer: str, *, runnable: bool) -> str:
    m = model_result["medians"]["forge"]
    cap = export_ceiling(model_result, peer, runnable=runnable)
    stage, stage_ms = dominant_own_stage(model_result)
    text = (f"torch.export ({common.ms(m['stages']['export'])} ms) is shared and caps the ratio at "
            f"{cap['ceiling']:.2f}x even if Forge took 0 ms")
    if runnable:
        text += f" (with Forge's device compile, {common.ms(m['stages']['device_compile'])} ms)"
    if cap["own_budget_ms"] > 0:
        top_name, top_ms = own_work_profile(model_result)[0]
        text += (f"; meeting it needs Forge's own work <= {common.ms(cap['own_budget_ms'])} ms "
                 f"(now {common.ms(m['own_ms'])} ms, largest timed stage: {stage} {common.ms(stage_ms)} ms; "
                 f"cProfile's largest own-work part: {top_name} {common.ms(top_ms)} ms)")
    else:
        peer_ms = model_result["medians"][peer]["to_runnable_ms" if runnable else "to_artifact_ms"]
        target = TARGETS[f"{'runnable' if runnable else 'artifact'}_vs_{peer}"]
        text += (f"; unreachable while the export is shared: {peer}'s {common.ms(peer_ms)} ms / {target:g} = "
                 f"{common.ms(peer_ms / target)} ms is less than torch.export alone (Forge's own work now "
                 f"{common.ms(m['own_ms'])} ms, largest: {stage} {common.ms(stage_ms)} ms)")
    return text


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, mr in result["models"].items():
        r = ratios(mr)
        for peer, key in (("openvino", "artifact_vs_openvino"), ("onnxruntime", "artifact_vs_onnxruntime")):
            rows.append(common.target_row(f"{label}: compile to artifact, speed-up vs {peer}", r[key], TARGETS[key],
                                          higher_is_better=True, unit="x", why=_why(mr, peer, runnable=False)))
        for peer, key in (("openvino", "runnable_vs_openvino"), ("onnxruntime", "runnable_vs_onnxruntime")):
            rows.append(common.target_row(f"{label}: time to runnable, speed-up vs {peer}", r[key], TARGETS[key],
                                          higher_is_better=True, unit="x", why=_why(mr, peer, runnable=True)))
        stage, stage_ms = dominant_own_stage(mr)
        own = mr["medians"]["forge"]["own_ms"]
        rows.append(common.target_row(
            f"{label}: Forge's own work / torch.export", r["own_over_export"], TARGETS["own_over_export"],
            higher_is_better=False, why=(f"own work {common.ms(own)} ms vs export "
                                         f"{common.ms(mr['medians']['forge']['stages']['export'])} ms; largest stage "
                                         f"{stage} {common.ms(stage_ms)} ms ({stage_ms / own:.0%}); "
                                         f"{_profile_hint(mr)}")))
    return rows


def own_work_profile(model_result: dict[str, Any]) -> list[tuple[str, float]]:
    """Forge's own work as the profile splits it (ms under the profiler), largest first."""
    rows = {r["stage"]: r["ms"] for r in model_result["profile"]["stages"]}
    parts = {
        "gc.collect": rows["gc.collect (before passes)"],
        "import": rows["import (fx_importer)"],
        "passes + lowering": rows["passes + lowering (run_passes)"],
        "emit without device compile": rows["emit (incl. device compile)"] - rows["  OpenVINO compile_model"],
        "report": rows["report (plan metrics)"],
    }
    return sorted(parts.items(), key=lambda kv: kv[1], reverse=True)


def _profile_hint(model_result: dict[str, Any]) -> str:
    parts = own_work_profile(model_result)
    return "cProfile of one compile, own work: " + ", ".join(f"{name} {common.ms(ms)} ms" for name, ms in parts)


# --- the profile -----------------------------------------------------------------------------------


def profile_forge(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], *, top: int = 12) -> dict[str, Any]:
    """cProfile one `forge.compile`: cumulative time of each stage, and the top functions by own time.

    Profiled times are inflated by the profiler; the shares are what to read.
    """
    import forge

    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    forge.compile(model, inputs)
    profiler.disable()
    stats = pstats.Stats(profiler)
    entries = stats.stats
    total = max(ct for (_, _, _, ct, _) in entries.values())
    stages = []
    for label, suffix, func in PROFILE_STAGES:
        ct = sum(v[3] for (file, _, name), v in entries.items() if name == func and file.endswith(suffix))
        stages.append({"stage": label, "ms": ct * 1e3, "share_of_compile": ct / total})
    by_own = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    functions = [{"function": _func_name(key), "calls": v[1], "own_ms": v[2] * 1e3, "cumulative_ms": v[3] * 1e3}
                 for key, v in by_own]
    return {"total_ms": total * 1e3, "stages": stages, "top_functions": functions}


def _func_name(key: tuple[str, int, str]) -> str:
    file, line, name = key
    if file == "~":
        return name
    for marker in ("site-packages/", "/work/main/", "lib/python3.11/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{file}:{line}({name})"


# --- rendering -------------------------------------------------------------------------------------


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Compile time\n",
           f"nn.Module to something that runs, per system: medians of {_repeats_text(cfg['repeats'])} builds, "
           "round-robin, each from a fresh state"
           + (", after one untimed warm-up build of every system" if cfg["warm_up"] else "")
           + f"; batch 1, sequence {cfg['seq_len']}. Ratios are peer / Forge (> 1: Forge is faster). "
             "*to artifact* leaves out the device compile on every side; *to runnable* includes it "
             "(torch.compile: its first call).\n"]
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        out.append(f"### {label} ({mr['layers']} layers, {mr['parameters'] / 1e6:.0f}M parameters)\n")
        out.append(_system_table(mr))
        out.append(_forge_table(mr))
        out.append(_profile_table(label, mr))
    return "\n".join(out)


def _repeats_text(repeats: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in repeats.items())


def _system_table(mr: dict[str, Any]) -> str:
    m, r = mr["medians"], ratios(mr)
    rows = []
    for system in peers.COMPILERS:
        med = m[system]
        st = med["stages"]
        export = st.get("export")
        work = {"forge": med.get("own_ms"), "openvino": st.get("convert_model"),
                "onnxruntime": st.get("onnx_export"), "torch.compile": None}[system]
        device = st.get("device_compile", st.get("session"))
        art = med.get("to_artifact_ms")
        rows.append([
            f"**{system}**" if system == "forge" else system,
            common.ms(export), common.ms(work), common.ms(device), common.ms(art), common.ms(med["to_runnable_ms"]),
            "1.00x" if system == "forge" else common.ratio(r.get(f"artifact_vs_{system}")),
            "1.00x" if system == "forge" else common.ratio(r.get(f"runnable_vs_{system}")),
            len(mr["samples"][system]), common.sci(mr["sanity_max_abs"][system]),
        ])
    head = ["system", "torch.export ms", "own work ms", "device compile ms", "to artifact ms", "to runnable ms",
            "artifact ratio", "runnable ratio", "runs", "max abs vs eager"]
    note = ("\n*own work*: Forge after torch.export; OpenVINO `convert_model`; ONNX Runtime the whole "
            "`torch.onnx.export` (its torch.export is inside). Device compile: Forge's segment compiles, "
            "OpenVINO `compile_model`, ONNX Runtime serialization + `InferenceSession`. "
            f"Forge's own work / torch.export = **{r['own_over_export']:.0%}**; OpenVINO `convert_model` / Forge's "
            f"own work = {r['own_vs_convert_model']:.1f}x.\n")
    return common.table(head, rows) + note


def _forge_table(mr: dict[str, Any]) -> str:
    st = mr["medians"]["forge"]["stages"]
    own = mr["medians"]["forge"]["own_ms"]
    rows = [[name, common.ms(st[name]), f"{st[name] / own:.0%}" if name in FORGE_OWN_STAGES else ""]
            for name in ("export", *FORGE_OWN_STAGES, "device_compile")]
    return ("\nForge's stages (medians; `other` = wall time outside the stages `forge.compile` times: the "
            "importer's decompositions, the GC freeze, the report):\n\n") + \
        common.table(["stage", "ms", "share of own work"], rows)


def _profile_table(label: str, mr: dict[str, Any]) -> str:
    p = mr["profile"]
    rows = [[r["stage"].replace("  ", "&nbsp;&nbsp;"), common.ms(r["ms"]), f"{r['share_of_compile']:.0%}"]
            for r in p["stages"]]
    text = (f"\ncProfile of one `forge.compile` ({label}, {common.ms(p['total_ms'])} ms under the profiler; "
            "read the shares):\n\n" + common.table(["stage (cumulative)", "ms", "share"], rows))
    fn_rows = [[f"`{f['function']}`", f["calls"], common.ms(f["own_ms"]), common.ms(f["cumulative_ms"])]
               for f in p["top_functions"]]
    return text + "\nTop functions by own time:\n\n" + common.table(
        ["function", "calls", "own ms", "cumulative ms"], fn_rows)


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, len(labels), figsize=(6.2 * len(labels), 3.6), squeeze=False)
    parts = (("torch.export", "#9467bd"), ("compiler work", "#d62728"), ("device compile", "#1f77b4"),
             ("first call (all)", "#ff7f0e"))
    for ax, label in zip(axes[0], labels, strict=True):
        m = result["models"][label]["medians"]
        systems = list(peers.COMPILERS)
        for i, system in enumerate(systems):
            st = m[system]["stages"]
            if system == "forge":
                segs = [st["export"], m[system]["own_ms"], st["device_compile"], 0]
            elif system == "openvino":
                segs = [st["export"], st["convert_model"], st["device_compile"], 0]
            elif system == "onnxruntime":
                segs = [0, st["onnx_export"], st["session"], 0]
            else:
                segs = [0, 0, 0, st["first_call"]]
            left = 0.0
            for (name, color), width in zip(parts, segs, strict=True):
                ax.barh(i, width / 1e3, left=left, color=color,
                        label=name if i == 0 or system == "torch.compile" else None)
                left += width / 1e3
            ax.text(left, i, f" {m[system]['to_runnable_ms'] / 1e3:.1f} s", va="center", fontsize=8)  # as in the table
        ax.set_yticks(range(len(systems)), systems)
        ax.invert_yaxis()
        ax.set_xlabel("seconds (median)")
        ax.set_title(f"{label}: nn.Module to runnable")
        ax.margins(x=0.18)
    fig.tight_layout()
    handles, names = axes[0][0].get_legend_handles_labels()
    unique = dict(zip(names, handles, strict=True))
    fig.legend(unique.values(), unique.keys(), loc="upper center", ncol=4, fontsize=8, bbox_to_anchor=(0.5, 0.0))
    return common.save_figure(fig, figures, "compile_time", "compile time by system") + \
        ("\n*Bars stack the stages' medians; the label is the median time to runnable. ONNX Runtime's bar puts "
         "all of `torch.onnx.export` (its torch.export included) under compiler work.*\n")
