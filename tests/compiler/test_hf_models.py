"""Unwrapped `transformers` models compile as users hold them (issue 17 items 1, 2, 5): example inputs
by keyword (a padded attention_mask), the default `use_cache=True` forward, outputs back as the model's
own ModelOutput with the same keys, bf16 models, and clear errors for calls Forge cannot take.

Small seeded configs built from `transformers` configs (no download); one compile per model and
runtime via module fixtures."""

from __future__ import annotations

import json

import pytest
import torch
import torch.utils._pytree as pytree

transformers = pytest.importorskip("transformers")

from forge.cli.main import format_report  # noqa: E402
from forge.driver.compile_errors import CompileError, LoadError  # noqa: E402
from forge.driver.compiler import compile as forge_compile  # noqa: E402
from forge.driver.load import load  # noqa: E402
from forge.frontend.export import CallError  # noqa: E402
from forge.stage_clock import STAGE_KEYS  # noqa: E402

MAX_ABS = 2.1e-5  # the fp32 fidelity bar of tests/compiler/test_compile.py
VOCAB, SEQ = 128, 8


def runtimes():
    from backends.nnfactory.runtime import available_runtimes

    return available_runtimes()


def _tokens(seed: int = 0) -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, SEQ), generator=torch.Generator().manual_seed(seed))


def _left_padded() -> torch.Tensor:
    """Batch row 1 left-padded by 3 (decoders: its first queries attend to no key at all)."""
    mask = torch.ones(2, SEQ, dtype=torch.long)
    mask[1, :3] = 0
    return mask


def _right_padded() -> torch.Tensor:
    mask = torch.ones(2, SEQ, dtype=torch.long)
    mask[1, 5:] = 0
    return mask


def _quiet():
    transformers.logging.set_verbosity_error()


def _gpt2():
    _quiet()
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_embd=64, n_head=4, vocab_size=VOCAB, n_positions=32, bos_token_id=0, eos_token_id=0
    )
    return transformers.GPT2LMHeadModel(config).eval()


def _llama(dtype: torch.dtype = torch.float32):
    _quiet()
    torch.manual_seed(1)
    config = transformers.LlamaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=VOCAB,
        max_position_embeddings=32,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return transformers.LlamaForCausalLM(config).eval().to(dtype)


def _bert():
    _quiet()
    torch.manual_seed(2)
    config = transformers.BertConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        vocab_size=VOCAB,
        max_position_embeddings=32,
        pad_token_id=0,
    )
    return transformers.BertModel(config).eval()


def _eager(model, *args, **kwargs):
    with torch.no_grad():
        return model(*args, **kwargs)


def _assert_same_output(got, expected, bound: float = MAX_ABS) -> None:
    """Same class, same keys, every tensor within `bound` of eager (the KV cache's too)."""
    assert type(got) is type(expected)
    assert list(got.keys()) == list(expected.keys())
    got_leaves, got_spec = pytree.tree_flatten(got)
    want_leaves, want_spec = pytree.tree_flatten(expected)
    assert got_spec == want_spec
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert not g.isnan().any()
        assert (g - w).abs().max().item() <= bound


@pytest.fixture(scope="module")
def gpt2():
    model, ids, mask = _gpt2(), _tokens(), _left_padded()
    return model, ids, mask, forge_compile(model, (ids,), kwargs={"attention_mask": mask}, check=True)


def test_gpt2_as_it_comes_returns_its_model_output_and_cache(gpt2):
    model, ids, mask, compiled = gpt2
    expected = _eager(model, ids, attention_mask=mask)  # use_cache default: returns a DynamicCache
    got = compiled(ids, attention_mask=mask)
    assert type(got).__name__ == "CausalLMOutputWithCrossAttentions"
    assert isinstance(got.cache, transformers.DynamicCache)
    _assert_same_output(got, expected)
    report = compiled.report
    assert report["parity"]["max_abs"] <= MAX_ABS
    assert report["inputs"] == [
        {"name": "input_ids", "kind": "positional", "shape": [2, SEQ], "dtype": "torch.int64"},
        {"name": "attention_mask", "kind": "keyword", "shape": [2, SEQ], "dtype": "torch.int64"},
    ]
    assert report["outputs"] == "CausalLMOutputWithCrossAttentions(logits, cache)"
    assert any("DynamicCache" in note and "use_cache" in note for note in report["notes"])
    assert report["cast_policy"] is None


