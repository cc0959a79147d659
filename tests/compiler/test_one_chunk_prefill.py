"""A generator whose prompts all fit one chunk prefills from its own rows (`prefills_in_one_chunk`).

When `2 * chunk > cache_len` no request that fits the cache needs a second chunk, so the prefill graph only ever
runs at cache positions 0.., where the cache holds nothing to attend to: its attention reads the chunk's own
K/V rows (`sdpa`), not the cache plus the rows (`cached_sdpa`, whose cache part would be all masked out). What
is asserted: the predicate against `Generator.fits` over every request (hypothesis), the graphs each form
compiles to, and tokens and logits against transformers for batch 1, a left-padded batch 2 and a prompt shorter
than the chunk, before and after save/load.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import forge
from forge.driver.generation import Generator, compile_generator, prefills_in_one_chunk
from tests.compiler.test_generate import _prompt as left_padded_prompt
from tests.compiler.test_generator_reuse import _model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
PROMPT, NEW = 12, 6  # chunk 12, cache 18: one chunk


@given(chunk=st.integers(1, 40), extra=st.integers(1, 80))
@settings(max_examples=200, deadline=None)
def test_one_chunk_exactly_when_no_request_that_fits_needs_two(chunk, extra):
    cache_len = chunk + extra
    shape = SimpleNamespace(chunk=chunk, cache_len=cache_len)
    shape.padded_len = lambda p: Generator.padded_len(shape, p)
    two_chunks = any(
        Generator.fits(shape, p, n) and shape.padded_len(p) > chunk
        for p in range(1, cache_len + 1)
        for n in range(1, cache_len + 1)
    )
    assert prefills_in_one_chunk(chunk, cache_len) == (not two_chunks)


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def model(request):
    return _model(request.param)


@pytest.fixture(scope="module")
def generators(model):
    return {b: compile_generator(model, batch=b, prompt_len=PROMPT, max_new_tokens=NEW) for b in (1, 2)}


def test_the_prefill_attends_to_its_rows_and_the_decode_to_the_cache(model, generators):
    gen = generators[1]
    layers = model.config.num_hidden_layers
    assert prefills_in_one_chunk(gen.chunk, gen.cache_len)
    prefill, decode = gen.report()["prefill"], gen.report()["decode"]
    assert (prefill["reads_cache"], decode["reads_cache"]) == (False, True)
    prefill_ir, decode_ir = str(gen.prefill.buffer_module), str(gen.decode.buffer_module)
    assert "cached_sdpa" not in prefill_ir and prefill_ir.count(" sdpa(") == layers
    assert decode_ir.count("cached_sdpa(") == layers
    for report in (prefill, decode):  # still one segment, and only the new rows cross
        assert report["segments"] == 1 and report["state_bytes_moved"] == report["new_row_bytes"], report


def test_a_generator_that_may_prefill_twice_reads_the_cache(model):
    gen = compile_generator(model, prompt_len=4, max_new_tokens=20)  # chunk 4, cache 24: up to 6 chunks
    assert not prefills_in_one_chunk(gen.chunk, gen.cache_len)
    assert gen.report()["prefill"]["reads_cache"] is True
    assert str(gen.prefill.buffer_module).count("cached_sdpa(") == model.config.num_hidden_layers


def _prompt(vocab: int, batch: int, length: int = PROMPT) -> tuple[torch.Tensor, torch.Tensor]:
    """test_generate's left-padded prompt at this file's length, seeded by it."""
    return left_padded_prompt(vocab, batch, seed=length, length=length)


def _transformers(model, ids, mask, new):
    with torch.no_grad():
        return model.generate(ids, attention_mask=mask, max_new_tokens=new, do_sample=False, use_cache=True)


@pytest.mark.parametrize(("batch", "length"), [(1, PROMPT), (2, PROMPT), (1, 5)])
def test_tokens_equal_transformers_generate(model, generators, batch, length):
    ids, mask = _prompt(model.config.vocab_size, batch, length)
    ours = generators[batch].generate(ids, NEW, attention_mask=mask)
    expected = _transformers(model, ids, mask, NEW)
    assert len(set(expected[:, length:].flatten().tolist())) >= 3, "degenerate decoding would prove little"
    assert torch.equal(ours, expected), f"first difference at {(ours != expected).nonzero()[:1].tolist()}"


def test_prefill_logits_match_eager(model, generators):
    ids, mask = _prompt(model.config.vocab_size, 2)
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    with torch.no_grad():
        eager = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1]
    ours = generators[2].prefill_logits(ids, mask)[:, -1]
    assert (ours - eager).abs().max().item() <= 1e-4


@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_a_left_padded_batch_stays_finite_at_reduced_precision(model, precision, monkeypatch):
    """A padding row's keys are all masked; at bf16/f16 its scores reach -inf, and attention over no key is NaN,
    which then reached every token through the padding's K/V rows (0 * NaN). The padding row attends to itself
    instead: the logits are finite and, as the cache form's at the same precision, within 10% of the largest eager
    logit (the widened test weights put both 2.5-5% away at bf16; which form is nearer depends on the CPU's bf16
    rounding: own rows 4.0% against the cache form's 2.6% on an AVX-512 BF16 AMD EPYC, so the bound is not a
    ratio of the two). A padding row that reached the tokens would be NaN or off by the logits' own size."""
    import forge.driver.generation as generation

    ids, mask = _prompt(model.config.vocab_size, 2)
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    with torch.no_grad():
        eager = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1]
    errors = {}
    for form in ("own rows", "cache"):
        if form == "cache":
            monkeypatch.setattr(generation, "prefills_in_one_chunk", lambda chunk, cache_len: False)
        gen = compile_generator(model, batch=2, prompt_len=PROMPT, max_new_tokens=NEW, precision=precision)
        assert gen.report()["prefill"]["reads_cache"] is (form == "cache")
        ours = gen.prefill_logits(ids, mask)[:, -1]
        assert torch.isfinite(ours).all(), form
        errors[form] = (ours - eager).abs().max().item()
    assert max(errors.values()) <= 0.1 * eager.abs().max().item(), errors


