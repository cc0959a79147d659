"""What every zoo family is made of: the family record (:class:`Family`) and the wrappers.

A :class:`Family` says how to build one architecture from a `transformers` configuration with
seeded random weights: its kind, the transformers class, the attention implementations it offers,
its input names and output kind, the ``small`` (test) and default (benchmark) sizes, a config
builder, a wrapper class and an input builder.  The registry in :mod:`forge.models` holds one per
zoo name; this module imports nothing from its siblings.

The wrappers (:class:`ZooModel` and its subclasses) fix the contract Forge compiles: positional
tensor inputs named as in :attr:`Family.inputs`, ``use_cache=False`` where the model has a cache
(no KV tensors in the graph), ``return_dict=True`` and exactly ONE output tensor -- the logits, or
``last_hidden_state`` for encoders, vision and audio backbones.  Exported with static example
inputs, every shape in the graph is a constant -- which is what the NPU needs.  The HF module is
``self.hf``; parameter names are therefore ``hf.<HF name>``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

#: The attention implementations a transformers model may offer; "none" marks a family without
#: attention (convolutional backbones).
ATTN_IMPLS: tuple[str, ...] = ("sdpa", "eager")
NO_ATTENTION = "none"

KINDS: tuple[str, ...] = ("decoder", "encoder", "encoder-decoder", "moe", "vision", "audio")
OUTPUT_KINDS: tuple[str, ...] = ("logits", "hidden")


class ZooModel(nn.Module):
    """A zoo model with the single-tensor contract Forge compiles.

    ``forward(input_ids: LongTensor[1, L]) -> Tensor``: logits ``[1, L, vocab]`` for the decoders,
    ``last_hidden_state`` ``[1, L, hidden]`` for the encoders (``output="last_hidden_state"``).
    ``call_kwargs`` are passed to the HF forward on every call (``use_cache=False`` for models
    with a KV cache).  Subclasses take the other input signatures.
    """

    def __init__(self, name: str, attn: str, hf: nn.Module, *, output: str = "logits",
                 call_kwargs: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.name = name
        self.attn = attn
        self.hf = hf
        self.output_field = output
        self.call_kwargs = dict(call_kwargs or {})

    @property
    def config(self) -> Any:
        return self.hf.config

    def _select(self, out: Any) -> torch.Tensor:
        return getattr(out, self.output_field)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self._select(self.hf(input_ids=input_ids, return_dict=True, **self.call_kwargs))

    def extra_repr(self) -> str:
        return f"name={self.name!r}, attn={self.attn!r}"


class Seq2SeqZooModel(ZooModel):
    """Encoder-decoder text model: ``forward(input_ids, decoder_input_ids) -> logits``: the whole
    seq2seq forward (encoder, then the decoder cross-attending to it) in one graph."""

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        return self._select(self.hf(input_ids=input_ids, decoder_input_ids=decoder_input_ids,
                                    return_dict=True, **self.call_kwargs))


class VisionZooModel(ZooModel):
    """Vision backbone: ``forward(pixel_values: float32[1, 3, H, W]) -> last_hidden_state``."""

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self._select(self.hf(pixel_values=pixel_values, return_dict=True, **self.call_kwargs))


class WaveformZooModel(ZooModel):
    """Raw-audio encoder (wav2vec2): ``forward(input_values: float32[1, N]) -> last_hidden_state``."""

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        return self._select(self.hf(input_values=input_values, return_dict=True, **self.call_kwargs))


class MelEncoderZooModel(ZooModel):
    """Log-mel audio encoder (whisper's encoder alone):
    ``forward(input_features: float32[1, n_mels, frames]) -> last_hidden_state``."""

    def forward(self, input_features: torch.Tensor) -> torch.Tensor:
        return self._select(self.hf(input_features=input_features, return_dict=True, **self.call_kwargs))


class CrossDecoderZooModel(ZooModel):
    """A decoder alone that cross-attends to given encoder states (whisper's decoder):
    ``forward(decoder_input_ids: LongTensor[1, L], encoder_hidden_states: float32[1, S, d]) -> logits``.

    ``self.hf`` is the decoder stack; ``self.head`` the output projection (tied to the decoder's
    token embedding), so the encoder's weights are not part of the graph.
    """

    def __init__(self, name: str, attn: str, hf: nn.Module, *, head: nn.Module, **kwargs: Any) -> None:
        super().__init__(name, attn, hf, output="last_hidden_state", **kwargs)
        self.head = head

    def forward(self, decoder_input_ids: torch.Tensor, encoder_hidden_states: torch.Tensor) -> torch.Tensor:
        hidden = self._select(self.hf(input_ids=decoder_input_ids, encoder_hidden_states=encoder_hidden_states,
                                      return_dict=True, **self.call_kwargs))
        return self.head(hidden)


#: build_config(sizes, layers, attn) -> transformers config (layers already resolved)
ConfigBuilder = Callable[[Mapping[str, Any], int], Any]
#: make_inputs(sizes, seq_len, generator) -> example input tensors
InputBuilder = Callable[[Mapping[str, Any], int, torch.Generator], tuple[torch.Tensor, ...]]
#: wrap(name, attn, hf) -> ZooModel
Wrapper = Callable[[str, str, nn.Module], ZooModel]


@dataclass(frozen=True)
class Family:
    """One zoo architecture (see the module docstring).

    ``small`` / ``default`` are the size tables the config and input builders read (``layers``,
    and for text ``vocab`` and ``max_positions``); ``hf_class`` is the transformers class built
    (``hf_kwargs`` go to its constructor); ``prepare`` may adjust the freshly built HF module
    (e.g. give BatchNorm seeded running statistics).  ``sizes_doc`` says in words what the default
    size is.
    """

    name: str
    kind: str
    hf_class: str
    attn_impls: tuple[str, ...]
    inputs: tuple[str, ...]
    output: str
    small: Mapping[str, Any]
    default: Mapping[str, Any]
    build_config: ConfigBuilder
    make_inputs: InputBuilder
    wrap: Wrapper
    hf_kwargs: Mapping[str, Any] = field(default_factory=dict)
    prepare: Callable[[nn.Module, int], None] | None = None
    sizes_doc: str = ""

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind
        assert self.output in OUTPUT_KINDS, self.output
        assert self.attn_impls, self.name

    @property
    def has_attention(self) -> bool:
        return self.attn_impls != (NO_ATTENTION,)

    @property
    def is_text(self) -> bool:
        return "vocab" in self.small

    def sizes(self, small: bool) -> Mapping[str, Any]:
        return self.small if small else self.default


def hf_class(name: str) -> type:
    """A transformers class by name (lazy: importing transformers costs seconds)."""
    import transformers  # lazy: start-up cost (transformers)

    return getattr(transformers, name)


def text_ids(s: Mapping[str, Any], seq_len: int, gen: torch.Generator) -> torch.Tensor:
    """Seeded token ids, int64 ``[1, seq_len]`` in ``[0, vocab)``."""
    return torch.randint(0, s["vocab"], (1, seq_len), generator=gen, dtype=torch.long)


def check_seq_len(name: str, s: Mapping[str, Any], seq_len: int) -> None:
    if not 1 <= seq_len <= s["max_positions"]:
        raise ValueError(f"{name}: seq_len must be in [1, {s['max_positions']}], got {seq_len}")


def seeded_batchnorm(hf: nn.Module, seed: int) -> None:
    """Give every BatchNorm seeded, non-trivial affine parameters and running statistics.

    Freshly initialised BatchNorm is the identity in eval mode (mean 0, var 1, weight 1, bias 0),
    which would hide a wrong folding or lowering; trained networks never look like that.
    """
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for module in hf.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                n = module.num_features
                module.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                module.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                if module.affine:
                    module.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                    module.bias.copy_(torch.randn(n, generator=gen) * 0.1)
