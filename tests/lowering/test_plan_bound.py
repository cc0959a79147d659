"""The memory plan against its lower bound: `peak_live_bytes` is the largest per-device sum of
simultaneously live sizes (checked against a brute force), no plan beats it, every planner
produces a valid placement (no two simultaneously live values share a byte, checked pairwise
here and by `check_placement`) no worse than naive, `best` is the smallest of them, equal-sized
values are planned exactly at the bound, offsets split a dead large value's bytes between two
small ones (what no buffer plan can), and on a small zoo model the recorded bound is what the
buffer IR's own liveness gives."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.analysis import metrics
from lowering.greedy_by_size import greedy_by_size, grow_in_order
from lowering.liveness import (
    LIVE_OUT,
    Interval,
    buffer_liveness,
    hold_segment_inputs,
    live_ranges,
    peak_live_bytes,
    segment_runs,
)
from lowering.npuir_to_buffer import PLANNERS, aligned_floor, linear_scan, plan
from lowering.offset_planner import ALIGNMENT, Placement, PlacementError, align, check_placement, group_buffers
from lowering.stats import functions
from tests.conftest import imported_small_model
from tests.lowering.lowering_util import lower_all


def _brute_force(intervals: list[Interval]) -> int:
    last = max([iv.start for iv in intervals] + [iv.end for iv in intervals if iv.end != LIVE_OUT], default=0)
    total = 0
    for device in {iv.device for iv in intervals}:
        mine = [iv for iv in intervals if iv.device == device]
        total += max(sum(iv.size for iv in mine if iv.start <= t <= (last if iv.live_out else iv.end))
                     for t in range(last + 1))
    return total


def _check_plan(intervals: list[Interval], buffers: list[tuple[str, int]], assignment: list[int]) -> None:
    """Each value fits its buffer, on its device, and values sharing a buffer never overlap."""
    held: dict[int, list[Interval]] = {}
    for iv, bid in zip(intervals, assignment, strict=True):
        device, size = buffers[bid]
        assert device == iv.device and size >= iv.size
        held.setdefault(bid, []).append(iv)
    for ivs in held.values():
        ivs.sort(key=lambda iv: iv.start)
        for a, b in zip(ivs, ivs[1:], strict=False):
            assert a.end < b.start, (a, b)


def _check_placement(intervals: list[Interval], placed: Placement) -> None:
    """Pairwise: two values live at once on one device never share a byte; all aligned, in their arena;
    the buffer views hold one value at a time and contain each of their values."""
    for i, a in enumerate(intervals):
        lo = placed.offsets[i]
        assert lo % ALIGNMENT == 0 and lo + a.size <= placed.arenas[a.device]
        for j in range(i + 1, len(intervals)):
            b, other = intervals[j], placed.offsets[j]
            if a.device == b.device and a.overlaps(b) and a.size and b.size:
                assert lo + a.size <= other or other + b.size <= lo, (a, lo, b, other)
    check_placement(intervals, placed)
    views = group_buffers(intervals, placed)
    held: dict[int, list[Interval]] = {}
    for iv, off, bid in zip(intervals, placed.offsets, views.assignment, strict=True):
        device, offset, size = views.buffers[bid]
        assert (device, offset) == (iv.device, off) and size >= iv.size
        held.setdefault(bid, []).append(iv)
    for ivs in held.values():
        ivs.sort(key=lambda iv: iv.start)
        for a, b in zip(ivs, ivs[1:], strict=False):
            assert a.end < b.start, (a, b)


SIZES = st.sampled_from([16, 64, 100, 256, 1024, 1000])


@st.composite
def schedules(draw, sizes=SIZES) -> list[Interval]:
    """Values defined one per step, each read up to 6 steps later or returned."""
    n = draw(st.integers(1, 24))
    out = []
    for i in range(n):
        end = LIVE_OUT if draw(st.integers(0, 7)) == 0 else min(n - 1, i + draw(st.integers(0, 6)))
        out.append(Interval(i, i, end, draw(sizes), draw(st.sampled_from(["npu", "npu", "cpu"]))))
    return out


def test_bound_of_hand_built_intervals() -> None:
    chain = [Interval("a", 0, 1, 64, "npu"), Interval("b", 1, 2, 64, "npu"), Interval("c", 2, LIVE_OUT, 16, "npu")]
    assert peak_live_bytes(chain) == 128  # a and b are both live at step 1 (b reads a)
    # Buffers are per device: the npu peak and the cpu peak add up even at different steps.
    two = [Interval("x", 0, 0, 100, "npu"), Interval("y", 1, 1, 40, "cpu"), Interval("z", 2, 2, 50, "npu")]
    assert peak_live_bytes(two) == 140
    assert peak_live_bytes([]) == 0


@settings(max_examples=150, deadline=None)
@given(schedules())
def test_bound_is_the_brute_force_peak_and_no_plan_beats_it(intervals: list[Interval]) -> None:
    bound = peak_live_bytes(intervals)
    assert bound == _brute_force(intervals)
    for planner in (greedy_by_size, grow_in_order):
        buffers, assignment = planner(intervals)
        _check_plan(intervals, buffers, assignment)
    scan = linear_scan(intervals)
    _check_plan(intervals, scan.buffers, [iv.buffer for iv in intervals])
    naive = sum(align(iv.size) for iv in intervals)  # offsets are aligned: the naive plan's too
    floor = aligned_floor(intervals)  # where `best` may stop early
    assert bound <= floor
    planned = {}
    for name in PLANNERS:
        placed = plan(intervals, name)
        _check_placement(intervals, placed)
        assert floor <= placed.planned_bytes <= naive, name
        planned[name] = placed.planned_bytes
    assert planned["best"] == min(planned.values())


def test_an_invalid_placement_is_refused() -> None:
    a, b = Interval("a", 0, 1, 64, "npu"), Interval("b", 1, 2, 64, "npu")
    check_placement([a, b], Placement([0, 64], {"npu": 128}))
    check_placement([a, Interval("c", 2, 3, 64, "npu")], Placement([0, 0], {"npu": 64}))  # a is dead
    with pytest.raises(PlacementError, match="live at once and overlap"):
        check_placement([a, b], Placement([0, 0], {"npu": 128}))
    with pytest.raises(PlacementError, match="not a non-negative multiple of 64"):
        check_placement([a], Placement([32], {"npu": 128}))
    with pytest.raises(PlacementError, match="past the npu arena"):
        check_placement([a], Placement([64], {"npu": 64}))


def test_offsets_split_a_dead_large_value_between_two_small_ones() -> None:
    """%big (128 bytes) dies; %x and %y (64 each) are then live together: a buffer holds one value at
    a time, so the buffer plans need 128 + 64; offsets put both in %big's bytes (the bound, 128)."""
    intervals = [Interval("big", 0, 1, 128, "npu"), Interval("x", 2, 4, 64, "npu"), Interval("y", 3, 4, 64, "npu")]
    assert peak_live_bytes(intervals) == 128
    for name in ("linear-scan", "greedy-by-size", "grow-in-order"):
        assert plan(intervals, name).planned_bytes == 192, name
    best = plan(intervals)
    assert best.planned_bytes == 128 and sorted(best.offsets[1:]) == [0, 64]


