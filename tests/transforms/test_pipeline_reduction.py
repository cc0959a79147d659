"""The default pipeline on the zoo: how much smaller the graph gets, and what fuses per layer."""

from __future__ import annotations

from forge.driver.pass_stages import run_passes
from forge.driver.report import count_body_ops
from forge.pipelines import DEFAULT_PIPELINE
from tests.conftest import imported_small_model


def optimized(name: str, attn: str):
    imported, _, _ = imported_small_model(name, attn)
    module = imported.module.clone()
    before = count_body_ops(module)
    run_passes(module, DEFAULT_PIPELINE, weights=imported.weights)
    return module, before, count_body_ops(module)


def test_every_zoo_model_loses_at_least_a_fifth_of_its_ops(zoo_case):
    _, before, after = optimized(*zoo_case)
    assert 1 - after / before >= 0.20, (zoo_case, before, after)


def test_bert_residual_adds_fuse_into_their_layer_norms():
    module, _, _ = optimized("bert", "sdpa")
    names = [op.name for op in module.walk()]
    layers = 2
    assert names.count("aten.add_layer_norm") == 2 * layers + 1  # two per layer, plus the embeddings
    assert "aten.layer_norm" not in names
    sdpa = [op for op in module.walk() if op.name == "aten.scaled_dot_product_attention"]
    assert all(op.attn_mask is None for op in sdpa)  # BERT's keep-everything mask is gone
