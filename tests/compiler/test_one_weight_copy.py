"""One copy of the weights across a model's graphs (issue 32 item 4): a generator's prefill and decode graphs
and a dynamic model's buckets are one device program (a `GraphGroup`, backends/nnfactory/runtime/
openvino_group.py), compiled or loaded, f32 or int8 (whose weights are quantized once for all the graphs).
tests/backends/test_graph_group.py measures the memory the group saves; here the compilers build it."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

import forge
from forge.driver.generation import compile_generator
from forge.driver.sampling import GenerateError
from forge.models import build_model, example_inputs
from tests.compiler.test_generator_reuse import _model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _programs(*executors) -> set[int]:
    """The device programs the executors' segments run in (by identity)."""
    return {id(seg.graph.compiled_model) for ex in executors for seg in ex.program.segments}


def _segments(*executors) -> int:
    return sum(len(ex.program.segments) for ex in executors)


@pytest.mark.parametrize("weights", [None, "int8"])
def test_a_generator_is_one_device_program(weights, tmp_path):
    hf = _model("llama")
    gen = compile_generator(hf, cache_len=48, chunk=8, weights=weights, share_weights=True)
    steps = (gen.prefill.executor, gen.decode.executor)
    assert len(_programs(*steps)) == 1
    assert gen.report()["device_program"]["graphs"] == _segments(*steps) == 2
    assert gen.report()["device_program"]["one_program"] is True
    ids = torch.randint(0, hf.config.vocab_size - 1, (1, 11), generator=torch.Generator().manual_seed(1))
    tokens = gen.generate(ids, 5)
    if weights is None:  # the exact graphs: transformers' greedy tokens
        assert torch.equal(tokens, hf.generate(ids, max_new_tokens=5, do_sample=False))
    else:  # both graphs read the same compressed arrays: quantized once
        prefill, decode = gen.prefill.imported.weights, gen.decode.imported.weights
        shared = [n for n in prefill.names() if prefill.compressed(n) is not None and n in decode]
        assert shared and all(prefill.compressed(n) is decode.compressed(n) for n in shared)
    gen.save(tmp_path / "gen")
    loaded = forge.load(tmp_path / "gen")
    assert len(_programs(loaded.prefill.executor, loaded.decode.executor)) == 1
    assert torch.equal(loaded.generate(ids, 5), tokens)


