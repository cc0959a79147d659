"""Convolutions and constant padding end to end: small eval-mode modules compiled with
`forge.compile` on every available runtime match eager PyTorch and run their `conv` / `pad`
ops in NPU segments (not on the CPU fallback)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from forge.driver.compiler import compile as forge_compile
from tests.compiler.standalone import run_standalone

REL_TOL = 1e-4  # max |diff| relative to the output's scale


def runtimes() -> list[str]:
    from backends.nnfactory.runtime import available_runtimes

    return available_runtimes()


class ConstantPad(nn.Module):
    """A pad the NPU computes on: a pad alone between the graph's input and output is a data-movement
    island, which device-affinity scheduling rightly leaves on the CPU."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, (1, 2, 0, 1), value=0.5) * 3


class ConvBlock(nn.Module):
    """conv -> relu -> pad -> depthwise conv: several conv and pad ops in one segment."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.dw = nn.Conv2d(8, 8, 3, groups=8, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dw(F.pad(torch.relu(self.conv(x)), (1, 1, 2, 0)))


# name: (module factory, input shape, kinds that must run on the npu)
CASES = {
    "conv1d": (lambda: nn.Conv1d(3, 5, 3), (2, 3, 12), {"conv"}),
    "conv1d_strided_nobias": (lambda: nn.Conv1d(4, 6, 5, stride=3, padding=2, bias=False), (1, 4, 17), {"conv"}),
    "conv2d_s2_p1_d2": (lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1, dilation=2), (1, 3, 11, 9), {"conv"}),
    "conv2d_grouped": (lambda: nn.Conv2d(4, 6, 3, groups=2, padding=1), (2, 4, 7, 6), {"conv"}),
    "conv2d_depthwise": (lambda: nn.Conv2d(4, 4, 3, groups=4, stride=2), (1, 4, 9, 9), {"conv"}),
    "conv_transpose2d": (
        lambda: nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1, output_padding=1),
        (1, 4, 5, 6),
        {"conv"},
    ),
    "conv_transpose2d_grouped": (
        lambda: nn.ConvTranspose2d(4, 6, (3, 2), stride=(1, 2), groups=2, dilation=(2, 1)),
        (1, 4, 5, 4),
        {"conv"},
    ),
    "conv_transpose1d": (lambda: nn.ConvTranspose1d(3, 2, 4, stride=2, padding=1), (1, 3, 7), {"conv"}),
    "conv2d_same_even_kernel": (
        lambda: nn.Conv2d(3, 4, (3, 4), padding="same", dilation=(1, 2)),
        (1, 3, 8, 9),
        {"conv"},
    ),
    "conv1d_valid": (lambda: nn.Conv1d(2, 3, 4, padding="valid"), (1, 2, 9), {"conv"}),
    "conv_transpose2d_dilated": (
        lambda: nn.ConvTranspose2d(3, 4, 2, stride=3, dilation=2, padding=2, output_padding=(1, 0)),
        (2, 3, 4, 5),
        {"conv"},
    ),
    "pad": (ConstantPad, (1, 3, 4, 5), {"pad"}),
    "conv_block": (ConvBlock, (1, 3, 8, 8), {"conv", "pad"}),
}


def _npu_kinds(compiled) -> set[str]:
    return {kind for segment in compiled.executor.program.segments for kind in segment.stats.kinds}


@pytest.mark.parametrize("runtime", runtimes())
@pytest.mark.parametrize("case", sorted(CASES))
def test_convolution_matches_eager_on_the_npu(case: str, runtime: str) -> None:
    make, shape, kinds = CASES[case]
    torch.manual_seed(0)
    model = make().eval()
    x = torch.randn(shape)
    with torch.no_grad():
        want = model(x)
    compiled = forge_compile(model, (x,), runtime=runtime)
    got = compiled(x)
    assert got.shape == want.shape
    scale = max(want.abs().max().item(), 1.0)
    assert (got - want).abs().max().item() <= REL_TOL * scale
    assert kinds <= _npu_kinds(compiled), compiled.executor.program.summary(timings=False)
    assert compiled.executor.program.stats()["cpu_ops"] == 0


def test_reflect_padding_falls_back_to_the_cpu() -> None:
    class Reflect(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.pad(x, (1, 1), mode="reflect")

    x = torch.randn(1, 2, 6)
    compiled = forge_compile(Reflect(), (x,))
    torch.testing.assert_close(compiled(x), Reflect()(x))
    assert "pad" not in _npu_kinds(compiled)


# ------------------------------------------------- the GraphBuilder ops beyond what torch emits


def _run_graph(runtime: str, x: torch.Tensor, build) -> torch.Tensor:
    from backends.nnfactory.runtime import get_runtime

    g = get_runtime(runtime).builder()
    g.result(build(g, g.parameter(x.shape, x.numpy().dtype)))
    return torch.from_numpy(g.compile().run([x.numpy()])[0])


@pytest.mark.parametrize("runtime", runtimes())
def test_transposed_convolution_with_unequal_pads(runtime: str) -> None:
    """Unequal pads crop the full output unequally; grouped, dilated, strided, output_padding."""
    torch.manual_seed(1)
    x, w, b = torch.randn(1, 4, 5, 4), torch.randn(4, 3, 3, 2), torch.randn(6)
    full = F.conv_transpose2d(x, w, b, (3, 2), 0, (1, 1), 2, (2, 1))
    want = full[:, :, 2 : full.shape[2] - 1, 0 : full.shape[3] - 1]

    def build(g, node):
        return g.convolution_transpose(
            node, g.constant(w), g.constant(b), [3, 2], [2, 0], [1, 1], [2, 1], 2, [1, 1]
        )

    torch.testing.assert_close(_run_graph(runtime, x, build), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("runtime", runtimes())
def test_pad_grows_and_crops(runtime: str) -> None:
    x = torch.randn(2, 3, 4)
    want = torch.constant_pad_nd(x, [-1, 2, 0, 0, 1, -1], -2.5)
    got = _run_graph(runtime, x, lambda g, node: g.pad(node, [1, 0, -1], [-1, 0, 2], -2.5))
    torch.testing.assert_close(got, want)


class EncoderDecoder(nn.Module):
    """pad -> conv (strided) -> transposed conv: every graph op the two kinds use."""

    def __init__(self) -> None:
        super().__init__()
        self.down = nn.Conv2d(2, 4, 3, stride=2, groups=2)
        self.up = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(torch.relu(self.down(F.pad(x, (1, 0, 0, 1), value=0.25))))


@pytest.mark.parametrize("runtime", runtimes())
def test_standalone_program_builds_the_same_graph(runtime: str, tmp_path) -> None:
    """`--emit nnfactory-py` records the new graph ops (on nnfactory: Intel's own calls)."""
    torch.manual_seed(2)
    model, x = EncoderDecoder().eval(), torch.randn(1, 2, 7, 7)
    compiled = forge_compile(model, (x,), runtime=runtime)
    got = run_standalone(compiled, x, tmp_path, runtime)
    torch.testing.assert_close(got, compiled(x), atol=1e-6, rtol=1e-6)


class ConvActivations(nn.Module):
    """conv2d -> silu, conv1d -> gelu, conv2d -> relu: each activation an epilogue of its conv."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv1d(4, 4, 3, groups=4, padding=1)
        self.c = nn.Conv2d(4, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.silu(self.a(x))
        n, c, h, w = y.shape
        z = F.gelu(self.b(y.reshape(n, c, h * w))).reshape(n, c, h, w)
        return torch.relu(self.c(z))


@pytest.mark.parametrize("runtime", runtimes())
def test_fuse_ops_folds_activations_into_convolutions(runtime: str) -> None:
    torch.manual_seed(3)
    model, x = ConvActivations().eval(), torch.randn(1, 3, 5, 6)
    compiled = forge_compile(model, (x,), runtime=runtime, keep_stages=True)
    torch.testing.assert_close(compiled(x), model(x), atol=1e-5, rtol=1e-5)
    assert compiled.stages["aten"].count("aten.fused_conv") == 3
    for activation in ("silu", "gelu", "relu"):
        assert f"activation = {activation}," in compiled.stages["npuir"]
    assert _npu_kinds(compiled) == {"conv", "reshape"}
