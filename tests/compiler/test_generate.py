"""forge.generate: greedy generation with a KV cache kept in state buffers (issue 17 item 4).

Small zoo decoders (2 layers, hidden 64, random seeded weights). What is asserted:

* the tokens equal `transformers` `generate(do_sample=False)` for 32 new tokens, batch 1 and a
  left-padded batch 2 (positions from the attention mask), on GPT-2 and the Llama-style model;
* logits parity of the prefill and of decode steps against eager with a DynamicCache;
* the KV cache lives in state buffers allocated once: the same memory across steps and calls,
  shared by the prefill and decode programs, updated in place (the update instruction is the
  in-place index_put; no per-step copy of the cache by a cpu kernel);
* the importer still refuses mutating a user input, with its clear error.

One generator per (model, batch) for the whole module: compiling both functions is most of the time.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from backends.nnfactory.executor import CompiledNPUExecutor, RunCpu, StateStore, Transfer, WriteRows
from forge.driver.generation import GenerateError, compile_generator, generate
from forge.frontend.fx_importer import InputMutationError, import_module
from forge.models import build_model

PROMPT, NEW = 8, 32
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _prompt(vocab: int, batch: int, seed: int = 1, length: int = PROMPT) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded ids and a mask: row 1 (of a batch of 2) is left-padded by 3 tokens."""
    ids = torch.randint(0, vocab - 1, (batch, length), generator=torch.Generator().manual_seed(seed))
    mask = torch.ones(batch, length, dtype=torch.long)
    if batch > 1:
        mask[1, :3] = 0
        ids[1, :3] = 0
    return ids, mask


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def model(request):
    hf = build_model(request.param, small=True).hf
    if request.param == "gpt2":  # at initializer_range 0.02 greedy GPT-2 repeats one token: widen its weights
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for p in hf.parameters():
                if p.dim() >= 2:
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return hf


@pytest.fixture(scope="module")
def generators(model):
    return {b: compile_generator(model, batch=b, prompt_len=PROMPT, max_new_tokens=NEW) for b in (1, 2)}


@pytest.mark.parametrize("batch", [1, 2])
def test_tokens_equal_transformers_generate(model, generators, batch):
    ids, mask = _prompt(model.config.vocab_size, batch)
    ours = generators[batch].generate(ids, NEW, attention_mask=mask)
    with torch.no_grad():
        expected = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, do_sample=False, use_cache=True)
    assert len(set(expected[:, PROMPT:].flatten().tolist())) >= 8, "degenerate decoding would prove little"
    assert ours.shape == expected.shape
    assert torch.equal(ours, expected), f"first difference at {(ours != expected).nonzero()[:1].tolist()}"


def test_prefill_and_decode_logits_match_eager(model, generators):
    """Prefill logits, then three decode steps fed the same tokens, against eager with a cache."""
    gen = generators[2]
    ids, mask = _prompt(model.config.vocab_size, 2)
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    with torch.no_grad():
        eager = model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=cache, use_cache=True)
    ours = gen.prefill_logits(ids, mask)
    assert (ours[:, -1] - eager.logits[:, -1]).abs().max().item() <= 1e-4
    attended = torch.zeros(2, gen.cache_len, dtype=torch.bool)  # the decode step's keys, one more each step
    attended[:, :PROMPT] = mask.bool()
    real, step_mask = mask.sum(-1), mask
    token = eager.logits[:, -1].argmax(-1)
    for j in range(3):
        step_mask = torch.cat([step_mask, torch.ones(2, 1, dtype=torch.long)], dim=1)
        pos = (real + j)[:, None]
        with torch.no_grad():
            eager = model(
                input_ids=token[:, None], attention_mask=step_mask, position_ids=pos, cache=cache, use_cache=True
            )
        attended[:, PROMPT + j] = True
        got = gen.decode.executor(token[:, None], attended, pos, torch.tensor([PROMPT + j]))[0]
        assert (got[:, -1] - eager.logits[:, -1]).abs().max().item() <= 1e-4, f"decode step {j}"
        token = eager.logits[:, -1].argmax(-1)


