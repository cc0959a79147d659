"""Fidelity (issue 7 item 7): Forge's logits against eager PyTorch over `SEQUENCES` random token
sequences (batch 1, sequence 128, seeds 0..N-1, uniform over the vocabulary).

Per sequence: max |logit difference| and the mean over positions of KL(softmax(eager) ||
softmax(forge)), in float64 (`forge.driver.parity.parity`). Reported: the max of the max |diff| and
the mean of the KL over all sequences, with their spread. OpenVINO direct and ONNX Runtime are
measured on the same sequences as context: what an fp32 CPU runtime's kernels give on their own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from bench import common, peers

SEQUENCES = 100
QUICK_SEQUENCES = 3
SYSTEMS = ("forge", "openvino", "onnxruntime")
TARGETS = {"max_abs": 2.1e-5, "kl": 8.4e-9}


def run(quick: bool = False) -> dict[str, Any]:
    n = QUICK_SEQUENCES if quick else SEQUENCES
    config = {"sequences": n, "seq_len": common.seq_len(quick), "small_models": quick,
              "models": [m.label for m in common.models(quick)], "systems": list(SYSTEMS)}
    with common.recorded("fidelity", quick, config) as result:
        result["models"] = {spec.label: _measure(spec, quick, n) for spec in common.models(quick)}
    return result


def _measure(spec: common.ModelSpec, quick: bool, n: int) -> dict[str, Any]:
    from forge.driver.parity import parity

    model, inputs = common.model_and_inputs(spec, quick)
    built = {system: peers.build(system, model, inputs) for system in SYSTEMS}
    per_seq: dict[str, list[dict[str, float]]] = {s: [] for s in SYSTEMS}
    logit_scale = 0.0
    for seed in range(n):
        (ids,) = common.token_batch(spec, quick, seed)
        with torch.no_grad():
            expected = model(ids)
        logit_scale = max(logit_scale, expected.abs().max().item())
        for system in SYSTEMS:
            row = parity(expected, built[system].run(ids))
            row["seed"] = seed
            per_seq[system].append(row)
    del built
    return {"layers": model.config.num_hidden_layers, "max_abs_logit": logit_scale,
            "per_sequence": per_seq, "summary": {s: _summary(rows) for s, rows in per_seq.items()}}


def _summary(rows: list[dict[str, float]]) -> dict[str, float]:
    max_abs = [r["max_abs"] for r in rows]
    kl = [r["kl"] for r in rows]
    worst = max(rows, key=lambda r: r["max_abs"])
    return {"max_abs": max(max_abs), "median_max_abs": common.median(max_abs), "worst_seed": worst["seed"],
            "kl_mean": sum(kl) / len(kl), "kl_max": max(kl), "n": len(rows)}


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, mr in result["models"].items():
        s = mr["summary"]
        context = ", ".join(f"{p} {s[p]['max_abs']:.2e} / {s[p]['kl_mean']:.2e}" for p in SYSTEMS if p != "forge")
        why = (f"logits reach |{mr['max_abs_logit']:.1f}|, so {s['forge']['max_abs']:.2e} is "
               f"{s['forge']['max_abs'] / mr['max_abs_logit']:.1e} relative (worst seed {s['forge']['worst_seed']}); "
               f"the peers' max |diff| / KL on the same sequences: {context} (fp32 kernel summation order)")
        rows.append(common.target_row(f"{label}: max |logit diff| vs eager ({s['forge']['n']} sequences)",
                                      s["forge"]["max_abs"], TARGETS["max_abs"], higher_is_better=False, why=why))
        rows.append(common.target_row(f"{label}: mean KL vs eager", s["forge"]["kl_mean"], TARGETS["kl"],
                                      higher_is_better=False, why=why))
    return rows


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = ["## Fidelity\n",
           f"{cfg['sequences']} random token sequences (seeds 0..{cfg['sequences'] - 1}), batch 1, sequence "
           f"{cfg['seq_len']}: logits of each system against eager PyTorch, in float64. OpenVINO direct and ONNX "
           "Runtime are context (the same fp32 model through another runtime).\n"]
    out.append(_figure(result, figures))
    for label, mr in result["models"].items():
        rows = [[f"**{sys}**" if sys == "forge" else sys, common.sci(s["max_abs"]), common.sci(s["median_max_abs"]),
                 common.sci(s["kl_mean"]), common.sci(s["kl_max"]), s["n"]]
                for sys, s in mr["summary"].items()]
        out.append(f"### {label} ({mr['layers']} layers; largest |logit| {mr['max_abs_logit']:.1f})\n")
        out.append(common.table(["system", "max abs diff", "median per-sequence max", "mean KL", "max KL", "sequences"],
                                rows))
    return "\n".join(out)


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, len(labels), figsize=(5.6 * len(labels), 3.4), squeeze=False)
    for ax, label in zip(axes[0], labels, strict=True):
        per_seq = result["models"][label]["per_sequence"]
        data = [[max(r["max_abs"], 1e-12) for r in per_seq[s]] for s in SYSTEMS]
        ax.boxplot(data, tick_labels=list(SYSTEMS))
        ax.axhline(TARGETS["max_abs"], color="#d62728", ls="--", lw=1, label="target 2.1e-5")
        ax.set_yscale("log")
        ax.set_ylabel("max |logit diff| per sequence")
        ax.set_title(f"{label}: fidelity vs eager", fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return common.save_figure(fig, figures, "fidelity", "max logit difference per sequence")
