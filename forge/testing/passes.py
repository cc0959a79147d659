"""Test-only passes, registered by forge-opt when `FORGE_TEST_PASSES=1` is set.

They exist to exercise the driver's debugging flags on builtin/func/arith IR:
`test-fail-on-op` fails (or crashes) at a chosen op, for crash reproducers and error
reporting; `test-arith-identities` folds `x + 0` and `x * 1` with two `ForgePattern`s, for
pattern statistics, `--debug-patterns` and `--explain-pattern`; `test-break-ir` leaves
IR that does not verify, for `--verify-each`; `test-emit-diagnostic` emits a warning, remark or
note at chosen ops (or one with no location), for `--verify-diagnostics`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    op_type_rewrite_pattern,
)

from forge.diagnostics import emit_diagnostic, pass_failure
from forge.patterns import ForgePattern


@dataclass(frozen=True)
class TestFailOnOpPass(ModulePass):
    """Test only: fail with a diagnostic (or crash, with crash=true) at the first op-name op."""

    __test__ = False  # not a pytest test class

    name = "test-fail-on-op"

    op_name: str = "arith.muli"
    crash: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if inner.name == self.op_name:
                if self.crash:
                    raise RuntimeError(f"test-fail-on-op crashed on {self.op_name}")
                raise pass_failure(inner, f"test-fail-on-op: found {self.op_name}")


def _constant_value(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _fold_right_identity(
    pattern: ForgePattern, op: arith.AddiOp | arith.MuliOp, rewriter: PatternRewriter, identity: int
) -> None:
    """Replace `op` by its lhs when its rhs is the constant `identity`; else say why not."""
    rhs = _constant_value(op.rhs)
    if rhs is None:
        return pattern.fail(op, "rhs is not a constant")
    if rhs != identity:
        return pattern.fail(op, "rhs is %d, not %d", rhs, identity)
    rewriter.replace(op, [], [op.lhs])


class AddZero(ForgePattern):
    """x + 0 -> x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AddiOp, rewriter: PatternRewriter) -> None:
        _fold_right_identity(self, op, rewriter, 0)


class MulOne(ForgePattern):
    """x * 1 -> x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.MuliOp, rewriter: PatternRewriter) -> None:
        _fold_right_identity(self, op, rewriter, 1)


@dataclass(frozen=True)
class TestArithIdentitiesPass(ModulePass):
    """Test only: fold x + 0 and x * 1 (ForgePatterns AddZero and MulOne)."""

    __test__ = False  # not a pytest test class

    name = "test-arith-identities"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([AddZero(), MulOne()], dce_enabled=False),
            apply_recursively=False,
        ).rewrite_module(op)


@dataclass(frozen=True)
class TestBreakIrPass(ModulePass):
    """Test only: erase the first op-name op, leaving IR that does not verify."""

    __test__ = False  # not a pytest test class

    name = "test-break-ir"

    op_name: str = "func.return"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if inner.name == self.op_name:
                inner.detach()
                inner.erase()
                return


@dataclass(frozen=True)
class TestEmitDiagnosticPass(ModulePass):
    """Test only: emit a diagnostic of `severity` (warning, remark, note) at every op-name op, or
    once without a location (unknown=true)."""

    __test__ = False  # not a pytest test class

    name = "test-emit-diagnostic"

    op_name: str = "arith.muli"
    severity: str = "remark"
    unknown: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.unknown:
            emit_diagnostic(None, f"test-emit-diagnostic: a {self.severity} with no location", self.severity)
            return
        for inner in op.walk():
            if inner.name == self.op_name:
                emit_diagnostic(inner, f"test-emit-diagnostic: {self.severity} at {inner.name}", self.severity)


TEST_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    p.name: (lambda p=p: p)
    for p in (TestFailOnOpPass, TestArithIdentitiesPass, TestBreakIrPass, TestEmitDiagnosticPass)
}
