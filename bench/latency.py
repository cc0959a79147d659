"""Latency (issue 7 item 2) and the Compilation Efficiency Index (item 5's CEI).

Every system is built once per model (fresh state, see `bench.peers`), warmed up with `WARMUP`
calls, then timed for `RUNS` calls of batch 1, sequence 128 on the one shared token batch. The
calls are interleaved (call i of every system, in a seeded random order per round, before call i + 1),
so a busy moment on the machine, or the previous call's spinning thread pool, lands on every system
alike. Each call returns the logits as a new tensor.

CEI (Compilation Efficiency Index) = latency speed-up over a peer / Forge's compile seconds
(time to runnable: torch.export + Forge + device compile, measured here). For comparison, every
compiler's own index against eager is given too: (eager median / its median) / its compile seconds.

One process's Forge/OpenVINO ratio is one draw: the same graph compiled twice in one process ran 3-6% apart
(ResNet-50, session 8; per process Forge/OpenVINO 0.98-1.07). `python -m bench.latency --processes N MODEL`
(not part of the section) times `PAIR_SYSTEMS` in N fresh processes one after another (`--pair MODEL`: one
such process, JSON out) and prints each process's paired median ratios and their median over processes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import random
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from bench import common, peers

WARMUP, RUNS = 10, 100
QUICK_WARMUP, QUICK_RUNS = 2, 5
EXTRA_MODELS: tuple[common.ModelSpec, ...] = (common.ModelSpec("bert", "sdpa"), common.ModelSpec("resnet", "none"))
"""Issue 15's f32 models besides `common.MODELS`: BERT and one convolutional zoo model (full runs only)."""
EXTRA_RUNS = 40
"""Timed calls per system for `EXTRA_MODELS` (keeps the section inside the `make bench` budget)."""
PROFILE_CALLS = 10
ORDER_SEED = 0
PAIR_SYSTEMS: tuple[str, ...] = ("forge", "openvino", "onnxruntime")
"""The systems of a `--pair` process (the issue-15 f32 targets)."""
TARGETS = {"median_vs_fastest_peer": 1.0, "median_vs_openvino": 1.0, "median_vs_onnxruntime": 1.0,
           "p99_over_p50": 1.20}


def run(quick: bool = False) -> dict[str, Any]:
    warmup, runs = (QUICK_WARMUP, QUICK_RUNS) if quick else (WARMUP, RUNS)
    specs = [(m, runs) for m in common.models(quick)] + ([] if quick else [(m, EXTRA_RUNS) for m in EXTRA_MODELS])
    config = {"warmup": warmup, "runs": runs, "seq_len": common.seq_len(quick), "small_models": quick,
              "models": [m.label for m, _ in specs], "runs_per_model": {m.label: n for m, n in specs},
              "systems": list(peers.SYSTEMS), "threads": dict(peers.THREADS),
              "openvino_properties": dict(peers.OV_CPU_PROPERTIES),
              "onnxruntime_config": dict(peers.ORT_SESSION_CONFIG)}
    with common.recorded("latency", quick, config) as result:
        result["models"] = {spec.label: _measure(spec, quick, warmup, n) for spec, n in specs}
    return result


def _measure(spec: common.ModelSpec, quick: bool, warmup: int, runs: int) -> dict[str, Any]:
    model, inputs = common.model_and_inputs(spec, quick)
    x = inputs[0]
    built = {system: peers.build(system, model, inputs) for system in peers.SYSTEMS}
    for system in peers.SYSTEMS:
        for _ in range(warmup):
            built[system].run(x)
    gc.collect()
    samples: dict[str, list[float]] = {s: [] for s in peers.SYSTEMS}
    for system_order in call_orders(runs):
        for system in system_order:
            start = time.perf_counter()
            built[system].run(x)
            samples[system].append((time.perf_counter() - start) * 1e3)
    forge = built["forge"]
    result = {
        "layers": getattr(model.config, "num_hidden_layers", None),  # None: a convolutional model
        "samples": samples,
        "summary": {s: _summary(v) for s, v in samples.items()},
        "compile_ms": {s: b.to_runnable_ms for s, b in built.items()},
        "forge_own_ms": forge.extra["own_ms"],
        "forge_segments": forge.extra["report"]["segments"],
        "executor_profile": profile_executor(forge.run, x),
    }
    del built
    return result


