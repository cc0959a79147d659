"""A pass plug-in for filecheck/cli/load-pass-plugin.mlir: rewrites exp(x) into exp(-x).

Legal IR, wrong results: --verify-semantics must blame it. `exp-to-arith` instead leaves an op
the reference interpreter has no semantics for (arith.negf on a tensor).
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dialects import aten
from forge.driver.registry import register_pass


@register_pass
@dataclass(frozen=True)
class NegateExpPass(ModulePass):
    """Test plug-in: exp(x) -> exp(-x) (wrong on purpose)."""

    name = "negate-exp"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for exp in [o for o in op.walk() if isinstance(o, aten.ExpOp)]:
            neg = aten.NegOp.build_op([[exp.input]], {}, [exp.input.type])
            Rewriter.insert_op(neg, InsertPoint.before(exp))
            exp.operands[0] = neg.result


@register_pass
@dataclass(frozen=True)
class ExpToArithPass(ModulePass):
    """Test plug-in: exp(x) -> arith.negf(x), which the interpreter cannot run."""

    name = "exp-to-arith"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for exp in [o for o in op.walk() if isinstance(o, aten.ExpOp)]:
            Rewriter.replace_op(exp, arith.NegfOp(exp.input))