@settings(max_examples=100, deadline=None)
@given(schedules(sizes=st.just(64)))
def test_equal_sizes_are_planned_at_the_bound(intervals: list[Interval]) -> None:
    """With one size per device, largest first is left-endpoint order: optimal interval colouring."""
    buffers, _ = greedy_by_size(intervals)
    assert sum(size for _, size in buffers) == peak_live_bytes(intervals)


def test_grow_in_order_reaches_the_bound_where_largest_first_does_not() -> None:
    """ResNet's pattern: a small value spanning two large ones; largest first gives the small values
    a fourth buffer, schedule order grows a free small buffer instead (3 x 8 bytes: the bound)."""
    shape = [(2, 6, 2), (3, 4, 2), (4, 5, 2), (5, 7, 8), (6, 7, 8), (7, 8, 8)]
    intervals = [Interval(i, s, e, z * ALIGNMENT, "npu") for i, (s, e, z) in enumerate(shape)]
    assert peak_live_bytes(intervals) == 24 * ALIGNMENT
    assert sum(size for _, size in greedy_by_size(intervals)[0]) == 26 * ALIGNMENT
    assert sum(size for _, size in grow_in_order(intervals)[0]) == 24 * ALIGNMENT
    assert plan(intervals, "grow-in-order").planned_bytes == plan(intervals).planned_bytes == 24 * ALIGNMENT


