"""Compiling at 8B scale without the weights (issue 14 item 3): `forge.compile_meta` of a Llama-3-8B-shaped
model, and OpenVINO's `convert_model` peak RSS on 1B- and 3B-shaped Llamas, extrapolated to 8B.

Every measurement runs in a fresh process of its own (`python -m bench.meta_compile --worker ...`), one at
a time; peak RSS is that process's `getrusage(RUSAGE_SELF).ru_maxrss`.

* **Forge**: the model is built under `init_empty_weights` (parameters on the meta device, rotary buffers
  real); its weights file is a *sparse* safetensors file with the real header (every tensor's name, dtype,
  shape and offsets) and no data blocks written (a hole reads as zeros; nothing is allocated on disk or in
  memory), standing in for the checkpoint. Timed: `forge.compile_meta` to a saved artifact (export, import,
  passes, lowering, memory plan, header check, save); then binding the artifact's external weights
  (`meta_weights.bind`: memory maps, nothing read). Emission is not run at 8B: it needs the values, and the
  runtime copies 32 GB of f32 constants into its own layout.
* **OpenVINO**: the model is built with seeded random f32 weights (1B: ~5 GB, 3B: ~13 GB), exported with
  `torch.export` and converted with `openvino.convert_model`; peak RSS of the process (model included) and
  the RSS the model alone held before export. The 8B figure is the line through the 1B and 3B points in
  parameter count, evaluated at 8B (an extrapolation, not a measurement: 8B does not fit in 24 GiB).
  Skipped (with a note) when `MemAvailable` is below what the shape needs.
* **End to end at 1B** (`--worker load`): seeded real weights written with `save_file` (and the eager
  logits), `compile_meta` against that file, then `forge.load` (binding, emit, device compile) and one call
  compared with the eager logits, each step in a fresh process.

Not in `make bench`'s default sections: the OpenVINO points cost ~14 GB of RAM and minutes of random
initialisation (the whole section: ~10 minutes). `python -m bench.meta_compile [--quick] [--skip-openvino]`;
`--quick` compiles a 2-layer 8B-wide model and converts (and loads end to end) a 2-layer 1B-wide one.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SHAPES: dict[str, dict[str, Any]] = {
    "8b": dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
               intermediate_size=14336, vocab_size=128256, rope_theta=500000.0, tie_word_embeddings=False),
    "3b": dict(num_hidden_layers=28, hidden_size=3072, num_attention_heads=24, num_key_value_heads=8,
               intermediate_size=8192, vocab_size=128256, rope_theta=500000.0, tie_word_embeddings=True),
    "1b": dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32, num_key_value_heads=8,
               intermediate_size=8192, vocab_size=128256, rope_theta=500000.0, tie_word_embeddings=True),
}
SEQ_LEN = 128
QUICK_LAYERS = 2
HEADROOM = 1.3
"""OpenVINO runs only when MemAvailable >= HEADROOM x the model's f32 bytes (measured at 1B: the process
peaks at 1.2x, convert_model shares the weights' memory)."""

_ST_DTYPES = {"torch.float32": "F32", "torch.float16": "F16", "torch.bfloat16": "BF16", "torch.int64": "I64"}


# --- the parent: one fresh process per measurement ---------------------------------------------------


def run(quick: bool = False, skip_openvino: bool = False) -> dict[str, Any]:
    from bench import common

    layers = QUICK_LAYERS if quick else None
    config = {"seq_len": SEQ_LEN, "layers": layers or "full", "shapes": SHAPES, "process_per_measurement": True}
    with common.recorded("meta_compile", quick, config) as result:
        shapes = ("8b",) if quick else ("1b", "3b", "8b")
        result["forge"] = {shape: _worker("forge", shape, layers) for shape in shapes}
        result["openvino"] = {}
        for shape in ("1b",) if quick else ("1b", "3b"):
            result["openvino"][shape] = (
                {"skipped": "--skip-openvino"} if skip_openvino else _worker("openvino", shape, layers)
            )
        result["openvino_8b_extrapolated"] = _extrapolate(result["openvino"], result["forge"]["8b"])
        result["load_1b"] = _worker("load", "1b", layers)
    return result


def _worker(kind: str, shape: str, layers: int | None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.meta_compile", "--worker", kind, "--shape", shape]
    if layers:
        cmd += ["--layers", str(layers)]
    root = Path(__file__).resolve().parent.parent
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}",
                "process_s": wall}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = round(wall, 3)
    return out


