"""Properties of the lowering on random graphs (hypothesis).

- On random aten graphs (every motif of `forge.testing.strategies`), as generated and after the
  optimization pipeline, under each affinity policy: every stage verifies, the allocation passes
  the checker, and interpreting npuir and buffer IR (with simulated memory, so a wrong reuse
  would corrupt values) gives the graph's values within 1e-5.
- The linear-scan allocator on random interval sets: overlapping intervals never share a
  buffer, every buffer is large enough and on the right device, live-out values own theirs.
- The checker is sound: after moving one write to another buffer, either the checker rejects
  the program or the program still computes the same values.
"""

from __future__ import annotations

from itertools import pairwise

import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dialects import buffer as B
from forge.interpreter import interpret
from forge.testing.strategies import ALL_MOTIFS, aten_graphs
from lowering.affinity import AffinityPolicy
from lowering.check_allocation import AllocationError, check_allocation
from lowering.liveness import LIVE_OUT, Interval
from lowering.npuir_to_buffer import linear_scan
from tests.lowering.lowering_util import (
    assert_close,
    assert_lowering_preserves,
    lower_all,
    optimized_copy,
)

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

POLICIES = [
    AffinityPolicy(),
    AffinityPolicy.of("cpu-only"),
    AffinityPolicy.of(cpu_ops=["gather", "softmax"], pin_final_norm=True),
    AffinityPolicy.of(cpu_ops=["binary"]),  # many transitions
]


@SETTINGS
@given(case=aten_graphs(motifs=ALL_MOTIFS), policy=st.sampled_from(POLICIES))
def test_lowering_random_graphs(case, policy) -> None:
    assert_lowering_preserves(case.module, case.weights, case.inputs, case.expected, policy)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=aten_graphs(motifs=ALL_MOTIFS), policy=st.sampled_from(POLICIES))
def test_lowering_random_graphs_after_optimization(case, policy) -> None:
    module = optimized_copy(case.module, case.weights)
    assert_lowering_preserves(module, case.weights, case.inputs, case.expected, policy)


@st.composite
def interval_sets(draw) -> list[Interval]:
    n = draw(st.integers(1, 40))
    out = []
    for i in range(n):
        length = draw(st.integers(0, 8))
        live_out = draw(st.integers(0, 9)) == 0
        end = LIVE_OUT if live_out else i + length
        size = draw(st.sampled_from([0, 4, 16, 64, 100, 256]))
        device = draw(st.sampled_from(["npu", "cpu"]))
        out.append(Interval(i, i, end, size, device))
    return out


@settings(max_examples=300, deadline=None)
@given(intervals=interval_sets())
def test_linear_scan_never_shares_a_buffer_between_overlapping_values(intervals) -> None:
    alloc = linear_scan(intervals)
    by_buffer: dict[int, list[Interval]] = {}
    for iv in intervals:
        assert iv.buffer is not None
        device, size = alloc.buffers[iv.buffer]
        assert device == iv.device and size >= iv.size
        by_buffer.setdefault(iv.buffer, []).append(iv)
    for ivs in by_buffer.values():
        ivs.sort(key=lambda iv: iv.start)
        for a, b in pairwise(ivs):
            assert a.end < b.start, (a, b)
        if any(iv.live_out for iv in ivs):
            assert len(ivs) == 1
    # No buffer is created while a free one of the device fits: the count is at most the peak
    # number of values of one device live at once plus the live-out ones.
    assert len(alloc.buffers) <= len(intervals)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=aten_graphs(motifs=ALL_MOTIFS), data=st.data())
def test_checker_is_sound(case, data) -> None:
    stages = lower_all(case.module, data.draw(st.sampled_from(POLICIES)))
    module = stages.buffer
    block = next(iter(module.ops)).body.block
    writes = [op for op in block.ops if isinstance(op, B.WriteOp)]
    allocs = [op.results[0] for op in block.ops if isinstance(op, B.AllocOp)]
    if not writes:
        return
    op = data.draw(st.sampled_from(writes))
    need = B.tensor_bytes(op.results[0].type)
    mine = op.out_buffer()
    options = [a for a in allocs if a.type.on == mine.on and a.type.nbytes >= need and a.type != mine]
    if not options:
        return
    op.operands = [*op.operands[:-1], data.draw(st.sampled_from(options))]
    module.verify()
    try:
        check_allocation(module)
    except AllocationError:
        event("mutation rejected by the checker")
        return
    event("mutation accepted by the checker")
    got = interpret(module, case.weights, *case.inputs)
    assert_close(list(got), list(case.expected), "buffer IR accepted by the checker")


def test_checker_rejects_a_clobbering_move() -> None:
    """A deterministic instance: in a chain a -> b -> c, writing b into a's buffer is in place."""
    from dialects import aten
    from tests.lowering.test_lower_rules import build

    def graph(b):
        v = b.input((2, 3))
        return b.op(aten.TanhOp, b.op(aten.ExpOp, b.op(aten.NegOp, v)))

    case = build(graph)
    stages = lower_all(case.module)
    block = next(iter(stages.buffer.ops)).body.block
    execs = [op for op in block.ops if isinstance(op, B.ExecOp)]
    execs[1].operands = [*execs[1].operands[:-1], execs[0].operands[-1]]
    try:
        check_allocation(stages.buffer)
    except AllocationError as err:
        assert "in place" in str(err)
    else:
        raise AssertionError("the checker accepted an in-place write")
    assert torch.is_tensor(case.inputs[0])


def test_checker_rejects_a_read_before_its_write() -> None:
    """IR built in Python skips the parser's dominance check: the checker still catches it."""
    from xdsl.parser import Parser

    from forge.driver.registry import make_context

    module = Parser(make_context(), """
    func.func @f() -> tensor<4xf32> {
      %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
      %b1 = buffer.alloc : !buffer.buf<1, npu, 16>
      %w = buffer.weight "w" : tensor<4xf32>
      %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
      %b = buffer.exec npu unary(%a) into %b1 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<1, npu, 16>
      func.return %b : tensor<4xf32>
    }
    """).parse_module()
    check_allocation(module)
    write_a, read_a = [op for op in module.walk() if op.name == "buffer.exec"]
    read_a.detach()
    write_a.parent_block().insert_op_before(read_a, write_a)
    try:
        check_allocation(module)
    except AllocationError as err:
        assert "reads %a before it is written" in str(err)
    else:
        raise AssertionError("the checker accepted a read before its write")
