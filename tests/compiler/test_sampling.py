"""forge.generate's sampling and stopping (issue 32 item 6): as transformers' `generate` does them.

Small zoo decoders (GPT-2 and the Llama-style model, 2 layers, random seeded weights; Qwen2 and Gemma for the
seeded-sampling check alone), one left-padded batch-2 generator per model for the module (its two compiles are
most of the time). What is asserted:

* seeded sampling (temperature, top-k, top-p, repetition penalty) gives transformers' tokens with the same
  RNG stream: `torch.manual_seed(s)` before `model.generate(do_sample=True, ...)`, `seed=s` here. The logits
  processing is transformers' own classes and the draw is the same `torch.multinomial` call on a CPU
  generator in the same state, so the streams are identical; what can differ is the float logits (Forge vs
  eager, ~1e-5 here). So the test also compares the processed distributions at every step given the same
  prefix (transformers' `output_scores` against Forge's `scores=`, same tokens kept in both; finite entries
  within 1e-3, the same entries filtered out). A draw flips only when it lands within that difference of a
  boundary between two tokens' cumulative probabilities (~1e-4 per step here), which these seeds do not meet:
  the token equality is exact, and were a logits change ever to flip one, the distribution check says whether
  the cause is numerics (distributions still agree) or a real difference;
* the same seed twice (and a `torch.Generator` seeded alike) gives the same tokens, another seed others;
* EOS (one or several) and stop sequences end a row; the finished row is padded with the pad token, as
  transformers pads it, and generation ends when every row has finished (the tokens equal transformers' with
  the same `eos_token_id`);
* the streaming callback gets every new token of every unfinished row, in order;
* bad options are refused before any compile, naming the option.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import forge.driver.generation as generation
from forge.driver.generation import GenerateError, compile_generator
from forge.models import build_model

PROMPT, NEW = 8, 24
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
SAMPLING = {"do_sample": True, "temperature": 0.8, "top_k": 40, "top_p": 0.9, "repetition_penalty": 1.3}


def _prompt(vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two seeded prompts; row 1 is left-padded by 3 tokens."""
    ids = torch.randint(0, vocab - 1, (2, PROMPT), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, PROMPT, dtype=torch.long)
    mask[1, :3] = 0
    ids[1, :3] = 0
    return ids, mask


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def model(request):
    return build_model(request.param, small=True).hf


@pytest.fixture(scope="module")
def gen(model):
    return compile_generator(model, batch=2, prompt_len=PROMPT, max_new_tokens=NEW)


@pytest.fixture
def no_compile(monkeypatch):
    """`compile_generator` fails the test: what is checked must be refused before anything compiles."""

    def refuse(*args, **kwargs):
        raise AssertionError("compiled before checking the options")

    monkeypatch.setattr(generation, "compile_generator", refuse)


def _transformers(model, ids, mask, seed, **options):
    torch.manual_seed(seed)
    with torch.no_grad():
        return model.generate(
            ids,
            attention_mask=mask,
            max_new_tokens=NEW,
            use_cache=True,
            return_dict_in_generate=True,
            output_scores=True,
            **options,
        )