def call_orders(runs: int, systems: tuple[str, ...] = peers.SYSTEMS, seed: int = ORDER_SEED) -> list[list[str]]:
    """One seeded random order of `systems` per round. Not a rotation: a rotation keeps every system's
    predecessor fixed (Forge always ran right after eager), and a predecessor's spinning thread pool
    (torch's OpenMP, ONNX Runtime's intra-op threads) slows the call that follows it on 2 cores."""
    rng = random.Random(seed)
    orders = []
    for _ in range(runs):
        order = list(systems)
        rng.shuffle(order)
        orders.append(order)
    return orders


def _summary(samples: list[float]) -> dict[str, float]:
    s = common.summary(samples)
    s["p99_over_p50"] = s["p99"] / s["p50"]
    return s


def profile_executor(compiled: Any, x: torch.Tensor, calls: int = PROFILE_CALLS) -> dict[str, Any]:
    """Where a Forge call spends its time: OpenVINO segments, CPU ops, transfers, output copy.

    cProfile over `calls` calls, grouped by the executor's instruction kinds (profiled times are
    inflated; read the shares). "output copy" is the copy-out of outputs left in their buffers
    (`host_clone`); "direct outputs" the allocation and binding of the outputs the segments write in
    place (`CompiledNPUExecutor._bind_direct`).
    """
    from backends.nnfactory import executor as ex

    kinds = {_code_key(ex.RunSegment.__call__): "OpenVINO segments", _code_key(ex.RunCpu.__call__): "CPU ops",
             _code_key(ex.Transfer.__call__): "transfers", _code_key(ex.host_clone): "output copy",
             _code_key(ex.CompiledNPUExecutor._bind_direct): "direct outputs"}
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        compiled(x)
    profiler.disable()
    entries = pstats.Stats(profiler).stats
    total = sum(v[3] for (file, _, name), v in entries.items() if name == "run" and file == ex.__file__)
    shares = {label: 0.0 for label in kinds.values()}
    for key, v in entries.items():
        if key in kinds:
            shares[kinds[key]] += v[3]
    shares["other (dispatch, binding)"] = max(total - sum(shares.values()), 0.0)
    return {"calls": calls, "run_ms": total * 1e3 / calls,
            "parts": {k: {"ms": v * 1e3 / calls, "share": v / total if total else 0.0} for k, v in shares.items()}}


def _code_key(fn: Any) -> tuple[str, int, str]:
    code = fn.__code__
    return (code.co_filename, code.co_firstlineno, code.co_name)


# --- derived figures -------------------------------------------------------------------------------


def fastest_peer(model_result: dict[str, Any]) -> str:
    return min(peers.PEERS, key=lambda s: model_result["summary"][s]["median"])


def cei(model_result: dict[str, Any]) -> dict[str, Any]:
    summ, compile_ms = model_result["summary"], model_result["compile_ms"]
    forge_s = compile_ms["forge"] / 1e3
    forge_median = summ["forge"]["median"]
    vs_peer = {}
    for peer in peers.PEERS:
        speedup = summ[peer]["median"] / forge_median
        vs_peer[peer] = {"speedup": speedup, "cei": speedup / forge_s}
    vs_eager = {}
    for system in peers.COMPILERS:
        speedup = summ["eager"]["median"] / summ[system]["median"]
        vs_eager[system] = {"speedup": speedup, "compile_s": compile_ms[system] / 1e3,
                            "cei": speedup / (compile_ms[system] / 1e3)}
    return {"forge_compile_s": forge_s, "vs_peer": vs_peer, "vs_eager": vs_eager}


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, mr in result["models"].items():
        summ = mr["summary"]
        peer = fastest_peer(mr)
        value = summ["forge"]["median"] / summ[peer]["median"]
        rows.append(common.target_row(
            f"{label}: latency median, Forge / fastest peer ({peer})", value, TARGETS["median_vs_fastest_peer"],
            higher_is_better=False, unit="x", why=_why_slow(mr, peer)))
        for named in ("openvino", "onnxruntime"):
            rows.append(common.target_row(
                f"{label}: latency median, Forge / {named} (f32)", summ["forge"]["median"] / summ[named]["median"],
                TARGETS[f"median_vs_{named}"], higher_is_better=False, unit="x", why=_why_slow(mr, named)))
        rows.append(common.target_row(
            f"{label}: Forge latency P99/P50", summ["forge"]["p99_over_p50"], TARGETS["p99_over_p50"],
            higher_is_better=False,
            why=(f"P50 {summ['forge']['p50']:.1f} ms, P99 {summ['forge']['p99']:.1f} ms; the peers' P99/P50 on the "
                 "same interleaved runs: " + ", ".join(f"{p} {summ[p]['p99_over_p50']:.2f}" for p in peers.PEERS)
                 + " (a tail shared by every system is the machine, not Forge)")))
    return rows


