"""The model zoo's row of the coverage page: each family (forge.models, small variant) compiled
with forge.compile (OpenVINO, CPU) and checked against eager.

`zoo_results()` gives one `ZooResult` per family: the outcome, ops imported / after optimization,
the CPU-fallback ops ({aten op: count}) and all CPU steps, the NPU's share of the compute steps
and of their estimated time (the cost model's), device transitions before / after scheduling,
parity (max |diff|, KL) and compile time. A family that fails says at which stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from forge.diagnostics import one_line


@dataclass
class ZooResult:
    family: str
    attn: str
    status: str
    """`pass`, `fail` (parity beyond the compiler's fp32 bounds) or `error` (a stage raised)."""
    reason: str = ""
    ops_imported: int | None = None
    ops_optimized: int | None = None
    cpu_fallback: dict[str, int] = field(default_factory=dict)
    cpu_ops: int | None = None
    transitions_before: int | None = None
    transitions_after: int | None = None
    max_abs: float | None = None
    kl: float | None = None
    compile_s: float | None = None
    npu_op_share: float | None = None
    npu_time_share: float | None = None


MAX_ABS = 1e-4
"""The parity bound for a zoo model on the page (fp32, random weights, a few layers)."""


def zoo_results(progress: Callable[[ZooResult], None] | None = None) -> list[ZooResult]:
    from forge import models  # the zoo: transformers is imported only when the page is made

    results = []
    for name in models.ZOO:
        result = zoo_result(name, models.default_attn(name))
        results.append(result)
        if progress is not None:
            progress(result)
    return results


def zoo_result(name: str, attn: str) -> ZooResult:
    from forge import models
    from forge.driver.compiler import compile as forge_compile  # the driver this row measures

    stage = "build"
    try:
        model = models.build_model(name, attn=attn, small=True)
        inputs = models.example_inputs(name, small=True, seq_len=16)
        stage = "compile"
        start = time.perf_counter()
        compiled = forge_compile(model, inputs, check=True, name=name)
        seconds = time.perf_counter() - start
    except Exception as err:  # any stage's error is the row's reason
        return ZooResult(name, attn, "error", f"{stage}: {type(err).__name__}: {_first_line(err)}")
    report = compiled.report
    parity = report["parity"]
    ok = parity["max_abs"] <= MAX_ABS
    return ZooResult(
        name, attn, "pass" if ok else "fail", "" if ok else f"max |diff| {parity['max_abs']:.3g} > {MAX_ABS:g}",
        report["ops_imported"], report["ops_optimized"], report.get("cpu_fallback", {}), report.get("cpu_ops"),
        report["transitions_before"], report["transitions_after"], parity["max_abs"], parity["kl"],
        round(seconds, 2), report["npu_op_share"], report["npu_time_share"],
    )


def _first_line(err: BaseException) -> str:
    text = one_line(str(err))
    return text if len(text) <= 200 else text[:197] + "..."


def as_row(result: ZooResult) -> dict[str, Any]:
    return dict(vars(result))