def _agree(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    """Processed scores of one step: the same entries filtered out (-inf), the others within 1e-3."""
    kept = torch.isfinite(theirs)
    assert torch.equal(torch.isfinite(ours), kept), "top-k/top-p kept other tokens"
    assert (ours[kept] - theirs[kept]).abs().max().item() <= 1e-3


@pytest.mark.parametrize("seed", [0, 7])
def test_seeded_sampling_equals_transformers(model, gen, seed):
    ids, mask = _prompt(model.config.vocab_size)
    expected = _transformers(model, ids, mask, seed, **SAMPLING)
    scores: list[torch.Tensor] = []
    ours = gen.generate(ids, NEW, attention_mask=mask, seed=seed, scores=scores, **SAMPLING)
    assert len(set(expected.sequences[:, PROMPT:].flatten().tolist())) >= 8, "degenerate sampling would prove little"
    for step, (mine, theirs) in enumerate(zip(scores, expected.scores, strict=False)):
        if not torch.equal(ours[:, : PROMPT + step], expected.sequences[:, : PROMPT + step]):
            break  # the prefixes differ from here: the distributions are of different sequences
        _agree(mine, theirs)
    assert ours.shape == expected.sequences.shape
    assert torch.equal(ours, expected.sequences), f"first difference at {(ours != expected.sequences).nonzero()[:1]}"


def test_same_seed_same_tokens_other_seed_other_tokens(model, gen):
    ids, mask = _prompt(model.config.vocab_size)
    first = gen.generate(ids, NEW, attention_mask=mask, seed=3, **SAMPLING)
    again = gen.generate(ids, NEW, attention_mask=mask, seed=3, **SAMPLING)
    generator = gen.generate(ids, NEW, attention_mask=mask, generator=torch.Generator().manual_seed(3), **SAMPLING)
    other = gen.generate(ids, NEW, attention_mask=mask, seed=4, **SAMPLING)
    assert torch.equal(first, again) and torch.equal(first, generator)
    assert not torch.equal(first, other)
    torch.manual_seed(3)  # no seed: torch's global generator, as transformers draws
    assert torch.equal(gen.generate(ids, NEW, attention_mask=mask, **SAMPLING), first)


def test_eos_ends_each_row_padded_as_transformers(model, gen):
    """EOS = tokens the greedy run emits (one per row, at different steps): rows finish at different steps."""
    ids, mask = _prompt(model.config.vocab_size)
    greedy = gen.generate(ids, NEW, attention_mask=mask, eos_token_id=[])
    eos = [int(greedy[0, PROMPT + 3]), int(greedy[1, PROMPT + 6])]
    ours = gen.generate(ids, NEW, attention_mask=mask, eos_token_id=eos, pad_token_id=0)
    with torch.no_grad():
        expected = model.generate(
            ids, attention_mask=mask, max_new_tokens=NEW, do_sample=False, eos_token_id=eos, pad_token_id=0
        )
    assert torch.equal(ours, expected)
    assert ours.shape[1] < PROMPT + NEW, "every row finished early"
    for row in range(2):
        new = ours[row, PROMPT:].tolist()
        end = min(i for i, t in enumerate(new) if t in eos)
        assert all(t == 0 for t in new[end + 1 :]), "a finished row is padded"
    sampled = gen.generate(ids, NEW, attention_mask=mask, eos_token_id=eos, pad_token_id=0, seed=5, **SAMPLING)
    expected = _transformers(model, ids, mask, 5, eos_token_id=eos, pad_token_id=0, **SAMPLING).sequences
    assert torch.equal(sampled, expected)


def test_a_finished_row_takes_the_models_pad_token_as_transformers(model, gen):
    """The model's `generation_config` says EOS and pad (pad != EOS), changed after the compile, and the call says
    neither: a row ends at the model's EOS and is padded with its pad token, as transformers does at each call (it
    was padded with the EOS token, and the EOS was the one at compile time)."""
    ids, mask = _prompt(model.config.vocab_size)
    greedy = gen.generate(ids, NEW, attention_mask=mask, eos_token_id=[])
    eos = int(greedy[1, PROMPT + 2])
    pad = next(t for t in range(1, 100) if t not in greedy[:, PROMPT:].tolist()[0] + [eos])
    config = model.generation_config
    before = (config.eos_token_id, config.pad_token_id)
    config.eos_token_id, config.pad_token_id = eos, pad
    try:
        ours = gen.generate(ids, NEW, attention_mask=mask)
        with torch.no_grad():
            expected = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, do_sample=False)
    finally:
        config.eos_token_id, config.pad_token_id = before
    assert pad in ours[1, PROMPT:].tolist(), "row 1 ended and was padded"
    assert torch.equal(ours, expected)


def _configured(config, values: dict) -> dict:
    saved = {name: getattr(config, name) for name in values}
    for name, value in values.items():
        setattr(config, name, value)
    return saved


@pytest.mark.parametrize("name", ["do_sample", "temperature", "top_k", "top_p", "repetition_penalty"])
def test_a_sampling_option_passed_as_none_is_off_as_in_transformers(model, gen, name):
    """The model's `generation_config` samples (every option set); the call passes one option as None.
    transformers sets it to None, which turns its processor off (greedy for do_sample): the model's value is not
    used. Forge used the model's value."""
    ids, mask = _prompt(model.config.vocab_size)
    saved = _configured(model.generation_config, {**SAMPLING, "temperature": 0.7, "top_k": 20, "eos_token_id": None})
    try:
        torch.manual_seed(11)  # no seed=: both draw from torch's global generator
        ours = gen.generate(ids, NEW, attention_mask=mask, **{name: None})
        expected = _transformers(model, ids, mask, 11, **{name: None}).sequences
    finally:
        _configured(model.generation_config, saved)
    assert torch.equal(ours, expected)