def test_report_stages_add_up_to_the_wall_clock(gpt2):
    report = gpt2[3].report
    named = sum(report[key] for key in STAGE_KEYS)
    assert report["check_ms"] > 0  # check=True: the parity measurement is a stage of its own
    assert report["other_ms"] >= 0
    assert abs(named + report["other_ms"] - report["total_ms"]) <= 0.01  # each figure rounded to 1 µs
    json.dumps(report)


def test_printed_report_shows_the_inputs(gpt2):
    text = format_report(gpt2[3].report)
    assert "inputs:" in text
    lines = text.split("\n")
    assert any(line.split()[:3] == ["attention_mask", "int64", "[2,"] and "keyword" in line for line in lines)
    assert "outputs: CausalLMOutputWithCrossAttentions(logits, cache)" in text
    assert "other (imports, set-up)" in text and "total" in text
    # what ran where, truthfully: the npu-affinity segments ran on the device asked for (a CPU here)
    assert "NPU segments" not in text and "run by openvino on CPU" in text and "by torch on the host CPU" in text


def test_calls_that_differ_from_the_compiled_one_are_clear_errors(gpt2):
    _, ids, mask, compiled = gpt2
    with pytest.raises(CallError, match=r"unexpected keyword argument\(s\) 'mask'; it was compiled with attention_m"):
        compiled(ids, mask=mask)
    with pytest.raises(CallError, match=r"missing keyword argument\(s\) 'attention_mask' \(compiled with attention_"):
        compiled(ids)
    with pytest.raises(CallError, match=r"input 'attention_mask' \(keyword\) was compiled for torch.int64 \(2, 8\)"):
        compiled(ids, attention_mask=mask[:, :4])
    with pytest.raises(CallError, match=r"compiled with 1 positional argument\(s\) \(input_ids\), got 2"):
        compiled(ids, mask)


def test_mask_passed_positionally_to_gpt2_names_the_cache_parameter(gpt2):
    model, ids, mask, _ = gpt2
    with pytest.raises(CompileError, match=r"positional argument 2 .* lands on parameter 'cache' .* kwargs="):
        forge_compile(model, (ids, mask))
    with pytest.raises(CompileError, match=r"keyword argument 'mask' \(did you mean attention_mask\?\): GPT2LMHead"):
        forge_compile(model, (ids,), kwargs={"mask": mask})


def test_save_and_load_keep_the_call_and_the_output_class(gpt2, tmp_path):
    _, ids, mask, compiled = gpt2
    compiled.save(tmp_path / "gpt2")
    loaded = load(tmp_path / "gpt2")
    got, want = loaded(ids, attention_mask=mask), compiled(ids, attention_mask=mask)
    assert type(got) is type(want)
    assert all(torch.equal(a, b) for a, b in zip(pytree.tree_leaves(got), pytree.tree_leaves(want), strict=True))
    with pytest.raises(CallError, match="unexpected keyword"):
        loaded(ids, mask=mask)
    # an output class this process cannot import comes back as a dict with the same keys, and says so
    meta_path = tmp_path / "gpt2" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["call"]["out_spec"] = meta["call"]["out_spec"].replace(
        "transformers.modeling_outputs.CausalLMOutputWithCrossAttentions", "gone_package.SomeOutput"
    )
    meta_path.write_text(json.dumps(meta))
    degraded = load(tmp_path / "gpt2")
    got = degraded(ids, attention_mask=mask)
    assert type(got) is dict and list(got) == ["logits", "cache"]
    assert torch.equal(got["logits"], want.logits)
    assert any("gone_package.SomeOutput" in note for note in degraded.report["notes"])
    # a 'call' entry that does not fit the IR is a LoadError naming meta.json
    meta["call"]["inputs"][1]["shape"] = [2, SEQ + 1]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(LoadError, match=r"meta.json: 'call' takes input_ids: int64 \[2, 8\] \(positional\), attent"):
        load(tmp_path / "gpt2")
    meta["call"]["in_spec"] = "not a treespec"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(LoadError, match=r"meta.json: corrupt 'call' or 'cast' entry"):
        load(tmp_path / "gpt2")