def test_a_loaded_generator_keeps_the_form_and_the_tokens(model, tmp_path):
    """A chunk and cache above the constant folder's inline limit (64), so a constant either graph folds is a
    weight of the saved file: the two graphs must not fold different values under one name."""
    length = 72
    gen = compile_generator(model, prompt_len=length, max_new_tokens=NEW)
    gen.save(tmp_path / "gen")
    loaded = forge.load(tmp_path / "gen")
    assert loaded.report()["prefill"]["reads_cache"] is False
    ids, mask = _prompt(model.config.vocab_size, 1, length)
    expected = _transformers(model, ids, mask, NEW)
    assert torch.equal(gen.generate(ids, NEW), expected) and torch.equal(loaded.generate(ids, NEW), expected)


@pytest.mark.parametrize(("prompt", "new", "says"), [
    ("12", "6", "one chunk attending to its own rows"),
    ("4", "20", "4-token chunks attending to the cache and their rows"),
])
def test_forge_generate_says_what_the_prefill_attends_to(prompt, new, says, capsys):
    from forge.cli.main import main

    assert main(["generate", "gpt2", "--small", "--prompt-len", prompt, "--new-tokens", new, "--check"]) == 0
    out = capsys.readouterr().out
    assert f"first new token; {says})" in out and "check: tokens equal transformers" in out
    host = re.search(r"per-token latency median ([0-9.]+) ms .*, of which the host ([0-9]+) us", out)
    assert host and 0 < int(host[2]) < 1e3 * float(host[1]), "the host's part of a decode step, in its latency"


@given(data=st.data())
@settings(max_examples=25, deadline=None)
def test_own_rows_equal_the_cache_form_in_eager(model, data):
    """The wrapper's two forms, run eagerly on a first chunk (cache zeros, positions 0..C-1), give the same logits
    and write the same cache rows for any left padding (layer 0 bit for bit; later layers' token rows up to the
    rounding of a softmax summed over other columns): the own-rows form is exact, not an approximation."""
    from forge.driver.generation import StaticCacheLM

    batch = data.draw(st.integers(1, 2), label="batch")
    chunk = data.draw(st.integers(2, 10), label="chunk")
    cache_len = chunk + data.draw(st.integers(1, chunk - 1), label="extra") if chunk > 2 else chunk + 1
    pads = [data.draw(st.integers(0, chunk - 1), label=f"pad{b}") for b in range(batch)]
    ids = torch.randint(0, model.config.vocab_size, (batch, chunk), generator=torch.Generator().manual_seed(chunk))
    mask = torch.ones(batch, cache_len, dtype=torch.long)
    for b, pad in enumerate(pads):
        mask[b, :pad] = 0
    prompt = mask[:, :chunk]
    positions = (prompt.cumsum(-1) - 1).masked_fill(prompt == 0, 1)
    outs = []
    for reads_cache in (True, False):
        wrapper = StaticCacheLM(model, batch, cache_len, chunk_reads_cache=reads_cache).eval()
        with torch.no_grad():
            logits = wrapper(ids, mask, positions, torch.arange(chunk))
        outs.append((logits, [wrapper.get_buffer(f"key_cache_{i}").clone() for i in (0, 1)]))
    (cached, cache_rows), (own, own_rows) = outs
    # f32 rounding of the two summation orders: up to 10 ulps of the largest logit over every draw (1.2e-5 at
    # |logit| 11; a fixed 1e-5 failed a fresh-clone CI draw); a wrong mask or row is off by the logits' own size
    ulps = 64 * torch.finfo(torch.float32).eps * float(cached.abs().max())
    torch.testing.assert_close(own, cached, rtol=0, atol=ulps)
    assert torch.equal(own_rows[0], cache_rows[0])  # layer 0's keys: the same computation on the same input
    for b, pad in enumerate(pads):  # a padding row attends to nothing (uniform over its masked columns, which differ
        # in number) and is never attended to: its later rows may differ, a token's may not
        torch.testing.assert_close(own_rows[1][b, :, pad:], cache_rows[1][b, :, pad:], rtol=1e-5, atol=1e-5)
