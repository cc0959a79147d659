"""One copy of the weights across a model's graphs (issue 32 item 4): the resident memory a 5-bucket dynamic
GPT-2 and a generator (prefill + decode graphs) add, against one static compile of the same model.

Each system runs in a fresh interpreter (`python -m bench.weight_copies --worker SYSTEM`), as a user runs
it: build the model (seeded random weights), read VmRSS, compile, call every graph once, read VmRSS again;
the growth is the figure. *static*: `forge.compile` at the longest length (128); *dynamic*: `dynamic_shapes`
over [8, 128] with buckets 8, 16, 32, 64, 128, `compile_all()` and one call per bucket; *generator*:
`compile_generator(prompt_len=128, max_new_tokens=64)` and 4 generated tokens (one program, as `weight_sharing`
chooses: GPT-2's cache is 2.8% of the weights a step reads, so its decode step runs outside the program's `If`,
which would copy the 14 MB cache every step); *openvino-dynamic*, the other way
to one copy of the weights, one graph with a dynamic sequence dimension (OpenVINO's own path:
`bench.dynamic_shapes.convert_openvino` over [8, 128], one `compile_model`, one call per bucket length).

What that other way costs in time (`--timing`, its own fresh interpreter): OpenVINO's converted GPT-2 compiled
three times, static at 1 row (a decode-sized call), static at 128 rows (a prefill chunk) and once with the token
dimension dynamic over [1, 128]; `TIMING_ROUNDS` calls of each at 1 and 128 rows, interleaved (the order reversed
every round, `TIMING_WARMUP` rounds untimed), medians. The same graph and weights on both sides: the difference is
the CPU plugin's per-call work on a dynamic shape, which a generator with one graph for prefill and decode pays
on every decode step.
`--quick`: GPT-2 small, lengths up to 16.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import torch

from bench import common

SYSTEMS = ("static", "dynamic", "generator", "openvino-dynamic")
LENGTH, QUICK_LENGTH = 128, 16
BUCKETS, QUICK_BUCKETS = (8, 16, 32, 64, 128), (8, 16)
TARGET = 1.1
"""The issue's bound: a 5-bucket dynamic GPT-2 within 1.1x the resident memory of one static compile."""
TIMING_ROWS = (1, None)
"""The timed call sizes: a decode step's one row and the longest length (None: `LENGTH`, or `QUICK_LENGTH`)."""
TIMING_WARMUP, TIMING_ROUNDS, QUICK_TIMING_ROUNDS = 3, 20, 3


def run(quick: bool = False) -> dict[str, Any]:
    config = {"model": "gpt2" + (" (small)" if quick else " 12L"), "systems": list(SYSTEMS),
              "buckets": list(QUICK_BUCKETS if quick else BUCKETS), "length": QUICK_LENGTH if quick else LENGTH}
    with common.recorded("weight_copies", quick, config) as result:
        flags = ["--quick"] if quick else []
        result["systems"] = {s: common.fresh_runs("weight_copies", ["--worker", s, *flags], 1)[0] for s in SYSTEMS}
        result["dynamic_dimension"] = common.fresh_runs("weight_copies", ["--timing", *flags], 1)[0]
    return result


def _timing_worker(quick: bool) -> dict[str, Any]:
    """Median ms per call of one converted graph, static at each of `TIMING_ROWS` and dynamic over them."""
    from bench.dynamic_shapes import compile_openvino, convert_openvino
    from forge.models import build_model

    length = QUICK_LENGTH if quick else LENGTH
    model = build_model("gpt2", small=quick).hf.eval()
    ids = torch.randint(0, model.config.vocab_size, (1, length), generator=torch.Generator().manual_seed(0))
    rows = [r or length for r in TIMING_ROWS]
    converted = convert_openvino(_Logits(model), ids, rows[0], length)
    dynamic = compile_openvino(converted, (rows[0], length))[0]
    calls = {}
    for r in rows:
        calls[f"static {r}"] = (compile_openvino(converted, r)[0], ids[:, :r])
        calls[f"dynamic {r}"] = (dynamic, ids[:, :r])
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for i in range(TIMING_WARMUP + (QUICK_TIMING_ROUNDS if quick else TIMING_ROUNDS)):
        for name in list(calls) if i % 2 == 0 else list(calls)[::-1]:
            call, x = calls[name]
            start = time.perf_counter()
            call(x)
            if i >= TIMING_WARMUP:
                samples[name].append((time.perf_counter() - start) * 1e3)
    median = {name: common.median(v) for name, v in samples.items()}
    return {str(r): {"static_ms": median[f"static {r}"], "dynamic_ms": median[f"dynamic {r}"]} for r in rows}


