"""The model zoo: every family x attention implementation builds, runs, is seeded and exports; the
original three keep their sizes; the registry describes every family (kind, inputs, output kind)."""

from __future__ import annotations

import inspect

import pytest
import torch

from forge.models import (
    ATTN_IMPLS,
    CORE_ZOO,
    KINDS,
    NO_ATTENTION,
    ZOO,
    ZooModel,
    attn_impls,
    build_model,
    example_inputs,
    family,
    input_names,
    kind,
    make_config,
    max_positions,
    output_kind,
    parameter_count,
    vocab_size,
)

SEQ = 16
CASES = [(name, attn) for name in CORE_ZOO for attn in ATTN_IMPLS]
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
    inputs = example_inputs(name, seq_len=SEQ, small=True)
    with torch.no_grad():
        a = build_model(name, small=True, seed=3)(*inputs)
        b = build_model(name, small=True, seed=3)(*inputs)
        c = build_model(name, small=True, seed=4)(*inputs)
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


@pytest.mark.parametrize("name", [n for n in ZOO if set(ATTN_IMPLS) <= set(attn_impls(n))])
def test_attention_impls_compute_the_same_function(name: str) -> None:
    inputs = example_inputs(name, seq_len=SEQ, small=True)
    with torch.no_grad():
        sdpa = build_model(name, attn="sdpa", small=True)(*inputs)
        eager = build_model(name, attn="eager", small=True)(*inputs)
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
    for name in CORE_ZOO:
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
    for name in CORE_ZOO:
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
        build_model("t6", small=True)
    with pytest.raises(ValueError, match="sdpa, eager"):
        build_model("gpt2", attn="flash_attention_2", small=True)
    with pytest.raises(ValueError, match="gpt2, llama, bert"):
        example_inputs("t6")
    with pytest.raises(ValueError, match="gpt-neo; valid: eager"):
        build_model("gpt-neo", attn="sdpa", small=True)
    with pytest.raises(ValueError, match="resnet; valid: none"):
        build_model("resnet", attn="eager", small=True)
    with pytest.raises(ValueError, match="no vocabulary"):
        vocab_size("vit")
    with pytest.raises(ValueError, match="depth is fixed"):
        build_model("mobilenetv2", layers=2, small=True)
    with pytest.raises(ValueError, match="seq_len"):
        example_inputs("t5", small=True, seq_len=129)


# --- the families beyond the original three ------------------------------------------------------