def test_cache_lives_in_state_buffers_allocated_once(model, generators):
    gen = generators[1]
    states = gen.states
    layers = model.config.num_hidden_layers
    assert sorted(states.buffers) == sorted(f"{kv}_cache_{i}" for kv in ("key", "value") for i in range(layers))
    before = states.pointers()
    prefill_ex, decode_ex = gen.prefill.executor, gen.decode.executor
    for name, bid in decode_ex.program.states.items():  # both programs use the store's memory
        assert decode_ex.buffers[bid].data_ptr() == before[name]
        assert prefill_ex.buffers[prefill_ex.program.states[name]].data_ptr() == before[name]
    ids, mask = _prompt(model.config.vocab_size, 1, seed=2)
    gen.generate(ids, NEW, attention_mask=mask)
    gen.generate(ids, 4, attention_mask=mask)
    assert states.pointers() == before, "a state buffer was reallocated"
    key = states.buffers["key_cache_0"]
    assert key.view(torch.float32).abs().sum() > 0, "the cache was not written"
    gen.reset()
    assert states.pointers() == before and key.abs().sum() == 0
    (update,) = [i for i in decode_ex.instructions if isinstance(i, WriteRows)]  # every layer's rows, one instruction
    state_memory = {decode_ex.buffers[bid].data_ptr() for bid in decode_ex.program.states.values()}
    assert sorted(state.ctypes.data for _, _, state, _ in update.writes) == sorted(state_memory)
    cpu = [i for i in decode_ex.instructions if isinstance(i, RunCpu)]
    assert all(i.output_buffer not in _state_slots(decode_ex) for i in cpu), "a cpu kernel copies a state"
    transfers = [i for i in decode_ex.instructions if isinstance(i, Transfer)]
    assert not any(np.shares_memory(t.arrays[1], rows) for t in transfers if t.arrays for *_, rows in update.writes)


def test_a_decode_steps_mask_takes_no_host_op(model, generators):
    """The decode step's mask is the keys it attends, kept by the host (one position more each step), so its
    graph has no integer compare to run on the host; before, four host ops built it every step (GPT-2: now none
    but the row writes; the Llama casts its int64 positions to float for RoPE on the host)."""
    decode = generators[2].decode
    assert decode.report["cpu_fallback"] == {"aten.index_put": 2 * model.config.num_hidden_layers}
    host = [str(i) for i in decode.executor.instructions if isinstance(i, RunCpu)]
    assert not [op for op in host if "compare" in op or "attention_mask" in op], host
    assert len(host) == (0 if model.config.model_type == "gpt2" else 2), host
    assert [type(i).__name__ for i in decode.executor.instructions].count("RunSegment") == 1


def test_the_fused_row_writes_write_what_the_steps_write(model, generators):
    """The decode step's `WriteRows` (rows read from the segment's outputs, the transfers dropped) leaves every
    state bit for bit as the unfused instructions (a transfer, then `index_put_`, per row block) do: one row at
    a position, the last position, a negative one (wraps as `index_put_`), and an out-of-range one refused."""
    gen = generators[2]
    program = gen.decode.executor.program
    fused, plain = (CompiledNPUExecutor(program, StateStore(), fuse_row_writes=f) for f in (True, False))
    assert any(isinstance(i, WriteRows) for i in fused.instructions)
    assert not any(isinstance(i, WriteRows) for i in plain.instructions)
    ids, mask = _prompt(model.config.vocab_size, 2)
    full = torch.ones(2, gen.cache_len, dtype=torch.bool)  # a decode step's keys
    for j, position in enumerate([PROMPT, gen.cache_len - 1, -3, 0]):
        inputs = (ids[:, j : j + 1], full, torch.full((2, 1), PROMPT + j), torch.tensor([position]))
        got, want = fused(*inputs)[0], plain(*inputs)[0]
        assert torch.equal(got, want)
        for name, buf in plain.states.buffers.items():
            assert torch.equal(fused.states.buffers[name], buf), f"{name} after a write at {position}"
    for ex in (fused, plain):
        with pytest.raises(IndexError):
            ex(ids[:, :1], full, torch.full((2, 1), PROMPT), torch.tensor([gen.cache_len]))


def _state_slots(executor) -> set[int]:
    """The executor's env slots of the values living in state buffers."""
    held = set(executor.program.states.values())
    return {slot for ref, slot in executor._slots.items() if ref.source == "buffer" and ref.key in held}


