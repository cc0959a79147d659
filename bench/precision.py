"""Precision modes (issue 15 items 2-3): latency and accuracy of Forge at f32 / bf16 / f16 and with
weight-only int8 / int4 weights, next to OpenVINO's own PyTorch path pinned to f32 and at its default
precision (bf16 on AMX/AVX512-BF16 CPUs).

Latency: each system is built once per model at batch 1, sequence 128 (`--quick`: the small model,
16 tokens), warmed up, then timed in interleaved rounds (call i of every system, in a seeded random
order per round, `bench.latency.call_orders`, before call i + 1), so a busy moment on the shared machine
lands on every system alike. OpenVINO's models are reshaped to the inputs' static shapes, as the latency
peer and Forge's graphs are, and each of its calls copies the logits out once (`infer`), as Forge returns
a new tensor.
Every system runs with the same explicit thread/stream settings
(`backends.nnfactory.runtime.openvino_settings.peer_properties`: `INFERENCE_NUM_THREADS` = this process's
cores, `NUM_STREAMS` 1, `PERFORMANCE_HINT` LATENCY, no core pinning).

Accuracy: every mode is compiled again at sequence `ACCURACY_SEQ_LEN` (32, to keep 100 sequences
affordable) and compared with eager f32 on `SEQUENCES` seeded token sequences (seeds 0..99, uniform
over the vocabulary; `forge.driver.accuracy.evaluate_accuracy`): max |logit diff|, mean KL(eager || mode)
and top-1 agreement over all positions. The eager logits are computed once per model. Eager PyTorch under
`torch.autocast` bf16 is measured on the same sequences as a third bf16 reference (accuracy only).

Fresh processes: the latency ratio of two systems built in one process varies from process to process
by more than the bf16 gap under test (GPT-2 bf16 / OpenVINO default: 0.94-1.19x over five processes,
session 7), so the bf16 and f32 verdicts are judged on `PROCESSES` fresh processes
(`python -m bench.precision --pair MODEL`, one after another): each builds Forge and OpenVINO at bf16
/ default and at f32 (`PAIRS`), times them interleaved as above, and reports its medians; the target
is the median of the per-process ratios, with their range.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from bench import common, latency, peers

WARMUP, RUNS = 5, 30
QUICK_WARMUP, QUICK_RUNS = 1, 3
SEQUENCES, QUICK_SEQUENCES = 100, 3
ACCURACY_SEQ_LEN = 32
FORGE_MODES: tuple[tuple[str, str, str | None], ...] = (
    ("forge f32", "f32", None),
    ("forge bf16", "bf16", None),
    ("forge f16", "f16", None),
    ("forge int8w", "f32", "int8"),
    ("forge bf16+int8w", "bf16", "int8"),
    ("forge int4w", "f32", "int4"),
)
QUICK_FORGE_MODES = FORGE_MODES[:2] + FORGE_MODES[3:4]
OPENVINO_MODES: tuple[tuple[str, str | None], ...] = (("openvino f32", "f32"), ("openvino default", None))
TARGETS = {"bf16_vs_openvino_default": 1.0, "top1": 0.99, "kl_mean": 1e-3}
PROCESSES, QUICK_PROCESSES = 5, 1
PAIRS: tuple[tuple[str, str], ...] = (("forge bf16", "openvino default"), ("forge f32", "openvino f32"))
"""The (Forge, OpenVINO) systems every fresh process times against each other."""


def _modes(quick: bool) -> tuple[tuple[str, str, str | None], ...]:
    return QUICK_FORGE_MODES if quick else FORGE_MODES


def run(quick: bool = False) -> dict[str, Any]:
    from backends.nnfactory.runtime.openvino_settings import peer_properties

    warmup, runs = (QUICK_WARMUP, QUICK_RUNS) if quick else (WARMUP, RUNS)
    n = QUICK_SEQUENCES if quick else SEQUENCES
    systems = [m[0] for m in _modes(quick)] + [m[0] for m in OPENVINO_MODES]
    config = {"warmup": warmup, "runs": runs, "seq_len": common.seq_len(quick), "small_models": quick,
              "accuracy_sequences": n, "accuracy_seq_len": _acc_len(quick),
              "models": [m.label for m in common.models(quick)], "systems": systems,
              "thread_settings": peer_properties()}
    with common.recorded("precision", quick, config) as result:
        result["models"] = {spec.label: _measure(spec, quick, warmup, runs, n) for spec in common.models(quick)}
        for spec in common.models(quick):
            result["models"][spec.label]["processes"] = _fresh_processes(spec, quick)
    return result


def _acc_len(quick: bool) -> int:
    return common.QUICK_SEQ_LEN if quick else ACCURACY_SEQ_LEN


# --- systems ---------------------------------------------------------------------------------------


def _forge(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], precision: str, weights: str | None):
    import forge

    gc.collect()
    compiled = forge.compile(model, inputs, precision=precision, weights=weights)
    return compiled, compiled.report["runtime_config"]


def _openvino(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], precision: str | None):
    """OpenVINO's PyTorch path with the same thread settings; `precision` None: its default hint."""
    import openvino as ov

    from backends.nnfactory.runtime.openvino_settings import peer_properties

    gc.collect()
    core = ov.Core()
    props: dict[str, Any] = dict(peer_properties())
    if precision is not None:
        props["INFERENCE_PRECISION_HINT"] = precision
    with peers.quiet():
        ov_model = ov.convert_model(peers.export(model, inputs))
    ov_model.reshape(peers.static_shapes(inputs))  # static, as the latency peer and Forge's graphs
    compiled = core.compile_model(ov_model, "CPU", props)
    request = compiled.create_infer_request()

    def run(input_ids: torch.Tensor) -> torch.Tensor:  # infer copies the outputs out (a new array per call)
        return torch.from_numpy(request.infer({0: input_ids.numpy()})[0])

    effective = {k: str(compiled.get_property(k)) for k in (*props, "INFERENCE_PRECISION_HINT")}
    return run, {"runtime": "openvino (convert_model)", "effective": effective}


