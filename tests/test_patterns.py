"""forge.patterns: ForgePattern counts rewrites, explains failures, and locates errors."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, op_type_rewrite_pattern

from forge.diagnostics import attached_op, parse_with_locations
from forge.driver.registry import make_context
from forge.patterns import ForgePattern, PatternStats, collect_pattern_stats
from forge.testing.debug_passes import AddZero, MulOne

IR = """\
func.func @f(%a: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %two = arith.constant 2 : i32
  %b = arith.addi %a, %zero : i32
  %c = arith.addi %b, %two : i32
  func.return %c : i32
}
"""


def rewrite(pattern: ForgePattern, stats: PatternStats | None = None):
    module = parse_with_locations(make_context(), IR, "p.mlir")
    walker = PatternRewriteWalker(pattern)
    if stats is None:
        walker.rewrite_module(module)
    else:
        with collect_pattern_stats(stats):
            walker.rewrite_module(module)
    return module


def test_rewrites_are_counted_per_pattern_class():
    stats = PatternStats()
    rewrite(AddZero(), stats=stats)
    assert stats.fired == {"AddZero": 1}
    assert stats.events == []  # nothing recorded unless asked


def test_patterns_work_without_a_collector():
    module = rewrite(AddZero())
    assert "arith.addi %a, %zero" not in str(module)


def test_debug_records_rewrites_with_locations():
    stats = PatternStats(debug=True)
    rewrite(AddZero(), stats=stats)
    assert stats.events == ["AddZero fired on arith.addi %b at p.mlir:4:8"]


def test_explain_records_fires_failures_and_attempts():
    stats = PatternStats(explain="AddZero")
    rewrite(AddZero(), stats=stats)
    # The walker revisits %c after %b was folded, so its failure can be reported twice.
    assert list(dict.fromkeys(stats.events)) == [
        "AddZero fired on arith.addi %b at p.mlir:4:8",
        "AddZero did not match arith.addi %c at p.mlir:5:8: rhs is 2, not 0",
    ]
    assert stats.explain_attempts >= 2
    other = PatternStats(explain="MulOne")
    rewrite(AddZero(), stats=other)
    assert other.events == [] and other.explain_attempts == 0


def test_exceptions_carry_the_matched_op():
    class Boom(ForgePattern):
        @op_type_rewrite_pattern
        def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
            raise ValueError("boom")

    with pytest.raises(ValueError) as info:
        rewrite(Boom())
    op = attached_op(info.value)
    assert op is not None and op.name == "arith.addi"


def test_subclass_of_a_pattern_is_counted_under_its_own_name_once():
    class AddZeroAgain(AddZero):
        pass

    stats = PatternStats()
    rewrite(AddZeroAgain(), stats=stats)
    assert stats.fired == {"AddZeroAgain": 1}


def test_mul_one_is_not_fooled():
    stats = PatternStats(explain="MulOne")
    rewrite(MulOne(), stats=stats)
    assert stats.fired == {}
