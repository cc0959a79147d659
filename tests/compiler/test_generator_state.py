"""The KV cache stays where it is (issue 32 item 3): a generator step moves only the new token's rows.

`cached-attention` makes each layer's attention read the cache state in place plus the new rows, so the
host's row writes leave the device's path: the prefill chunk and the decode step are one compiled segment
each, and what crosses between the devices per step is the inputs, the logits and the new K/V rows, never
a cache. The figures come from the compiled program (`Program.state_bytes_moved`), the tokens from
transformers (test_generator_reuse.py and test_sampling.py run the same graphs).
"""

from __future__ import annotations

import pytest
import torch

import forge
from forge.driver.generation import compile_generator
from tests.compiler.test_generator_reuse import _model

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def generator(request):
    return compile_generator(_model(request.param), cache_len=64, chunk=16)


def _row_bytes(gen, positions: int) -> int:
    """The K and V rows `positions` tokens write, from the config (f32)."""
    config = gen.hf.config
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return config.num_hidden_layers * 2 * gen.batch * kv_heads * positions * head_dim * 4


def test_each_step_is_one_segment_and_moves_only_the_new_rows(generator):
    one_cache = generator.report()["decode"]["state_bytes"] // (2 * generator.hf.config.num_hidden_layers)
    for name, step, positions in (("decode", generator.decode, 1), ("prefill", generator.prefill, generator.chunk)):
        report = generator.report()[name]
        assert report["segments"] == 1, report
        assert report["new_row_bytes"] == _row_bytes(generator, positions)
        assert report["state_bytes_moved"] == report["new_row_bytes"], report  # the rows, and no cache
        transfers = step.executor.program.transfers()
        assert max(t.src.nbytes for t in transfers) < one_cache  # inputs, masks, rows: never a whole cache
        assert report["transfer_bytes"] == sum(t.src.nbytes for t in transfers)


def test_every_layer_attends_to_the_cache_in_place(generator):
    layers = generator.hf.config.num_hidden_layers
    for step in (generator.prefill, generator.decode):
        text = str(step.buffer_module)
        assert text.count("cached_sdpa(") == layers
        assert f"npuir.cached_attention = {{rewritten = {layers}" in text
        for i in range(layers):  # a cache state is never copied to the other device
            assert f"buffer.transfer %b_key_cache{'_' + str(i) if i else ''} " not in text


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_a_default_use_cache_forward_compiles_to_one_segment(name):
    """transformers' default call (use_cache on, the cache returned) runs as one compiled segment."""
    model = _model(name)
    model.config.use_cache = True  # transformers' default (the zoo's small configs turn it off)
    ids = torch.randint(0, 100, (1, 12), generator=torch.Generator().manual_seed(0))
    compiled = forge.compile(model, (ids,))
    assert compiled.report["segments"] == 1 and compiled.report["cpu_ops"] == 0, compiled.report.get("cpu_fallback")
    got = compiled(ids)
    with torch.no_grad():
        want = model(ids)
    torch.testing.assert_close(got.logits, want.logits, rtol=1e-4, atol=1e-4)
    for ours, theirs in zip(got.past_key_values.layers, want.past_key_values.layers, strict=True):
        torch.testing.assert_close(ours.keys, theirs.keys, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(ours.values, theirs.values, rtol=1e-4, atol=1e-4)


def test_generate_does_its_host_work_on_one_torch_thread(generator, monkeypatch):
    """Between device steps torch's pool would keep spinning through the next segment (generation.host_threads);
    torch's own thread count is back afterwards."""
    seen: list[int] = []
    run = generator.decode.executor.run

    def recording(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return run(*args, **kwargs)

    monkeypatch.setattr(generator.decode.executor, "run", recording)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        generator.generate(torch.randint(0, 100, (1, 5), generator=torch.Generator().manual_seed(1)), 4)
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
