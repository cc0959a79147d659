"""The model zoo: every family x attention implementation builds, runs, is seeded and exports."""

from __future__ import annotations

import pytest
import torch

from forge.models import (
    ATTN_IMPLS,
    ZOO,
    ZooModel,
    build_model,
    example_inputs,
    make_config,
    max_positions,
    parameter_count,
    vocab_size,
)

SEQ = 16
CASES = [(name, attn) for name in ZOO for attn in ATTN_IMPLS]
IDS = [f"{name}-{attn}" for name, attn in CASES]


def _expected_shape(name: str, seq: int) -> tuple[int, ...]:
    if name == "bert":
        return (1, seq, 64)  # last_hidden_state, small hidden size
    return (1, seq, vocab_size(name, small=True))  # logits


@pytest.mark.parametrize(("name", "attn"), CASES, ids=IDS)
def test_small_model_runs_with_expected_shape(name: str, attn: str) -> None:
    model = build_model(name, attn=attn, small=True)
    assert isinstance(model, ZooModel)
    assert not model.training
    assert model.config._attn_implementation == attn
    assert all(p.dtype == torch.float32 for p in model.parameters())
    with torch.no_grad():
        out = model(*example_inputs(name, seq_len=SEQ, small=True))
    assert isinstance(out, torch.Tensor)
    assert tuple(out.shape) == _expected_shape(name, SEQ)
    assert out.dtype == torch.float32
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", ZOO)
def test_seed_determines_weights_and_output(name: str) -> None:
    (ids,) = example_inputs(name, seq_len=SEQ, small=True)
    with torch.no_grad():
        a = build_model(name, small=True, seed=3)(ids)
        b = build_model(name, small=True, seed=3)(ids)
        c = build_model(name, small=True, seed=4)(ids)
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


@pytest.mark.parametrize("name", ZOO)
def test_attention_impls_compute_the_same_function(name: str) -> None:
    (ids,) = example_inputs(name, seq_len=SEQ, small=True)
    with torch.no_grad():
        sdpa = build_model(name, attn="sdpa", small=True)(ids)
        eager = build_model(name, attn="eager", small=True)(ids)
    torch.testing.assert_close(sdpa, eager, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize(("name", "attn"), CASES, ids=IDS)
def test_small_model_exports(name: str, attn: str) -> None:
    model = build_model(name, attn=attn, small=True)
    inputs = example_inputs(name, seq_len=SEQ, small=True)
    ep = torch.export.export(model, inputs)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    if attn == "sdpa":
        assert "aten.scaled_dot_product_attention.default" in targets
    else:
        assert "aten.scaled_dot_product_attention.default" not in targets
        assert "aten.softmax.int" in targets
    assert len(ep.graph_signature.user_outputs) == 1
    with torch.no_grad():
        torch.testing.assert_close(ep.module()(*inputs), model(*inputs))


def test_layers_overrides_depth() -> None:
    assert build_model("gpt2", small=True, layers=1).config.n_layer == 1
    assert build_model("llama", small=True, layers=3).config.num_hidden_layers == 3
    assert build_model("bert", small=True, layers=1).config.num_hidden_layers == 1
    with pytest.raises(ValueError, match="layers"):
        make_config("gpt2", layers=0)


def test_family_features() -> None:
    gpt2 = build_model("gpt2", small=True)
    assert gpt2.hf.lm_head.weight is gpt2.hf.transformer.wte.weight  # tied

    llama = build_model("llama", small=True)
    cfg = llama.config
    assert cfg.num_key_value_heads < cfg.num_attention_heads  # grouped-query attention
    assert cfg.hidden_act == "silu"
    assert llama.hf.lm_head.weight is not llama.hf.model.embed_tokens.weight

    bert = build_model("bert", small=True)
    assert bert.hf.pooler is None


def test_small_sizes() -> None:
    for name in ZOO:
        model = build_model(name, small=True)
        assert parameter_count(model) < 200_000
        assert max_positions(name, small=True) == 128
        assert 256 <= vocab_size(name, small=True) <= 512
    cfg = make_config("llama", small=True)
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads,
            cfg.num_key_value_heads, cfg.intermediate_size) == (2, 64, 4, 2, 128)


def test_benchmark_sizes() -> None:
    gpt2 = make_config("gpt2")
    assert (gpt2.n_layer, gpt2.n_embd, gpt2.n_head, gpt2.vocab_size, gpt2.n_positions) == (
        12, 768, 12, 50257, 1024)
    bert = make_config("bert")
    assert (bert.num_hidden_layers, bert.hidden_size, bert.num_attention_heads,
            bert.intermediate_size, bert.vocab_size) == (12, 768, 12, 3072, 30522)
    llama = make_config("llama")
    assert llama.num_hidden_layers >= 12
    assert llama.num_key_value_heads < llama.num_attention_heads
    assert llama.hidden_size % llama.num_attention_heads == 0
    assert llama.vocab_size == 32000


def test_example_inputs() -> None:
    for name in ZOO:
        (ids,) = example_inputs(name, small=True, seq_len=100, seed=7)
        assert ids.shape == (1, 100) and ids.dtype == torch.long
        assert 0 <= int(ids.min()) and int(ids.max()) < vocab_size(name, small=True)
        assert torch.equal(ids, example_inputs(name, small=True, seq_len=100, seed=7)[0])
        assert not torch.equal(ids, example_inputs(name, small=True, seq_len=100, seed=8)[0])
    (ids,) = example_inputs("gpt2")
    assert ids.shape == (1, 128) and int(ids.max()) < 50257
    with pytest.raises(ValueError, match="seq_len"):
        example_inputs("gpt2", small=True, seq_len=129)


def test_example_inputs_leave_global_rng_alone() -> None:
    torch.manual_seed(11)
    expected = torch.rand(3)
    torch.manual_seed(11)
    example_inputs("llama", small=True)
    assert torch.equal(torch.rand(3), expected)


def test_unknown_names_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="gpt2, llama, bert"):
        build_model("t5", small=True)
    with pytest.raises(ValueError, match="sdpa, eager"):
        build_model("gpt2", attn="flash_attention_2", small=True)
    with pytest.raises(ValueError, match="gpt2, llama, bert"):
        example_inputs("t5")
