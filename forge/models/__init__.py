"""The model zoo: the architectures Forge must compile end to end.

Every model is built from a `transformers` configuration with seeded random weights (nothing is
ever downloaded), in eval mode and fp32.  :data:`ZOO` lists every family; the registry
(:func:`family`) says for each its kind (decoder, encoder, encoder-decoder, moe, vision, audio),
its transformers class, attention implementations, input names, output kind and sizes:

* text (:mod:`forge.models.text`): ``gpt2``, ``llama``, ``bert`` -- the original three, unchanged
  -- and ``opt``, ``gpt-neo``, ``mistral``, ``qwen2``, ``phi3``, ``gemma`` (decoders),
  ``mamba`` (state space), ``rwkv`` (recurrent), ``distilbert``, ``roberta``, ``funnel``,
  ``convbert`` (encoders), ``t5``, ``bart`` (encoder-decoders: the whole seq2seq forward with
  ``decoder_input_ids``), ``mixtral``, ``qwen2-moe`` (mixtures of experts);
* vision (:mod:`forge.models.vision`): ``resnet``, ``convnext``, ``mobilenetv2``, ``vit``, ``swin``,
  ``convnextv2``, ``swinv2`` (L2-normalizing), ``hiera`` (a multi-scale ViT);
* audio (:mod:`forge.models.audio`): ``wav2vec2``, ``whisper-encoder``, ``whisper-decoder``.

Families with attention come in the implementations transformers offers, ``"sdpa"`` (one
`scaled_dot_product_attention` call, what `fuse-attention` wants to see) and ``"eager"`` (explicit
matmul/softmax/matmul, what `fuse-attention` has to recognise); :func:`attn_impls` says which (GPT-Neo
has only ``eager``, so do the families whose attention transformers writes by hand; the
convolutional nets, Mamba and RWKV have no attention, ``"none"``).  ``small=True`` gives a
tiny variant for tests; the default sizes are the benchmark ones (each family's ``sizes_doc``).

The modules returned by :func:`build_model` are thin wrappers (:class:`ZooModel` and its subclasses,
:mod:`forge.models.base`) around the Hugging Face model.  They exist because the HF ``forward`` is
built for training and generation, not for a static-shape NPU graph: it takes many optional
inputs, returns a ``ModelOutput`` holding a KV cache, hidden states and attentions, and decides the
cache type at run time.  The wrapper fixes the contract Forge compiles: positional tensors named
by :func:`input_names`, ``use_cache=False`` (no KV cache tensors in the graph) and a single output,
logits or ``last_hidden_state`` (:func:`output_kind`: ``"logits"`` or ``"hidden"``).  Exported with
static example inputs, every shape in the graph is a constant -- which is what the NPU needs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from forge.models import audio, text, vision
from forge.models.base import (
    ATTN_IMPLS,
    KINDS,
    NO_ATTENTION,
    CrossDecoderZooModel,
    Family,
    MelEncoderZooModel,
    Seq2SeqZooModel,
    VisionZooModel,
    WaveformZooModel,
    ZooModel,
    hf_class,
)

_REGISTRY: dict[str, Family] = {f.name: f for f in (*text.FAMILIES, *vision.FAMILIES, *audio.FAMILIES)}

#: Every zoo family, text first (the original three lead).
ZOO: tuple[str, ...] = tuple(_REGISTRY)
#: The original three transformer families, which the pass-level tests sweep.
CORE_ZOO: tuple[str, ...] = ("gpt2", "llama", "bert")

#: Sizes shared by the ``small=True`` variants of the text families.
SMALL_LAYERS = text.SMALL["layers"]
SMALL_HIDDEN = text.SMALL["hidden"]
SMALL_HEADS = text.SMALL["heads"]
SMALL_KV_HEADS = text.SMALL_GQA["kv_heads"]  # the grouped-query families
SMALL_INTERMEDIATE = text.SMALL["intermediate"]
SMALL_VOCAB = text.SMALL["vocab"]
SMALL_MAX_POSITIONS = text.SMALL["max_positions"]


def family(name: str) -> Family:
    """The registry entry of a zoo model; a ValueError naming the valid names otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown model {name!r}; valid names: {', '.join(ZOO)}")
    return _REGISTRY[name]


def kind(name: str) -> str:
    """decoder | encoder | encoder-decoder | moe | vision | audio."""
    return family(name).kind


def output_kind(name: str) -> str:
    """``"logits"`` (compare with max |diff| and KL) or ``"hidden"`` (hidden states: max |diff|)."""
    return family(name).output


def input_names(name: str) -> tuple[str, ...]:
    """The names of the model's positional inputs, in order (what :func:`example_inputs` returns)."""
    return family(name).inputs


def attn_impls(name: str) -> tuple[str, ...]:
    """The attention implementations the family offers (the first is the default); ``("none",)``
    for a family without attention."""
    return family(name).attn_impls


