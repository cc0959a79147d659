"""forge.pass_runner: records per pass, change detection, failures that name the pass."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import (
    CommonSubexpressionElimination,
)
from xdsl.utils.exceptions import PassFailedException

from forge.diagnostics import parse_with_locations
from forge.driver.registry import make_context
from forge.pass_runner import (
    PassFailure,
    PassRecord,
    PipelineObserver,
    PipelineRunner,
    count_ops,
    format_timing,
    run_pipeline,
)
from forge.testing.debug_passes import (
    TestArithIdentitiesPass,
    TestBreakIrPass,
    TestFailOnOpPass,
)

IR = """\
func.func @f(%a: i32, %b: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %c = arith.addi %a, %zero : i32
  %d = arith.muli %c, %one : i32
  %e = arith.addi %d, %b : i32
  func.return %e : i32
}
"""


def parse(text: str = IR) -> ModuleOp:
    return parse_with_locations(make_context(), text, "f.mlir")


def test_records_ops_time_and_pattern_fires():
    module = parse()
    assert count_ops(module) == 8
    records = run_pipeline(
        module,
        make_context(),
        [TestArithIdentitiesPass(), CanonicalizePass()],
    )
    assert [r.name for r in records] == ["test-arith-identities", "canonicalize"]
    first, second = records
    assert (first.ops_before, first.ops_after) == (8, 6)
    assert first.fired == {"AddZero": 1, "MulOne": 1}
    assert first.changed is True
    assert (second.ops_before, second.ops_after) == (6, 4)  # dead constants removed
    assert second.fired == {}  # xDSL's patterns are not ForgePatterns
    assert all(r.wall_ms >= 0 for r in records)
    assert first.index == 0 and second.index == 1


@pytest.mark.parametrize("mode, unchanged", [("cheap", None), ("fingerprint", False), ("text", False)])
def test_change_detection(mode, unchanged):
    module = parse()
    records = run_pipeline(
        module,
        make_context(),
        [TestArithIdentitiesPass(), CanonicalizePass(), CommonSubexpressionElimination()],
        changes=mode,
    )
    assert [r.changed for r in records] == [True, True, unchanged]


def test_fingerprint_sees_in_place_changes():
    """A pass that rewires an operand without changing op counts or firing patterns."""
    from dataclasses import dataclass

    from xdsl.ir import Operation
    from xdsl.passes import ModulePass

    @dataclass(frozen=True)
    class SwapOperands(ModulePass):
        name = "swap-operands"

        def apply(self, ctx, op):
            for inner in op.walk():
                if inner.name == "arith.addi" and not isinstance(inner.operands[1].owner, Operation):
                    inner.operands = [inner.operands[1], inner.operands[0]]

    for mode in ("fingerprint", "text"):
        (record,) = run_pipeline(parse(), make_context(), [SwapOperands()], changes=mode)
        assert record.changed is True, mode


def test_observers_see_every_pass():
    seen: list[tuple[str, str]] = []

    class Recorder(PipelineObserver):
        def before_pass(self, index, name, module):
            seen.append(("before", name))

        def after_pass(self, record: PassRecord, module):
            seen.append(("after", record.name))

    run_pipeline(
        parse(),
        make_context(),
        [TestArithIdentitiesPass(), CanonicalizePass()],
        names=["a", "b"],
        observers=[Recorder()],
    )
    assert seen == [("before", "a"), ("after", "a"), ("before", "b"), ("after", "b")]


def test_failure_names_pass_and_keeps_ir_before_it():
    module = parse()
    runner = PipelineRunner(
        make_context(),
        [TestArithIdentitiesPass(), TestFailOnOpPass(op_name="arith.addi"), CanonicalizePass()],
        snapshot_before=True,
    )
    with pytest.raises(PassFailure) as info:
        runner.run(module)
    failure = info.value
    assert failure.index == 1
    assert failure.name.startswith("test-fail-on-op")
    assert failure.kind == "raised"
    assert isinstance(failure.error, PassFailedException)
    assert [r.name for r in failure.records] == ["test-arith-identities"]
    assert len(failure.remaining) == 2
    assert failure.before is not None
    assert "arith.muli" not in str(failure.before)  # folded by the first pass
    assert failure.before is not module


def test_verify_each_names_the_pass_that_broke_the_ir():
    with pytest.raises(PassFailure) as info:
        run_pipeline(
            parse(), make_context(), [TestBreakIrPass(), CanonicalizePass()], verify_each=True
        )
    assert info.value.kind == "verify"
    assert info.value.index == 0


def test_format_timing_lists_phases_passes_and_patterns():
    records = run_pipeline(parse(), make_context(), [TestArithIdentitiesPass()])
    table = format_timing(records, [("parse", 2.0), ("output", 1.0)])
    lines = table.splitlines()
    assert any("(parse)" in line for line in lines)
    row = next(line for line in lines if "test-arith-identities" in line)
    assert "8 -> 6" in row and "AddZero: 1" in row and "MulOne: 1" in row
    assert lines[-1].rstrip().endswith("Total") and "100.0%" in lines[-1]
    assert lines.index(row) < next(i for i, line in enumerate(lines) if "(output)" in line)
