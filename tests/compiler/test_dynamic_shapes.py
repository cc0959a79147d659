"""Dynamic sequence length (forge.driver.dynamic): one `forge.compile(..., dynamic_shapes=...)` with a
torch.export Dim on the sequence dim serves every length in [min, max] through lazily compiled,
cached shape buckets.

Parity is against eager PyTorch on the valid positions (max |diff| <= 2.1e-5): the zoo Llama
(positional input_ids), an unwrapped transformers GPT-2 (kwargs input_ids + attention_mask, its
default use_cache: the ModelOutput's logits and the DynamicCache's key/value tensors are sliced)
and BERT (attention_mask padded with zeros), and GPT-2 at batch 2 with the caller's own left/right
padding. The bucket compiles are counted through the compiled object's static compile; bad specs,
out-of-range lengths and models whose padding is not exact are clear `DynamicShapeError`s naming
the input and dim. Small configs (2 layers, hidden 64), one dynamic model per family per module.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.export import Dim

import forge
from forge.driver.dynamic import DynamicShapeError, bucket_sizes, parse_dynamic_shapes
from forge.models import build_model, example_inputs

TOL = 2.1e-5
LENGTHS = (8, 13, 32, 100, 128)
SEQ = Dim("seq", min=8, max=128)


class CountingCompile:
    """A compiled object's static compile, counting the compiles per sequence length."""

    def __init__(self, compile_fn) -> None:
        self.compile_fn = compile_fn
        self.lengths: Counter[int] = Counter()

    def __call__(self, model, args, kwargs=None, **options):
        self.lengths[(args[0] if args else kwargs["input_ids"]).shape[1]] += 1
        return self.compile_fn(model, args, kwargs=kwargs, **options)


def _ids(name: str, length: int) -> torch.Tensor:
    return example_inputs(name, seq_len=length, small=True, seed=length)[0]


def _counted(compiled):
    compiled.static_compile = counter = CountingCompile(compiled.static_compile)
    return compiled, counter


@pytest.fixture(scope="module")
def gpt2():
    """The unwrapped transformers GPT-2 (use_cache default), called with keyword inputs."""
    model = build_model("gpt2", small=True).hf.eval()
    model.config.use_cache = True
    ids = _ids("gpt2", 16)
    compiled = forge.compile(model, kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                             dynamic_shapes={"input_ids": {1: SEQ}, "attention_mask": {1: SEQ}})
    return (model, *_counted(compiled))


@pytest.fixture(scope="module")
def llama():
    """The zoo Llama (logits only), called with positional input_ids."""
    model = build_model("llama", small=True)
    return (model, *_counted(forge.compile(model, (_ids("llama", 16),), dynamic_shapes=({1: SEQ},))))


def test_one_compile_serves_llama_at_lengths_8_to_128_with_parity(llama):
    model, compiled, counter = llama
    for length in LENGTHS:
        ids = _ids("llama", length)
        with torch.no_grad():
            expected = model(ids)
        got = compiled(ids)
        assert got.shape == expected.shape == (1, length, expected.shape[-1])
        assert (got - expected).abs().max().item() <= TOL, f"llama at length {length}"
    assert {8, 16, 32, 128} <= set(compiled.buckets)
    assert all(counter.lengths[b] == 1 for b in compiled.buckets), counter.lengths


def test_one_compile_serves_hf_gpt2_with_its_model_output_and_cache(gpt2):
    model, compiled, counter = gpt2
    for length in LENGTHS:
        ids = _ids("gpt2", length)
        mask = torch.ones_like(ids)
        with torch.no_grad():
            expected = model(input_ids=ids, attention_mask=mask)
        got = compiled(input_ids=ids, attention_mask=mask)
        assert type(got) is type(expected) and list(got.keys()) == list(expected.keys())
        assert got.logits.shape == (1, length, expected.logits.shape[-1])
        assert (got.logits - expected.logits).abs().max().item() <= TOL, f"gpt2 at length {length}"
        (want, _), (have, _) = torch.utils._pytree.tree_flatten(expected), torch.utils._pytree.tree_flatten(got)
        assert len(want) == len(have) > 1  # the key/value tensors of the cache, sliced to the length too
        assert all(w.shape == h.shape and (w - h).abs().max().item() <= TOL for w, h in zip(want, have, strict=True))
    assert {8, 16, 32, 128} <= set(compiled.buckets)
    assert all(counter.lengths[b] == 1 for b in compiled.buckets), counter.lengths