def _build(model, inputs, label: str, quick: bool) -> tuple[Callable, dict[str, Any]]:
    forge_mode = next((m for m in _modes(quick) if m[0] == label), None)
    if forge_mode is not None:
        return _forge(model, inputs, forge_mode[1], forge_mode[2])
    return _openvino(model, inputs, dict(OPENVINO_MODES)[label])


def _build_all(model, inputs, quick: bool) -> dict[str, tuple[Callable, dict[str, Any]]]:
    built: dict[str, tuple[Callable, dict[str, Any]]] = {}
    for label, precision, weights in _modes(quick):
        built[label] = _forge(model, inputs, precision, weights)
    for label, precision in OPENVINO_MODES:
        built[label] = _openvino(model, inputs, precision)
    return built


# --- measurement -----------------------------------------------------------------------------------


def _measure(spec: common.ModelSpec, quick: bool, warmup: int, runs: int, n: int) -> dict[str, Any]:
    model, inputs = common.model_and_inputs(spec, quick)
    built = _build_all(model, inputs, quick)
    latency, configs = _latency(built, inputs[0], warmup, runs)
    same_length = _acc_len(quick) == common.seq_len(quick)  # --quick: the latency builds serve accuracy too
    if not same_length:
        del built
        built = None
    accuracy = _accuracy(spec, model, quick, n, built)
    del built
    return {"layers": model.config.num_hidden_layers, "samples": latency,
            "summary": {s: common.summary(v) for s, v in latency.items()},
            "accuracy": accuracy, "runtime_config": configs}


def _latency(built: dict[str, tuple[Callable, dict[str, Any]]], x: torch.Tensor, warmup: int, runs: int):
    for run, _ in built.values():
        for _ in range(warmup):
            run(x)
    gc.collect()
    samples: dict[str, list[float]] = {s: [] for s in built}
    for order in latency.call_orders(runs, tuple(built)):
        for system in order:
            start = time.perf_counter()
            built[system][0](x)
            samples[system].append((time.perf_counter() - start) * 1e3)
    configs = {s: cfg for s, (_, cfg) in built.items()}
    return samples, configs


def _fresh_processes(spec: common.ModelSpec, quick: bool) -> list[dict[str, float]]:
    """Each `PAIRS` system's median latency in each of `PROCESSES` fresh processes, one after another."""
    args = ["--pair", spec.name, "--attn", spec.attn, *(["--quick"] if quick else [])]
    return common.fresh_runs("precision", args, QUICK_PROCESSES if quick else PROCESSES)


def _pair_medians(name: str, attn: str, quick: bool) -> dict[str, float]:
    """One fresh process: the `PAIRS` systems built and timed interleaved; their medians (ms)."""
    spec = common.ModelSpec(name, attn)
    model, inputs = common.model_and_inputs(spec, quick)
    labels = [system for pair in PAIRS for system in pair]
    built = {label: _build(model, inputs, label, quick) for label in labels}
    warmup, runs = (QUICK_WARMUP, QUICK_RUNS) if quick else (WARMUP, RUNS)
    samples, _ = _latency(built, inputs[0], warmup, runs)
    return {system: common.median(v) for system, v in samples.items()}


