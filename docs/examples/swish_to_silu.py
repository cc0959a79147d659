"""swish-to-silu: rewrite a hand-written Swish, `x * sigmoid(x)`, into `aten.silu(x)`.

The tutorial pattern of docs/tutorials/first-rewrite-pattern.md. Model code that spells SiLU out
as `x * torch.sigmoid(x)` exports as two ops; as one `aten.silu`, `fuse-ops` can fold it into the
linear layer that feeds it (`fused_linear {activation = "silu"}`) or into a gated MLP. Run it with

    forge-opt --load-pass-plugin docs/examples/swish_to_silu.py in.mlir -p swish-to-silu
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern

from dialects import aten
from forge.context import register_pass
from forge.patterns import ForgePattern, apply_patterns


class SwishToSilu(ForgePattern):
    """x * sigmoid(x), in either operand order -> silu(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.MulTensorOp, rewriter: PatternRewriter) -> None:
        for x, gate in ((op.input, op.other), (op.other, op.input)):
            sigmoid = gate.owner
            if isinstance(sigmoid, aten.SigmoidOp) and sigmoid.input == x:
                break
        else:
            return self.fail(op, "no operand is sigmoid of the other")
        rewriter.replace(op, aten.SiluOp.build_op([[x]], {}, [x.type], location=op.location))
        if not sigmoid.result.uses:
            rewriter.erase(sigmoid)


@register_pass
@dataclass(frozen=True)
class SwishToSiluPass(ModulePass):
    """Rewrite x * sigmoid(x) into aten.silu(x)."""

    name = "swish-to-silu"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_patterns(op, [SwishToSilu()])
