"""Pooling, inference batch norm and upsampling end to end: small eval-mode modules compiled with
`forge.compile` on every available runtime match eager PyTorch, and their pooling, batch-norm and
resize ops ran in an NPU segment (no CPU step)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from forge.driver.compiler import compile as forge_compile
from tests.compiler.standalone import run_standalone


def runtimes() -> list[str]:
    from backends.nnfactory.runtime import available_runtimes

    return available_runtimes()


def _bn(channels: int) -> nn.BatchNorm2d:
    """A BatchNorm2d in eval mode with non-trivial running statistics and affine parameters."""
    bn = nn.BatchNorm2d(channels, eps=1e-3)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        bn.running_mean.copy_(torch.randn(channels, generator=g))
        bn.running_var.copy_(torch.rand(channels, generator=g) * 2 + 0.1)
        bn.weight.copy_(torch.randn(channels, generator=g))
        bn.bias.copy_(torch.randn(channels, generator=g))
    return bn.eval()


class Global(nn.Module):
    """Batch norm, then a global average pool flattened (a classifier head's input)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = _bn(4)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.pool(self.bn(x)), 1)


class Interpolate(nn.Module):
    """`F.interpolate` with fixed arguments."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, **self.kwargs)


MODULES = {
    "maxpool-stride-pad": (lambda: nn.MaxPool2d(3, stride=2, padding=1), (2, 4, 9, 8)),
    "maxpool-ceil": (lambda: nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True), (1, 3, 10, 7)),
    "maxpool-dilated": (lambda: nn.MaxPool2d(2, stride=1, dilation=2), (1, 2, 7, 7)),
    "maxpool1d": (lambda: nn.MaxPool1d(3, stride=2, ceil_mode=True), (2, 3, 10)),
    "avgpool": (lambda: nn.AvgPool2d(2), (2, 4, 8, 8)),
    "avgpool-pad-ceil": (lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True), (1, 3, 10, 7)),
    "avgpool-exclude-pad": (lambda: nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False), (1, 3, 9, 8)),
    "avgpool1d": (lambda: nn.AvgPool1d(4, stride=2, padding=2), (2, 3, 11)),
    "adaptive-global": (lambda: nn.AdaptiveAvgPool2d((1, 1)), (2, 4, 7, 5)),
    "adaptive-divisible": (lambda: nn.AdaptiveAvgPool2d((2, 3)), (1, 4, 8, 9)),
    "adaptive1d": (lambda: nn.AdaptiveAvgPool1d(3), (2, 4, 9)),
    "batchnorm": (lambda: _bn(4), (2, 4, 5, 6)),
    "batchnorm1d": (lambda: nn.BatchNorm1d(4).eval(), (3, 4)),
    "bn-global-pool": (Global, (2, 4, 6, 6)),
    "nearest-scale": (lambda: Interpolate(scale_factor=2, mode="nearest"), (1, 3, 4, 5)),
    "nearest-size": (lambda: Interpolate(size=(7, 3), mode="nearest"), (1, 3, 4, 5)),
    "nearest1d": (lambda: Interpolate(scale_factor=3, mode="nearest"), (2, 3, 5)),
    "bilinear": (lambda: Interpolate(scale_factor=2, mode="bilinear", align_corners=False), (1, 3, 4, 5)),
    "bilinear-size": (lambda: Interpolate(size=(9, 4), mode="bilinear", align_corners=False), (1, 3, 4, 5)),
    "bilinear-corners": (lambda: Interpolate(size=(9, 7), mode="bilinear", align_corners=True), (1, 3, 4, 5)),
    "linear1d": (lambda: Interpolate(size=11, mode="linear", align_corners=True), (2, 3, 5)),
}


def _compile(name: str, runtime: str):
    make, shape = MODULES[name]
    model = make().eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    return model, x, forge_compile(model, (x,), runtime=runtime)


def _npu_kinds(compiled) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for segment in compiled.executor.program.segments:
        for kind, n in segment.stats.kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
    return kinds


@pytest.mark.parametrize("runtime", runtimes())
@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_matches_eager_on_the_npu(name: str, runtime: str) -> None:
    model, x, compiled = _compile(name, runtime)
    with torch.no_grad():
        want = model(x)
    got = compiled(x)
    assert got.shape == want.shape
    scale = max(1.0, want.abs().max().item())
    assert (got - want).abs().max().item() <= 1e-4 * scale
    assert compiled.executor.program.cpu_steps() == [], "every op should run in an NPU segment"
    kinds = _npu_kinds(compiled)
    expect = "binary" if name.startswith("batchnorm") else "resize" if isinstance(model, Interpolate) else "pool"
    assert kinds.get(expect, 0) >= 1, kinds


@pytest.mark.parametrize("runtime", runtimes()[:1])
def test_uneven_adaptive_pool_runs_on_the_host(runtime: str) -> None:
    model = nn.AdaptiveAvgPool2d((3, 3)).eval()
    x = torch.randn(1, 2, 7, 8)
    compiled = forge_compile(model, (x,), runtime=runtime)
    assert torch.allclose(compiled(x), model(x), atol=1e-5)
    assert "pool" not in _npu_kinds(compiled)


@pytest.mark.parametrize("runtime", runtimes()[:1])
def test_fractional_scale_upsample_runs_on_the_host(runtime: str) -> None:
    model = Interpolate(scale_factor=1.5, mode="nearest").eval()
    x = torch.randn(1, 2, 5, 5)
    compiled = forge_compile(model, (x,), runtime=runtime)
    assert torch.equal(compiled(x), model(x))
    assert "resize" not in _npu_kinds(compiled)


class Pyramid(nn.Module):
    """Batch norm, a max pool, an average pool and both upsamplings back to the input size."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = _bn(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn(x)
        down = F.avg_pool2d(F.max_pool2d(y, 3, 2, 1, ceil_mode=True), 2)
        near = F.interpolate(down, size=x.shape[-2:], mode="nearest")
        return near + F.interpolate(down, size=x.shape[-2:], mode="bilinear", align_corners=True)


@pytest.mark.parametrize("runtime", runtimes())
def test_standalone_program_builds_the_same_graph(runtime: str, tmp_path) -> None:
    """`--emit nnfactory-py` records the pooling and interpolate graph ops."""
    torch.manual_seed(3)
    model, x = Pyramid().eval(), torch.randn(1, 3, 9, 8)
    compiled = forge_compile(model, (x,), runtime=runtime)
    torch.testing.assert_close(compiled(x), model(x), atol=1e-4, rtol=1e-4)
    got = run_standalone(compiled, x, tmp_path, runtime)
    torch.testing.assert_close(got, compiled(x), atol=1e-6, rtol=1e-6)