@pytest.mark.parametrize("name", ["eos_token_id", "pad_token_id"])
def test_eos_or_pad_passed_as_none_is_what_transformers_makes_of_none(model, gen, name):
    """The model's `generation_config` has an EOS (a token row 1 emits early) and a pad token. `eos_token_id=None`
    stops on nothing; `pad_token_id=None` pads a finished row with the EOS token, not the model's pad."""
    ids, mask = _prompt(model.config.vocab_size)
    greedy = gen.generate(ids, NEW, attention_mask=mask, eos_token_id=[])
    eos = int(greedy[1, PROMPT + 2])
    pad = next(t for t in range(1, 100) if t not in greedy.tolist()[0] + greedy.tolist()[1])
    saved = _configured(model.generation_config, {"do_sample": False, "eos_token_id": eos, "pad_token_id": pad})
    try:
        ours = gen.generate(ids, NEW, attention_mask=mask, **{name: None})
        with torch.no_grad():
            expected = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, **{name: None})
    finally:
        _configured(model.generation_config, saved)
    assert torch.equal(ours, expected)
    assert (pad in ours[1].tolist()) is False, "neither pads with the model's pad token"


def _ended(full: torch.Tensor, ends: list[int]) -> torch.Tensor:
    """`full` with row r's new tokens after index ends[r] padded with 0, cut after the last row's end."""
    out = full[:, : PROMPT + max(ends) + 1].clone()
    for row, end in enumerate(ends):
        out[row, PROMPT + end + 1 :] = 0
    return out


class Tokenizer:
    """A stand-in for a transformers tokenizer: stop strings are matched in `decode(new tokens)`."""

    def decode(self, ids):
        return "".join(f"<{i}>" for i in ids)


def test_stop_sequences_end_a_row(model, gen):
    """Token-id stop sequences and (with a tokenizer) strings end the row they occur in; the draws are the
    same as without them (every row is drawn every step, as transformers draws), the finished rows padded."""
    ids, mask = _prompt(model.config.vocab_size)
    run = {"attention_mask": mask, "eos_token_id": [], "pad_token_id": 0, "seed": 2, **SAMPLING}
    full = gen.generate(ids, NEW, **run)
    new = [full[row, PROMPT:].tolist() for row in range(2)]
    pair = new[1][4:6]  # row 1's new tokens 4 and 5, as a token-id stop sequence
    ends = [next((i + 1 for i in range(len(n) - 1) if n[i : i + 2] == pair), NEW - 1) for n in new]
    assert torch.equal(gen.generate(ids, NEW, stop=[pair], **run), _ended(full, ends))
    word = f"<{new[0][2]}>"  # row 0's new token 2, as a string
    ends = [min(ends[0], new[0].index(new[0][2])), ends[1]]
    both = gen.generate(ids, NEW, stop=[pair, word], tokenizer=Tokenizer(), **run)
    assert torch.equal(both, _ended(full, ends))


def test_streamer_gets_every_token_in_order(model, gen):
    ids, mask = _prompt(model.config.vocab_size)
    seen: list[tuple[int, int]] = []
    eos = int(gen.generate(ids, NEW, attention_mask=mask, eos_token_id=[], seed=1, **SAMPLING)[0, PROMPT + 2])
    out = gen.generate(
        ids,
        NEW,
        attention_mask=mask,
        eos_token_id=eos,
        pad_token_id=0,
        seed=1,
        streamer=lambda row, token: seen.append((row, token)),
        **SAMPLING,
    )
    for row in range(2):
        new = out[row, PROMPT:].tolist()
        if eos in new:
            new = new[: new.index(eos) + 1]  # the padding after a row's end is not streamed
        assert [t for r, t in seen if r == row] == new
    assert [r for r, _ in seen[:2]] == [0, 1], "each step streams row 0 then row 1"


