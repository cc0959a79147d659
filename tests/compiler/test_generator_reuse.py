"""One generator for every prompt (issue 32 item 1): `forge.generate` compiles a model's generator once
(a prefill chunk graph and a decode graph over a fixed KV cache) and serves every prompt length and
max_new_tokens that fit its cache with no further compile.

The compile entry point (`generation._compile_step`) is counted, not timed. Small zoo decoders (2 layers,
hidden 64) built with 256 positions so that a 128-token prompt and 64 new tokens fit one cache.
"""

from __future__ import annotations

import pytest
import torch

import forge.driver.generation as generation
from forge.driver.generation import DEFAULT_CACHE_LEN, DEFAULT_CHUNK, GenerateError, generate
from forge.models import family, hf_class, make_config

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
LENGTHS = (5, 17, 64, 128)
NEW = (1, 9, 64)


def _model(name: str) -> torch.nn.Module:
    config = make_config(name, small=True)
    config.max_position_embeddings = 256  # gpt2: n_positions (an attribute_map alias)
    torch.manual_seed(0)
    f = family(name)
    hf = hf_class(f.hf_class)(config, **f.hf_kwargs).to(torch.float32).eval()
    # at initializer_range 0.02 greedy decoding repeats one token: wider weights make the tokens tell
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in hf.parameters():
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    hf.generation_config.eos_token_id = None  # every call generates exactly max_new_tokens
    return hf


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def model(request):
    return _model(request.param)


@pytest.fixture
def compiles(monkeypatch):
    """Every graph compile of generation (its one entry point), by name."""
    seen: list[str] = []
    original = generation._compile_step

    def counting(name, *args, **kwargs):
        seen.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(generation, "_compile_step", counting)
    return seen


def _ids(vocab: int, length: int, batch: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(length))


def _expected(model, ids, new, mask=None):
    mask = torch.ones_like(ids) if mask is None else mask
    with torch.no_grad():
        return model.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=new,
            min_new_tokens=new,
            do_sample=False,
            use_cache=True,
            pad_token_id=0,
        )


def test_one_generator_serves_every_prompt_and_length(model, compiles):
    """Prompts 5..128 x max_new_tokens 1..64: two compiles (prefill chunk + decode, both at the first
    call), then none; tokens equal transformers' greedy generate."""
    vocab = model.config.vocab_size
    generation._GENERATORS.pop(model, None)
    for length in LENGTHS:
        for new in NEW:
            ids = _ids(vocab, length)
            ours = generate(model, ids, max_new_tokens=new)
            expected = _expected(model, ids, new)
            assert torch.equal(ours, expected), f"prompt {length}, {new} new: {(ours != expected).nonzero()[:1]}"
    assert compiles == ["prefill", "decode"]
    (gen,) = generation._GENERATORS[model].values()
    assert (gen.cache_len, gen.chunk, gen.compiles) == (DEFAULT_CACHE_LEN, DEFAULT_CHUNK, 2)
    for length in range(5, 129, 7):  # every other length in between: still no compile
        generate(model, _ids(vocab, length), max_new_tokens=1 + length % 64)
    assert compiles == ["prefill", "decode"]


def test_left_padded_batch_equals_transformers(model):
    vocab = model.config.vocab_size
    ids = _ids(vocab, 17, batch=2)
    mask = torch.ones_like(ids)
    mask[1, :6] = 0
    ours = generate(model, ids, max_new_tokens=9, attention_mask=mask)
    assert torch.equal(ours, _expected(model, ids, 9, mask))


def test_right_padding_is_refused_naming_left_padding(model):
    ids = _ids(model.config.vocab_size, 8, batch=2)
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    with pytest.raises(GenerateError, match=r"row 1 has padding after its tokens.*pad on the left"):
        generate(model, ids, max_new_tokens=4, attention_mask=mask)


def test_a_request_beyond_the_cache_doubles_it_once(compiles):
    """A request that does not fit replaces the generator by one with the cache doubled (capped at the
    model's positions); past those, an error names them."""
    model = _model("gpt2")
    model.config.max_position_embeddings = 1024  # positions limit only (the table stays 256: no call reaches it)
    vocab = model.config.vocab_size
    generate(model, _ids(vocab, 5), max_new_tokens=2)
    generate(model, _ids(vocab, 250), max_new_tokens=2)  # padded 256 + 1 > 256: one doubling
    (gen,) = generation._GENERATORS[model].values()
    assert gen.cache_len == 2 * DEFAULT_CACHE_LEN and compiles == ["prefill", "decode"] * 2
    with pytest.raises(GenerateError, match="exceed the model's 1024 positions"):
        generate(model, _ids(vocab, 1000), max_new_tokens=100)