def _why_slow(mr: dict[str, Any], peer: str) -> str:
    summ, prof = mr["summary"], mr["executor_profile"]
    parts = sorted(prof["parts"].items(), key=lambda kv: kv[1]["share"], reverse=True)
    split = ", ".join(f"{name} {p['share']:.0%}" for name, p in parts if p["share"] >= 0.01)
    return (f"Forge {summ['forge']['median']:.1f} ms vs {peer} {summ[peer]['median']:.1f} ms; a Forge call "
            f"(cProfile, {mr['forge_segments']} OpenVINO segment(s)): {split}")


# --- rendering -------------------------------------------------------------------------------------


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Latency\n",
           f"Batch 1, sequence {cfg['seq_len']}, CPU, fp32; {cfg['warmup']} warm-up calls, then {cfg['runs']} timed "
           "calls per system (per model: `runs` column), interleaved. Ratio = system median / Forge median (> 1: "
           "Forge is faster).\n"]
    if "threads" in cfg:
        out.append("Threads, set explicitly: " + ", ".join(f"{k} {v}" for k, v in cfg["threads"].items())
                   + f"; OpenVINO (the peer and Forge's segments): `{cfg['openvino_properties']}`"
                   + (f"; ONNX Runtime: `{cfg['onnxruntime_config']}`" if "onnxruntime_config" in cfg else "")
                   + ".\n")
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        summ = mr["summary"]
        rows = [[f"**{s}**" if s == "forge" else s, f"{summ[s]['median']:.2f}", f"{summ[s]['p50']:.2f}",
                 f"{summ[s]['p99']:.2f}", f"{summ[s]['p99_over_p50']:.2f}",
                 f"{summ[s]['median'] / summ['forge']['median']:.2f}x", summ[s]["n"]] for s in peers.SYSTEMS]
        out.append(f"### {label} ({mr['layers']} layers)\n" if mr["layers"] else f"### {label}\n")
        out.append(common.table(["system", "median ms", "P50 ms", "P99 ms", "P99/P50", "ratio", "runs"], rows))
        prof = mr["executor_profile"]
        parts = ", ".join(f"{name} {p['share']:.0%}" for name, p in prof["parts"].items())
        out.append(f"\nInside a Forge call ({mr['forge_segments']} OpenVINO segment(s); cProfile over "
                   f"{prof['calls']} calls): {parts}.\n")
        out.append(_cei_table(mr))
    return "\n".join(out)