def test_a_transformers_streamer_gets_transformers_calls(model, gen):
    """An object with put/end (transformers' BaseStreamer) gets the prompt, then each step's tokens `[B]`, then
    end(), as transformers' generate calls it."""
    from transformers.generation.streamers import BaseStreamer

    class Recorder(BaseStreamer):
        def __init__(self):
            self.calls: list = []

        def put(self, value):
            self.calls.append(value.clone())

        def end(self):
            self.calls.append("end")

    ids, mask = _prompt(model.config.vocab_size)
    ours, theirs = Recorder(), Recorder()
    out = gen.generate(ids, 6, attention_mask=mask, seed=4, streamer=ours, **SAMPLING)
    torch.manual_seed(4)
    with torch.no_grad():
        model.generate(ids, attention_mask=mask, max_new_tokens=6, streamer=theirs, **SAMPLING)
    assert ours.calls[-1] == theirs.calls[-1] == "end" and len(ours.calls) == len(theirs.calls) == 8
    assert torch.equal(ours.calls[0], ids) and torch.equal(theirs.calls[0], ids)
    assert all(torch.equal(a, b) for a, b in zip(ours.calls[1:-1], theirs.calls[1:-1], strict=True))
    assert torch.equal(torch.stack(ours.calls[1:-1], dim=1), out[:, PROMPT:])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"do_sample": True, "top_p": 0.0}, r"top_p must be in \(0, 1\], got 0.0"),
        ({"do_sample": True, "top_p": 1.5}, r"top_p must be in \(0, 1\], got 1.5"),
        ({"do_sample": True, "temperature": 0}, r"temperature must be > 0 when sampling, got 0.0"),
        ({"do_sample": True, "top_k": -1}, r"top_k must be >= 0"),
        ({"repetition_penalty": 0}, r"repetition_penalty must be > 0"),
        ({"temperature": 0.7}, r"temperature is for sampling: pass do_sample=True"),
        ({"do_sample": True, "seed": 1, "generator": torch.Generator()}, r"give seed= or generator=, not both"),
        ({"stop": ["end"]}, r"stop string 'end' needs tokenizer="),
        ({"stop": "end"}, r"stop string 'end' needs tokenizer="),
        ({"stop": [37, 37]}, r"stop is a list of stop sequences, got the token 37 in it: stop=\[\[37, ...\]\]"),
        ({"top_kk": 3}, r"unknown generation option\(s\): top_kk"),
    ],
)
def test_bad_options_are_refused_before_compiling(options, message, no_compile):
    model = build_model("llama", small=True).hf

    with pytest.raises(GenerateError, match=message):
        generation.generate(model, torch.zeros(1, 4, dtype=torch.long), 4, **options)


def _tokens(out: str) -> list[int]:
    line = next(line for line in out.splitlines() if line.startswith("tokens[0]: "))
    return [int(t) for t in line.split(": ")[1].split()]


def test_cli_samples_seeded_and_checks_against_transformers(capsys):
    """`forge generate --do-sample ... --check`: the tokens equal transformers' with torch.manual_seed(--seed),
    and a --stop sequence ends the row (batch 2: row 0 stops, row 1 goes on, as transformers)."""
    from forge.cli.main import main

    args = ["generate", "llama", "--small", "--prompt-len", "8", "--new-tokens", "12", "--batch", "2", "--quiet"]
    sampling = ["--do-sample", "--temperature", "0.8", "--top-k", "40", "--top-p", "0.9", "--seed", "3"]
    assert main([*args, *sampling, "--repetition-penalty", "1.2", "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: tokens equal transformers generate(do_sample=True, the same seed)" in out
    first = _tokens(out)
    stop = ",".join(str(t) for t in first[2:4])
    assert main([*args, *sampling, "--repetition-penalty", "1.2", "--stop", stop, "--check"]) == 0
    out = capsys.readouterr().out
    assert "check: tokens equal transformers" in out
    assert _tokens(out)[:4] == first[:4] and set(_tokens(out)[4:]) == {0}, "row 0 ends at its stop, padded"
    assert main([*args, "--do-sample", "--top-p", "1.5"]) != 0
    assert "--top-p must be in (0, 1], got 1.5" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--temperature", "0.7", "--top-k", "20"], "--temperature, --top-k are for sampling: pass --do-sample"),
        (["--do-sample", "--top-p", "1.5"], "--top-p must be in (0, 1], got 1.5"),
        (["--do-sample", "--temperature", "0"], "--temperature must be > 0 when sampling, got 0.0 (greedy decoding: no "
         "--do-sample)"),
        (["--repetition-penalty", "0"], "--repetition-penalty must be > 0"),
    ],
)
def test_cli_refuses_bad_decoding_flags_before_compiling_naming_the_flags(flags, message, capsys, no_compile):
    """A bad combination of decoding flags is refused before either graph compiles (it took two compiles to hear
    it), in the flags' words (`--do-sample`, not `do_sample=True`)."""
    from forge.cli.main import main

    assert main(["generate", "llama", "--small", "--prompt-len", "8", "--new-tokens", "4", "--quiet", *flags]) == 1
    err = capsys.readouterr().err
    assert f"forge: error: {message}" in err and "do_sample" not in err