def _extrapolate(points: dict[str, Any], forge_8b: dict[str, Any]) -> dict[str, Any] | None:
    """The line through the (parameters, peak RSS) points, at the 8B parameter count (and the same for
    convert_model's seconds)."""
    measured = [p for p in points.values() if "peak_rss_mb" in p]
    if len(measured) < 2 or "parameters" not in forge_8b:
        return None
    target = forge_8b["parameters"]

    def line(key: str) -> tuple[float, float]:
        (x1, y1), (x2, y2) = sorted((p["parameters"], p[key]) for p in measured)[:2]
        slope = (y2 - y1) / (x2 - x1)
        return y1 + slope * (target - x1), slope * 1e9

    peak, per_billion = line("peak_rss_mb")
    seconds, _ = line("convert_model_s")
    return {"parameters": target, "peak_rss_mb": round(peak), "mb_per_billion_parameters": round(per_billion, 1),
            "convert_model_s": round(seconds, 1), "from": sorted(points)}


# --- workers -----------------------------------------------------------------------------------------


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _config(shape: str, layers: int | None):
    from transformers import LlamaConfig

    fields = dict(SHAPES[shape])
    if layers:
        fields["num_hidden_layers"] = layers
    return LlamaConfig(**fields)


def _ids():
    import torch

    return torch.randint(0, 32000, (1, SEQ_LEN), generator=torch.Generator().manual_seed(0))


def write_sparse_safetensors(path: Path, params: dict[str, Any]) -> int:
    """A safetensors file with the header of `params` (name -> tensor: only dtype and shape are read) and
    its data region left as a hole (the file's size is right; no data block is written). Returns its size."""
    header: dict[str, Any] = {}
    offset = 0
    for name, t in params.items():
        nbytes = t.numel() * t.element_size()
        header[name] = {"dtype": _ST_DTYPES[str(t.dtype)], "shape": list(t.shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)
    return 8 + len(raw) + offset


def forge_worker(shape: str, layers: int | None) -> dict[str, Any]:
    import torch
    from transformers import LlamaForCausalLM

    import forge
    from forge.frontend.meta_weights import SafetensorsSource, bind
    from forge.weights import WeightStore

    with forge.init_empty_weights():
        model = LlamaForCausalLM(_config(shape, layers)).eval()
    params = dict(model.named_parameters())
    parameters = sum(p.numel() for p in params.values())
    with tempfile.TemporaryDirectory(prefix="forge-meta8b-") as tmp:
        weights = Path(tmp) / "model.safetensors"
        file_bytes = write_sparse_safetensors(weights, params)
        rss_before = _rss_mb()
        start = time.perf_counter()
        artifact = forge.compile_meta(model, (_ids(),), {"use_cache": False}, save_to=Path(tmp) / "artifact",
                                      weights_from=weights)
        compile_s = time.perf_counter() - start
        peak_compile = _peak_rss_mb()
        meta = json.loads((artifact / "meta.json").read_text())
        artifact_bytes = {p.name: p.stat().st_size for p in artifact.iterdir()}
        start = time.perf_counter()
        manifest = meta["external_weights"]
        store = WeightStore()
        for name, entry in manifest["tensors"].items():
            store.add(name, torch.empty(entry["shape"], dtype=getattr(torch, entry["dtype"][6:]), device="meta"))
        bound = bind(store, SafetensorsSource.open(weights))
        bind_s = time.perf_counter() - start
        bound_bytes = bound.nbytes
    report = meta["report"]
    return {
        "shape": shape, "layers": model.config.num_hidden_layers, "parameters": parameters,
        "weights_file_bytes": file_bytes, "compile_s": round(compile_s, 3),
        "stages_ms": {k: report[k] for k in ("export_ms", "decompose_ms", "import_ms", "passes_ms", "lower_ms",
                                              "other_ms", "save_ms", "total_ms")},
        "ops_imported": report["ops_imported"], "weights_external": report["weights_external"],
        "blocks": {k: report["blocks"][k] for k in ("distinct", "instances", "reused")},
        "weight_bytes_external": report["weight_bytes_external"], "artifact_bytes": artifact_bytes,
        "rss_before_compile_mb": round(rss_before), "peak_rss_mb": round(peak_compile),
        "bind_s": round(bind_s, 3), "bound_bytes": bound_bytes, "peak_rss_after_bind_mb": round(_peak_rss_mb()),
    }


def load_workers(shape: str, layers: int | None) -> dict[str, Any]:
    """End to end at scale, three fresh processes: real seeded weights saved with `save_file` (and the
    eager logits), `compile_meta` of the meta model against that file, `forge.load` + one call."""
    with tempfile.TemporaryDirectory(prefix="forge-meta8b-load-", dir=os.environ.get("FORGE_BENCH_TMP")) as tmp:
        steps = {}
        for step in ("save", "compile", "load"):
            cmd = [sys.executable, "-m", "bench.meta_compile", "--worker", f"load-{step}", "--shape", shape,
                   "--dir", tmp, *(["--layers", str(layers)] if layers else [])]
            proc = subprocess.run(cmd, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True,
                                  check=False)
            if proc.returncode != 0:
                steps[step] = {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]}
                break
            steps[step] = json.loads(proc.stdout.strip().splitlines()[-1])
    return steps


