"""Live intervals: the generic computation and its npuir / buffer views."""

from __future__ import annotations

from xdsl.parser import Parser

from forge.driver.registry import make_context
from lowering.liveness import LIVE_OUT, buffer_liveness, live_ranges, npuir_liveness
from lowering.npuir_to_buffer import lower_module

DIAMOND = """
func.func @diamond() -> tensor<4x4xf32> {
  %w = npuir.weight npu {name = "w", vreg = 0} : tensor<4x4xf32>
  %a = npuir.unary npu %w {kind = exp, vreg = 1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %l = npuir.unary npu %a {kind = tanh, vreg = 2} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = npuir.unary npu %a {kind = neg, vreg = 3} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %dead = npuir.unary npu %a {kind = neg, vreg = 4} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %j = npuir.binary npu %l, %r {kind = add, vreg = 5} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %j : tensor<4x4xf32>
}
"""


def test_live_ranges_reads_before_defs_and_live_out() -> None:
    steps = [("a", []), ("b", ["a", "w"]), ("c", ["a"]), (None, ["b"]), ("d", ["c"])]
    ranges = live_ranges(steps, live_out=["d", "w"])
    assert ranges == {"a": (0, 2), "b": (1, 3), "c": (2, 4), "d": (4, LIVE_OUT)}


def test_npuir_liveness_of_a_diamond() -> None:
    module = Parser(make_context(), DIAMOND).parse_module()
    block = next(iter(module.ops)).body.block
    intervals = {iv.key.name_hint: iv for iv in npuir_liveness(block)}
    assert set(intervals) == {"a", "l", "r", "dead", "j"}  # the weight needs no buffer
    assert (intervals["a"].start, intervals["a"].end) == (0, 3)
    assert (intervals["dead"].start, intervals["dead"].end) == (3, 3)
    assert intervals["j"].live_out and intervals["j"].size == 64 and intervals["j"].device == "npu"
    assert intervals["l"].overlaps(intervals["r"]) and not intervals["a"].overlaps(intervals["j"])


def test_buffer_liveness_matches_the_allocation() -> None:
    module = Parser(make_context(), DIAMOND).parse_module()
    lower_module(module)
    block = next(iter(module.ops)).body.block
    intervals = buffer_liveness(block)
    assert len(intervals) == 5 and all(iv.buffer is not None for iv in intervals)
    for a in intervals:
        for b in intervals:
            if a is not b and a.buffer == b.buffer:
                assert not a.overlaps(b)