def test_segment_outputs_never_share_an_input_s_bytes() -> None:
    """%y, the segment's output, is written after its input %x was last read (op by op it could take
    %x's bytes); as a conflict it gets bytes of its own, and the placement is checked against it."""
    from lowering.liveness import segment_bound, segment_conflicts
    from lowering.offset_planner import by_size

    steps = [("x", []), ("a", ["x"]), ("y", ["a"]), ("z", ["y"])]  # x: cpu; a, y: one npu segment
    ranges = live_ranges(steps, ["z"])
    runs = segment_runs(["end", "npu", "npu", "end"])
    assert segment_conflicts(ranges, [reads for _, reads in steps], runs) == [("y", "x")]
    intervals = [Interval(k, *ranges[k], 64, "npu") for k in ("x", "a", "y", "z")]
    assert by_size(intervals).offsets[2] == by_size(intervals).offsets[0]  # op by op: y reuses x's bytes
    placed = by_size(intervals, {2: [0], 0: [2]})
    assert placed.offsets[2] != placed.offsets[0]
    # x, a, y pairwise exclusive: a overlaps both in time, y must avoid x's bytes
    assert peak_live_bytes(intervals) == 128 and segment_bound(intervals, [("y", "x")]) == 192 == placed.planned_bytes
    check_placement(intervals, placed, {2: [0], 0: [2]})
    with pytest.raises(PlacementError, match="must not share bytes"):
        check_placement(intervals, by_size(intervals), {2: [0]})


def test_a_returned_output_takes_its_inputs_bytes_only_where_that_saves_bytes() -> None:
    """phi3's logits in miniature: the returned %o (256 bytes, step 4) is written by the segment that
    reads %i1 and %i2 (live together at step 2, dead before step 4). Kept out of both, the plan needs
    o + i1 + i2 = 384 bytes: the segment bound, which counts every input live with another (one input
    per clique gave 320). With the pairs soft the plan reaches the op-by-op bound, 320 (%o and %v)."""
    from lowering.liveness import segment_bound, segment_conflicts

    steps = [("i1", []), ("i2", []), ("a", ["i1", "i2"]), ("v", ["a"]), ("o", ["v"])]
    ranges = live_ranges(steps, ["o"])
    runs = segment_runs(["end", "end", "npu", "npu", "npu"])
    reads = [r for _, r in steps]
    pairs = segment_conflicts(ranges, reads, runs, live_out=True)
    assert sorted(pairs) == [("o", "i1"), ("o", "i2")]
    assert segment_conflicts(ranges, reads, runs) == []  # returned values are exempt by default
    sizes = {"i1": 64, "i2": 64, "a": 0, "v": 64, "o": 256}
    intervals = [Interval(k, *ranges[k], sizes[k], "npu") for k, _ in steps]
    soft = {4: [0, 1], 0: [4], 1: [4]}
    held = dict(ranges)
    hold_segment_inputs(held, reads, runs)  # the buffer planners' form of the pairs
    held_intervals = [Interval(k, *held[k], sizes[k], "npu") for k, _ in steps]
    assert peak_live_bytes(intervals) == 320 and segment_bound(intervals, pairs) == 384
    strict = plan(intervals, "best", soft, held_intervals)
    check_placement(intervals, strict, soft)
    assert strict.planned_bytes == 384
    relaxed = plan(intervals, "best", None, held_intervals, soft)
    check_placement(intervals, relaxed)
    assert relaxed.planned_bytes == 320


@st.composite
def segmented(draw) -> tuple[list[Interval], list[Interval], list[tuple], dict, dict]:
    """A random schedule with NPU runs: (intervals, the same with segment inputs held, all (output,
    input) pairs, hard, soft)."""
    from lowering.liveness import segment_conflicts

    n = draw(st.integers(1, 20))
    steps, kinds = [], []
    for i in range(n):
        back = draw(st.lists(st.integers(1, 6), max_size=2))
        steps.append((i, sorted({i - b for b in back if i - b >= 0})))
        kinds.append(draw(st.sampled_from(["npu", "npu", "end"])))
    ranges = live_ranges(steps, draw(st.sets(st.integers(0, n - 1), max_size=3)))
    reads, runs = [r for _, r in steps], segment_runs(kinds)
    pairs = segment_conflicts(ranges, reads, runs, live_out=True)
    held = dict(ranges)
    hold_segment_inputs(held, reads, runs)
    intervals = [Interval(i, *ranges[i], draw(SIZES), "npu" if kinds[i] == "npu" else "cpu") for i in range(n)]
    held_intervals = [Interval(i, *held[i], iv.size, iv.device) for i, iv in enumerate(intervals)]
    hard: dict[int, list[int]] = {}
    soft: dict[int, list[int]] = {}
    pairs = [(o, i) for o, i in pairs if intervals[o].device == intervals[i].device]  # npu reads npu values
    for out, inp in pairs:
        kind = soft if ranges[out][1] == LIVE_OUT else hard
        kind.setdefault(out, []).append(inp)
        kind.setdefault(inp, []).append(out)
    return intervals, held_intervals, pairs, hard, soft