def test_use_cache_false_compiles_the_cache_free_forward():
    model, ids, mask = _gpt2(), _tokens(1), _right_padded()
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask, "use_cache": False})
    expected = _eager(model, ids, attention_mask=mask, use_cache=False)
    _assert_same_output(compiled(ids, attention_mask=mask, use_cache=False), expected)
    assert compiled.report["inputs"][-1] == {"name": "use_cache", "kind": "keyword", "value": False}
    assert not compiled.report["notes"]
    with pytest.raises(CallError, match=r"'use_cache' \(keyword\) was compiled as the constant False"):
        compiled(ids, attention_mask=mask, use_cache=True)
    # a keyword compiled as a constant is bound to it (functools.partial): a call may leave it out
    _assert_same_output(compiled(ids, attention_mask=mask), expected)
    assert compiled.signature.bound_keywords == {"use_cache": False}


def _gemma():
    _quiet()
    torch.manual_seed(4)
    config = transformers.GemmaConfig(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=16,
        vocab_size=VOCAB,
        max_position_embeddings=32,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=0,
    )
    return transformers.GemmaForCausalLM(config).eval()


def test_gemmas_default_call_compiles_with_its_cache():
    # its default forward needs torch's decompositions, whose re-trace rebuilt the returned DynamicCache from
    # empty tensor literals and failed ("Constant tensor lifted_tensor_0 is not in the constants dictionary"):
    # it was compiled cache-free instead (forge/frontend/decompose.py `flat_outputs`)
    model, ids, mask = _gemma(), _tokens(5), _left_padded()
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask})
    _assert_same_output(compiled(ids, attention_mask=mask), _eager(model, ids, attention_mask=mask))
    assert not any("did not compile" in note for note in compiled.report["notes"])


def test_a_cache_returning_forward_that_fails_compiles_cache_free_with_a_note(monkeypatch):
    import forge.driver.export_import as export_import

    export = export_import._export

    def failing_with_the_cache(model, args, kwargs):
        if kwargs.get("use_cache") is not False:
            raise CompileError("the cache-returning forward fails (simulated)")
        return export(model, args, kwargs)

    monkeypatch.setattr(export_import, "_export", failing_with_the_cache)
    model, ids, mask = _gemma(), _tokens(5), _left_padded()
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask})
    expected = _eager(model, ids, attention_mask=mask, use_cache=False)
    _assert_same_output(compiled(ids, attention_mask=mask), expected)
    _assert_same_output(compiled(ids, attention_mask=mask, use_cache=False), expected)
    assert "the cache-returning forward fails (simulated)" in compiled.report["notes"][0]
    assert "use_cache=False is a default of the call" in compiled.report["notes"][0]
    assert compiled.report["inputs"][-1] == {"name": "use_cache", "kind": "keyword", "value": False, "added": True}


@pytest.mark.parametrize("runtime", runtimes())
def test_llama_with_grouped_query_attention_and_left_padding(runtime):
    model, ids, mask = _llama(), _tokens(2), _left_padded()
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask}, runtime=runtime)
    got = compiled(ids, attention_mask=mask)
    assert type(got).__name__ == "CausalLMOutputWithPast"
    _assert_same_output(got, _eager(model, ids, attention_mask=mask))


def _mixtral():
    _quiet()
    torch.manual_seed(1)
    config = transformers.MixtralConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        num_local_experts=4, num_experts_per_tok=2, vocab_size=VOCAB, max_position_embeddings=64,
    )
    return transformers.MixtralForCausalLM(config).eval()


def test_a_moe_model_as_transformers_builds_it_compiles_with_static_routing_and_stays_as_it_was():
    """transformers' default experts implementation (`grouped_mm`) is a custom op no backend runs: the export
    switches to `batched_mm` (the same products) and back, so the user's model is unchanged after it."""
    model, ids, mask = _mixtral(), _tokens(5), _left_padded()
    assert model.get_experts_implementation() == {"": "grouped_mm"}
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask, "use_cache": False})
    assert model.get_experts_implementation() == {"": "grouped_mm"}
    got = compiled(ids, attention_mask=mask, use_cache=False)
    _assert_same_output(got, _eager(model, ids, attention_mask=mask, use_cache=False))