def process_ratios(processes: list[dict[str, float]], forge: str, peer: str) -> dict[str, float]:
    """Median, min and max over fresh processes of each process's `forge / peer` median ratio."""
    ratios = [p[forge] / p[peer] for p in processes]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "n": len(ratios)}


def _accuracy(spec: common.ModelSpec, model, quick: bool, n: int, built=None) -> dict[str, dict[str, Any]]:
    """Every mode at the accuracy length (`built` at that length, else built here) against eager
    logits computed once."""
    from forge.driver.accuracy import evaluate_accuracy, sequence_inputs
    from forge.models import example_inputs
    from forge.precision import bounds, within_bounds

    inputs = example_inputs(spec.name, seq_len=_acc_len(quick), small=quick, seed=common.INPUT_SEED)
    with torch.no_grad():
        eager = {s: model(*sequence_inputs(model, inputs, s)) for s in range(n)}
    cache = _Reference(model, inputs, eager)
    built = built if built is not None else _build_all(model, inputs, quick)
    out: dict[str, dict[str, Any]] = {}
    for label, (run, _) in built.items():
        acc = evaluate_accuracy(model, run, inputs, sequences=n, reference=cache)
        mode = next((m for m in _modes(quick) if m[0] == label), None)
        if mode is not None:
            b = bounds(mode[1], mode[2])
            acc["bounds"] = {"max_abs": b.max_abs, "kl_mean": b.kl_mean, "top1": b.top1}
            acc["within_bounds"] = within_bounds(acc, b)
        out[label] = acc
    out[AUTOCAST] = evaluate_accuracy(model, _autocast(model), inputs, sequences=n, reference=cache)
    return out


AUTOCAST = "torch.autocast bf16"
"""A third bf16 reference, accuracy only: eager PyTorch under `torch.autocast("cpu", torch.bfloat16)` (bf16
matmul inputs, f32 residual stream and norms): how far bf16 itself is from f32 on these models."""


def _autocast(model: torch.nn.Module) -> Callable[..., Any]:
    def run(*args: torch.Tensor) -> Any:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(*args)

    return run


class _Reference:
    """Eager logits of `sequence_inputs(seed)`, looked up by the input tensor (computed once)."""

    def __init__(self, model, inputs, eager: dict[int, torch.Tensor]):
        from forge.driver.accuracy import sequence_inputs

        self._by_key = {self._key(sequence_inputs(model, inputs, s)[0]): v for s, v in eager.items()}

    @staticmethod
    def _key(ids: torch.Tensor) -> bytes:
        return ids.numpy().tobytes()

    def __call__(self, ids: torch.Tensor) -> torch.Tensor:
        return self._by_key[self._key(ids)]


# --- targets and rendering -------------------------------------------------------------------------


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, mr in result["models"].items():
        acc = mr["accuracy"]
        ratio, why = _bf16_verdict(mr)
        rows.append(common.target_row(f"{label}: forge bf16 median / openvino default", ratio,
                                      TARGETS["bf16_vs_openvino_default"], higher_is_better=False, unit="x", why=why))
        bf, ov = acc["forge bf16"], acc["openvino default"]
        auto = acc.get(AUTOCAST)
        also = f", torch.autocast bf16 {auto['top1']:.2%} / {auto['kl_mean']:.1e}" if auto else ""
        why = (f"OpenVINO's own bf16 gets top-1 {ov['top1']:.2%} / KL {ov['kl_mean']:.1e} on the same sequences{also}: "
               "bf16 rounding flips near-tied top logits of the random-weight model, not Forge's graph")
        rows.append(common.target_row(f"{label}: forge bf16 top-1 agreement vs eager f32", bf["top1"],
                                      TARGETS["top1"], higher_is_better=True, why=why))
        rows.append(common.target_row(f"{label}: forge bf16 mean KL vs eager f32", bf["kl_mean"],
                                      TARGETS["kl_mean"], higher_is_better=False, why=why))
    return rows