def load_step(step: str, shape: str, layers: int | None, directory: Path) -> dict[str, Any]:
    import torch
    from transformers import LlamaForCausalLM

    import forge

    weights, logits, artifact = directory / "model.safetensors", directory / "eager_logits.pt", directory / "artifact"
    if step == "save":
        from safetensors.torch import save_file

        torch.manual_seed(0)
        model = LlamaForCausalLM(_config(shape, layers)).eval()
        with torch.no_grad():
            torch.save(model(_ids(), use_cache=False).logits, logits)
        start = time.perf_counter()
        save_file(dict(model.named_parameters()), weights)
        return {"save_file_s": round(time.perf_counter() - start, 1), "bytes": weights.stat().st_size,
                "peak_rss_mb": round(_peak_rss_mb())}
    if step == "compile":
        with forge.init_empty_weights():
            model = LlamaForCausalLM(_config(shape, layers)).eval()
        start = time.perf_counter()
        forge.compile_meta(model, (_ids(),), {"use_cache": False}, save_to=artifact, weights_from=weights)
        return {"compile_s": round(time.perf_counter() - start, 3), "peak_rss_mb": round(_peak_rss_mb())}
    rss_before = _rss_mb()
    start = time.perf_counter()
    loaded = forge.load(artifact)
    load_s = time.perf_counter() - start
    rss_loaded = _rss_mb()
    start = time.perf_counter()
    got = loaded(_ids(), use_cache=False).logits
    first_call_s = time.perf_counter() - start
    return {"load_s": round(load_s, 3), "emit_ms": loaded.report["emit_ms"],
            "device_compile_ms": loaded.report["device_compile_ms"], "first_call_s": round(first_call_s, 3),
            "rss_before_load_mb": round(rss_before), "rss_after_load_mb": round(rss_loaded),
            "peak_rss_mb": round(_peak_rss_mb()),
            "max_abs_vs_eager": (torch.load(logits) - got).abs().max().item()}


def openvino_worker(shape: str, layers: int | None) -> dict[str, Any]:
    import torch
    from transformers import LlamaForCausalLM

    config = _config(shape, layers)
    with torch.device("meta"):
        parameters = sum(p.numel() for p in LlamaForCausalLM(config).parameters())
    need_mb = parameters * 4 / 2**20 * HEADROOM
    available = _available_mb()
    if available < need_mb:
        return {"shape": shape, "parameters": parameters,
                "skipped": f"MemAvailable {available:.0f} MB < {need_mb:.0f} MB needed"}
    torch.manual_seed(0)
    start = time.perf_counter()
    model = LlamaForCausalLM(config).eval()
    build_s = time.perf_counter() - start
    rss_model = _rss_mb()
    import openvino as ov

    ids = _ids()
    start = time.perf_counter()
    with torch.no_grad():
        program = torch.export.export(model, (ids,), {"use_cache": False})
    export_s = time.perf_counter() - start
    rss_export = _rss_mb()
    start = time.perf_counter()
    ov_model = ov.convert_model(program)
    convert_s = time.perf_counter() - start
    return {
        "shape": shape, "layers": config.num_hidden_layers, "parameters": parameters,
        "f32_weight_mb": round(parameters * 4 / 2**20), "build_s": round(build_s, 1),
        "export_s": round(export_s, 3), "convert_model_s": round(convert_s, 3),
        "rss_model_mb": round(rss_model), "rss_after_export_mb": round(rss_export),
        "rss_after_convert_mb": round(_rss_mb()), "peak_rss_mb": round(_peak_rss_mb()),
        "ov_ops": len(ov_model.get_ops()),
    }


# --- report ------------------------------------------------------------------------------------------