def test_a_default_cache_call_that_needs_torchs_decompositions_compiles():
    """GraniteMoE's default call returns a DynamicCache and has ops only torch's tables decompose
    (`repeat_interleave`): torch's re-trace rebuilt the cache from empty tensor literals it lifted anew and then
    failed its own check ("Constant tensor lifted_tensor_0 is not in the constants dictionary")."""
    _quiet()
    torch.manual_seed(1)
    config = transformers.GraniteMoeConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        num_local_experts=4, num_experts_per_tok=2, vocab_size=VOCAB, max_position_embeddings=64,
    )
    model, ids, mask = transformers.GraniteMoeForCausalLM(config).eval(), _tokens(6), _left_padded()
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask})
    assert any(r["name"] == "decompose" and r["ran"] and r.get("note") for r in compiled.report["frontend_steps"])
    _assert_same_output(compiled(ids, attention_mask=mask), _eager(model, ids, attention_mask=mask))


def test_bert_with_a_padded_mask():
    model, ids, mask = _bert(), _tokens(3), _right_padded()
    token_types = torch.zeros_like(ids)
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask, "token_type_ids": token_types})
    got = compiled(ids, attention_mask=mask, token_type_ids=token_types)
    assert type(got).__name__ == "BaseModelOutputWithPoolingAndCrossAttentions"
    _assert_same_output(got, _eager(model, ids, attention_mask=mask, token_type_ids=token_types))
    assert [e["kind"] for e in compiled.report["inputs"]] == ["positional", "keyword", "keyword"]


def test_bf16_model_compiles_in_f32_and_returns_bf16():
    model, ids, mask = _llama(torch.bfloat16), _tokens(4), _left_padded()
    compiled = forge_compile(model, (ids,), kwargs={"attention_mask": mask, "use_cache": False}, check=True)
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())  # the user's model is not cast
    policy = compiled.report["cast_policy"]
    assert policy["model_dtype"] == "bfloat16" and policy["compute_dtype"] == "float32"
    assert policy["weights_cast"] == sum(1 for _ in model.parameters()) + sum(1 for _ in model.buffers())
    assert policy["outputs_cast_to"] == "bfloat16"
    assert any("bfloat16 model compiled in float32" in note for note in compiled.report["notes"])
    # the compile itself is exact in f32: parity is measured before the cast back
    assert compiled.report["parity"]["max_abs"] <= MAX_ABS
    got = compiled(ids, attention_mask=mask, use_cache=False).logits
    assert got.dtype == torch.bfloat16
    reference = model.float()(ids, attention_mask=mask, use_cache=False).logits.detach()
    # within one bf16 rounding of the f32 result: |got - bf16(ref)| <= 2^-7 |ref| (bf16 keeps 8 significant bits)
    error = (got.float() - reference.to(torch.bfloat16).float()).abs()
    assert (error <= 2**-7 * reference.abs() + 1e-6).all(), error.max().item()


class _ScaleAndShift(torch.nn.Module):
    def forward(self, x: torch.Tensor, *, shift: torch.Tensor) -> torch.Tensor:
        return x * 2 + shift


def test_dynamic_shapes_hand_over_to_forge_dynamic():
    seq = torch.export.Dim("seq", min=2, max=16)
    example = torch.ones(1, 8)
    compiled = forge_compile(
        _ScaleAndShift(), (example,), kwargs={"shift": example}, dynamic_shapes={"x": {1: seq}, "shift": {1: seq}}
    )
    assert type(compiled).__name__ == "DynamicCompiledModel"
    gen = torch.Generator().manual_seed(5)
    for length in (3, 12):
        x, shift = torch.randn(1, length, generator=gen), torch.randn(1, length, generator=gen)
        torch.testing.assert_close(compiled(x, shift=shift), x * 2 + shift)
    with pytest.raises(CompileError, match="need dynamic_shapes"):
        forge_compile(_ScaleAndShift(), (example,), kwargs={"shift": example}, buckets=[8, 16])
