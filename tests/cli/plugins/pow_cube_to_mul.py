"""A pass plug-in for tests/cli/test_compile_plugin.py: pow(x, 3) -> (x * x) * x, which GPT-2's GELU has."""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern

from dialects import aten
from forge.context import register_pass
from forge.patterns import ForgePattern, apply_patterns


class PowCubeToMul(ForgePattern):
    """pow(x, 3) -> (x * x) * x"""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.PowTensorScalarOp, rewriter: PatternRewriter) -> None:
        if op.ir_arg("exponent") != 3:
            return self.fail(op, "the exponent is not 3")
        x, t = op.input, op.result.type
        square = aten.MulTensorOp.build_op([[x], [x]], {}, [t], location=op.location)
        cube = aten.MulTensorOp.build_op([[square.result], [x]], {}, [t], location=op.location)
        rewriter.replace(op, [square, cube])


@register_pass
@dataclass(frozen=True)
class PowCubeToMulPass(ModulePass):
    """Rewrite pow(x, 3) into (x * x) * x."""

    name = "pow-cube-to-mul"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_patterns(op, [PowCubeToMul()])
