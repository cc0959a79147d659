"""Generation on decoders whose attention is not plain causal, or which ask their cache questions.

* A sliding window (Mistral's `sliding_window`, `layer_types` all `"sliding_attention"`): the generator's mask is
  built by the wrapper (a 4-D mask, which transformers uses as given), so the window must be in it. Without it the
  tokens silently differed from transformers' once the sequence passed the window (Mistral small, window 8: the
  second new token).
* Windowed and full layers named by `layer_types` (Gemma-2/3, Qwen2 with `use_sliding_window`): a mask per layer
  type, which transformers takes as a dict.
* Windowed and full layers otherwise (GPT-Neo's local/global): one mask cannot serve both, so a generator whose
  cache exceeds the window is refused, and `forge.generate` keeps its cache within the window.
* OPT asks the cache its length (`get_seq_length`): it crashed with an AttributeError.
* A model without attention (Mamba) is refused by name, not with an AttributeError.
"""

from __future__ import annotations

import pytest
import torch

import forge.driver.generation as generation
from forge.driver.generation import GenerateError, attention_window, compile_generator
from forge.models import build_model, hf_class
from tests.compiler.test_generate import _prompt as left_padded_prompt

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _prompt(vocab: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch 2, row 1 left-padded by 3 tokens."""
    return left_padded_prompt(vocab, 2, seed=5, length=length)


def _transformers(hf, ids, mask, new):
    with torch.no_grad():
        return hf.generate(ids, attention_mask=mask, max_new_tokens=new, do_sample=False, use_cache=True)


_SMALL = dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=128, sliding_window=6)


def _small(name: str):
    """Small random decoders with a 6-token window: Qwen2 with every layer windowed (`max_window_layers` 0) or the
    first full and the second windowed (1), Gemma-2 alternating windowed and full layers."""
    if name == "mistral":
        return build_model(name, small=True).hf
    if name.startswith("qwen2"):
        config = hf_class("Qwen2Config")(**_SMALL, num_hidden_layers=2, use_sliding_window=True,
                                         max_window_layers=0 if name == "qwen2-all-sliding" else 1)
        model = "Qwen2ForCausalLM"
    else:
        config = hf_class("Gemma2Config")(**_SMALL, num_hidden_layers=4, head_dim=16, attn_logit_softcapping=None,
                                          final_logit_softcapping=None)
        model = "Gemma2ForCausalLM"
    torch.manual_seed(0)
    with torch.no_grad():
        hf = hf_class(model)(config).eval()
        for p in hf.parameters():  # wider than initializer_range 0.02: decoding that varies proves more (Gemma's
            if p.dim() >= 2:  # tied, sqrt(hidden)-scaled embeddings repeat the last token at 0.3)
                p.normal_(0, 0.05 if model.startswith("Gemma") else 0.3)
    return hf


@pytest.mark.parametrize(
    ("name", "form"),
    [("mistral", "all"), ("qwen2-all-sliding", "all"), ("qwen2-mixed", "layer_types"), ("gemma2", "layer_types")],
)
def test_a_sliding_window_decoder_generates_transformers_tokens_past_its_window(name, form):
    hf = _small(name)
    window, found = attention_window(hf.config)
    assert window is not None and found == form
    prompt, new = window + 1, 8  # the window binds in the prefill and in every decode step
    ids, mask = _prompt(hf.config.vocab_size, prompt)
    gen = compile_generator(hf, batch=2, prompt_len=prompt, max_new_tokens=new)
    assert gen.cache_len > window
    expected = _transformers(hf, ids, mask, new)
    assert len(set(expected[:, prompt:].flatten().tolist())) >= 4, "degenerate decoding would prove little"
    ours = gen.generate(ids, new, attention_mask=mask)
    assert torch.equal(ours, expected), f"first difference at {(ours != expected).nonzero()[:1].tolist()}"


def test_a_sliding_window_holds_across_prefill_chunks_reading_the_cache():
    """`forge.generate`'s default geometry: a 40-token prompt is prefilled in two 32-token chunks, the second
    attending to the cache with the window (8) in its mask."""
    hf = build_model("mistral", small=True).hf
    ids, mask = _prompt(hf.config.vocab_size, 40)
    ours = generation.generate(hf, ids, 6, attention_mask=mask)
    (gen,) = generation._GENERATORS[hf].values()
    assert gen.chunk == 32 and gen.prefill.report["reads_cache"]
    assert torch.equal(ours, _transformers(hf, ids, mask, 6))


def test_windowed_and_full_layers_mixed_are_refused_past_the_window_and_exact_within_it():
    hf = build_model("gpt-neo", small=True).hf
    window, form = attention_window(hf.config)
    assert (window, form) == (8, "mixed")
    with pytest.raises(GenerateError, match="8-token window in some layers and otherwise in others"):
        compile_generator(hf, batch=2, prompt_len=9, max_new_tokens=6)
    ids, mask = _prompt(hf.config.vocab_size, 5)
    out = generation.generate(hf, ids, 2, attention_mask=mask)  # forge.generate keeps its cache within the window
    assert torch.equal(out, _transformers(hf, ids, mask, 2))
    assert max(g.cache_len for g in generation._GENERATORS[hf].values()) <= window
    with pytest.raises(GenerateError, match="exceed the 8-token window of the model's windowed attention layers"):
        generation.generate(hf, ids, 3, attention_mask=mask)  # 7 padded prompt positions + 3 new tokens


def test_opt_asks_the_cache_its_length_and_generates_transformers_tokens():
    hf = build_model("opt", small=True).hf
    ids, mask = _prompt(hf.config.vocab_size, 9)
    gen = compile_generator(hf, batch=2, prompt_len=9, max_new_tokens=6)
    assert torch.equal(gen.generate(ids, 6, attention_mask=mask), _transformers(hf, ids, mask, 6))


def test_a_model_without_attention_is_refused_by_name():
    hf = build_model("mamba", small=True).hf
    with pytest.raises(GenerateError, match="MambaForCausalLM has no attention layers"):
        compile_generator(hf, prompt_len=4, max_new_tokens=2)


@pytest.mark.parametrize(
    ("config_class", "options", "expected"),
    [
        ("LlamaConfig", {}, (None, "none")),
        ("MistralConfig", {"sliding_window": 16}, (16, "all")),
        ("MistralConfig", {"sliding_window": None}, (None, "none")),
        ("Qwen2Config", {"use_sliding_window": False}, (None, "none")),
        ("Qwen2Config", {"use_sliding_window": True, "sliding_window": 6, "max_window_layers": 0,
                         "num_hidden_layers": 2}, (6, "all")),
        ("Qwen2Config", {"use_sliding_window": True, "sliding_window": 6, "max_window_layers": 1,
                         "num_hidden_layers": 2}, (6, "layer_types")),
        ("Gemma2Config", {"sliding_window": 32}, (32, "layer_types")),
        ("GPTNeoConfig", {"window_size": 8}, (8, "mixed")),
        ("GPTNeoConfig", {"attention_types": [[["local"], 2]], "num_layers": 2, "window_size": 8}, (8, "all")),
        ("GPTNeoConfig", {"attention_types": [[["global"], 2]], "num_layers": 2}, (None, "none")),
    ],
)
def test_attention_window_reads_each_config_style(config_class, options, expected):
    assert attention_window(hf_class(config_class)(**options)) == expected
