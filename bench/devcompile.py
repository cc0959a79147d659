#!/usr/bin/env python3
"""Device compile: OpenVINO's compile_model of Forge's emitted segment vs of OpenVINO's own converted model.

Run from the project root:  .venv/bin/python bench/devcompile.py [--model gpt2] [--layers 12] [--seq-len 128]
[--rounds 5] [--keep DIR]

What it measures (issue 14 item 2): the same CPU plugin, the same properties (Forge's CPU runtime properties:
f32 hint, LATENCY, threads, no pinning; read back from every compiled model), four graphs of one model:
- `forge`: the segment Forge emits (one segment for the zoo's transformers; the first if there are more);
- `forge_nk`: the same graph with every MatMul weight that Forge passes `[K, N]` (`transpose_b` false, the
  memory layout of GPT-2's Conv1D weights) pre-transposed to `[N, K]` (`transpose_b` true): what the
  weight layout costs the plugin (it fuses a transpose into its weight repacking);
- `ov`: `openvino.convert_model(torch.export.export(model, args))`, as the cold yardstick compiles it (its
  input dims are dynamic);
- `ov_static`: the same reshaped to the example's static shapes (as Forge's segment and the latency peer).
The graphs are saved as IR once (one child process), then each compile is one fresh process that reads its IR
(weights memory-mapped from the .bin, the same for every variant), times `compile_model`, the first and a
second inference; order round-robin over the variants, `--rounds` times; medians. Timing goals stay here,
never in unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

VARIANTS = ("forge", "forge_nk", "ov", "ov_static")


def save_variants(a: argparse.Namespace, out: str) -> dict:
    """Compile `a.model` with Forge (capturing the segment graph and properties), convert it with OpenVINO,
    and save the four variants' IR in `out`."""
    import numpy as np
    import openvino as ov
    import openvino.opset13 as ops
    import torch

    from forge.models import build_model, example_inputs

    model = build_model(a.model, layers=a.layers, attn=a.attn).eval()
    args = tuple(example_inputs(a.model, seq_len=a.seq_len))
    import forge
    from backends.nnfactory.runtime import openvino_runtime

    core = openvino_runtime.core()
    captured: list[tuple[ov.Model, dict]] = []
    real_compile = core.compile_model

    def spy(graph, device, properties):
        captured.append((graph, dict(properties)))
        return real_compile(graph, device, properties)

    core.compile_model = spy
    try:
        forge.compile(model, args)
    finally:
        del core.compile_model
    graph, properties = captured[0]
    kept: list[np.ndarray] = []
    nk = graph.clone()
    flipped = 0
    for op in nk.get_ordered_ops():
        if op.get_type_name() != "MatMul" or op.get_attributes()["transpose_b"]:
            continue
        source = op.input(1).get_source_output().get_node()
        if source.get_type_name() != "Constant" or len(source.get_output_shape(0)) != 2:
            continue
        weight = np.ascontiguousarray(source.get_data().T)
        kept.append(weight)
        new = ops.matmul(op.input(0).get_source_output(), ov.op.Constant(weight, shared_memory=True).output(0),
                         op.get_attributes()["transpose_a"], True)
        op.output(0).replace(new.output(0))
        flipped += 1
    converted = ov.convert_model(torch.export.export(model, args))
    ov.save_model(graph, os.path.join(out, "forge.xml"), compress_to_fp16=False)
    ov.save_model(nk, os.path.join(out, "forge_nk.xml"), compress_to_fp16=False)
    ov.save_model(converted, os.path.join(out, "ov.xml"), compress_to_fp16=False)
    converted.reshape({i: list(x.shape) for i, x in enumerate(args)})
    ov.save_model(converted, os.path.join(out, "ov_static.xml"), compress_to_fp16=False)
    for i, x in enumerate(args):
        np.save(os.path.join(out, f"input{i}.npy"), x.numpy())
    props = {k: v if isinstance(v, (bool, int, str)) else str(v) for k, v in properties.items()}
    info = {"segments": len(captured), "properties": props, "flipped_matmul_weights": flipped, "inputs": len(args),
            "ops": {"forge": len(graph.get_ordered_ops()), "ov": len(converted.get_ordered_ops())}}
    with open(os.path.join(out, "info.json"), "w") as f:
        json.dump(info, f)
    return info


def compile_one(variant: str, out: str) -> dict:
    """One fresh process: read `variant`'s IR, compile it with the saved properties, run it twice."""
    import numpy as np
    import openvino as ov

    with open(os.path.join(out, "info.json")) as f:
        info = json.load(f)
    core = ov.Core()
    graph = core.read_model(os.path.join(out, f"{variant}.xml"))
    inputs = [np.load(os.path.join(out, f"input{i}.npy")) for i in range(info["inputs"])]
    t0 = time.perf_counter()
    compiled = core.compile_model(graph, "CPU", info["properties"])
    t1 = time.perf_counter()
    request = compiled.create_infer_request()
    request.infer(inputs[: len(compiled.inputs)])
    t2 = time.perf_counter()
    request.infer(inputs[: len(compiled.inputs)])
    t3 = time.perf_counter()
    effective = {k: str(compiled.get_property(k)) for k in info["properties"]}
    return {"variant": variant, "compile_ms": (t1 - t0) * 1e3, "first_ms": (t2 - t1) * 1e3,
            "second_ms": (t3 - t2) * 1e3, "effective": effective}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="gpt2")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--attn", default="eager")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--keep", help="directory for the saved IR (default: a temporary one, removed)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child == "save":
        print(json.dumps(save_variants(a, a.dir)))
        return
    if a.child:
        print(json.dumps(compile_one(a.child, a.dir)))
        return
    tmp = None if a.keep else tempfile.TemporaryDirectory(prefix="forge-devcompile-")
    out = a.keep or tmp.name
    os.makedirs(out, exist_ok=True)
    base = [sys.executable, __file__, "--model", a.model, "--layers", str(a.layers), "--attn", a.attn,
            "--seq-len", str(a.seq_len), "--dir", out]
    info = json.loads(subprocess.run(base + ["--child", "save"], check=True, capture_output=True,
                                     text=True).stdout.splitlines()[-1])
    print(f"{a.model} {a.layers}L seq {a.seq_len}: Forge segments {info['segments']}, ops forge {info['ops']['forge']}"
          f" ov {info['ops']['ov']}, MatMul weights flipped to [N, K] in forge_nk: {info['flipped_matmul_weights']}")
    rows: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    loads = []
    for _ in range(a.rounds):
        for v in VARIANTS:
            loads.append(os.getloadavg()[0])
            r = subprocess.run(base + ["--child", v], check=True, capture_output=True, text=True)
            rows[v].append(json.loads(r.stdout.splitlines()[-1]))
    print(f"properties requested {info['properties']}")
    print(f"effective (read back) {rows['forge'][0]['effective']}")
    print(f"load (1-min) min {min(loads):.1f} median {statistics.median(loads):.1f} max {max(loads):.1f}; "
          f"{a.rounds} fresh processes per variant, round-robin; medians (min-max) ms")
    print(f"{'variant':10s} {'compile':>18s} {'first call':>18s} {'second call':>18s}")
    for v in VARIANTS:
        cells = []
        for key in ("compile_ms", "first_ms", "second_ms"):
            xs = [r[key] for r in rows[v]]
            cells.append(f"{statistics.median(xs):6.0f} ({min(xs):4.0f}-{max(xs):4.0f})")
        print(f"{v:10s} " + " ".join(f"{c:>18s}" for c in cells))
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
