"""The generator on decoder families whose forward differs from the zoo's: a family that cannot take the generator's
inputs (BLOOM's ALiBi) is refused with a GenerateError that names the line of its own code that failed (never a bare
traceback); a position limit under another config name (MPT's `max_seq_len`) bounds the cache; a mixture of experts
as transformers builds it (`grouped_mm`) is traced with static routing. The tokens are transformers' own."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
import transformers

import forge.driver.generation as generation
from forge.driver.generation import GenerateError, compile_generator


def _tiny(config: transformers.PretrainedConfig) -> torch.nn.Module:
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def _bloom() -> torch.nn.Module:
    return _tiny(transformers.BloomConfig(vocab_size=256, hidden_size=64, n_layer=2, n_head=4))


def _mpt(max_seq_len: int) -> torch.nn.Module:
    return _tiny(transformers.MptConfig(vocab_size=256, d_model=64, n_layers=2, n_heads=4, max_seq_len=max_seq_len))


def _left_padded(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(3, vocab, (2, 12), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids)
    mask[1, :4] = 0
    ids[1, :4] = 0
    return ids, mask


def _generates_transformers_tokens(hf: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """forge.generate's greedy tokens for the left-padded batch equal transformers' (EOS off); the batch."""
    ids, mask = _left_padded(256)
    with torch.no_grad():
        expected = hf.generate(ids, attention_mask=mask, max_new_tokens=10, do_sample=False, pad_token_id=0,
                               eos_token_id=None)
    out = generation.generate(hf, ids, 10, attention_mask=mask, eos_token_id=None, pad_token_id=0)
    assert torch.equal(out, expected)
    return ids, mask


def test_a_family_that_cannot_take_the_generators_inputs_is_refused_naming_its_own_code():
    # BLOOM builds its ALiBi bias from a 2-D attention mask; the generator passes an additive 4-D one
    with pytest.raises(GenerateError) as caught:
        compile_generator(_bloom(), prompt_len=5, max_new_tokens=2)
    text = str(caught.value)
    assert text.startswith("BloomForCausalLM's prefill step does not trace with the generator's inputs")
    assert "at transformers/models/bloom/modeling_bloom.py:" in text
    assert "(build_alibi_tensor): ValueError: too many values to unpack" in text


def test_forge_generate_refuses_it_from_a_checkpoint_without_a_traceback(tmp_path):
    _bloom().save_pretrained(tmp_path / "bloom")
    done = subprocess.run(
        [sys.executable, "-m", "forge.cli.main", "generate", str(tmp_path / "bloom"), "--prompt-len", "8",
         "--new-tokens", "2"],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 1
    assert "forge: error: BloomForCausalLM's prefill step does not trace" in done.stderr
    assert "modeling_bloom.py" in done.stderr and "Traceback" not in done.stderr


def test_mpts_max_seq_len_bounds_the_cache_and_its_tokens_are_transformers():
    hf = _mpt(max_seq_len=64)
    ids, mask = _generates_transformers_tokens(hf)
    assert max(g.cache_len for g in generation._GENERATORS[hf].values()) <= 64  # its ALiBi bias has 64 keys
    with pytest.raises(GenerateError, match="exceed the model's 64 positions"):
        generation.generate(hf, ids, 40, attention_mask=mask, eos_token_id=None, pad_token_id=0)


def test_a_mixture_of_experts_as_transformers_builds_it_generates_transformers_tokens():
    config = transformers.MixtralConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2, intermediate_size=128, num_local_experts=4,
                                        num_experts_per_tok=2, max_position_embeddings=128)
    hf = _tiny(config)
    assert hf.get_experts_implementation() == {"": "grouped_mm"}  # a custom op Forge does not import
    _generates_transformers_tokens(hf)
    assert hf.get_experts_implementation() == {"": "grouped_mm"}  # switched for the export only


def test_multi_head_latent_attention_is_refused_by_name_before_compiling(monkeypatch):
    config = transformers.DeepseekV3Config(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                           num_key_value_heads=4, intermediate_size=128, n_routed_experts=4,
                                           num_experts_per_tok=2, moe_intermediate_size=64, first_k_dense_replace=1,
                                           q_lora_rank=None, kv_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8,
                                           v_head_dim=16, n_group=1, topk_group=1, max_position_embeddings=128)
    hf = _tiny(config)
    monkeypatch.setattr(generation, "_compile_step", lambda *a, **k: pytest.fail("compiled before refusing"))
    with pytest.raises(GenerateError, match=r"DeepseekV3ForCausalLM caches compressed latents \(multi-head latent "
                       r"attention, kv_lora_rank=32\)"):
        compile_generator(hf, prompt_len=5, max_new_tokens=2)