def default_attn(name: str, preferred: str | None = None) -> str:
    """``preferred`` if the family offers it, else the family's default implementation."""
    impls = attn_impls(name)
    return preferred if preferred in impls else impls[0]


def _check_attn(name: str, attn: str) -> None:
    impls = attn_impls(name)
    if attn not in impls:
        raise ValueError(
            f"unknown attention implementation {attn!r} for {name}; valid: {', '.join(impls)}"
        )


def _text_sizes(name: str, small: bool) -> Any:
    f = family(name)
    if not f.is_text:
        raise ValueError(f"{name} is a {f.kind} model: it has no vocabulary or positions")
    return f.sizes(small)


def vocab_size(name: str, *, small: bool = False) -> int:
    """Vocabulary size of a text zoo model (the exclusive upper bound of valid token ids)."""
    return _text_sizes(name, small)["vocab"]


def max_positions(name: str, *, small: bool = False) -> int:
    """Longest sequence a text zoo model accepts (its position-embedding / RoPE table size)."""
    return _text_sizes(name, small)["max_positions"]


def make_config(name: str, *, layers: int | None = None, attn: str | None = None,
                small: bool = False) -> Any:
    """The `transformers` configuration of a zoo model (dropout off, fp32, no KV cache).

    ``attn=None`` is the family's default implementation (``sdpa`` where offered)."""
    f = family(name)
    attn = f.attn_impls[0] if attn is None else attn
    _check_attn(name, attn)
    if layers is not None and (isinstance(layers, bool) or not isinstance(layers, int) or layers < 1):
        raise ValueError(f"layers must be a positive int, got {layers!r}")
    s = f.sizes(small)
    config = f.build_config(s, layers if layers is not None else s.get("layers"))
    if f.has_attention:
        config._attn_implementation = attn
    return config


def build_model(name: str, *, layers: int | None = None, attn: str | None = None, small: bool = False,
                seed: int = 0) -> ZooModel:
    """Build a zoo model with seeded random weights, in eval mode, fp32.

    ``small=True`` gives the test variant (text: 2 layers, hidden 64, 4 heads -- 2 KV heads for
    the grouped-query families --, intermediate 128, vocab 512, 128 positions; vision and audio:
    see their modules); ``layers`` overrides the depth.  ``attn=None`` is the family's default
    attention implementation (``sdpa`` where offered).  The same arguments and seed always give
    the same weights.  The global torch RNG is seeded (that is how transformers initialises
    weights) and left in the seeded state.
    """
    f = family(name)
    attn = f.attn_impls[0] if attn is None else attn
    config = make_config(name, layers=layers, attn=attn, small=small)
    torch.manual_seed(seed)
    hf = hf_class(f.hf_class)(config, **f.hf_kwargs).to(torch.float32).eval()
    if f.prepare is not None:
        f.prepare(hf, seed)
    if f.has_attention:
        chosen = hf.config._attn_implementation
        if chosen != attn:  # pragma: no cover - guards against a transformers change
            raise RuntimeError(f"{name}: asked for attention {attn!r}, transformers chose {chosen!r}")
    return f.wrap(name, attn, hf).eval()


def example_inputs(name: str, *, seq_len: int = 128, seed: int = 0,
                   small: bool = False) -> tuple[torch.Tensor, ...]:
    """Seeded example inputs for a zoo model, in the order of :func:`input_names`.

    Text: ``(input_ids,)`` int64 ``[1, seq_len]`` in the vocab; encoder-decoders
    ``(input_ids, decoder_input_ids)``, both ``[1, seq_len]``; vision ``(pixel_values,)`` float32
    ``[1, 3, H, W]``; wav2vec2 ``(input_values,)`` float32 ``[1, N]``; whisper-encoder
    ``(input_features,)`` float32 ``[1, n_mels, frames]``; whisper-decoder ``(decoder_input_ids,
    encoder_hidden_states)``.  ``seq_len`` applies to the token inputs only (image size and audio
    length are fixed per variant).  Uses a private generator, so it does not disturb the global RNG.
    """
    f = family(name)
    gen = torch.Generator().manual_seed(seed)
    return f.make_inputs(f.sizes(small), seq_len, gen)


def parameter_count(model: nn.Module) -> int:
    """Number of distinct parameters (a tied weight counts once)."""
    return sum(p.numel() for p in model.parameters())


__all__ = [
    "ATTN_IMPLS",
    "CORE_ZOO",
    "KINDS",
    "NO_ATTENTION",
    "ZOO",
    "CrossDecoderZooModel",
    "Family",
    "MelEncoderZooModel",
    "Seq2SeqZooModel",
    "VisionZooModel",
    "WaveformZooModel",
    "ZooModel",
    "attn_impls",
    "build_model",
    "default_attn",
    "example_inputs",
    "family",
    "input_names",
    "kind",
    "make_config",
    "max_positions",
    "output_kind",
    "parameter_count",
    "vocab_size",
]
