"""Dynamic sequence length (issue 17 item 3): Forge's shape buckets against exact static compiles,
and against what a truly dynamic-shape runtime costs (OpenVINO's own frontend).

Per model (the zoo decoders at benchmark size; `--quick`: GPT-2 small over [8, 16]):

* **Forge buckets**: one `forge.compile(model, (ids,), dynamic_shapes={"input_ids": {1: Dim("seq",
  min, max)}})` (`forge.driver.dynamic`: the export check and padding probe, then every bucket compiled
  with `compile_all()`; each bucket's compile ms and planned peak bytes are recorded).
* **Forge static**: `forge.compile` at exactly each measured length (what a user recompiling per
  prompt length would get; the padding-free latency floor of the buckets).
* **OpenVINO dynamic**: `ov.convert_model(torch.export.export(model, dynamic_shapes=<the same Dim>))`,
  reshaped to `[1, min..max]`, one `compile_model` for every length: the cost of keeping the dim
  symbolic through a compiler and runtime built for it (what "truly symbolic shapes through the
  dialects" would aim at).
* **OpenVINO static**: the same converted model reshaped to `[1, L]` and compiled per length
  (`convert_model` leaves every input dim dynamic, `[?,?]`, unless reshaped).

Latency: at each length, `WARMUP` calls then `RUNS` timed calls per system, interleaved (call i of
every system in a rotating order before call i + 1), batch 1, seeded token ids; wall ms and the
process's CPU ms per call (all threads: steadier than wall time on a shared machine). *pad waste* is the
share of the bucket's tokens that are padding, (B - L) / B. The bucket output is checked against
eager at every length (max |diff| on the valid positions).
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import torch

from bench import common, peers

WARMUP, RUNS = 3, 30
QUICK_WARMUP, QUICK_RUNS = 1, 3
RANGE, QUICK_RANGE = (8, 128), (8, 16)
LENGTHS, QUICK_LENGTHS = (13, 48, 100, 128), (13,)
SYSTEMS = ("forge-bucket", "forge-static", "openvino-dynamic", "openvino-static")
COLORS = {"forge-bucket": "#d62728", "forge-static": "#ff9896", "openvino-dynamic": "#1f77b4",
          "openvino-static": "#aec7e8"}


def run(quick: bool = False) -> dict[str, Any]:
    warmup, runs = (QUICK_WARMUP, QUICK_RUNS) if quick else (WARMUP, RUNS)
    lo, hi = QUICK_RANGE if quick else RANGE
    lengths = QUICK_LENGTHS if quick else LENGTHS
    config = {"warmup": warmup, "runs": runs, "range": [lo, hi], "lengths": list(lengths), "small_models": quick,
              "models": [m.label for m in common.models(quick)], "systems": list(SYSTEMS)}
    with common.recorded("dynamic_shapes", quick, config) as result:
        result["models"] = {spec.label: _measure(spec, quick, (lo, hi), lengths, warmup, runs)
                            for spec in common.models(quick)}
    return result


def _seq_dim(lo: int, hi: int):
    return torch.export.Dim("seq", min=lo, max=hi)


def _ids(spec: common.ModelSpec, quick: bool, length: int) -> torch.Tensor:
    from forge.models import example_inputs

    return example_inputs(spec.name, seq_len=length, seed=length, small=quick)[0]


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1e3


def build_forge_dynamic(model, ids: torch.Tensor, lo: int, hi: int):
    """`forge.compile` with a dynamic seq dim (forge.driver.dynamic's buckets; nothing compiled yet)."""
    import forge

    return forge.compile(model, (ids,), dynamic_shapes={"input_ids": {1: _seq_dim(lo, hi)}})


def convert_openvino(model, ids: torch.Tensor, lo: int, hi: int):
    """OpenVINO's own path, once: torch.export with the dynamic seq dim, then `ov.convert_model`."""
    import openvino as ov

    with torch.no_grad():
        program = torch.export.export(model, (ids,), dynamic_shapes=({1: _seq_dim(lo, hi)},))
    return ov.convert_model(program)


def compile_openvino(ov_model, seq: int | tuple[int, int]):
    """`compile_model` of the converted model reshaped to batch 1 and `seq`: one length (static) or
    a (min, max) range (dynamic). convert_model leaves every input dim dynamic (`[?,?]`)."""
    import openvino as ov

    core = ov.Core()
    core.get_property("CPU", "FULL_DEVICE_NAME")  # the plugin loads outside the clock
    shaped = ov_model.clone()
    dim = ov.Dimension(*seq) if isinstance(seq, tuple) else ov.Dimension(seq)
    shaped.reshape({0: ov.PartialShape([ov.Dimension(1), dim])})
    start = time.perf_counter()
    request = core.compile_model(shaped, "CPU", peers.OV_CPU_PROPERTIES).create_infer_request()
    compile_ms = (time.perf_counter() - start) * 1e3

    def call(x: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(request.infer({0: x.numpy()})[0])  # infer() already copies the output out

    return call, compile_ms


def _measure(spec, quick, rng, lengths, warmup, runs) -> dict[str, Any]:
    import forge

    model, _ = common.model_and_inputs(spec, quick)
    lo, hi = rng
    with peers.quiet():
        gc.collect()
        rss_before = common.rss_mib()
        dyn, setup_ms = _timed(lambda: build_forge_dynamic(model, _ids(spec, quick, 16), lo, hi))
        _, all_ms = _timed(dyn.compile_all)
        gc.collect()
        rss_buckets = common.rss_mib() - rss_before
        ov_model, ov_convert_ms = _timed(lambda: convert_openvino(model, _ids(spec, quick, 16), lo, hi))
        ov_dyn, ov_dyn_ms = compile_openvino(ov_model, rng)
        per_length = {}
        for length in lengths:
            ids = _ids(spec, quick, length)
            static, static_ms = _timed(lambda ids=ids: forge.compile(model, (ids,)))
            ov_static, ov_static_ms = compile_openvino(ov_model, length)
            calls = {"forge-bucket": dyn, "forge-static": static, "openvino-dynamic": ov_dyn,
                     "openvino-static": ov_static}
            per_length[str(length)] = _latency(model, ids, calls, warmup, runs, dyn)
            per_length[str(length)]["compile_ms"] = {"forge-static": static_ms, "openvino-static": ov_static_ms}
            del calls, static, ov_static
            gc.collect()
    dynamic = dyn.report["dynamic"]
    buckets = {b: {"compile_ms": dynamic["compiled"][str(b)], "peak_bytes_planned": r["peak_bytes_planned"],
                   "segments": r["segments"]} for b, r in dyn.reports.items()}
    return {
        "layers": model.config.num_hidden_layers,
        "buckets": {str(b): v for b, v in buckets.items()},
        "forge_setup_ms": setup_ms, "forge_compile_all_ms": all_ms,
        "export_check_ms": dynamic.get("export_check_ms", 0.0), "probe_ms": dynamic["probe_ms"],
        "rss_all_buckets_mib": rss_buckets,
        "weight_mib": next(iter(dyn.reports.values()))["weight_bytes"] / 2**20,
        "openvino_convert_ms": ov_convert_ms, "openvino_dynamic_compile_ms": ov_dyn_ms,
        "per_length": per_length,
    }


def _latency(model, ids, calls, warmup, runs, dyn) -> dict[str, Any]:
    length = ids.shape[1]
    with torch.no_grad():
        expected = model(ids)
    max_abs = {s: (fn(ids) - expected).abs().max().item() for s, fn in calls.items()}
    for fn in calls.values():
        for _ in range(warmup):
            fn(ids)
    samples: dict[str, list[float]] = {s: [] for s in calls}
    cpu: dict[str, list[float]] = {s: [] for s in calls}
    order = list(calls)
    for i in range(runs):
        for system in order[i % len(order):] + order[: i % len(order)]:
            start, start_cpu = time.perf_counter(), time.process_time()
            calls[system](ids)
            samples[system].append((time.perf_counter() - start) * 1e3)
            cpu[system].append((time.process_time() - start_cpu) * 1e3)
    bucket = dyn.bucket_for(length)
    return {"bucket": bucket, "pad_waste": (bucket - length) / bucket, "max_abs": max_abs, "samples": samples,
            "cpu_samples": cpu, "median_ms": {s: common.median(v) for s, v in samples.items()},
            "median_cpu_ms": {s: common.median(v) for s, v in cpu.items()}}


# --- rendering -------------------------------------------------------------------------------------


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Dynamic sequence length\n",
           f"One Forge compile for `Dim(\"seq\", min={cfg['range'][0]}, max={cfg['range'][1]})` (shape buckets, "
           f"`forge.driver.dynamic`) against a static Forge compile at exactly each length, OpenVINO's dynamic-shape "
           f"model and OpenVINO static; batch 1, CPU, fp32, {cfg['warmup']} warm-up and {cfg['runs']} timed "
           "calls per system and length, interleaved.\n"]
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        out.append(f"### {label} ({mr['layers']} layers)\n")
        out.append(f"Forge: export check {common.ms(mr['export_check_ms'])} ms, padding probe "
                   f"{common.ms(mr['probe_ms'])} ms, all {len(mr['buckets'])} buckets compiled in "
                   f"{common.ms(mr['forge_compile_all_ms'])} ms; OpenVINO: torch.export (dynamic) + convert_model "
                   f"{common.ms(mr['openvino_convert_ms'])} ms once, then compile_model "
                   f"{common.ms(mr['openvino_dynamic_compile_ms'])} ms for the range (static: per length, below). "
                   f"Memory: the process grew {mr['rss_all_buckets_mib']:,.0f} MiB for all buckets (weights "
                   f"{mr['weight_mib']:,.0f} MiB; every bucket holds its own runtime copy).\n")
        rows = [[b, common.ms(v["compile_ms"]), f"{v['peak_bytes_planned'] / 2**20:.1f}", v["segments"]]
                for b, v in mr["buckets"].items()]
        out.append(common.table(["bucket", "compile ms", "planned peak MiB", "segments"], rows))
        out.append("")
        out.append(common.table(
            ["length", "bucket", "pad waste", "forge bucket ms", "forge static ms", "bucket / static",
             "OV dynamic ms", "OV static ms", "OV dynamic / static", "CPU ms: bucket / static",
             "CPU ms: OV dynamic / static", "bucket max abs", "compile ms: forge static", "OV static"],
            _length_rows(mr)))
    return "\n".join(out)


def _length_rows(mr: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for length, p in mr["per_length"].items():
        m = p["median_ms"]
        rows.append([length, p["bucket"], f"{p['pad_waste']:.0%}", f"{m['forge-bucket']:.2f}",
                     f"{m['forge-static']:.2f}", common.ratio(m["forge-bucket"] / m["forge-static"]),
                     f"{m['openvino-dynamic']:.2f}", f"{m['openvino-static']:.2f}",
                     common.ratio(m["openvino-dynamic"] / m["openvino-static"]),
                     _cpu_ratio(p, "forge-bucket", "forge-static"),
                     _cpu_ratio(p, "openvino-dynamic", "openvino-static"),
                     common.sci(p["max_abs"]["forge-bucket"]), common.ms(p["compile_ms"]["forge-static"]),
                     common.ms(p["compile_ms"]["openvino-static"])])
    return rows


def _cpu_ratio(p: dict[str, Any], a: str, b: str) -> str:
    cpu = p.get("median_cpu_ms")
    return common.ratio(cpu[a] / cpu[b]) if cpu and cpu[b] > 0 else "n/a"


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, len(labels), figsize=(5.6 * len(labels), 3.6), squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        per = result["models"][label]["per_length"]
        xs = [int(n) for n in per]
        for system in SYSTEMS:
            ax.plot(xs, [per[str(x)]["median_ms"][system] for x in xs], marker="o", label=system,
                    color=COLORS[system])
        ax.set_xlabel("sequence length")
        ax.set_ylabel("median ms per call")
        ax.set_title(f"{label}: latency by length", fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return common.save_figure(fig, figures, "dynamic_shapes", "latency by sequence length")
