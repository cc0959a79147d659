"""fuse-attention: decomposed attention → aten.scaled_dot_product_attention.

* every case of `filecheck/transforms/fuse-attention.mlir` keeps its semantics (interpreted on random
  inputs before and after), positive cases fuse, negative cases are left alone, each for the
  reason the explain hook reports;
* on the eager zoo models (small and 4 layers) every layer fuses, no softmax remains and the
  output stays within 1e-5 of eager PyTorch, with or without the passes that run before it;
  the sdpa zoo models are unchanged;
* the hypothesis property of `forge.testing.check.check_pattern` on the attention motif.
"""

from __future__ import annotations

import functools
import importlib
import math
from pathlib import Path

import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

from dialects import aten
from dialects.torch_types import dtype_of, shape_of
from forge.driver.registry import make_context
from forge.interpreter import interpret
from forge.models import build_model, example_inputs
from forge.pass_runner import run_pipeline
from forge.patterns import PatternStats, collect_pattern_stats
from forge.pipelines import SIMPLIFY
from forge.testing.check import assert_preserves_semantics
from forge.transforms import PASSES
from forge.transforms.fuse_attention import (
    FuseAttentionPass,
    FuseAttentionPattern,
    fuse_attention,
    fused_count,
)
from tests.conftest import SEQ_LEN, imported_small_model
from tests.transforms.filecheck_cases import filecheck_case, filecheck_functions

FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms" / "fuse-attention.mlir"
SOFTMAX_OPS = (aten.SoftmaxIntOp, aten.SoftmaxOp)


def _count(module: ModuleOp, *classes: type) -> int:
    return sum(isinstance(op, classes) for op in module.walk())


# --- the FileCheck cases, checked for semantics and for the reason of every non-fusion ---------


def _random_inputs(module: ModuleOp, seed: int = 0) -> list[torch.Tensor]:
    """Random inputs; bool masks keep key 0 and mask key 1 of every row (no fully-masked rows)."""
    gen = torch.Generator().manual_seed(seed)
    (function,) = module.ops
    inputs = []
    for arg in function.body.block.args:
        shape, dtype = shape_of(arg.type), dtype_of(arg.type)
        if dtype == torch.bool:
            value = torch.rand(shape, generator=gen) < 0.5
            if shape and shape[-1] >= 2:
                value[..., 0], value[..., 1] = True, False
            inputs.append(value)
        elif len(shape) == 0:
            inputs.append(torch.tensor(0.5 + torch.rand((), generator=gen).item()))
        else:
            inputs.append(torch.randn(shape, generator=gen))
    return inputs


# Why each negative case must not fuse (a fragment of the explain-pattern reason).
NEGATIVE_REASONS = {
    "neg_permuted_k": "not Kᵀ",
    "neg_transposed_heads": "not Kᵀ",
    "neg_softmax_not_last_dim": "not the last dim",
    "neg_tensor_scale": "per-element tensor",
    "neg_runtime_scale": "not a compile-time constant",
    "neg_mask_not_broadcastable": "broadcasts the scores to a larger shape",
    "neg_probs_escape": "probabilities (%probs) have another user: func.return",
    "neg_scores_reused": "scores (%scores) have another user",
    "neg_active_dropout": "dropout on the probabilities is active",
    "neg_mask_then_scale": "scaled after being added",
    "neg_finite_fill": "neither -inf nor below half the dtype minimum",
    "neg_nan_rows": "gives NaN there",
    "neg_mask_partial_batch": "broadcast over part of batch shape",
}


RANDOM_CASES = {"neg_active_dropout"}


def test_filecheck_file_has_the_expected_cases():
    names = filecheck_functions(FILECHECK)
    assert len(names) == len(set(names))
    assert {n for n in names if n.startswith("neg_")} == set(NEGATIVE_REASONS)
    assert len([n for n in names if not n.startswith("neg_")]) >= 15


@pytest.mark.parametrize("name", filecheck_functions(FILECHECK))
def test_filecheck_case(name: str):
    before = filecheck_case(FILECHECK, name)
    after = before.clone()
    stats = PatternStats(explain=FuseAttentionPattern.__name__)
    with collect_pattern_stats(stats):
        FuseAttentionPass().apply(make_context(), after)
    after.verify()
    negative = name.startswith("neg_")
    if negative:
        assert fused_count(stats) == 0
        assert str(after) == str(before)
        reasons = [e for e in stats.events if "not by a softmax" not in e]
        assert len(reasons) == 1 and NEGATIVE_REASONS[name] in reasons[0], stats.events
    else:
        assert fused_count(stats) == 1
        assert _count(after, aten.ScaledDotProductAttentionOp) == 1
        assert _count(after, *SOFTMAX_OPS, aten.MatmulOp, aten.BmmOp, aten.DropoutOp) == 0
    if name in RANDOM_CASES:
        return  # unchanged IR (checked above); its outputs are random
    for seed in range(3):
        assert_preserves_semantics(before, after, None, _random_inputs(before, seed), name=name)


# --- the zoo models -----------------------------------------------------------------------------

