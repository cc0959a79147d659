"""Two rewrites written as PyTorch functions (docs/tutorials/first-rewrite-pattern.md, "Patterns
written in PyTorch"): `a - (-b)` → `a + b`, and a written-out softmax → `aten.softmax.int`.

    forge-opt --load-pass-plugin docs/examples/torch_patterns.py in.mlir -p torch-patterns
"""

from dataclasses import dataclass

import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from forge.driver.registry import register_pass
from forge.frontend.torch_patterns import from_torch
from forge.patterns import apply_patterns


def sub_neg(a, b):
    return a - (-b)


def add(a, b):
    return a + b


def written_out_softmax(x):
    e = torch.exp(x - torch.amax(x, dim=-1, keepdim=True))
    return e / torch.sum(e, dim=-1, keepdim=True)


def softmax(x):
    return torch.softmax(x, dim=-1)


# Traced once, when the plug-in is loaded (torch.export: about a second each).
SUB_NEG = from_torch(sub_neg, add, [torch.randn(4), torch.randn(4)], name="SubNeg")
SOFTMAX = from_torch(written_out_softmax, softmax, [torch.randn(2, 8)], name="WrittenOutSoftmax")


@register_pass
@dataclass(frozen=True)
class TorchPatternsPass(ModulePass):
    """Rewrite a - (-b) into a + b and a written-out softmax into aten.softmax.int."""

    name = "torch-patterns"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_patterns(op, [SUB_NEG, SOFTMAX])