@settings(max_examples=150, deadline=None)
@given(segmented())
def test_soft_pairs_never_make_a_plan_larger_and_the_segment_bound_holds(case) -> None:
    """Every plan honours the hard pairs; with the returned values' pairs soft, `best` is never larger
    than with them hard (the previous rule) nor below the op-by-op bound; with them hard it is never
    below `segment_bound` of every pair."""
    from lowering.liveness import segment_bound

    intervals, held, pairs, hard, soft = case
    merged = {i: hard.get(i, []) + soft.get(i, []) for i in set(hard) | set(soft)}
    before = plan(intervals, "best", merged, held)
    check_placement(intervals, before, merged)
    assert before.planned_bytes >= segment_bound(intervals, pairs)
    for name in PLANNERS:
        after = plan(intervals, name, hard, held, soft)
        check_placement(intervals, after, hard)
        assert peak_live_bytes(intervals) <= after.planned_bytes
        if name == "best":
            assert after.planned_bytes <= before.planned_bytes


def test_segment_inputs_are_held_to_the_segment_end() -> None:
    """Declarations neither join nor end an NPU run; an input of a run lives to its last step, values
    defined inside the run keep their own ranges."""
    assert segment_runs(["skip", "npu", "npu", "end", "npu", "skip", "npu", "end"]) == [(1, 2), (4, 6)]
    assert segment_runs(["end", "skip"]) == [] and segment_runs(["npu"]) == [(0, 0)]
    # x (cpu) read at step 1 only; a (npu, step 1) read at 2; b (npu, step 2) read at 3 (npu)
    steps = [("x", []), ("a", ["x"]), ("b", ["a"]), ("c", ["b"])]
    ranges = live_ranges(steps, ["c"])
    hold_segment_inputs(ranges, [reads for _, reads in steps], segment_runs(["end", "npu", "npu", "npu"]))
    assert ranges == {"x": (0, 3), "a": (1, 2), "b": (2, 3), "c": (3, LIVE_OUT)}


def test_small_gpt2_bound_matches_the_buffer_ir() -> None:
    program, _, _ = imported_small_model("gpt2", "sdpa")
    stages = lower_all(program.module)  # runs the allocation checker
    recorded = stages.plan
    from_ir = sum(peak_live_bytes(buffer_liveness(fn.body.block)) for fn in functions(stages.buffer))
    assert recorded.peak_bytes_lower_bound == from_ir > 0
    assert recorded.peak_bytes_lower_bound <= recorded.peak_bytes_planned <= recorded.peak_bytes_naive
    assert metrics.peak_bytes_planned(stages.buffer) == recorded.peak_bytes_planned


RETURNED_NPUIR = """
func.func @returned(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<4x8xf32>
  %a = npuir.unary npu %x0 {kind = exp, vreg = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npuir.unary npu %a {kind = exp, vreg = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}
"""


def test_a_returned_output_in_an_input_s_bytes_runs_correctly_on_both_executor_paths() -> None:
    """filecheck/lowering/npuir-to-buffer-segment-outputs.mlir's @returned, lowered and run: %y takes
    %x0_npu's bytes, the emitter marks it staged, the executor binds it directly (no staging copy);
    the copy-out path stages it; both give exp(exp(x)), bit for bit the same."""
    from xdsl.parser import Parser

    from backends.nnfactory.emitter import emit
    from backends.nnfactory.executor import CompiledNPUExecutor, RunSegment
    from forge.driver.registry import make_context
    from lowering.npuir_to_buffer import LowerNpuirToBufferPass

    module = Parser(make_context(), RETURNED_NPUIR).parse_module()
    LowerNpuirToBufferPass().apply(make_context(), module)
    program = emit(module, None)
    (seg,) = program.segments
    assert seg.staged == (True,) and program.planned_bytes == 256
    direct, copy = CompiledNPUExecutor(program), CompiledNPUExecutor(program, direct_outputs=False)
    (run,) = [i for i in direct.instructions if isinstance(i, RunSegment)]
    (old,) = [i for i in copy.instructions if isinstance(i, RunSegment)]
    assert run.copies == [] and len(old.copies) == 1
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    (got,) = direct(x)
    assert torch.equal(got, copy(x)[0])
    torch.testing.assert_close(got, torch.exp(torch.exp(x)))