LAYERS = {"small": None, "4-layer": 4}


@functools.cache
def _eager_model(name: str, variant: str):
    """(ImportedProgram, inputs, eager output) of an eager zoo model (small dims)."""
    layers = LAYERS[variant]
    if layers is None:
        return imported_small_model(name, "eager")
    from forge.frontend.fx_importer import import_module

    model = build_model(name, attn="eager", small=True, layers=layers)
    inputs = example_inputs(name, seq_len=SEQ_LEN, small=True)
    with torch.no_grad():
        expected = model(*inputs)
    return import_module(model, inputs), inputs, expected


def _passes_before_fuse_attention() -> list[str]:
    return list(SIMPLIFY)


def _run(module: ModuleOp, names: list[str], weights) -> int:
    """Run the named passes then fuse-attention; return the fused count from the pass record."""
    passes = [PASSES[n]()() for n in names] + [FuseAttentionPass()]
    records = run_pipeline(module, make_context(), passes, weights=weights, names=[*names, "fuse-attention"])
    return fused_count(records[-1])


def _pipeline_or_skip(pipeline: str) -> list[str]:
    if pipeline == "alone":
        return []
    names = _passes_before_fuse_attention()
    for n in names:
        try:
            PASSES[n]()
        except (ImportError, AttributeError):
            pytest.skip(f"pass {n} is not implemented yet")
    return names


@pytest.mark.parametrize("pipeline", ["alone", "after-dce-cse-fold"])
@pytest.mark.parametrize("variant", list(LAYERS))
@pytest.mark.parametrize("name", ["gpt2", "llama", "bert"])
def test_every_eager_zoo_layer_fuses(name: str, variant: str, pipeline: str):
    names = _pipeline_or_skip(pipeline)
    imported, inputs, expected = _eager_model(name, variant)
    layers = LAYERS[variant] or 2
    module = imported.module.clone()
    assert _count(module, *SOFTMAX_OPS) == layers
    fused = _run(module, names, imported.weights)
    module.verify()
    assert fused == layers
    assert _count(module, aten.ScaledDotProductAttentionOp) == layers
    assert _count(module, *SOFTMAX_OPS) == 0
    (got,) = interpret(module, imported.weights, *inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    sdpas = [op for op in module.walk() if isinstance(op, aten.ScaledDotProductAttentionOp)]
    head_dim = shape_of(sdpas[0].query.type)[-1]
    for op in sdpas:
        assert op.arg("scale") == pytest.approx(1 / math.sqrt(head_dim))
        # The masks of these models are input-free: causal for the decoders, nothing for BERT.
        assert op.attn_mask is None
        assert op.arg("is_causal") == (name != "bert")
        assert op.arg("enable_gqa") == (name == "llama")


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert"])
def test_sdpa_zoo_models_are_unchanged(name: str):
    imported = imported_small_model(name, "sdpa")[0]
    module = imported.module.clone()
    text = str(module)
    assert fuse_attention(module, imported.weights) == 0
    assert str(module) == text


def test_pass_is_idempotent_on_fused_models():
    imported = imported_small_model("llama", "eager")[0]
    module = imported.module.clone()
    assert fuse_attention(module, imported.weights) == 2
    text = str(module)
    assert fuse_attention(module, imported.weights) == 0
    assert str(module) == text


def test_fused_count_reads_pattern_stats():
    imported = imported_small_model("gpt2", "eager")[0]
    module = imported.module.clone()
    with collect_pattern_stats() as stats:
        FuseAttentionPass().apply(make_context(), module)
    assert fused_count(stats) == 2
    assert stats.fired == {FuseAttentionPattern.__name__: 2}


def test_pass_is_registered():
    assert PASSES["fuse-attention"]() is FuseAttentionPass
    assert FuseAttentionPass.name == "fuse-attention"
    importlib.import_module("forge.transforms.fuse_attention")


# --- the hypothesis property ---------------------------------------------------------------------


def test_property_attention_motif():
    from forge.testing.check import check_pattern

    def fused_exactly_on_positive_cases(case, rewritten: ModuleOp) -> None:
        # A graph may hold several attention motifs; the description lists each one.
        motifs = case.description.count("attention[")
        positive = motifs - case.description.count("attention[NEGATIVE")
        fused = _count(rewritten, aten.ScaledDotProductAttentionOp) - _count(
            case.module, aten.ScaledDotProductAttentionOp
        )
        if _nan_rows_expected(case):  # declined on purpose (see _nan_rows_expected)
            assert fused <= positive, case.description
        else:
            assert fused == positive, f"fused {fused} of {positive} positive motifs: {case.description}"

    check_pattern(FuseAttentionPass(), motifs=("attention",), max_examples=60, seed=0,
                  on_case=fused_exactly_on_positive_cases)


def _nan_rows_expected(case) -> bool:
    """A case whose reference output has NaN rows (a constant mask that hides every key of a query
    with -inf): fusing would turn NaN into 0, so the pass declines it."""
    return any(bool(torch.isnan(t).any()) for t in case.expected if t.is_floating_point())
