"""Mixture-of-experts routing on the NPU path: gathered experts against a dense masked formulation.

Issue 31 item 2. The zoo's MoE families route with transformers' ``batched_mm`` experts: topk picks
k experts per token, each (token, expert) pair gathers its expert's weights (``W[ids]``: tokens x k
copies of an expert's matrices) and runs a batched matrix-vector product; all static, all on the
NPU path since topk and the gathers lowered there. The dense masked formulation computes every
expert on every token (``tokens x hidden @ experts x hidden x inter``: one matmul per projection,
no weight copies) and weights each expert's output by a dense routing matrix (the topk weights at
the picked experts, 0 elsewhere; made by comparing the picked ids with an iota in f32 on the NPU).
It does experts / k times the gathered form's multiply-adds but moves each weight once instead of
tokens x k times.

    .venv/bin/python -m bench.moe_routing [--models mixtral qwen2-moe] [--runs 20] [--layers 2]

For each model and size (small, and the default widths with ``--layers`` layers), three ways: the
gathered form as transformers writes it (`fuse-ops{dense-experts=false}`), Forge's default (its
`DenseExperts` pattern computes the projections densely: `forge/transforms/dense_experts.py`) and
the dense masked formulation written in the model (the reference for what dense can gain). Each:
the Forge compile (OpenVINO, CPU, f32), its median latency over ``--runs`` calls at 128 tokens (16
for small), the CPU steps and transitions (all run wholly on the NPU path), and the max |diff| of its
logits against eager PyTorch.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch

from forge import models
from forge.driver.compiler import compile as forge_compile
from forge.pipelines import DEFAULT_PIPELINE

DENSE = "dense_masked"


def dense_masked_experts_forward(
    self: torch.nn.Module, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
) -> torch.Tensor:
    """Every expert on every token, weighted by a dense [tokens, experts] routing matrix."""
    experts = torch.arange(self.num_experts, dtype=hidden_states.dtype)
    picked = (top_k_index.to(hidden_states.dtype).unsqueeze(-1) == experts).to(hidden_states.dtype)  # [T, k, E]
    route = (picked * top_k_weights.unsqueeze(-1)).sum(1)  # [T, E]
    up = self.gate_up_proj if self.has_gate else self.up_proj  # [E, out, in]
    out = torch.matmul(hidden_states.unsqueeze(0), up.transpose(1, 2))  # [E, T, out]
    out = self._apply_gate(out) if self.has_gate else self.act_fn(out)
    out = torch.matmul(out, self.down_proj.transpose(1, 2))  # [E, T, hidden]
    return (out * route.t().unsqueeze(-1)).sum(0).to(hidden_states.dtype)


def _use(model: torch.nn.Module, implementation: str) -> None:
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS

    ALL_EXPERTS_FUNCTIONS[DENSE] = dense_masked_experts_forward
    for module in model.modules():
        config = getattr(module, "config", None)
        if config is not None and hasattr(config, "_experts_implementation"):
            config._experts_implementation = implementation


GATHERED = tuple("fuse-ops{dense-experts=false}" if p == "fuse-ops" else p for p in DEFAULT_PIPELINE)
VARIANTS: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("gathered", "batched_mm", GATHERED),
    ("dense (fuse-ops)", "batched_mm", None),
    ("dense masked (model)", DENSE, None),
)
"""(label, transformers experts implementation, Forge pipeline: None is the default)."""


def measure(name: str, small: bool, layers: int | None, runs: int) -> list[dict[str, Any]]:
    seq = 16 if small else 128
    model = models.build_model(name, small=small, layers=None if small else layers)
    inputs = models.example_inputs(name, small=small, seq_len=seq)
    with torch.no_grad():
        eager = model(*inputs)
    rows = []
    for label, implementation, pipeline in VARIANTS:
        _use(model, implementation)
        start = time.perf_counter()
        compiled = forge_compile(model, inputs, name=f"{name}-{label}", pipeline=pipeline)
        compile_s = time.perf_counter() - start
        for _ in range(3):
            out = compiled(*inputs)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            compiled(*inputs)
            times.append(time.perf_counter() - t)
        report = compiled.report
        fired = sum(p["fired"].get("DenseExperts", 0) for p in report["passes"])
        rows.append({
            "model": name, "size": "small" if small else f"default widths, {layers} layers", "tokens": seq,
            "routing": label, "dense_experts_fired": fired, "compile_s": round(compile_s, 2),
            "latency_ms": round(statistics.median(times) * 1e3, 2), "cpu_ops": report["cpu_ops"],
            "transitions": report["transitions_after"], "max_abs_vs_eager": f"{(out - eager).abs().max().item():.1e}",
        })
    _use(model, "batched_mm")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mixtral", "qwen2-moe"])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--layers", type=int, default=2)
    args = parser.parse_args()
    keys = ("model", "size", "tokens", "routing", "dense_experts_fired", "compile_s", "latency_ms", "cpu_ops",
            "transitions", "max_abs_vs_eager")
    print("| " + " | ".join(keys) + " |")
    print("|" + " --- |" * len(keys))
    for name in args.models:
        for small in (True, False):
            for row in measure(name, small, args.layers, args.runs):
                print("| " + " | ".join(str(row[k]) for k in keys) + " |", flush=True)


if __name__ == "__main__":
    main()