def _worker(system: str, quick: bool) -> dict[str, Any]:
    import forge
    from forge.models import build_model

    length = QUICK_LENGTH if quick else LENGTH
    model = build_model("gpt2", small=quick).hf.eval()
    ids = torch.randint(0, model.config.vocab_size, (1, length), generator=torch.Generator().manual_seed(0))
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    start_rss, start = common.rss_mib(), time.perf_counter()
    program: dict[str, Any] = {}
    if system == "static":
        static = forge.compile(model, (ids,), kwargs={"use_cache": False})  # held until the RSS is read
        static(ids, use_cache=False)
    elif system == "dynamic":
        buckets = QUICK_BUCKETS if quick else BUCKETS
        dim = torch.export.Dim("seq", min=buckets[0], max=length)
        dyn = forge.compile(model, (ids,), kwargs={"use_cache": False}, dynamic_shapes=({1: dim}, None),
                            buckets=list(buckets)).compile_all()
        for b in buckets:
            logits = dyn(ids[:, :b], use_cache=False).logits  # the model's only output
            program["output_bytes"] = program.get("output_bytes", 0) + logits.numel() * logits.element_size()
            program["longest_output_bytes"] = logits.numel() * logits.element_size()  # the buckets run shortest first
            del logits  # not held while the RSS is read, as no other system's output is
        program.update(dyn.report["dynamic"].get("device_program", {}))
    elif system == "openvino-dynamic":
        from bench.dynamic_shapes import compile_openvino, convert_openvino

        buckets = QUICK_BUCKETS if quick else BUCKETS
        call = compile_openvino(convert_openvino(_Logits(model), ids, buckets[0], length), (buckets[0], length))[0]
        for b in buckets:
            call(ids[:, :b])
    else:
        from forge.driver.generation import compile_generator

        new = 64 if not quick else 8
        gen = compile_generator(model, prompt_len=length, max_new_tokens=new)
        gen.generate(ids, 4)
        program = gen.report().get("device_program", {})
    grown = round((common.rss_mib() - start_rss) * 2**20)
    return {"rss_growth_bytes": grown, "seconds": time.perf_counter() - start, "weight_bytes": weight_bytes,
            "device_program": program}


class _Logits(torch.nn.Module):
    """The model's logits alone (no cache), what OpenVINO's converter takes."""

    def __init__(self, hf: torch.nn.Module):
        super().__init__()
        self.hf = hf

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.hf(input_ids, use_cache=False).logits


def ratios(result: dict[str, Any]) -> dict[str, float]:
    static = result["systems"]["static"]["rss_growth_bytes"]
    return {s: r["rss_growth_bytes"] / static for s, r in result["systems"].items()}


def render(result: dict[str, Any], figures: Path) -> str:
    rows = []
    r = ratios(result)
    for name, m in result["systems"].items():
        program = m.get("device_program") or {}
        rows.append([name, f"{m['rss_growth_bytes'] / 2**20:,.0f}", f"{r[name]:.2f}x",
                     f"{m['rss_growth_bytes'] / m['weight_bytes']:.2f}x", str(program.get("graphs", 1)),
                     f"{m['seconds']:.1f}"])
    return ("## Weight copies: one device program per model\n\n"
            f"{result['config']['model']}: what each system adds to a fresh process's resident memory (VmRSS), "
            "compiled and called once per graph; a generator's graphs and a dynamic model's buckets are one "
            "OpenVINO program (their weights repacked once).\n\n"
            + common.table(["system", "RSS growth MiB", "vs static", "vs f32 weight bytes", "graphs", "s"], rows)
            + "\n" + _figure(result, figures) + "\n" + _render_timing(result))


def _render_timing(result: dict[str, Any]) -> str:
    """The time side of one graph with a dynamic token dimension (`_timing_worker`)."""
    timing = result.get("dynamic_dimension")
    if not timing:
        return ""
    rows = [[r, f"{t['static_ms']:.2f}", f"{t['dynamic_ms']:.2f}", f"{t['dynamic_ms'] / t['static_ms']:.2f}x"]
            for r, t in timing.items()]
    return ("One graph with a dynamic token dimension, OpenVINO's way to one copy of the weights, costs time: the "
            "same converted graph compiled static at each call size and once dynamic, interleaved calls.\n\n"
            + common.table(["rows per call", "static ms", "dynamic ms", "dynamic / static"], rows) + "\n")


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    fig, ax = plt.subplots(figsize=(5, 2.6))
    names = list(result["systems"])
    ax.bar(names, [result["systems"][n]["rss_growth_bytes"] / 2**20 for n in names], color="#d62728")
    static = result["systems"]["static"]["rss_growth_bytes"] / 2**20
    ax.axhline(static * TARGET, color="k", linestyle="--", linewidth=0.8, label=f"{TARGET}x static")
    ax.set_ylabel("RSS growth (MiB)")
    ax.set_title(f"{result['config']['model']}: resident memory per system", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return common.save_figure(fig, figures, "weight_copies", "resident memory per system")


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    r = ratios(result)
    longest = result["systems"]["dynamic"].get("device_program", {}).get("longest_output_bytes", 0)
    return [common.target_row("5-bucket dynamic GPT-2 resident memory vs one static compile (issue 32)",
                              r["dynamic"], TARGET, higher_is_better=False, unit="x",
                              why="the weights are packed once; the buckets' one logits matmul, after their `If`s, "
                                  f"keeps an output as long as the longest bucket's ({longest / 2**20:,.1f} MiB: a "
                                  "dynamic shape, which OpenVINO does not write into the caller's tensor), each "
                                  "bucket its own activations, and the dynamic export and the buckets' IR stay")]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--worker", choices=SYSTEMS)
    which.add_argument("--timing", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(json.dumps(_timing_worker(args.quick) if args.timing else _worker(args.worker, args.quick)))