@pytest.mark.parametrize("weights", [None, "int8"])
def test_the_cache_it_would_copy_puts_the_decode_step_on_top(weights, tmp_path, monkeypatch):
    """OpenVINO's `If` copies the KV cache into the decode body every call; a decode step at the top level of the
    program copies nothing but runs in every prefill call too. Left to choose, a generator is one program in the
    cheaper form for a request filling its cache (`weight_sharing`): both graphs `If` bodies where the copies
    cost less than the prefill calls' decode steps, the decode step on top where they cost more; True is the
    same, False two programs. Every form gives transformers' greedy tokens (the prompt takes two prefill chunks,
    each running the decode step on top too), and a saved generator loads in its form. (The test model is tiny,
    so the copy's cost is set to put the short cache's copies below its prefill calls and the long one's above.)"""
    from forge.driver import generation

    hf = _model("llama")
    ids = torch.randint(0, hf.config.vocab_size - 1, (1, 11), generator=torch.Generator().manual_seed(1))
    weight_bytes = sum(p.numel() * p.element_size() for p in hf.parameters()) * (0.25 if weights else 1.0)
    short, long = 24, 48  # chunk 8: a request filling the cache prefills in 2 and 3 calls, decodes 12 and 24 steps
    cache_bytes = {n: 2 * hf.config.num_hidden_layers * hf.config.num_key_value_heads * n
                   * (hf.config.hidden_size // hf.config.num_attention_heads) * 4 for n in (short, long)}
    monkeypatch.setattr(generation, "IF_COPY_COST", 0.1 / (cache_bytes[short] / weight_bytes))
    # copies over a request filling the cache, in decode steps: short 0.1 x 12 = 1.2 < 2 calls, long 0.2 x 24 = 4.8 > 3
    want = hf.generate(ids, max_new_tokens=5, do_sample=False)
    cases = ((short, None, True, None), (long, None, True, "decode"), (long, True, True, "decode"),
             (short, False, False, None), (long, False, False, None))
    for cache_len, requested, one, top in cases:
        gen = compile_generator(hf, cache_len=cache_len, chunk=8, weights=weights, share_weights=requested)
        program = gen.report()["device_program"]
        sharing = program["sharing"]
        assert (sharing["one_program"], sharing["top_level"], sharing["requested"]) == (one, top, requested)
        assert sharing["cache_to_weights"] == pytest.approx(cache_bytes[cache_len] / weight_bytes, abs=1e-4)
        assert sharing["prefill_calls"] == {short: 2, long: 3}[cache_len]
        assert sharing["if_copies"] == pytest.approx({short: 1.2, long: 4.8}[cache_len], abs=0.02)
        assert len(_programs(gen.prefill.executor, gen.decode.executor)) == (1 if one else 2)
        assert program.get("top") == (1 if top else None)  # the decode step joins second
        tokens = gen.generate(ids, 5)
        if weights is None:
            assert torch.equal(tokens, want)
        if (cache_len, requested) == (long, None):
            gen.save(tmp_path / "gen")
            loaded = forge.load(tmp_path / "gen")
            assert len(_programs(loaded.prefill.executor, loaded.decode.executor)) == 1
            assert loaded.report()["device_program"]["sharing"] == sharing
            assert loaded.report()["device_program"]["top"] == 1
            assert torch.equal(loaded.generate(ids, 5), tokens)


def test_share_weights_refuses_what_is_not_a_choice():
    with pytest.raises(GenerateError, match="share_weights must be True, False or None"):
        compile_generator(_model("llama"), cache_len=24, chunk=8, share_weights="yes")


SEQ = Dim("seq", min=8, max=32)


def test_dynamic_buckets_are_one_device_program():
    """compile_all: every bucket joins one program, compiled once; a bucket compiled later (a call of a new
    length) joins it too, and every bucket still gives eager's values."""
    model = build_model("gpt2", small=True).hf.eval()
    ids = example_inputs("gpt2", seq_len=16, small=True, seed=0)[0]
    dyn = forge.compile(model, (ids,), kwargs={"use_cache": False}, dynamic_shapes=({1: SEQ}, None), buckets=[8, 16])
    dyn.compile_all()
    executors = [c.executor for c in dyn.buckets.values()]
    assert dyn.bucket_sizes == (8, 16, 32)  # the max is always a bucket
    assert len(_programs(*executors)) == 1 and dyn.report["dynamic"]["device_program"]["graphs"] == 3
    lazy = forge.compile(model, (ids,), kwargs={"use_cache": False}, dynamic_shapes=({1: SEQ}, None), buckets=[8, 16])
    for length in (13, 30, 8):  # buckets 16, 32, 8, one at a time
        x = example_inputs("gpt2", seq_len=length, small=True, seed=length)[0]
        got = lazy(x, use_cache=False).logits
        with torch.no_grad():
            want = model(x, use_cache=False).logits
        assert (got - want).abs().max() < 1e-4
    assert sorted(lazy.buckets) == [8, 16, 32]
    assert len(_programs(*(c.executor for c in lazy.buckets.values()))) == 1
    for length in (8, 16, 32):  # after the joins, the first buckets still give their values
        x = example_inputs("gpt2", seq_len=length, small=True, seed=length + 1)[0]
        with torch.no_grad():
            want = model(x, use_cache=False).logits
        assert (lazy(x, use_cache=False).logits - want).abs().max() < 1e-4


def test_the_first_call_of_each_bucket_returns_the_freed_heap(monkeypatch):
    """The device allocates a bucket's memory at its first call and frees what that replaces (the buckets' one
    logits matmul grows its output), which glibc would keep: each bucket's first call, and only that, trims the
    heap (the group's `_Joint.run`); the values stay eager's."""
    from backends.nnfactory.runtime import openvino_group

    model = build_model("gpt2", small=True).hf.eval()
    ids = example_inputs("gpt2", seq_len=16, small=True, seed=0)[0]
    dyn = forge.compile(model, (ids,), kwargs={"use_cache": False}, dynamic_shapes=({1: SEQ}, None), buckets=[8, 16])
    dyn.compile_all()
    returned: list[int] = []
    monkeypatch.setattr(openvino_group, "trim_heap", lambda: returned.append(len(returned)) or 0)
    firsts = []
    for length in (8, 12, 30, 8, 16, 31):  # buckets 8, 16, 32, 8, 16, 32
        before = len(returned)
        x = example_inputs("gpt2", seq_len=length, small=True, seed=length)[0]
        with torch.no_grad():
            want = model(x, use_cache=False).logits
        assert (dyn(x, use_cache=False).logits - want).abs().max() < 1e-4
        firsts.append(len(returned) - before)
    assert firsts == [1, 1, 1, 0, 0, 0]