def render(result: dict[str, Any], figures: Path | None = None) -> str:
    from bench import common

    f = result["forge"]["8b"]
    ex = result.get("openvino_8b_extrapolated")
    lines = ["## Compiling an 8B-shaped Llama without its weights", ""]
    if "error" in f:
        return "\n".join([*lines, f"Forge failed: {f['error']}", ""])
    lines.append(
        f"`forge.compile_meta` of a Llama-3-8B-shaped model ({f['layers']} layers, {f['parameters'] / 1e9:.2f}B "
        f"parameters, {f['weight_bytes_external'] / 2**30:.1f} GiB of f32 weights referenced, never allocated), "
        f"sequence {SEQ_LEN}, cold in a fresh process: **{f['compile_s']:.1f} s** to a saved artifact, peak RSS "
        f"**{f['peak_rss_mb'] / 1024:.2f} GiB** (process, {f['rss_before_compile_mb'] / 1024:.2f} GiB before the "
        f"compile: torch, transformers, the meta model); binding the artifact's weights: {f['bind_s'] * 1e3:.0f} ms."
    )
    stages = [[f"{k} (of other_ms: IR, manifest, checksums)" if k == "save_ms" else k, common.ms(v)]
              for k, v in f["stages_ms"].items()]
    lines += ["", common.table(["stage", "ms"], stages), ""]
    lines += ["Every shape, Forge (`compile_meta`, no weights) against OpenVINO (`convert_model`, real weights):", ""]
    both = []
    for shape, p in result["forge"].items():
        o = result["openvino"].get(shape) or ({"extrapolated": True, **ex} if shape == "8b" and ex else {})
        both.append([shape, f"{p['compile_s']:.1f}", f"{p['peak_rss_mb'] / 1024:.2f}",
                     f"{o['convert_model_s']:.0f}" if "convert_model_s" in o else "",
                     f"{o['peak_rss_mb'] / 1024:.1f}{' (extrapolated)' if o.get('extrapolated') else ''}"
                     if "peak_rss_mb" in o else ""])
    lines += [common.table(["shape", "Forge to artifact s", "Forge peak GiB", "convert_model s", "OpenVINO peak GiB"],
                           both), ""]
    rows = []
    for shape, p in result["openvino"].items():
        if "peak_rss_mb" in p:
            rows.append([shape, f"{p['parameters'] / 1e9:.2f}B", f"{p['rss_model_mb'] / 1024:.1f}",
                         f"{p['peak_rss_mb'] / 1024:.1f}", f"{p['convert_model_s']:.1f}"])
        else:
            rows.append([shape, "", "", p.get("skipped") or p.get("error"), ""])
    if ex:
        rows.append(["8b (extrapolated)", f"{ex['parameters'] / 1e9:.2f}B", "", f"{ex['peak_rss_mb'] / 1024:.1f}",
                     f"{ex['convert_model_s']:.0f}"])
    lines += ["OpenVINO `convert_model` (of `torch.export`, real f32 weights), peak RSS:", "",
              common.table(["shape", "parameters", "model alone GiB", "peak GiB", "convert_model s"], rows), ""]
    lines += ["Forge's time includes its torch.export; OpenVINO's convert_model seconds do not (its export: "
              + ", ".join(f"{s} {p['export_s']:.0f} s" for s, p in result["openvino"].items() if "export_s" in p)
              + ").", ""]
    return "\n".join([*lines, *_render_load(result.get("load_1b"))])


def _render_load(steps: dict[str, Any] | None) -> list[str]:
    if not steps:
        return []
    if "load" not in steps or "error" in steps["load"]:
        return [f"End to end at 1B: failed: {steps}", ""]
    s, c, ld = steps["save"], steps["compile"], steps["load"]
    return [f"End to end at the 1B shape (three fresh processes): seeded weights written with `save_file` "
            f"({s['bytes'] / 2**30:.1f} GiB); `compile_meta` against the file {c['compile_s']:.1f} s, peak RSS "
            f"{c['peak_rss_mb'] / 1024:.2f} GiB; `forge.load` binding it {ld['load_s']:.1f} s (device compile "
            f"{ld['device_compile_ms'] / 1e3:.1f} s), RSS {ld['rss_after_load_mb'] / 1024:.1f} GiB after the load "
            f"(the mapped file pages it read plus the runtime's own copy of the constants); first call "
            f"{ld['first_call_s']:.1f} s, max |logits - eager| = {ld['max_abs_vs_eager']:.1e}.", ""]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip-openvino", action="store_true")
    parser.add_argument("--worker", choices=("forge", "openvino", "load", "load-save", "load-compile", "load-load"))
    parser.add_argument("--dir", type=Path, help="the load workers' shared directory")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="8b")
    parser.add_argument("--layers", type=int)
    parser.add_argument("--out", type=Path, help="write the result JSON here")
    args = parser.parse_args(argv)
    if args.worker and args.worker.startswith("load-"):
        print(json.dumps(load_step(args.worker.removeprefix("load-"), args.shape, args.layers, args.dir)))
        return 0
    if args.worker:
        work = {"forge": forge_worker, "openvino": openvino_worker, "load": load_workers}[args.worker]
        print(json.dumps(work(args.shape, args.layers)))
        return 0
    result = run(quick=args.quick, skip_openvino=args.skip_openvino)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)
    print(render(result))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