def _bf16_verdict(mr: dict[str, Any]) -> tuple[float, str]:
    """The bf16 ratio the target is judged by (the median over fresh processes when measured) and why."""
    s = mr["summary"]
    one = s["forge bf16"]["median"] / s["openvino default"]["median"]
    f32 = s["forge f32"]["median"] / s["openvino f32"]["median"]
    if not mr.get("processes"):
        return one, (f"forge bf16 {s['forge bf16']['median']:.1f} ms vs openvino default "
                     f"{s['openvino default']['median']:.1f} ms in one process; forge f32 / openvino f32 {f32:.2f}x")
    bf = process_ratios(mr["processes"], *PAIRS[0])
    fp = process_ratios(mr["processes"], *PAIRS[1])
    return bf["median"], (f"median of {bf['n']} fresh processes' ratios (range {bf['min']:.2f}-{bf['max']:.2f}x; "
                          f"this section's own process {one:.2f}x); f32 in the same processes "
                          f"{fp['median']:.2f}x ({fp['min']:.2f}-{fp['max']:.2f}x)")


def _processes_table(mr: dict[str, Any]) -> str:
    rows = [[i + 1, *(common.ms(p[x]) for pair in PAIRS for x in pair),
             *(common.ratio(p[f] / p[o]) for f, o in PAIRS)] for i, p in enumerate(mr["processes"])]
    stats = [process_ratios(mr["processes"], f, o) for f, o in PAIRS]
    rows.append(["median", *("" for pair in PAIRS for _ in pair), *(f"**{common.ratio(r['median'])}**" for r in stats)])
    headers = ["process", *(f"{x} ms" for pair in PAIRS for x in pair), *(f"{f} / {o}" for f, o in PAIRS)]
    return (f"Fresh processes ({len(mr['processes'])}, one after another; each: the four systems built, "
            "then timed interleaved, medians):\n\n" + common.table(headers, rows))


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Precision modes\n",
           f"Latency: batch 1, sequence {cfg['seq_len']}, {cfg['runs']} interleaved rounds after {cfg['warmup']} "
           f"warm-up calls, thread settings `{cfg['thread_settings']}` for every system. Accuracy: "
           f"{cfg['accuracy_sequences']} seeded sequences of {cfg['accuracy_seq_len']} tokens against eager f32 "
           "(max |logit diff|, mean KL, top-1 agreement over all positions; *bounds* are each mode's stated "
           "contract, `forge.precision.BOUNDS`).\n"]
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        s, acc = mr["summary"], mr["accuracy"]
        ref = s["openvino default"]["median"]
        rows = []
        for system in [*s, *(x for x in acc if x not in s)]:
            a = acc[system]
            b = a.get("bounds")
            timed = s.get(system)
            rows.append([f"**{system}**" if system.startswith("forge") else system,
                         common.ms(timed["median"]) if timed else "(accuracy only)",
                         f"{common.ms(timed['min'])}–{common.ms(timed['max'])}" if timed else "",
                         common.ratio(timed["median"] / ref) if timed else "",
                         common.sci(a["max_abs"]), common.sci(a["kl_mean"]),
                         f"{a['top1']:.2%}",
                         "" if b is None else f"{b['max_abs']:g} / {b['kl_mean']:g} / {b['top1']:.0%}",
                         "" if b is None else ("yes" if a["within_bounds"] else "**no**")])
        out.append(f"### {label} ({mr['layers']} layers)\n")
        out.append(common.table(["system", "median ms", "min–max", "vs openvino default", "max abs diff", "mean KL",
                                 "top-1", "bounds (max / KL / top-1)", "within"], rows))
        if mr.get("processes"):
            out.append(_processes_table(mr))
    return "\n".join(out)


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, len(labels), figsize=(6.0 * len(labels), 3.4), squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        s = result["models"][label]["summary"]
        systems = list(s)
        colors = [common.SYSTEM_COLORS["forge" if x.startswith("forge") else "openvino"] for x in systems]
        ax.barh(systems, [s[x]["median"] for x in systems], color=colors)
        ax.invert_yaxis()
        ax.set_xlabel("median latency (ms)")
        ax.set_title(f"{label}: precision modes", fontsize=10)
    fig.tight_layout()
    return common.save_figure(fig, figures, "precision", "median latency per precision mode")


def main() -> None:
    parser = argparse.ArgumentParser(description="one fresh process of the precision section's verdict")
    parser.add_argument("--pair", required=True, metavar="MODEL", help="zoo family whose PAIRS systems to time")
    parser.add_argument("--attn", default="eager")
    parser.add_argument("--quick", action="store_true")
    a = parser.parse_args()
    torch.manual_seed(0)
    print(json.dumps(_pair_medians(a.pair, a.attn, a.quick)))


if __name__ == "__main__":
    main()