def test_forge_generate_function_caches_the_generator(model):
    import forge
    import forge.driver.generation as module

    ids, _ = _prompt(model.config.vocab_size, 1, seed=3)
    first = forge.generate(model, ids, max_new_tokens=4)  # the package's lazy export
    with torch.no_grad():
        expected = model.generate(
            ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False, use_cache=True
        )
    assert torch.equal(first, expected)
    cached = dict(module._GENERATORS[model])
    assert torch.equal(generate(model, ids, max_new_tokens=4), expected)
    assert module._GENERATORS[model] == cached and len(cached) == 1, "the second call compiled again"


def test_generate_errors_name_the_problem(generators):
    gen = generators[1]
    with pytest.raises(GenerateError, match=r"has batch 2, this generator was compiled for batch 1"):
        gen.generate(torch.zeros(2, 5, dtype=torch.long), 4)
    assert gen.fits(PROMPT, NEW + 1) and not gen.fits(PROMPT, NEW + 2)  # cache 40: the last decode writes 39
    with pytest.raises(GenerateError, match=r"prompt 8 \(padded to 8\) \+ 34 new tokens exceed the cache of 40"):
        gen.generate(torch.zeros(1, PROMPT, dtype=torch.long), NEW + 2)
    with pytest.raises(GenerateError, match=r"must be an int64 tensor \[batch, prompt_len\], got int32 \[1, 5\]"):
        gen.generate(torch.zeros(1, 5, dtype=torch.int32), 4)


def test_user_input_mutation_is_still_refused():
    class Mutates(torch.nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2

    with pytest.raises(InputMutationError, match="mutates user input 'x' in place"):
        import_module(Mutates(), (torch.zeros(3),), state=True)


def test_row_writes_select_their_rows_once_per_run_of_one_index_and_keep_their_order(monkeypatch):
    """`WriteRows` selects the rows of consecutive writes by one index once (a decode step's writes share its
    cache position), and keeps the writes in order: a later write to the same rows wins, even when another
    index's write came between them (grouping by index alone would let it win)."""
    import backends.nnfactory.executor as executor

    calls = []
    real = executor.row_selection
    monkeypatch.setattr(executor, "row_selection", lambda *a: calls.append(a) or real(*a))
    states = [np.zeros((1, 2, 6, 3), np.float32) for _ in range(4)]
    rows = [np.full((2, 1, 3), k + 1, np.float32) for k in range(4)]
    update = WriteRows(tuple((0, 2, s, r) for s, r in zip(states, rows, strict=True)))
    update([torch.tensor([4])])
    assert len(calls) == 1
    assert all((s[:, :, 4] == k + 1).all() and not s[:, :, :4].any() and not s[:, :, 5].any()
               for k, s in enumerate(states))
    state = np.zeros((1, 2, 6, 3), np.float32)
    calls.clear()
    update = WriteRows(((0, 2, state, rows[0]), (1, 2, state, rows[1]), (0, 2, state, rows[2])))
    update([torch.tensor([1]), torch.tensor([1])])
    assert len(calls) == 3 and (state[:, :, 1] == 3).all(), "the last write must win"


def test_last_timings_split_each_step_into_its_device_call_and_the_host(generators, monkeypatch):
    """`last_timings` gives, for the prefill and each decode step, the part spent in the device calls: a known
    extra delay put into the device call (the group's `run_request`) shows up there, whole, and not in the
    host's remainder; the CLI prints that remainder."""
    import time

    import backends.nnfactory.runtime.openvino_group as group
    import backends.nnfactory.runtime.openvino_runtime as alone

    gen = generators[1]
    ids, mask = _prompt(gen.hf.config.vocab_size, 1, seed=4)
    gen.generate(ids, 6, attention_mask=mask)
    quick = dict(gen.last_timings)
    real = group.run_request

    def slow(request):
        time.sleep(0.02)
        real(request)

    monkeypatch.setattr(group, "run_request", slow)
    monkeypatch.setattr(alone, "run_request", slow)
    gen.generate(ids, 6, attention_mask=mask)
    t = gen.last_timings
    assert len(t["decode_device_ms"]) == len(t["decode_ms"]) == 5
    assert 20 <= t["prefill_device_ms"] <= t["prefill_ms"]
    for step, device in zip(t["decode_ms"], t["decode_device_ms"], strict=True):
        assert 20 <= device <= step
    host = gen.decode_host_ms()
    quick_host = [s - d for s, d in zip(quick["decode_ms"], quick["decode_device_ms"], strict=True)]
    assert sorted(host)[2] < sorted(quick_host)[2] + 15, "the device's delay was counted as the host's"
