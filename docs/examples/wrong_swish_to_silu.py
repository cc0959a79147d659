"""wrong-swish-to-silu: a deliberately WRONG version of swish_to_silu.py, for the tutorial.

It forgets to check that the sigmoid reads the other factor, so it also rewrites a gate,
`x * sigmoid(g)`, into `silu(x)` = `x * sigmoid(x)`. The IR still verifies (the types match);
only `forge-opt --verify-semantics` (or `check_pattern`) shows that the results changed.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern

from dialects import aten
from forge.context import register_pass
from forge.patterns import ForgePattern, apply_patterns


class WrongSwishToSilu(ForgePattern):
    """x * sigmoid(ANYTHING) -> silu(x): the bug is the missing `sigmoid.input == x` check."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.MulTensorOp, rewriter: PatternRewriter) -> None:
        for x, gate in ((op.input, op.other), (op.other, op.input)):
            sigmoid = gate.owner
            if isinstance(sigmoid, aten.SigmoidOp):  # BUG: sigmoid.input may not be x
                break
        else:
            return self.fail(op, "no operand is a sigmoid")
        rewriter.replace(op, aten.SiluOp.build_op([[x]], {}, [x.type], location=op.location))
        if not sigmoid.result.uses:
            rewriter.erase(sigmoid)


@register_pass
@dataclass(frozen=True)
class WrongSwishToSiluPass(ModulePass):
    """Deliberately wrong: rewrite x * sigmoid(anything) into aten.silu(x)."""

    name = "wrong-swish-to-silu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_patterns(op, [WrongSwishToSilu()])
