"""The convolutional, vision and audio families (transformers 5, tiny configs, seeded random
weights) compiled end to end on every available runtime: every op runs on the NPU path (the
report's `cpu_fallback` is empty and no step runs on the CPU), their convolutions, pools and
norms are NPU-segment kinds, batch norm is folded away (no batch norm in the optimized aten IR),
and the last hidden state matches eager PyTorch within 1e-4 relative to its scale.

What each family needs: ResNet (conv + BN folding, max pool, global average pool), ConvNeXt
(depthwise conv, layer norm over channels after permutes, gelu), MobileNetV2 (BN folding, ReLU6
as a `relu6` conv epilogue, depthwise conv), Swin (`roll` as slices + concat), Wav2Vec2 (group
norm, weight norm folded to a constant at compile time).
"""

from __future__ import annotations

import pytest
import torch
import transformers as T

from forge.driver.compiler import compile as forge_compile

REL_TOL = 1e-4


def runtimes() -> list[str]:
    from backends.nnfactory.runtime import available_runtimes

    return available_runtimes()


def _randomize_batch_norms(model: torch.nn.Module) -> None:
    """Running statistics and affine parameters away from the identity (fresh ones are 0/1, and
    the tiny models' activations then vanish)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.normal_(1.0, 0.2)
                m.bias.normal_(0.0, 0.1)


def _image() -> torch.Tensor:
    return torch.randn(1, 3, 32, 32)


FAMILIES = {
    # name: (model factory, input factory, NPU kinds that must appear, aten ops that must be gone)
    "resnet": (
        lambda: T.ResNetModel(T.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1],
                                             layer_type="bottleneck")),
        _image, {"conv", "pool"}, ("aten.batch_norm", "aten._native_batch_norm"),
    ),
    "convnext": (
        lambda: T.ConvNextModel(T.ConvNextConfig(num_stages=2, hidden_sizes=[8, 16], depths=[1, 1])),
        _image, {"conv", "layer_norm"}, (),
    ),
    "mobilenetv2": (
        lambda: T.MobileNetV2Model(T.MobileNetV2Config(image_size=32, depth_multiplier=0.25)),
        _image, {"conv", "pad"}, ("aten.batch_norm", "aten._native_batch_norm", "aten.hardtanh"),
    ),
    "swin": (
        lambda: T.SwinModel(T.SwinConfig(image_size=32, patch_size=4, embed_dim=8, depths=[2, 1], num_heads=[1, 2],
                                         window_size=4)),
        _image, {"conv", "layer_norm", "slice", "concat"}, (),
    ),
    "wav2vec2": (
        lambda: T.Wav2Vec2Model(T.Wav2Vec2Config(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, conv_dim=(8, 8),
            conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2,
        )),
        lambda: torch.randn(1, 400), {"conv", "layer_norm"}, ("aten._weight_norm_interface",),
    ),
}


PRESENT = {
    "resnet": ('activation = "relu"', 'aten.weight "fold.'),
    "mobilenetv2": ('activation = "relu6"', 'aten.weight "fold.'),
}
"""What the optimized aten IR must contain: convolutions with their folded weights and epilogues."""


class LastHiddenState(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x).last_hidden_state


def _npu_kinds(compiled) -> set[str]:
    return {kind for segment in compiled.executor.program.segments for kind in segment.stats.kinds}


@pytest.mark.parametrize("runtime", runtimes())
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_runs_on_the_npu_path(family: str, runtime: str) -> None:
    make, make_input, kinds, gone = FAMILIES[family]
    torch.manual_seed(0)
    model = make()
    _randomize_batch_norms(model)
    model = LastHiddenState(model.eval()).eval()
    x = make_input()
    with torch.no_grad():
        want = model(x)
    compiled = forge_compile(model, (x,), runtime=runtime, keep_stages=True)
    report = compiled.report
    assert report["cpu_fallback"] == {} and report["cpu_ops"] == 0, report["cpu_fallback"]
    assert kinds <= _npu_kinds(compiled), compiled.executor.program.summary(timings=False)
    for name in gone:
        assert name not in compiled.stages["aten"], f"{family}: {name} left in the optimized aten IR"
    for text in PRESENT.get(family, ()):
        assert text in compiled.stages["aten"], f"{family}: no {text} in the optimized aten IR"
    got = compiled(x)
    scale = max(want.abs().max().item(), 1e-3)
    diff = (got - want).abs().max().item()
    assert diff <= REL_TOL * max(scale, 1.0), f"{family}: max|diff| {diff} at output scale {scale}"
    assert scale > 1e-2, f"{family}: degenerate output (scale {scale})"