def test_cli_check_says_why_quantized_tokens_can_differ(capsys):
    """`--check` at a reduced mode compares with f32 transformers: a difference is reported, non-zero, with the
    flags that change the logits."""
    from forge.cli.generate import _check

    model = build_model("llama", small=True).hf
    ids = torch.randint(0, model.config.vocab_size, (1, 6), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        tokens = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False)
    decoding = {"eos_token_id": []}
    assert _check(model, ids, tokens, 3, decoding, "--weights int4") == 0
    assert "check: tokens equal transformers generate(do_sample=False)" in capsys.readouterr().out
    tokens[0, -1] += 1
    assert _check(model, ids, tokens, 3, decoding, "--weights int4") == 1
    assert "at (sequence, position) [0, 8] (--weights int4 changes the logits" in capsys.readouterr().out
    assert _check(model, ids, tokens, 3, decoding) == 1
    assert "at (sequence, position) [0, 8]\n" in capsys.readouterr().out


def test_precision_and_weights_reach_both_graphs_and_key_the_generator():
    """forge.generate(weights=int8): its own generator (the key holds precision and weights), compiled with
    int8 weights (logits close to the f32 generator's, not equal), reused by the next int8 call."""
    model = build_model("llama", small=True).hf
    ids = torch.randint(0, model.config.vocab_size, (1, 6), generator=torch.Generator().manual_seed(0))
    int8 = generation.generate(model, ids, 4, weights="int8", do_sample=True, seed=1)
    f32 = generation.generate(model, ids, 4, precision="f32", do_sample=True, seed=1)
    held = generation._GENERATORS[model]
    int8_key = (1, "openvino", "CPU", "f32", "int8", None, None)
    f32_key = (1, "openvino", "CPU", "f32", None, None, None)
    assert set(held) == {int8_key, f32_key}  # (..., precision, weights, activations, share_weights)
    quantized, plain = held[int8_key], held[f32_key]
    assert quantized.report()["weights"] == "int8" and plain.report()["weights"] is None
    assert torch.equal(generation.generate(model, ids, 4, weights="INT8", do_sample=True, seed=1), int8)
    assert generation._GENERATORS[model][int8_key] is quantized, "compiled again"
    assert int8.shape == f32.shape
    diff = (quantized.prefill_logits(ids) - plain.prefill_logits(ids)).abs().max().item()
    assert 0 < diff < 0.1, f"int8 weights should move the logits a little, moved {diff}"


@pytest.mark.parametrize("name", ["qwen2", "gemma"])
def test_seeded_sampling_equals_transformers_on_more_llama_style_models(name):
    """The same check as above (one seed, the left-padded batch) on Qwen2 (GQA, qkv bias) and Gemma (one KV head,
    scaled embeddings): other llama-style decoders, other logits."""
    model = build_model(name, small=True).hf
    gen = compile_generator(model, batch=2, prompt_len=PROMPT, max_new_tokens=NEW)
    ids, mask = _prompt(model.config.vocab_size)
    expected = _transformers(model, ids, mask, 11, **SAMPLING)
    ours = gen.generate(ids, NEW, attention_mask=mask, seed=11, **SAMPLING)
    assert len(set(expected.sequences[:, PROMPT:].flatten().tolist())) >= 8
    assert torch.equal(ours, expected.sequences), f"first difference at {(ours != expected.sequences).nonzero()[:1]}"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([0.0, -0.0, 1.0, -1.0, 3.5, float("nan"), float("inf"), float("-inf"), 1e-45, -3.4e38]),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 3),
    st.sampled_from([torch.float32, torch.float16]),
)
def test_greedy_next_token_is_torch_argmax(row, batch, dtype):
    """Greedy with no processor takes numpy's argmax of the logits row (no copy): the token torch's argmax of the
    processed float32 scores gives, ties (0.0 and -0.0 included), NaN and infinities included."""
    from transformers import LogitsProcessorList

    from forge.driver.sampling import Decoding

    rules = Decoding(False, 1.0, 0, 1.0, 1.0, LogitsProcessorList(), None, [], None, [], [], None, None)
    logits = torch.tensor([row[k:] + row[:k] for k in range(batch)], dtype=dtype)[:, None, :]
    expected = logits[:, -1, :].to(torch.float32).argmax(-1)
    got = rules.next_token(torch.zeros(batch, 1, dtype=torch.long), logits)
    assert got.dtype == expected.dtype and torch.equal(got, expected)
    assert torch.equal(rules.next_token(torch.zeros(batch, 1, dtype=torch.long), logits, scores=[]), expected)


