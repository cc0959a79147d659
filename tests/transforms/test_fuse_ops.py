"""fuse-ops: linear layers with bias/activation, written-out GELUs, SwiGLU, RMSNorm.

* every case of `filecheck/transforms/fuse-ops.mlir` keeps its semantics (interpreted on random
  inputs and weights before and after); negative cases are declined for the reason the explain
  hook reports;
* every small zoo model stays within 1e-5 of eager PyTorch, and fuses every layer: GPT-2's MLP is
  one fused_linear gelu_tanh, Llama's a gated_mlp with rms_norms, BERT's a fused_linear gelu;
* hypothesis properties: `check_pattern` on the fuse-ops motifs and on all motifs, and exact
  fusion counts on single `linear_act` / `swiglu` / `rmsnorm` motifs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from xdsl.dialects.builtin import ModuleOp

from dialects import aten
from dialects.torch_types import dtype_of, shape_of
from forge.driver.registry import make_context
from forge.interpreter import interpret
from forge.pass_runner import run_pipeline
from forge.patterns import PatternStats, collect_pattern_stats
from forge.testing.check import assert_preserves_semantics, check_case, check_pattern, working_copy
from forge.testing.strategies import ALL_MOTIFS, PASS_MOTIFS, motif
from forge.transforms import PASSES
from forge.transforms.fuse_ops import FuseOpsPass
from forge.weights import WeightStore
from tests.conftest import ZOO_CASES, imported_small_model
from tests.transforms.filecheck_cases import filecheck_case, filecheck_functions

FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms" / "fuse-ops.mlir"
ACTIVATION_OPS = (aten.ReluOp, aten.GeluOp, aten.SiluOp, aten.SigmoidOp, aten.TanhOp, aten.ErfOp)
LINEAR_OPS = (aten.LinearOp, aten.AddmmOp, aten.MmOp, aten.MatmulOp)


def _ops(module: ModuleOp, *classes: type) -> list:
    return [op for op in module.walk() if isinstance(op, classes)]


def _count(module: ModuleOp, *classes: type) -> int:
    return len(_ops(module, *classes))


def _activations(module: ModuleOp) -> list[str]:
    return sorted(op.arg("activation") for op in _ops(module, aten.FusedLinearOp))


# --- the FileCheck cases -------------------------------------------------------------------------


def _case(name: str, seed: int = 0) -> tuple[ModuleOp, WeightStore, list[torch.Tensor]]:
    """FileCheck case `name` alone (renamed `forward`), random weights for its `aten.weight`s and
    random inputs."""
    module = filecheck_case(FILECHECK, name)
    (function,) = module.ops
    gen = torch.Generator().manual_seed(seed)
    store = WeightStore()
    for op in _ops(module, aten.WeightOp):
        if op.weight_name.data not in store:
            store.add(op.weight_name.data, torch.randn(shape_of(op.result.type), generator=gen))
    inputs = [_random(shape_of(a.type), dtype_of(a.type), gen) for a in function.body.block.args]
    return module, store, inputs


def _random(shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen, dtype=dtype)
    return torch.randint(-3, 4, shape, generator=gen, dtype=dtype)


# Why each negative case is declined: (pattern, fragment of its explain-pattern reason).
NEGATIVE_REASONS = {
    "linear_other_user": ("FuseActivation", "has users besides the activation"),
    "gelu_wrong_constant": ("GeluPolynomial", "cubic coefficient 0.04 is not 0.044715"),
    "gelu_intermediate_escapes": ("GeluPolynomial", "is used outside the GELU"),
    "rmsnorm_wrong_axis": ("RmsNormFusion", "not the last axis"),
    "swiglu_with_bias": ("GatedMlp", "gated_mlp has no bias"),
    "addmm_scaled": ("LinearToFusedLinear", "alpha or beta != 1"),
    "residual_layer_norm_negative": ("AddLayerNorm", "the sum has other users"),
    "int_linear_sigmoid": ("FuseActivation", "the activation changes the dtype"),
}

# What each positive case fuses into.
POSITIVE = {
    "linear_relu": {"fused": ["relu"]},
    "gpt2_mlp": {"fused": ["gelu_tanh"]},
    "mm_add_sigmoid": {"fused": ["sigmoid"]},
    "matmul_bias_silu": {"fused": ["silu"]},
    "bert_gelu": {"fused": ["gelu", "gelu"]},
    "gelu_tanh_poly_alone": {"gelu": 1},
    "swiglu": {"gated_mlp": 1, "fused": ["none"]},
    "llama_rmsnorm": {"rms_norm": 1},
    "rmsnorm_variants": {"rms_norm": 1},
    "residual_layer_norm": {"add_layer_norm": 1},
}


def test_filecheck_file_has_the_expected_cases():
    names = filecheck_functions(FILECHECK)
    assert len(names) == len(set(names))
    assert set(names) == set(NEGATIVE_REASONS) | set(POSITIVE)


@pytest.mark.parametrize("name", filecheck_functions(FILECHECK))
def test_filecheck_case(name: str):
    before, store, _ = _case(name)
    after = before.clone()
    pattern = NEGATIVE_REASONS.get(name, ("", ""))[0]
    with collect_pattern_stats(PatternStats(explain=pattern or None)) as stats:
        run_pipeline(after, make_context(), [FuseOpsPass()], weights=store)
    after.verify()
    if name in NEGATIVE_REASONS:
        fragment = NEGATIVE_REASONS[name][1]
        assert pattern not in stats.fired
        assert any(fragment in event for event in stats.events), stats.events
    else:
        want = POSITIVE[name]
        assert _activations(after) == sorted(want.get("fused", []))
        assert _count(after, aten.GatedMlpOp) == want.get("gated_mlp", 0)
        assert _count(after, aten.RmsNormOp) == want.get("rms_norm", 0)
        assert _count(after, aten.GeluOp) == want.get("gelu", 0)
        assert _count(after, aten.AddLayerNormOp) == want.get("add_layer_norm", 0)
        assert _count(after, *LINEAR_OPS, aten.TanhOp, aten.ErfOp, aten.RsqrtOp, aten.MeanDimOp) == 0
    for seed in range(3):
        _, _, inputs = _case(name, seed)
        assert_preserves_semantics(before, after, store, inputs, name=name)


def test_explain_names_the_failing_candidate():
    module, store, _ = _case("linear_other_user")
    with collect_pattern_stats(PatternStats(explain="FuseActivation")) as stats:
        FuseOpsPass().apply(make_context(), module)
    assert stats.events == [
        "FuseActivation did not match aten.relu %relu: %linear has users besides the activation"
    ]


def test_without_linear_canonicalization_only_motifs_fuse():
    module, _, _ = _case("swiglu")
    FuseOpsPass(canonicalize_linear=False).apply(make_context(), module)
    assert _count(module, aten.GatedMlpOp) == 1
    assert _count(module, aten.LinearOp) == 1  # the down projection stays a plain linear
    assert _count(module, aten.FusedLinearOp) == 0


# --- the zoo models --------------------------------------------------------------------------------


def _passes_before(names: tuple[str, ...] = ("dce", "cse", "fold")) -> list:
    passes = []
    for n in names:
        try:
            passes.append(PASSES[n]()())
        except (ImportError, AttributeError):
            pytest.skip(f"pass {n} is not implemented yet")
    return passes


def _fused_zoo_model(name: str, attn: str, before: tuple[str, ...]):
    imported, inputs, expected = imported_small_model(name, attn)
    module, weights = working_copy(imported.module, imported.weights)
    ctx = make_context()
    for p in _passes_before(before):
        p.apply(ctx, module)
    with collect_pattern_stats() as stats:
        FuseOpsPass().apply(ctx, module)
    module.verify()
    return module, weights, inputs, expected, stats


@pytest.mark.parametrize("before", [(), ("dce", "cse", "fold")], ids=["alone", "after-dce-cse-fold"])
@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_model_matches_eager_and_fuses_every_layer(name: str, attn: str, before):
    module, weights, inputs, expected, stats = _fused_zoo_model(name, attn, before)
    (got,) = interpret(module, weights, *inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    layers = 2
    assert _count(module, *LINEAR_OPS) == 0 or attn == "eager"  # eager attention keeps its matmuls
    assert _count(module, aten.LinearOp, aten.AddmmOp) == 0
    acts = _activations(module)
    if name == "gpt2":
        # c_attn, c_proj, c_fc (gelu_tanh), mlp c_proj per layer, plus the tied LM head.
        assert acts == ["gelu_tanh"] * layers + ["none"] * (3 * layers + 1)
        assert _count(module, aten.TanhOp, aten.PowTensorScalarOp) == 0
        assert stats.fired["GeluPolynomial"] == layers
    elif name == "llama":
        assert _count(module, aten.GatedMlpOp) == layers
        assert all(op.arg("activation") == "silu" for op in _ops(module, aten.GatedMlpOp))
        assert _count(module, aten.RmsNormOp) == 2 * layers + 1
        assert all(op.arg("eps") == pytest.approx(1e-6) for op in _ops(module, aten.RmsNormOp))
        assert _count(module, aten.RsqrtOp, aten.MeanDimOp, aten.SiluOp) == 0
        # q, k, v, o and down projections, plus the LM head.
        assert acts == ["none"] * (5 * layers + 1)
    else:
        assert acts == ["gelu"] * layers + ["none"] * (5 * layers)
        assert _count(module, aten.GeluOp) == 0


def test_gpt2_weights_are_transposed_only_through_aten_t():
    module, *_ = _fused_zoo_model("gpt2", "sdpa", ())
    # Each Conv1D weight [in, out] reaches its fused_linear through exactly one aten.t.
    for op in _ops(module, aten.FusedLinearOp):
        producer = op.weight.owner
        if isinstance(producer, aten.TOp):
            assert isinstance(producer.input.owner, aten.WeightOp)
    assert _count(module, aten.TOp) == 4 * 2


def test_pass_is_registered_and_idempotent():
    assert PASSES["fuse-ops"]() is FuseOpsPass
    module, *_ = _fused_zoo_model("llama", "sdpa", ())
    text = str(module)
    with collect_pattern_stats() as stats:
        FuseOpsPass().apply(make_context(), module)
    assert not stats.fired
    assert str(module) == text


# --- hypothesis properties -------------------------------------------------------------------------


def test_property_fuse_ops_motifs():
    check_pattern(FuseOpsPass(), motifs=PASS_MOTIFS["fuse-ops"], max_examples=60, seed=0)


def test_property_all_motifs():
    check_pattern(FuseOpsPass(), motifs=ALL_MOTIFS, max_examples=40, seed=1)


_SINGLE = settings(max_examples=40, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_EXPECTED_ACTIVATION = {"none": "none", "relu": "relu", "gelu": "gelu", "gelu_tanh": "gelu_tanh",
                        "gelu_tanh_poly": "gelu_tanh", "gelu_erf_poly": "gelu", "silu": "silu",
                        "sigmoid": "sigmoid"}


@_SINGLE
@given(motif("linear_act"))
def test_property_linear_act_fuses_exactly(case):
    rewritten = check_case(FuseOpsPass(), case)
    (act,) = [t.split(":")[1] for t in case.tags if t.split(":")[1:2] and t.split(":")[1] in _EXPECTED_ACTIVATION]
    assert _activations(rewritten) == [_EXPECTED_ACTIVATION[act]], case.description
    assert _count(rewritten, *LINEAR_OPS, *ACTIVATION_OPS) == 0, case.description


@_SINGLE
@given(motif("swiglu"))
def test_property_swiglu_fuses_unless_negative(case):
    rewritten = check_case(FuseOpsPass(), case)
    assert _count(rewritten, aten.GatedMlpOp) == (0 if case.negative("swiglu") else 1), case.description
    if not case.negative("swiglu"):
        assert _count(rewritten, aten.SiluOp, aten.MulTensorOp) == 0, case.description


@_SINGLE
@given(motif("rmsnorm"))
def test_property_rmsnorm_fuses_unless_negative(case):
    rewritten = check_case(FuseOpsPass(), case)
    assert _count(rewritten, aten.RmsNormOp) == (0 if case.negative("rmsnorm") else 1), case.description
    if not case.negative("rmsnorm"):
        assert _count(rewritten, aten.MeanDimOp, aten.RsqrtOp, aten.SqrtOp, aten.MulTensorOp) == 0