NEW = [name for name in ZOO if name not in CORE_ZOO]
# name: (kind, output kind, small output shape at SEQ tokens)
EXPECTED = {
    "opt": ("decoder", "logits", (1, SEQ, 512)),
    "gpt-neo": ("decoder", "logits", (1, SEQ, 512)),
    "mistral": ("decoder", "logits", (1, SEQ, 512)),
    "qwen2": ("decoder", "logits", (1, SEQ, 512)),
    "phi3": ("decoder", "logits", (1, SEQ, 512)),
    "gemma": ("decoder", "logits", (1, SEQ, 512)),
    "mamba": ("decoder", "logits", (1, SEQ, 512)),  # state-space (selective scan)
    "rwkv": ("decoder", "logits", (1, SEQ, 512)),  # recurrent (time mixing)
    "funnel": ("encoder", "hidden", (1, SEQ // 2, 64)),  # the second block pools the sequence by 2
    "convbert": ("encoder", "hidden", (1, SEQ, 64)),
    "distilbert": ("encoder", "hidden", (1, SEQ, 64)),
    "roberta": ("encoder", "hidden", (1, SEQ, 64)),
    "t5": ("encoder-decoder", "logits", (1, SEQ, 512)),
    "bart": ("encoder-decoder", "logits", (1, SEQ, 512)),
    "mixtral": ("moe", "logits", (1, SEQ, 512)),
    "qwen2-moe": ("moe", "logits", (1, SEQ, 512)),
    "resnet": ("vision", "hidden", (1, 32, 4, 4)),  # NCHW feature map of the last stage
    "convnext": ("vision", "hidden", (1, 32, 4, 4)),
    "mobilenetv2": ("vision", "hidden", (1, 320, 2, 2)),
    "vit": ("vision", "hidden", (1, 17, 64)),  # CLS + 4x4 patches
    "swin": ("vision", "hidden", (1, 64, 32)),  # 8x8 tokens after one patch merge
    "convnextv2": ("vision", "hidden", (1, 32, 4, 4)),
    "swinv2": ("vision", "hidden", (1, 64, 32)),
    "hiera": ("vision", "hidden", (1, 64, 32)),  # 64x64 pixels, 16x16 tokens pooled once to 8x8
    "wav2vec2": ("audio", "hidden", (1, 79, 64)),  # 1600 samples / 20 (conv strides 5, 2, 2)
    "whisper-encoder": ("audio", "hidden", (1, 32, 64)),
    "whisper-decoder": ("audio", "logits", (1, SEQ, 512)),
}


def test_zoo_lists_every_required_family() -> None:
    assert ZOO[:3] == CORE_ZOO
    assert set(NEW) == set(EXPECTED)
    assert {kind(n) for n in ZOO} == set(KINDS)
    assert len([n for n in NEW if kind(n) not in ("vision", "audio")]) >= 8


@pytest.mark.parametrize("name", NEW)
def test_new_family_runs_with_the_contract(name: str) -> None:
    expected_kind, expected_output, shape = EXPECTED[name]
    assert (kind(name), output_kind(name)) == (expected_kind, expected_output)
    model = build_model(name, small=True)
    assert isinstance(model, ZooModel) and not model.training
    assert model.attn == attn_impls(name)[0]
    inputs = example_inputs(name, seq_len=SEQ, small=True)
    assert len(inputs) == len(input_names(name))
    assert list(inspect.signature(model.forward).parameters) == list(input_names(name))
    with torch.no_grad():
        out = model(*inputs)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert tuple(out.shape) == shape
    assert torch.isfinite(out).all()
    assert parameter_count(model) < 400_000


@pytest.mark.parametrize("name", NEW)
def test_example_inputs_match_the_input_kinds(name: str) -> None:
    inputs = example_inputs(name, small=True, seq_len=SEQ, seed=2)
    for input_name, tensor in zip(input_names(name), inputs, strict=True):
        assert tensor.shape[0] == 1
        if input_name.endswith("input_ids"):
            assert tensor.dtype == torch.long and tensor.shape == (1, SEQ)
            assert 0 <= int(tensor.min()) and int(tensor.max()) < vocab_size(name, small=True)
        else:
            assert tensor.dtype == torch.float32
    pixels = dict(zip(input_names(name), inputs, strict=True)).get("pixel_values")
    if pixels is not None:
        assert pixels.shape[:2] == (1, 3) and pixels.shape[2] == pixels.shape[3] <= 64
    again = example_inputs(name, small=True, seq_len=SEQ, seed=2)
    assert all(torch.equal(a, b) for a, b in zip(inputs, again, strict=True))


def test_family_specifics() -> None:
    assert attn_impls("gpt-neo") == ("eager",)
    assert all(attn_impls(n) == (NO_ATTENTION,) for n in ("resnet", "convnext", "mobilenetv2"))
    assert make_config("mixtral", small=True)._experts_implementation == "batched_mm"  # static routing
    assert make_config("qwen2-moe", small=True)._experts_implementation == "batched_mm"
    assert input_names("whisper-decoder") == ("decoder_input_ids", "encoder_hidden_states")
    assert input_names("t5") == ("input_ids", "decoder_input_ids")
    decoder = build_model("whisper-decoder", small=True)
    assert decoder.head.weight is decoder.hf.embed_tokens.weight  # tied projection, no encoder weights
    assert not any(k.startswith("hf.encoder") or "encoder.layers" in k for k in decoder.state_dict())
    resnet = build_model("resnet", small=True)
    bn = next(m for m in resnet.modules() if isinstance(m, torch.nn.BatchNorm2d))
    assert not torch.equal(bn.running_var, torch.ones_like(bn.running_var))  # seeded statistics
    assert make_config("vit", small=True, layers=3).num_hidden_layers == 3
    assert make_config("swin", small=True, layers=1).depths == [1, 1]
    assert make_config("rwkv", small=True).rescale_every == 0  # no in-place weight rescaling at run time
    assert all(attn_impls(n) == (NO_ATTENTION,) for n in ("mamba", "rwkv", "convnextv2"))


@pytest.mark.parametrize("name", NEW)
def test_benchmark_sizes_of_new_families_are_documented(name: str) -> None:
    f = family(name)
    assert f.sizes_doc
    config = make_config(name)  # builds the default config (no weights)
    small = make_config(name, small=True)
    assert config.to_dict() != small.to_dict()
