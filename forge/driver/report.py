"""What the compile report says about the IR and the call: op counts, the memory plan's figures, the
steps left on the CPU, the weights the IR reads, and how the model's call was compiled.

Pure reads of a module, a signature and the stage times; `compile_report` assembles the fields every
`forge.compile` report has (the `forge compile --report` JSON).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch.utils._pytree as pytree
from xdsl.dialects.builtin import ModuleOp

from forge.analysis import metrics
from forge.driver.cost_model import exec_cost

if TYPE_CHECKING:
    from forge.driver.compilation import Compilation
    from forge.frontend.export import CallSignature, CastPolicy
    from forge.pass_runner import PassRecord


def count_body_ops(module: ModuleOp) -> int:
    """Ops inside functions (what a graph has), not counting the module/func wrappers."""
    return sum(1 for op in module.walk() if op.name not in ("builtin.module", "func.func", "func.return"))


def count_ops_named(module: ModuleOp, name: str) -> int:
    return sum(1 for op in module.walk() if op.name == name)


def used_weights(module: ModuleOp) -> set[str]:
    """The names of the weights the IR reads (`aten.weight`, `npuir.weight`, `buffer.weight`)."""
    return {op.properties["name"].data for op in module.walk() if op.name.endswith(".weight")}


def compile_report(c: Compilation) -> dict[str, Any]:
    """The passes, op counts, plan and program figures of one compile, its runtime settings and modes (the
    stage times are added when the compile's stage list has run: `Compilation.account_wall_clock`)."""
    program = c.executor.program
    return {
        "model": c.options.name or type(c.model).__name__,
        "runtime": c.options.runtime,
        "device": c.options.device,
        "passes": pass_rows(c.records),
        "ops_imported": c.counts["ops_imported"],
        "ops_optimized": c.counts["ops_optimized"],
        "fused_attention": c.counts["fused_attention"],
        "frontend_steps": [r.to_json() for r in c.imported.normalization],
        **plan_metrics(c.module),
        **cpu_steps(c.module),
        **device_shares(c.module),
        "segments": len(program.segments),
        "weight_bytes": c.weights.subset(used_weights(c.module)).nbytes,  # what the program reads (and saves)
        "precision": c.options.precision,
        "weights": c.options.weights or "f32",
        "activations": c.options.activations or "f32",
        "runtime_config": program.runtime.config(),
    }


def pass_rows(records: list[PassRecord]) -> list[dict[str, Any]]:
    """The report's `passes`: each pass run's name, wall ms, ops before/after and pattern fires."""
    return [
        {"name": r.name, "ms": round(r.wall_ms, 3), "ops_before": r.ops_before, "ops_after": r.ops_after,
         "fired": dict(r.fired)}
        for r in records
    ]


def call_report(signature: CallSignature | None, cast: CastPolicy | None) -> dict[str, Any]:
    """What the inputs were (names, shapes, dtypes, positional or keyword), the output structure,
    the cast policy, and one-line notes on how the model's call was compiled."""
    if signature is None:
        return {"cast_policy": cast.to_json() if cast is not None else None}
    notes = []
    caches = sorted({t.__name__ for t in _spec_types(signature.out_spec) if "Cache" in t.__name__})
    if caches:
        notes.append(
            f"the model returns its KV cache ({', '.join(caches)}, use_cache default): its key/value tensors are "
            "outputs, returned as the same cache type; pass kwargs={'use_cache': False} to compile without them"
        )
    if cast is not None:
        notes.append(cast.note())
    return {
        "inputs": signature.describe(),
        "outputs": signature.output_structure(),
        "cast_policy": cast.to_json() if cast is not None else None,
        "notes": notes,
    }


def _spec_types(spec: pytree.TreeSpec) -> list[type]:
    if spec is None or spec.is_leaf():
        return []
    return [spec.type, *(t for child in spec.children() for t in _spec_types(child))]


def plan_metrics(module: ModuleOp) -> dict[str, int]:
    """The memory plan's figures (`forge.analysis.metrics`): registers, buffers, peak bytes, transitions."""
    summary = metrics.report(module)
    return {
        "vregs": summary["plan"]["vregs"],
        "buffers": summary["buffers"],
        "peak_bytes_naive": summary["peak_bytes_naive"],
        "peak_bytes_planned": summary["peak_bytes_planned"],
        "peak_bytes_lower_bound": summary["plan"]["peak_bytes_lower_bound"],
        "transitions_before": summary["schedule"]["transitions_before"],
        "transitions_after": summary["schedule"]["transitions_after"],
        "moved_to_cpu": summary["schedule"]["moved_to_cpu"],
    }


def device_shares(module: ModuleOp) -> dict[str, Any]:
    """The NPU's part of the compute steps (`buffer.exec`), by count and by the cost model's estimated
    time (`forge.driver.cost_model.exec_cost`; transfers left out: the transitions count those)."""
    steps = {"npu": 0, "cpu": 0}
    micros = {"npu": 0.0, "cpu": 0.0}
    for op in module.walk():
        if op.name == "buffer.exec":
            device, cost = exec_cost(op)
            steps[device] += 1
            micros[device] += cost.total
    total_steps, total_us = sum(steps.values()), sum(micros.values())
    return {
        "npu_ops": steps["npu"],
        "npu_op_share": round(steps["npu"] / total_steps, 4) if total_steps else 1.0,
        "npu_time_share": round(micros["npu"] / total_us, 4) if total_us else 1.0,
    }


def cpu_steps(module: ModuleOp) -> dict[str, Any]:
    """What runs on the CPU after lowering, read off the buffer IR's `buffer.exec` steps.

    `cpu_fallback`: {aten op name: count} of the `aten` kind (an op with no NPU lowering, run
    unchanged on the host); `cpu_ops`: every compute step on the CPU, fallback or not (a kind
    the affinity scheduler kept on the host counts here too).
    """
    fallback: dict[str, int] = {}
    cpu_ops = 0
    for op in module.walk():
        if op.name != "buffer.exec" or op.device.data.value != "cpu":
            continue
        cpu_ops += 1
        if op.kind.data == "aten":
            name = op.params.data["op"].data
            fallback[name] = fallback.get(name, 0) + 1
    return {"cpu_fallback": dict(sorted(fallback.items())), "cpu_ops": cpu_ops}
