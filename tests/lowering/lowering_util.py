"""Shared helpers for the lowering tests: run the lowering stages and check each one.

`optimized_copy(module, weights)` is a copy after the default optimization pipeline;
`lower_all(module, policy)` runs aten -> npuir -> schedule -> buffer on a clone and returns the
module after each stage; `assert_lowering_preserves(case_module, weights, inputs, expected)`
checks that every stage verifies, that the buffer IR passes the allocation checker, and that
interpreting every stage gives the expected outputs (1e-5; integers and booleans exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from forge.interpreter import interpret
from forge.pass_runner import run_pipeline
from forge.pipelines import DEFAULT_PIPELINE
from forge.transforms import PASSES
from forge.weights import WeightStore
from lowering import aten_to_npuir, npuir_to_buffer, schedule_device_affinity
from lowering.affinity import AffinityPolicy
from lowering.check_allocation import check_allocation
from lowering.function_lowering import LoweringStats

ATOL = 1e-5


@dataclass
class Stages:
    aten: ModuleOp
    npuir: ModuleOp
    scheduled: ModuleOp
    buffer: ModuleOp
    lowering: LoweringStats
    schedule: schedule_device_affinity.ScheduleStats
    plan: npuir_to_buffer.PlanStats


def optimized_copy(module: ModuleOp, weights: WeightStore) -> ModuleOp:
    """A copy of `module` (with `weights` attached) after the default optimization pipeline."""
    module = module.clone()
    run_pipeline(module, Context(), [PASSES[name]()() for name in DEFAULT_PIPELINE], weights=weights)
    return module


def assert_defined_before_use(module: ModuleOp) -> None:
    """Every operand is a block argument or the result of an earlier op (xDSL's verifier does
    not check dominance inside a block): the schedule respects data dependences."""
    for fn in module.ops:
        seen = set(fn.body.block.args)
        for op in fn.body.block.ops:
            for v in op.operands:
                assert v in seen, f"{op.name} reads a value defined later"
            seen.update(op.results)


def lower_all(module: ModuleOp, policy: AffinityPolicy | None = None) -> Stages:
    """Every stage of the lowering of `module` (left untouched), each verified."""
    policy = policy or AffinityPolicy()
    npuir = module.clone()
    lstats = aten_to_npuir.lower_module(npuir, policy)
    npuir.verify()
    scheduled = npuir.clone()
    sstats = schedule_device_affinity.schedule_module(scheduled)
    scheduled.verify()
    assert_defined_before_use(scheduled)
    buf = scheduled.clone()
    pstats = npuir_to_buffer.lower_module(buf)
    buf.verify()
    assert_defined_before_use(buf)
    check_allocation(buf)
    return Stages(module, npuir, scheduled, buf, lstats, sstats, pstats)


def assert_close(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} outputs, expected {len(want)}"
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape and g.dtype == w.dtype, (
            f"{what}: output {i} {g.dtype}{list(g.shape)} != {w.dtype}{list(w.shape)}"
        )
        if w.dtype.is_floating_point:
            torch.testing.assert_close(
                g, w, rtol=ATOL, atol=ATOL, equal_nan=True, msg=lambda m, i=i: f"{what}: output {i}: {m}"
            )
        else:
            assert torch.equal(g, w), f"{what}: output {i} differs"


def assert_lowering_preserves(
    module: ModuleOp,
    weights: WeightStore | None,
    inputs: Sequence[torch.Tensor],
    expected: Sequence[torch.Tensor] | None = None,
    policy: AffinityPolicy | None = None,
) -> Stages:
    """Lower `module` and check every stage computes `expected` (default: the aten IR's outputs)."""
    stages = lower_all(module, policy)
    want = list(expected) if expected is not None else list(interpret(module, weights, *inputs))
    for name in ("npuir", "scheduled", "buffer"):
        got = interpret(getattr(stages, name), weights, *inputs)
        assert_close(list(got), want, name)
    return stages
