"""The zoo models (small variants), as imported and after the optimization pipeline: every
lowering stage computes the model's logits, allocation passes the checker, buffers are reused,
and scheduling groups the devices."""

from __future__ import annotations

import functools

import pytest

from forge.analysis import metrics
from lowering.affinity import AffinityPolicy
from tests.conftest import ZOO_CASES, imported_small_model
from tests.lowering.lowering_util import assert_lowering_preserves, optimized_copy

PINNED = AffinityPolicy.of(cpu_ops=["gather"], pin_final_norm=True)


@functools.cache
def optimized_small_model(name: str, attn: str):
    program, inputs, expected = imported_small_model(name, attn)
    module = optimized_copy(program.module, program.weights)
    return module, program.weights, inputs, expected


def _model(name: str, attn: str, optimized: bool):
    if optimized:
        return optimized_small_model(name, attn)
    program, inputs, expected = imported_small_model(name, attn)
    return program.module, program.weights, inputs, expected


@pytest.mark.parametrize("optimized", [False, True], ids=["raw", "optimized"])
@pytest.mark.parametrize("policy", [AffinityPolicy(), PINNED], ids=["npu-first", "pinned"])
@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_lowering_preserves_logits(name: str, attn: str, optimized: bool, policy: AffinityPolicy) -> None:
    module, weights, inputs, expected = _model(name, attn, optimized)
    stages = assert_lowering_preserves(module, weights, inputs, [expected], policy)
    plan = stages.plan
    # Physical buffers are at least 48% fewer than the values that need one.
    compute_vregs = plan.values - plan.transfers
    assert plan.buffers <= 0.52 * compute_vregs, plan
    assert plan.peak_bytes_planned < plan.peak_bytes_naive
    # The recorded numbers agree with what the metrics read off the IR.
    assert metrics.count_buffers(stages.buffer) == plan.buffers
    assert metrics.peak_bytes_planned(stages.buffer) == plan.peak_bytes_planned
    assert metrics.peak_bytes_naive(stages.buffer) == plan.peak_bytes_naive
    assert metrics.device_transitions(stages.scheduled) == stages.schedule.transitions_after
    assert metrics.device_transitions(stages.buffer) == stages.schedule.transitions_after
    assert metrics.device_transitions(stages.npuir) == stages.schedule.transitions_before
    assert stages.schedule.transitions_after <= stages.schedule.transitions_before


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_scheduling_cuts_transitions_of_imported_models(name: str, attn: str) -> None:
    """As imported, the models build masks and positions with integer ops the npu does not run,
    interleaved with the network: scheduling removes at least 65% of the transitions."""
    module, weights, inputs, expected = _model(name, attn, False)
    stages = assert_lowering_preserves(module, weights, inputs, [expected])
    before, after = stages.schedule.transitions_before, stages.schedule.transitions_after
    assert before >= 3
    assert after <= 0.35 * before, (before, after)
    assert len(metrics.segments(stages.buffer, "npu")) == 1


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_optimized_models_need_no_fallback(name: str, attn: str) -> None:
    module, weights, inputs, expected = optimized_small_model(name, attn)
    stages = assert_lowering_preserves(module, weights, inputs, [expected])
    assert not [op for op in stages.npuir.walk() if op.name == "npuir.aten"]
    # Everything runs on the npu but the graph input, which is transferred once.
    assert stages.schedule.transitions_after == 0
    assert stages.plan.transfers == 1
