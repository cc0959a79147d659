"""Plug-ins with bugs of their own (filecheck/cli/plugin-errors.mlir): the user's errors, not Forge's.

`buggy-pattern` runs a pattern that divides by zero on aten.exp; `int-for-attribute` hands a Python
int to build_op where the op wants an attribute.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, op_type_rewrite_pattern
from xdsl.rewriter import Rewriter

from dialects import aten
from forge.driver.registry import register_pass
from forge.patterns import ForgePattern


class DivideExp(ForgePattern):
    """A pattern with a bug: it divides by the number of uses of a value nobody reads."""

    ROOTS = (aten.ExpOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.ExpOp, rewriter: PatternRewriter) -> None:
        scale = 1 / (len(op.results) - 1)
        rewriter.replace_op(op, aten.ExpOp.build_op([[op.input]], {}, [op.input.type]))
        del scale


@register_pass
@dataclass(frozen=True)
class BuggyPatternPass(ModulePass):
    """Test plug-in: a pattern that raises ZeroDivisionError."""

    name = "buggy-pattern"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(DivideExp(), apply_recursively=False).rewrite_module(op)


@register_pass
@dataclass(frozen=True)
class IntForAttributePass(ModulePass):
    """Test plug-in: builds aten.softmax.int with dim=-1 as a Python int (build_op wants an attribute)."""

    name = "int-for-attribute"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for exp in [o for o in op.walk() if isinstance(o, aten.ExpOp)]:
            softmax = aten.SoftmaxIntOp.build_op([[exp.input]], {"dim": -1}, [exp.input.type])
            Rewriter.replace_op(exp, softmax)
