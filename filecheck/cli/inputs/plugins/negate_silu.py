"""A pass plug-in with a planted semantic bug, for filecheck/cli/reduce.mlir: silu(x) -> silu(-x).

Legal IR, wrong results: --verify-semantics blames it, and forge-reduce shrinks the reproducer.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dialects import aten
from forge.driver.registry import register_pass


@register_pass
@dataclass(frozen=True)
class NegateSiluPass(ModulePass):
    """Test plug-in: silu(x) -> silu(-x) (wrong on purpose)."""

    name = "negate-silu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for silu in [o for o in op.walk() if isinstance(o, aten.SiluOp)]:
            neg = aten.NegOp.build_op([[silu.input]], {}, [silu.input.type])
            Rewriter.insert_op(neg, InsertPoint.before(silu))
            silu.operands[0] = neg.result
