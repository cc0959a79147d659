"""Audio models: wav2vec2 (raw waveform) and whisper's encoder and decoder (log-mel features).

* ``wav2vec2`` -- `Wav2Vec2Model`: ``forward(input_values: float32[1, N]) -> last_hidden_state``;
  a strided conv feature extractor (GroupNorm after the first conv), a grouped positional conv
  (weight-normalised), then a post-norm transformer encoder.  Small: 3 conv layers of 32 channels,
  1600 samples (0.1 s at 16 kHz); default: wav2vec2-base (7 convs of 512, 12 x 768), 16000
  samples (1 s).
* ``whisper-encoder`` -- `WhisperModel`'s encoder alone:
  ``forward(input_features: float32[1, n_mels, frames]) -> last_hidden_state``; Whisper pads every
  input to ``2 * max_source_positions`` frames.  Small: 16 mels x 64 frames, 2 x 64; default:
  whisper-tiny (80 mels x 3000 frames = 30 s, 4 x 384).
* ``whisper-decoder`` -- `WhisperForConditionalGeneration`'s decoder and its (tied) output
  projection: ``forward(decoder_input_ids: LongTensor[1, L], encoder_hidden_states: float32[1, S, d])
  -> logits``, S = max_source_positions.  Same sizes as the encoder; ``seq_len`` is L (small: at
  most 128, default 448).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from forge.models.base import (
    ATTN_IMPLS,
    CrossDecoderZooModel,
    Family,
    MelEncoderZooModel,
    WaveformZooModel,
    check_seq_len,
    hf_class,
    text_ids,
)


def _wav2vec2_config(s: Mapping[str, Any], layers: int | None) -> Any:
    return hf_class("Wav2Vec2Config")(
        vocab_size=32, hidden_size=s["hidden"], num_hidden_layers=s["layers"] if layers is None else layers,
        num_attention_heads=s["heads"], intermediate_size=s["intermediate"],
        conv_dim=tuple(s["conv_dim"]), conv_stride=tuple(s["conv_stride"]), conv_kernel=tuple(s["conv_kernel"]),
        num_conv_pos_embeddings=s["pos_kernel"], num_conv_pos_embedding_groups=s["pos_groups"],
        feat_extract_norm="group", do_stable_layer_norm=False, apply_spec_augment=False,
        hidden_dropout=0.0, activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0,
        final_dropout=0.0, layerdrop=0.0,
    )


def _whisper_config(s: Mapping[str, Any], layers: int | None) -> Any:
    n = s["layers"] if layers is None else layers
    last = s["vocab"] - 1
    return hf_class("WhisperConfig")(
        vocab_size=s["vocab"], num_mel_bins=s["mels"], d_model=s["hidden"], encoder_layers=n, decoder_layers=n,
        encoder_attention_heads=s["heads"], decoder_attention_heads=s["heads"],
        encoder_ffn_dim=s["intermediate"], decoder_ffn_dim=s["intermediate"],
        max_source_positions=s["source_positions"], max_target_positions=s["max_positions"],
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0, encoder_layerdrop=0.0,
        decoder_layerdrop=0.0, use_cache=False, pad_token_id=last, bos_token_id=last, eos_token_id=last,
        decoder_start_token_id=last, suppress_tokens=None, begin_suppress_tokens=None,
    )


def _waveform(s: Mapping[str, Any], seq_len: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    del seq_len  # the audio length is fixed per variant
    return (torch.randn(1, s["samples"], generator=gen, dtype=torch.float32),)


def _mel(s: Mapping[str, Any], seq_len: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    del seq_len  # whisper always takes 2 * max_source_positions frames
    return (torch.randn(1, s["mels"], 2 * s["source_positions"], generator=gen, dtype=torch.float32),)


def _decoder_inputs(s: Mapping[str, Any], seq_len: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    check_seq_len("whisper-decoder", s, seq_len)
    ids = text_ids(s, seq_len, gen)
    states = torch.randn(1, s["source_positions"], s["hidden"], generator=gen, dtype=torch.float32)
    return ids, states


def _wrap_wav2vec2(name: str, attn: str, hf: Any) -> WaveformZooModel:
    return WaveformZooModel(name, attn, hf, output="last_hidden_state")


def _wrap_encoder(name: str, attn: str, hf: Any) -> MelEncoderZooModel:
    return MelEncoderZooModel(name, attn, hf.get_encoder(), output="last_hidden_state")


def _wrap_decoder(name: str, attn: str, hf: Any) -> CrossDecoderZooModel:
    return CrossDecoderZooModel(name, attn, hf.get_decoder(), head=hf.proj_out, call_kwargs={"use_cache": False})


_WAV2VEC2_SMALL = {"hidden": 64, "layers": 2, "heads": 4, "intermediate": 128, "conv_dim": (32, 32, 32),
                   "conv_stride": (5, 2, 2), "conv_kernel": (10, 3, 3), "pos_kernel": 16, "pos_groups": 4,
                   "samples": 1600}
_WAV2VEC2_BASE = {"hidden": 768, "layers": 12, "heads": 12, "intermediate": 3072, "conv_dim": (512,) * 7,
                  "conv_stride": (5, 2, 2, 2, 2, 2, 2), "conv_kernel": (10, 3, 3, 3, 3, 2, 2), "pos_kernel": 128,
                  "pos_groups": 16, "samples": 16000}
_WHISPER_SMALL = {"vocab": 512, "mels": 16, "hidden": 64, "layers": 2, "heads": 4, "intermediate": 128,
                  "source_positions": 32, "max_positions": 128}
_WHISPER_TINY = {"vocab": 51865, "mels": 80, "hidden": 384, "layers": 4, "heads": 6, "intermediate": 1536,
                 "source_positions": 1500, "max_positions": 448}


def _whisper(name: str, inputs: tuple[str, ...], output: str, make, wrap, doc: str) -> Family:
    return Family(name=name, kind="audio", hf_class="WhisperForConditionalGeneration" if output == "logits"
                  else "WhisperModel", attn_impls=ATTN_IMPLS, inputs=inputs, output=output, small=_WHISPER_SMALL,
                  default=_WHISPER_TINY, build_config=_whisper_config, make_inputs=make, wrap=wrap, sizes_doc=doc)


FAMILIES: tuple[Family, ...] = (
    Family(name="wav2vec2", kind="audio", hf_class="Wav2Vec2Model", attn_impls=ATTN_IMPLS, inputs=("input_values",),
           output="hidden", small=_WAV2VEC2_SMALL, default=_WAV2VEC2_BASE, build_config=_wav2vec2_config,
           make_inputs=_waveform, wrap=_wrap_wav2vec2,
           sizes_doc="wav2vec2-base on 16000 samples (small: 3 convs of 32, 2 x 64, 1600 samples)"),
    _whisper("whisper-encoder", ("input_features",), "hidden", _mel, _wrap_encoder,
             "whisper-tiny encoder on 80 mels x 3000 frames (small: 16 mels x 64 frames, 2 x 64)"),
    _whisper("whisper-decoder", ("decoder_input_ids", "encoder_hidden_states"), "logits", _decoder_inputs,
             _wrap_decoder, "whisper-tiny decoder, 1500 encoder states (small: 2 x 64, 32 encoder states)"),
)
