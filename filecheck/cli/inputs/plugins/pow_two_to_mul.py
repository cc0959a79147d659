"""A pass plug-in for filecheck/cli/pattern-roots.mlir: pow(x, 2) -> x * x, written the way the tutorial
writes patterns: a ForgePattern whose `@op_type_rewrite_pattern` annotation says which ops it matches
(no ROOTS), run by `forge.patterns.apply_patterns`.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern

from dialects import aten
from forge.context import register_pass
from forge.patterns import ForgePattern, apply_patterns


class PowTwoToMul(ForgePattern):
    """pow(x, 2) -> x * x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.PowTensorScalarOp, rewriter: PatternRewriter) -> None:
        if op.ir_arg("exponent") != 2:
            return self.fail(op, "the exponent is not 2")
        x = op.input
        rewriter.replace(op, aten.MulTensorOp.build_op([[x], [x]], {}, [op.result.type], location=op.location))


@register_pass
@dataclass(frozen=True)
class PowTwoToMulPass(ModulePass):
    """Rewrite pow(x, 2) into x * x."""

    name = "pow-to-mul"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_patterns(op, [PowTwoToMul()])