def test_buckets_compile_lazily_once_and_are_reused(gpt2):
    _, compiled, counter = gpt2
    assert compiled.bucket_sizes == (8, 16, 32, 64, 128)
    for length in (17, 20, 31, 32):  # all served by bucket 32
        ids = _ids("gpt2", length)
        compiled(input_ids=ids, attention_mask=torch.ones_like(ids))
    assert counter.lengths[32] == 1 and 32 in compiled.buckets
    assert compiled.bucket_for(17) == 32 and compiled.bucket_for(33) == 64
    assert compiled.report["dynamic"]["padded_tokens"] >= (32 - 17) + (32 - 20) + (32 - 31)


def test_compile_all_gives_a_memory_plan_and_report_per_bucket(llama):
    """(after the parity test: compile_all compiles only the buckets not yet compiled)"""
    _, compiled, counter = llama
    compiled.compile_all().warmup([64])
    assert list(compiled.buckets) == [8, 16, 32, 64, 128]
    assert all(n == 1 for n in counter.lengths.values()), counter.lengths
    peaks = [compiled.reports[b]["peak_bytes_planned"] for b in compiled.buckets]
    assert peaks == sorted(peaks) and peaks[0] < peaks[-1]  # each bucket planned for its own shape
    report = compiled.report
    assert report["dynamic"]["buckets"] == [8, 16, 32, 64, 128]
    assert set(report["buckets"]) == {"8", "16", "32", "64", "128"}
    assert report["dynamic"]["export_check_ms"] > 0 and report["dynamic"]["inputs"] == ["input_ids[1]"]


def test_bert_pads_the_attention_mask_with_zeros():
    model = build_model("bert", small=True).hf.eval()
    ids = _ids("bert", 16)
    seq = Dim("seq", min=8, max=64)
    compiled = forge.compile(model, kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids)},
                             dynamic_shapes={"input_ids": {1: seq}, "attention_mask": {1: seq}})
    for length in (8, 13, 40):
        ids = _ids("bert", length)
        mask = torch.ones_like(ids)
        mask[0, length - 3:] = 0  # the caller's own padding stays masked too
        with torch.no_grad():
            expected = model(input_ids=ids, attention_mask=mask)
        got = compiled(input_ids=ids, attention_mask=mask)
        assert type(got) is type(expected) and got.last_hidden_state.shape == expected.last_hidden_state.shape
        assert (got.last_hidden_state - expected.last_hidden_state).abs().max().item() <= TOL, length
    assert set(compiled.buckets) == {8, 16, 64}


def test_bidirectional_model_without_a_mask_is_refused():
    model = build_model("bert", small=True)
    with pytest.raises(DynamicShapeError, match=r"right-padding 'input_ids' with 0 along 'seq' changes output.*"
                                                r"attention_mask"):
        forge.compile(model, (_ids("bert", 16),), dynamic_shapes=({1: SEQ},))


