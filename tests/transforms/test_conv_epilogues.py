"""fuse-ops' convolution epilogues (`FuseConvBias`, `FuseConvActivation`) on exported modules.

A bias-free convolution followed by a per-channel bias add and an activation (relu6 as a clamp to
[0, 6], silu, relu; after an eval batch norm folded by `fold`) compiles to one `aten.fused_conv`
carrying the bias and the activation; on every available runtime the compiled model equals eager
PyTorch within 1e-4 relative to the output's scale and runs no CPU step.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from forge.driver.compiler import compile as forge_compile

REL_TOL = 1e-4


def runtimes() -> list[str]:
    from backends.nnfactory.runtime import available_runtimes

    return available_runtimes()


class BiasAct(nn.Module):
    """conv (no bias) + a [C, 1, 1] bias parameter + activation: what fuse-ops folds into one op."""

    def __init__(self, act, conv: nn.Module) -> None:
        super().__init__()
        self.conv = conv
        self.bias = nn.Parameter(torch.randn(conv.out_channels, *[1] * (conv.weight.dim() - 2)))
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x) + self.bias)


class BnRelu6(nn.Module):
    """MobileNet's conv + batch norm + ReLU6 (written as a clamp)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)
        self.bn = nn.BatchNorm2d(4)
        with torch.no_grad():
            self.bn.running_mean.normal_()
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.normal_(1.0, 2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(self.bn(self.conv(x)), 0.0, 6.0)


CASES = {
    "conv2d_bias_relu6": (lambda: BiasAct(lambda y: torch.clamp(y, 0.0, 6.0), nn.Conv2d(3, 6, 3, bias=False)),
                          (1, 3, 8, 8), "relu6"),
    "conv1d_bias_silu": (lambda: BiasAct(F.silu, nn.Conv1d(3, 4, 5, stride=2, bias=False)), (2, 3, 16), "silu"),
    "depthwise_bn_relu6": (BnRelu6, (1, 4, 7, 7), "relu6"),
}


@pytest.mark.parametrize("runtime", runtimes())
@pytest.mark.parametrize("case", sorted(CASES))
def test_conv_epilogue_is_one_fused_conv(case: str, runtime: str) -> None:
    make, shape, activation = CASES[case]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(shape) * 3
    with torch.no_grad():
        want = model(x)
    compiled = forge_compile(model, (x,), runtime=runtime, keep_stages=True)
    aten_ir = compiled.stages["aten"]
    assert aten_ir.count("aten.fused_conv") == 1 and f'activation = "{activation}"' in aten_ir, aten_ir
    for gone in ("aten.add.Tensor", "aten.clamp", "aten.silu", "aten.batch_norm"):
        assert gone not in aten_ir, aten_ir
    got = compiled(x)
    scale = max(want.abs().max().item(), 1.0)
    assert (got - want).abs().max().item() <= REL_TOL * scale
    assert compiled.executor.program.stats()["cpu_ops"] == 0
