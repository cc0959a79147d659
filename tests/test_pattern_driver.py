"""forge.patterns' driver: PatternTable dispatch by ROOTS or the rewrite annotation, sweep order,
apply_patterns counting.

Every Forge pass runs its patterns through this driver, so its contract is pinned here on plain
arith IR: which patterns an op is offered to and in what order, which ops a sweep visits, and what
happens to ops created or erased during the sweep.
"""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, func
from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from forge.diagnostics import parse_with_locations
from forge.driver.registry import make_context
from forge.patterns import (
    ForgePattern,
    PatternDefinitionError,
    PatternStats,
    PatternTable,
    apply_patterns,
    collect_pattern_stats,
    pattern_roots,
    sweep,
)

IR = """\
func.func @f(%a: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %b = arith.addi %a, %zero : i32
  %c = arith.muli %b, %b : i32
  %d = arith.addi %c, %zero : i32
  func.return %d : i32
}
"""


def module():
    return parse_with_locations(make_context(), IR, "d.mlir")


class Record(ForgePattern):
    """Records the ops it is offered; never rewrites."""

    ROOTS = (arith.AddiOp,)

    def __init__(self, seen: list[tuple[str, str]], tag: str):
        self.seen, self.tag = seen, tag

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        self.seen.append((self.tag, op.results[0].name_hint))


class DropAddZero(ForgePattern):
    """x + 0 -> x."""

    ROOTS = (arith.AddiOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        _drop_add_zero(op, rewriter)


def _drop_add_zero(op: arith.AddiOp, rewriter: PatternRewriter) -> None:
    rhs = op.rhs.owner
    if isinstance(rhs, arith.ConstantOp) and rhs.value.value.data == 0:
        rewriter.replace_all_uses_with(op.result, op.lhs)
        rewriter.erase(op)


def names(ops: list[Operation]) -> list[str]:
    return [op.name for op in ops]


def test_an_op_is_offered_only_to_the_patterns_rooted_on_its_class_in_order():
    seen: list[tuple[str, str]] = []
    count = apply_patterns(module(), [Record(seen, "first"), Record(seen, "second")])
    assert count == 0
    # Both addi ops, each to both patterns in the given order; the muli and the constant to none.
    assert seen == [("first", "b"), ("second", "b"), ("first", "d"), ("second", "d")]


def test_the_first_pattern_that_rewrites_wins():
    seen: list[tuple[str, str]] = []
    m = module()
    stats = PatternStats()
    with collect_pattern_stats(stats):
        count = apply_patterns(m, [DropAddZero(), Record(seen, "after")])
    assert count == 2
    assert stats.fired == {"DropAddZero": 2}
    assert seen == []  # the recorder comes second and is never reached
    assert "arith.addi" not in str(m)


def test_a_pattern_without_roots_is_refused_by_name():
    class Rootless(ForgePattern):
        def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
            pass

    with pytest.raises(TypeError, match="Rootless names no ROOTS and its match_and_rewrite names no op class"):
        PatternTable([Rootless()])
    with pytest.raises(PatternDefinitionError):  # a diagnostic for forge-opt, not an internal error
        PatternTable([Rootless()])


class AnnotatedAddZero(ForgePattern):
    """DropAddZero without ROOTS: the annotation says which ops it matches (the tutorial's recipe)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        _drop_add_zero(op, rewriter)


class UnionRecord(RewritePattern):
    """A plain xDSL pattern on a union of ops."""

    def __init__(self, seen: list[str]):
        self.seen = seen

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp | arith.MuliOp, rewriter: PatternRewriter) -> None:
        self.seen.append(op.name)


def test_roots_come_from_the_rewrite_annotation():
    assert pattern_roots(AnnotatedAddZero()) == (arith.AddiOp,)
    assert pattern_roots(UnionRecord([])) == (arith.AddiOp, arith.MuliOp)
    assert pattern_roots(DropAddZero()) == (arith.AddiOp,)  # ROOTS, when given, are used as they are


def test_an_annotated_pattern_runs_in_apply_patterns_and_is_counted():
    m = module()
    with collect_pattern_stats() as stats:
        assert apply_patterns(m, [AnnotatedAddZero()]) == 2  # %b and %d add zero
    assert stats.fired == {"AnnotatedAddZero": 2}
    seen: list[str] = []
    apply_patterns(module(), [UnionRecord(seen)])
    assert sorted(set(seen)) == ["arith.addi", "arith.muli"]


def test_admit_filters_the_offered_ops():
    seen: list[tuple[str, str]] = []
    table = PatternTable([Record(seen, "only-d")], admit=lambda op: op.results[0].name_hint == "d")
    apply_patterns(module(), table)
    assert seen == [("only-d", "d")]


def test_sweep_visits_regions_before_their_op_forward_and_in_reverse():
    m = module()
    forward: list[Operation] = []
    sweep(m, lambda op: forward.append(op) or False)
    assert names(forward) == ["arith.constant", "arith.addi", "arith.muli", "arith.addi", "func.return", "func.func"]
    backward: list[Operation] = []
    sweep(m, lambda op: backward.append(op) or False, reverse=True)
    assert names(backward) == ["func.return", "arith.addi", "arith.muli", "arith.addi", "arith.constant", "func.func"]


def test_sweep_counts_true_visits_and_lists_only_the_asked_classes():
    m = module()
    visited: list[Operation] = []
    count = sweep(m, lambda op: visited.append(op) or True, only=(arith.AddiOp,))
    assert count == 2 and names(visited) == ["arith.addi", "arith.addi"]


def test_ops_created_during_a_sweep_are_not_visited_and_erased_ones_are_skipped():
    m = module()
    visited: list[str] = []

    def visit(op: Operation) -> bool:
        visited.append(op.results[0].name_hint if op.results else op.name)
        if isinstance(op, arith.MuliOp):
            # Erase the next addi (%d) and create a new op after the muli: neither is visited.
            d = op.next_op
            assert isinstance(d, arith.AddiOp)
            d.result.replace_all_uses_with(op.result)
            d.detach()
            d.erase()
            op.parent.insert_op_after(arith.AddiOp(op.result, op.result), op)
        return False

    sweep(m, visit)
    assert visited == ["zero", "b", "c", "func.return", "func.func"]
    fn = next(o for o in m.ops if isinstance(o, func.FuncOp))
    assert names(list(fn.body.block.ops)).count("arith.addi") == 2  # %b and the new one