def test_cli_says_the_mode_and_what_the_device_runs_it_as(capsys):
    """The summary names precision, weights and activations, and the precision the device computes in when the CPU
    lacks the requested one (asked of OpenVINO, not assumed from the machine the test was written on)."""
    from backends.nnfactory.runtime.openvino_runtime import cpu_capabilities
    from forge.cli.main import main
    from forge.precision import resolve_precision

    args = ["generate", "llama", "--small", "--prompt-len", "6", "--new-tokens", "2", "--quiet"]
    assert main([*args, "--precision", "f16", "--weights", "int8"]) == 0
    runs_as = resolve_precision("f16", cpu_capabilities()).runs_as
    out = capsys.readouterr().out
    if runs_as == "f16":
        assert "precision f16, weights int8, activations f32" in out
    else:
        assert f"precision f16 (this device has no native f16 arithmetic: it runs as {runs_as}), weights int8" in out


def test_cli_says_when_int8_activations_run_as_f32(capsys):
    """`--activations int8` where OpenVINO's kernels keep the activations in f32 (asked of the runtime:
    `cpu_quantizes_activations`) is said in the summary and in the runtime's config, and not said where they are
    quantized."""
    from backends.nnfactory.runtime.openvino_runtime import OpenVINORuntime, cpu_quantizes_activations
    from forge.cli.main import main

    args = ["generate", "llama", "--small", "--prompt-len", "6", "--new-tokens", "2", "--quiet"]
    assert main([*args, "--weights", "int8", "--activations", "int8"]) == 0
    out = capsys.readouterr().out
    config = OpenVINORuntime("CPU", weights="int8", activations="int8").config()
    if cpu_quantizes_activations():
        assert "activations int8" in out and "activations int8 (" not in out
        assert "activations_run_as" not in config
    else:
        assert "activations int8 (this device's kernels do not quantize them: they run as f32)" in out
        assert config["activations_run_as"] == "f32" and "run as f32" in config["activations_substitution"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=6), min_size=1, max_size=4),
    st.lists(st.integers(0, 5), min_size=1, max_size=2),
    st.booleans(),
)
def test_finish_and_keep_mark_and_pad_rows_as_the_tensor_rules(steps, eos, with_stop):
    """`finish` (its Python count of finished rows) and `keep` against the rules written with torch: a row ends
    at an EOS token or a stop sequence ([2, 3]), keeps the pad token (9) from then on, and `finish` says
    whether a row is still unfinished, step after step of random tokens."""
    from forge.driver.sampling import Decoding

    stop = [[2, 3]] if with_stop else []
    rules = Decoding(False, 1.0, 0, 1.0, 1.0, None, None, eos, 9, stop, [], None, None)
    batch = len(steps[0])
    steps = [(row * batch)[:batch] for row in steps]  # one token per row each step
    unfinished, expected = torch.ones(batch, dtype=torch.bool), torch.ones(batch, dtype=torch.bool)
    kept = torch.empty(batch, 0, dtype=torch.long)
    for tokens in steps:
        token = rules.keep(torch.tensor(tokens), unfinished)
        assert torch.equal(token, torch.where(expected, torch.tensor(tokens), torch.full((batch,), 9)))
        kept = torch.cat([kept, token[:, None]], dim=1)
        alive = rules.finish(kept, unfinished)
        ended = torch.isin(kept[:, -1], torch.tensor(eos))
        if stop:
            ended |= torch.tensor([kept.shape[1] >= 2 and kept[r, -2:].tolist() == [2, 3] for r in range(batch)])
        expected &= ~ended
        assert torch.equal(unfinished, expected) and alive == bool(expected.any())