def _cei_table(mr: dict[str, Any]) -> str:
    c = cei(mr)
    rows = [[peer, f"{v['speedup']:.2f}x", f"{v['cei']:.3f}"] for peer, v in c["vs_peer"].items()]
    text = (f"\n**Compilation Efficiency Index** (latency speed-up over the peer / Forge's compile seconds, "
            f"{c['forge_compile_s']:.2f} s to runnable):\n\n"
            + common.table(["peer", "Forge speed-up", "CEI (1/s)"], rows))
    rows = [[s, f"{v['speedup']:.2f}x", f"{v['compile_s']:.2f}", f"{v['cei']:.3f}"] for s, v in c["vs_eager"].items()]
    return text + ("\nEvery compiler's own index against eager (speed-up over eager / its compile seconds):\n\n"
                   + common.table(["system", "speed-up over eager", "compile s", "CEI vs eager (1/s)"], rows))


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, len(labels), figsize=(5.6 * len(labels), 3.6), squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        summ = result["models"][label]["summary"]
        samples = result["models"][label]["samples"]
        systems = list(peers.SYSTEMS)
        medians = [summ[s]["median"] for s in systems]
        ax.bar(range(len(systems)), medians, color=[common.SYSTEM_COLORS[s] for s in systems], alpha=0.85)
        for i, s in enumerate(systems):
            ax.scatter([i] * len(samples[s]), samples[s], s=4, color="black", alpha=0.25, zorder=3)
            ax.plot([i - 0.3, i + 0.3], [summ[s]["p99"]] * 2, color="black", lw=1.2, zorder=4)
            ax.text(i, medians[i], f"{medians[i]:.1f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(systems)), systems, rotation=20)
        ax.set_yscale("log")
        ax.set_ylabel("ms per call (log scale)")
        ax.set_title(f"{label}: latency (bar = median, line = P99, dots = runs)", fontsize=9)
    fig.tight_layout()
    return common.save_figure(fig, figures, "latency", "latency by system")


# --- across fresh processes (opt-in, `--processes`) ------------------------------------------------------


def pair_process(name: str, attn: str, quick: bool, runs: int) -> dict[str, Any]:
    """One process: `PAIR_SYSTEMS` built and timed interleaved (random order per round); each system's median
    (ms) and Forge's paired median ratio to each peer (median over rounds of forge / peer in that round)."""
    spec = common.ModelSpec(name, attn)
    model, inputs = common.model_and_inputs(spec, quick)
    x = inputs[0]
    built = {system: peers.build(system, model, inputs) for system in PAIR_SYSTEMS}
    for system in PAIR_SYSTEMS:
        for _ in range(QUICK_WARMUP if quick else WARMUP):
            built[system].run(x)
    gc.collect()
    samples: dict[str, list[float]] = {s: [] for s in PAIR_SYSTEMS}
    for order in call_orders(runs, PAIR_SYSTEMS, seed=random.SystemRandom().randrange(1 << 30)):
        for system in order:
            start = time.perf_counter()
            built[system].run(x)
            samples[system].append((time.perf_counter() - start) * 1e3)
    paired = {peer: statistics.median(f / p for f, p in zip(samples["forge"], samples[peer], strict=True))
              for peer in PAIR_SYSTEMS[1:]}
    return {"median_ms": {s: statistics.median(v) for s, v in samples.items()}, "paired": paired,
            "load": os.getloadavg()[0]}


def across_processes(name: str, attn: str, processes: int, quick: bool, runs: int) -> list[dict[str, Any]]:
    """`pair_process` in `processes` fresh interpreters, one after another."""
    args = ["--pair", name, "--attn", attn, "--runs", str(runs), *(["--quick"] if quick else [])]
    return common.fresh_runs("latency", args, processes)


def main() -> None:
    parser = argparse.ArgumentParser(description="Forge vs OpenVINO f32 and ONNX Runtime across fresh processes")
    parser.add_argument("model", nargs="?", help="zoo family (with --processes)")
    parser.add_argument("--pair", metavar="MODEL", help="one process: time PAIR_SYSTEMS, print JSON")
    parser.add_argument("--processes", type=int, default=5)
    parser.add_argument("--attn", default=None, help="attention variant (default: the latency section's for MODEL)")
    parser.add_argument("--runs", type=int, default=EXTRA_RUNS)
    parser.add_argument("--quick", action="store_true")
    a = parser.parse_args()
    name = a.pair or a.model
    if not name:
        parser.error("give MODEL (with --processes) or --pair MODEL")
    known = {m.name: m.attn for m in (*common.MODELS, *EXTRA_MODELS)}
    attn = a.attn or known.get(name, "eager")
    if a.pair:
        print(json.dumps(pair_process(name, attn, a.quick, a.runs)))
        return
    rows = across_processes(name, attn, a.processes, a.quick, a.runs)
    for i, r in enumerate(rows, 1):
        ms = ", ".join(f"{s} {v:.2f}" for s, v in r["median_ms"].items())
        print(f"process {i} (load {r['load']:.2f}): {ms} ms; paired " +
              ", ".join(f"forge/{p} {v:.3f}" for p, v in r["paired"].items()))
    for peer in PAIR_SYSTEMS[1:]:
        values = [r["paired"][peer] for r in rows]
        print(f"forge/{peer}: median over {len(values)} processes {statistics.median(values):.3f} "
              f"(min {min(values):.3f}, max {max(values):.3f})")


if __name__ == "__main__":
    main()
