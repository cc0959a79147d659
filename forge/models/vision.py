"""Vision backbones: ``forward(pixel_values: float32[1, 3, H, W]) -> last_hidden_state``.

``small`` variants take 32x32 images (MobileNetV2 and Hiera: 64x64, so their downsampling leaves a
2x2 map) with a few channels and one or two blocks per stage; the defaults are the published
ImageNet sizes at 224x224: ResNet-50, ConvNeXt-T, MobileNetV2 1.0, ViT-B/16, Swin-T, ConvNeXt-V2-T,
Hiera-T, and Swin-V2-T at 256x256. ConvNeXt-V2 and Swin-V2 normalize by L2 norms (global response
normalization, cosine attention); Hiera pools its queries between stages (a multi-scale ViT).  The outputs are the
backbone's last hidden state (NCHW feature maps for the convolutional nets, tokens for ViT and
Swin), without poolers or classifier heads.  ``layers`` sets ViT's depth and, for the staged nets,
the number of blocks in every stage; MobileNetV2's depth is fixed.

BatchNorm layers get seeded running statistics and affine parameters (base.seeded_batchnorm);
ConvNeXt's layer scale starts at 1.0 instead of 1e-6 so its residual branches are not ~zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from forge.models.base import NO_ATTENTION, Family, VisionZooModel, hf_class, seeded_batchnorm


def _stage_depths(s: Mapping[str, Any], layers: int | None) -> list[int]:
    return list(s["depths"]) if layers is None else [layers] * len(s["depths"])


def _resnet_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("ResNetConfig")(
        num_channels=3, embedding_size=s["embedding"], hidden_sizes=list(s["widths"]),
        depths=_stage_depths(s, layers), layer_type=s["block"], hidden_act="relu", downsample_in_first_stage=False,
    )


def _convnext_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("ConvNextConfig")(
        num_channels=3, patch_size=4, num_stages=len(s["widths"]), hidden_sizes=list(s["widths"]),
        depths=_stage_depths(s, layers),
        hidden_act="gelu", layer_scale_init_value=1.0, drop_path_rate=0.0, image_size=s["image"],
    )


def _mobilenet_v2_config(s: Mapping[str, Any], layers: int | None) -> Any:
    if layers is not None:
        raise ValueError("mobilenetv2: the depth is fixed (17 inverted-residual blocks); drop --layers")
    return hf_class("MobileNetV2Config")(
        num_channels=3, image_size=s["image"], depth_multiplier=s["multiplier"],
        finegrained_output=s["multiplier"] >= 1.0, hidden_act="relu6", tf_padding=True,
        classifier_dropout_prob=0.0,
    )


def _vit_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("ViTConfig")(
        hidden_size=s["hidden"], num_hidden_layers=s["layers"] if layers is None else layers,
        num_attention_heads=s["heads"], intermediate_size=s["intermediate"], image_size=s["image"],
        patch_size=s["patch"], num_channels=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )


def _swin_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("SwinConfig")(
        image_size=s["image"], patch_size=s["patch"], num_channels=3, embed_dim=s["hidden"],
        depths=_stage_depths(s, layers), num_heads=list(s["heads"]), window_size=s["window"],
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0,
    )


def _convnext_v2_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("ConvNextV2Config")(
        num_channels=3, patch_size=4, num_stages=len(s["widths"]), hidden_sizes=list(s["widths"]),
        depths=_stage_depths(s, layers), hidden_act="gelu", drop_path_rate=0.0, image_size=s["image"],
    )


def _swinv2_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("Swinv2Config")(
        image_size=s["image"], patch_size=s["patch"], num_channels=3, embed_dim=s["hidden"],
        depths=_stage_depths(s, layers), num_heads=list(s["heads"]), window_size=s["window"],
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, drop_path_rate=0.0,
    )


def _hiera_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("HieraConfig")(
        image_size=[s["image"], s["image"]], num_channels=3, embed_dim=s["hidden"], num_heads=list(s["heads"]),
        depths=_stage_depths(s, layers), num_query_pool=s["query_pool"], drop_path_rate=0.0,
    )


def _pixels(s: Mapping[str, Any], seq_len: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    del seq_len  # images have a fixed size per variant
    return (torch.randn(1, 3, s["image"], s["image"], generator=gen, dtype=torch.float32),)


def _wrap(name: str, attn: str, hf: Any) -> VisionZooModel:
    return VisionZooModel(name, attn, hf, output="last_hidden_state")


def _family(name: str, cls: str, config, small, default, doc: str, *, attn=(NO_ATTENTION,), **kw) -> Family:
    return Family(name=name, kind="vision", hf_class=cls, attn_impls=attn, inputs=("pixel_values",),
                  output="hidden", small=small, default=default, build_config=config, make_inputs=_pixels,
                  wrap=_wrap, sizes_doc=doc, **kw)


FAMILIES: tuple[Family, ...] = (
    _family("resnet", "ResNetModel", _resnet_config,
            {"image": 32, "embedding": 16, "widths": (16, 32), "depths": (1, 1), "block": "basic"},
            {"image": 224, "embedding": 64, "widths": (256, 512, 1024, 2048), "depths": (3, 4, 6, 3),
             "block": "bottleneck"},
            "ResNet-50 at 224x224 (small: 2 basic stages of 16/32 channels, 32x32)", prepare=seeded_batchnorm),
    _family("convnext", "ConvNextModel", _convnext_config,
            {"image": 32, "widths": (16, 32), "depths": (1, 1)},
            {"image": 224, "widths": (96, 192, 384, 768), "depths": (3, 3, 9, 3)},
            "ConvNeXt-T at 224x224 (small: 2 stages of 16/32 channels, 32x32)"),
    _family("mobilenetv2", "MobileNetV2Model", _mobilenet_v2_config,
            {"image": 64, "multiplier": 0.25}, {"image": 224, "multiplier": 1.0},
            "MobileNetV2 1.0 at 224x224 (small: width x0.25, 64x64)", prepare=seeded_batchnorm),
    _family("vit", "ViTModel", _vit_config,
            {"image": 32, "patch": 8, "hidden": 64, "layers": 2, "heads": 4, "intermediate": 128},
            {"image": 224, "patch": 16, "hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072},
            "ViT-B/16 at 224x224 (small: 2 x 64, patch 8, 32x32)", attn=("sdpa", "eager"),
            hf_kwargs={"add_pooling_layer": False}),
    _family("swin", "SwinModel", _swin_config,
            {"image": 32, "patch": 2, "hidden": 16, "depths": (2, 2), "heads": (2, 4), "window": 4},
            {"image": 224, "patch": 4, "hidden": 96, "depths": (2, 2, 6, 2), "heads": (3, 6, 12, 24), "window": 7},
            "Swin-T at 224x224 (small: 2 stages of 2 blocks, 16/32 channels, window 4, 32x32)",
            attn=("sdpa", "eager"), hf_kwargs={"add_pooling_layer": False}),
    _family("convnextv2", "ConvNextV2Model", _convnext_v2_config,
            {"image": 32, "widths": (16, 32), "depths": (1, 1)},
            {"image": 224, "widths": (96, 192, 384, 768), "depths": (3, 3, 9, 3)},
            "ConvNeXt-V2-T at 224x224 (global response normalization; small: 2 stages of 16/32 channels, 32x32)"),
    _family("swinv2", "Swinv2Model", _swinv2_config,
            {"image": 32, "patch": 2, "hidden": 16, "depths": (2, 2), "heads": (2, 4), "window": 4},
            {"image": 256, "patch": 4, "hidden": 96, "depths": (2, 2, 6, 2), "heads": (3, 6, 12, 24), "window": 8},
            "Swin-V2-T at 256x256, window 8 (cosine attention; small: 2 stages of 2 blocks, 16/32 channels, 32x32)",
            attn=("eager",), hf_kwargs={"add_pooling_layer": False}),
    _family("hiera", "HieraModel", _hiera_config,
            {"image": 64, "hidden": 16, "heads": (1, 2), "depths": (1, 1), "query_pool": 1},
            {"image": 224, "hidden": 96, "heads": (1, 2, 4, 8), "depths": (1, 2, 7, 2), "query_pool": 2},
            "Hiera-T at 224x224 (a multi-scale ViT with pooled queries; small: 2 stages of 1 block, 16/32 channels, "
            "64x64)", attn=("eager",), hf_kwargs={"add_pooling_layer": False}),
)
