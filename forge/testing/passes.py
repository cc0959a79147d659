"""Test-only passes, registered by forge-opt when `FORGE_TEST_PASSES=1` is set."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from forge.diagnostics import pass_failure


@dataclass(frozen=True)
class TestFailOnOpPass(ModulePass):
    """Test only: fail (or crash, with crash=true) at the first op named op-name."""

    name = "test-fail-on-op"

    op_name: str = "arith.muli"
    crash: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if inner.name == self.op_name:
                if self.crash:
                    raise RuntimeError(f"test-fail-on-op crashed on {self.op_name}")
                raise pass_failure(inner, f"test-fail-on-op: found {self.op_name}")


TEST_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    TestFailOnOpPass.name: lambda: TestFailOnOpPass,
}