def test_out_of_range_and_mismatched_calls_are_clear_errors(llama, gpt2):
    _, compiled, _ = llama
    with pytest.raises(DynamicShapeError, match=r"'seq' = 7 is outside the compiled range \[8, 128\]"):
        compiled(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(DynamicShapeError, match=r"'seq' = 129 is outside"):
        compiled(torch.zeros(1, 129, dtype=torch.long))
    with pytest.raises(DynamicShapeError, match=r"input 'input_ids' dim 0 is static \(1\); got 2"):
        compiled(torch.zeros(2, 16, dtype=torch.long))
    with pytest.raises(DynamicShapeError, match=r"input 'input_ids' was compiled for torch.int64 rank 2"):
        compiled(torch.zeros(1, 16))
    with pytest.raises(DynamicShapeError, match=r"do not match"):
        compiled(torch.zeros(1, 16, dtype=torch.long), torch.zeros(1, 16))
    _, hf_gpt2, _ = gpt2
    with pytest.raises(DynamicShapeError, match=r"with inputs input_ids, attention_mask; called with input_ids$"):
        hf_gpt2(input_ids=torch.zeros(1, 16, dtype=torch.long))


def _spec_error(spec, inputs=None):
    inputs = inputs or {"input_ids": torch.zeros(1, 16, dtype=torch.long)}
    with pytest.raises(DynamicShapeError) as err:
        parse_dynamic_shapes(spec, inputs)
    return str(err.value)


def test_bad_dim_specs_name_the_input_and_dim():
    two = {"a": torch.zeros(1, 16), "b": torch.zeros(1, 12)}
    assert "unknown input(s) 'ids'; the inputs are input_ids" in _spec_error({"ids": {1: SEQ}})
    assert "input 'input_ids' has 2 dim(s) (shape (1, 16)); dynamic_shapes names dim 2" in _spec_error(
        {"input_ids": {2: SEQ}})
    assert "its dynamic_shapes entry has 1" in _spec_error({"input_ids": (SEQ,)})
    assert "has no range" in _spec_error({"input_ids": {1: Dim.AUTO}})
    assert "derived dims (2*seq)" in _spec_error({"input_ids": {1: 2 * SEQ}})
    assert "no finite max" in _spec_error({"input_ids": {1: Dim("s", min=8)}})
    assert "min must be >= 1, got 0" in _spec_error({"input_ids": {1: Dim("s", min=0, max=16)}})
    assert "example's 'seq' = 200 is outside the Dim's range [8, 128]" in _spec_error(
        {"input_ids": {1: SEQ}}, {"input_ids": torch.zeros(1, 200)})
    assert "one dynamic dimension; dynamic_shapes names 2: batch, seq" in _spec_error(
        {"input_ids": {0: Dim("batch", min=1, max=4), 1: SEQ}})
    assert "shared by inputs of different sizes: 'a' dim 1 = 16, 'b' dim 1 = 12" in _spec_error(
        {"a": {1: SEQ}, "b": {1: SEQ}}, two)
    assert "2 entries, the model got 1 input(s)" in _spec_error(({1: SEQ}, None))
    assert "names no Dim" in _spec_error({"input_ids": None})


def test_shared_dim_must_agree_at_call_time():
    class Add(torch.nn.Module):
        def forward(self, a, b):
            return a + b

    spec = {"a": {1: SEQ}, "b": {1: SEQ}}
    compiled = forge.compile(Add(), (torch.ones(1, 16), torch.ones(1, 16)), dynamic_shapes=spec)
    with pytest.raises(DynamicShapeError, match=r"inputs sharing Dim 'seq' disagree: 'a' dim 1 = 16, 'b' dim 1 = 20"):
        compiled(torch.ones(1, 16), torch.ones(1, 20))
    assert compiled.compiles == 0


def test_a_model_that_specializes_the_dim_is_refused_by_the_export_check():
    class Branchy(torch.nn.Module):
        def forward(self, x):
            return x * 2 if x.shape[1] > 32 else x

    with pytest.raises(DynamicShapeError, match=r"torch.export cannot keep Dim 'seq' dynamic over \[8, 128\]"):
        forge.compile(Branchy(), (torch.ones(1, 16),), dynamic_shapes=({1: SEQ},))


def test_an_output_dim_that_is_not_the_sequence_length_is_refused():
    class Twice(torch.nn.Module):
        def forward(self, x):
            return torch.cat([x, x], dim=1)

    with pytest.raises(DynamicShapeError, match=r"output dim 1 is 32 at 'seq' = 16 and 256 at 128"):
        forge.compile(Twice(), (torch.ones(1, 16),), dynamic_shapes=({1: SEQ},))


def test_bucket_sizes_are_powers_of_two_or_a_list_clipped_to_the_range():
    def dim(lo, hi):
        return parse_dynamic_shapes({"x": {1: Dim("s", min=lo, max=hi)}}, {"x": torch.zeros(1, lo)})

    assert bucket_sizes(dim(5, 100)) == (8, 16, 32, 64, 100)
    assert bucket_sizes(dim(1, 8)) == (1, 2, 4, 8)
    assert bucket_sizes(dim(8, 128), [4, 48, 96, 512]) == (48, 96, 128)
    with pytest.raises(DynamicShapeError, match="buckets should be positive ints"):
        bucket_sizes(dim(8, 128), [0, 16])


def test_dict_outputs_are_sliced_per_leaf_and_unsliced_leaves_kept():
    class Heads(torch.nn.Module):
        def forward(self, x):
            return {"hidden": x * 2, "first": x[:, 0] + 1}  # "first" has no sequence dim

    compiled = forge.compile(Heads(), (torch.randn(1, 16, 4),), dynamic_shapes=({1: SEQ},))
    x = torch.randn(1, 11, 4)
    got = compiled(x)
    assert set(got) == {"hidden", "first"} and got["hidden"].shape == (1, 11, 4)
    assert torch.allclose(got["hidden"], x * 2) and torch.allclose(got["first"], x[:, 0] + 1)
    assert compiled.plan.seq_dims == {"['hidden']": (1,), "['first']": ()}


class MaskedTotal(torch.nn.Module):
    """Bidirectional along the sequence: every position sees the mask's total."""

    def forward(self, x, mask):
        return x + (x * mask).sum(1, keepdim=True) + mask.sum(1, keepdim=True)


def test_buckets_and_pad_values_given_to_forge_compile():
    seq = Dim("seq", min=8, max=32)
    x, mask = torch.randn(1, 16), torch.ones(1, 16)
    spec = {"x": {1: seq}, "mask": {1: seq}}
    compiled = forge.compile(MaskedTotal(), (x, mask), dynamic_shapes=spec, buckets=[12, 24])
    assert compiled.bucket_sizes == (12, 24, 32)
    x, mask = torch.randn(1, 10), torch.ones(1, 10)
    assert torch.allclose(compiled(x, mask), MaskedTotal()(x, mask), atol=TOL)
    assert list(compiled.buckets) == [12]
    with pytest.raises(DynamicShapeError, match=r"right-padding 'x' with 0, 'mask' with 1 along 'seq' changes output"):
        forge.compile(MaskedTotal(), (x, mask), dynamic_shapes=spec, pad_values={"mask": 1})
    with pytest.raises(DynamicShapeError, match=r"pad_values names unknown input\(s\) 'attention_mask'"):
        forge.compile(MaskedTotal(), (x, mask), dynamic_shapes=spec, pad_values={"attention_mask": 0})


def test_a_range_beyond_the_models_context_is_refused_by_the_probe():
    model = build_model("gpt2", small=True)  # 128 positions
    with pytest.raises(DynamicShapeError, match=r"the eager model fails at length 256 \(the Dim's max\): IndexError"):
        forge.compile(model, (_ids("gpt2", 16),), dynamic_shapes=({1: Dim("seq", min=8, max=256)},))


def test_batch_two_with_the_callers_own_left_and_right_padding_and_a_constant_input():
    model = build_model("gpt2", small=True).hf.eval()
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 512, (2, 16), generator=gen)
    seq = Dim("seq", min=9, max=16)  # one bucket: 16
    compiled = forge.compile(
        model, kwargs={"input_ids": ids, "attention_mask": torch.ones_like(ids), "use_cache": False},
        dynamic_shapes={"input_ids": {1: seq}, "attention_mask": {1: seq}, "use_cache": None},
    )
    for length, left in ((12, True), (12, False), (9, False)):
        ids = torch.randint(0, 512, (2, length), generator=gen)
        mask = torch.ones_like(ids)
        mask[1, :4] = 0 if left else 1
        mask[1, length - 4:] = 1 if left else 0
        with torch.no_grad():
            expected = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
        got = compiled(input_ids=ids, attention_mask=mask, use_cache=False).logits
        assert got.shape == expected.shape and (got - expected).abs().max().item() <= TOL, (length, left)
    assert list(compiled.buckets) == [16]
    with pytest.raises(DynamicShapeError, match=r"input 'use_cache' was compiled as the constant False, got True"):
        compiled(input_ids=ids, attention_mask=mask, use_cache=True)
