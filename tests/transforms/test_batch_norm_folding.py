"""fold's batch-norm folding (`forge.transforms.batch_norm_folding`) on exported modules.

* conv (with and without bias, 1-D and 2-D, grouped) + eval batch norm (+ relu) modules: after
  `fold` no batch norm is left, the convolution reads new store entries, and the module interpreted
  equals eager PyTorch within 1e-5 relative to the output's scale; compiled by `forge.compile`, the
  whole model runs as NPU-segment `conv` ops (no CPU step) within the same bound;
* a convolution whose result has another user keeps its batch norm, and the result is still right.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from forge.driver.compiler import compile as forge_compile
from forge.driver.pass_stages import run_passes
from forge.frontend.fx_importer import import_module
from forge.interpreter import interpret

REL_TOL = 1e-5


def _randomize(bn: nn.BatchNorm1d | nn.BatchNorm2d) -> None:
    """Running statistics and affine parameters far from the identity (fresh ones are 0/1)."""
    with torch.no_grad():
        bn.running_mean.normal_()
        bn.running_var.uniform_(0.2, 3.0)
        if bn.affine:
            bn.weight.normal_()
            bn.bias.normal_()


def _conv_bn(conv: nn.Module, bn: nn.Module, act: nn.Module | None = None) -> nn.Module:
    _randomize(bn)
    layers = [conv, bn] + ([act] if act is not None else [])
    return nn.Sequential(*layers).eval()


class SharedConv(nn.Module):
    """The conv's output feeds the batch norm and the residual add: must not fold."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        _randomize(self.bn)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return self.bn(y) + y


CASES = {
    "conv2d_bn_relu": (lambda: _conv_bn(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU()),
                       (2, 3, 9, 9)),
    "conv2d_bias_grouped_bn": (lambda: _conv_bn(nn.Conv2d(4, 6, 3, stride=2, groups=2), nn.BatchNorm2d(6)),
                               (1, 4, 9, 8)),
    "conv1d_bn_no_affine": (lambda: _conv_bn(nn.Conv1d(3, 5, 3), nn.BatchNorm1d(5, affine=False), nn.ReLU6()),
                            (2, 3, 11)),
}


def _folded(model: nn.Module, x: torch.Tensor):
    imported = import_module(model, (x,))
    run_passes(imported.module, "fold")  # the import attached its weights
    return imported.module, imported.weights


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    scale = max(want.abs().max().item(), 1.0)
    assert (got - want).abs().max().item() <= REL_TOL * scale, (got - want).abs().max().item()


@pytest.mark.parametrize("case", sorted(CASES))
def test_batch_norm_folds_into_the_convolution(case: str) -> None:
    make, shape = CASES[case]
    torch.manual_seed(0)
    model = make()
    x = torch.randn(shape)
    module, weights = _folded(model, x)
    names = [op.name for op in module.walk()]
    assert not any("batch_norm" in n for n in names), names
    used = {v.owner.weight_name.data for op in module.walk() if "conv" in op.name for v in op.operands
            if getattr(v.owner, "name", None) == "aten.weight"}
    assert used == {"fold.0.weight_0", "fold.0.bias_0"}, used
    with torch.no_grad():
        want = model(x)
    (got,) = interpret(module, weights, x)
    _close(got, want)


def test_folded_model_runs_its_convolutions_on_the_npu() -> None:
    torch.manual_seed(1)
    model = CASES["conv2d_bn_relu"][0]()
    x = torch.randn(2, 3, 9, 9)
    compiled = forge_compile(model, (x,), keep_stages=True)
    assert "batch_norm" not in compiled.stages["aten"]
    with torch.no_grad():
        _close(compiled(x), model(x))
    assert compiled.executor.program.stats()["cpu_ops"] == 0


def test_a_shared_convolution_keeps_its_batch_norm() -> None:
    torch.manual_seed(2)
    model = SharedConv().eval()
    x = torch.randn(1, 3, 6, 6)
    module, weights = _folded(model, x)
    assert sum(op.name == "aten.batch_norm" for op in module.walk()) == 1
    with torch.no_grad():
        want = model(x)
    (got,) = interpret(module, weights, x)
    _close(got, want)
