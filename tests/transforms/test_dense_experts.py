"""fuse-ops' dense_experts family (forge/transforms/dense_experts.py): a mixture-of-experts projection
bmm(W[ids], X) becomes matmul(W, columns of X) and a gather of each pick's expert, computing the same
function (interpreted before and after on seeded inputs, ties-free routing logits), only where the
dense form is cheaper (the negative case names why), and not at all with the family switched off."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dialects import aten
from dialects.torch_types import shape_of
from forge.driver.registry import make_context
from forge.patterns import PatternStats, collect_pattern_stats
from forge.testing.check import assert_preserves_semantics
from forge.transforms.dense_experts import DENSE_BOUND, DenseExperts
from forge.transforms.fuse_ops import FuseOpsPass
from forge.weights import WeightStore, attach_weights
from tests.transforms.filecheck_cases import filecheck_case

FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms" / "fuse-ops-dense-experts.mlir"


def _case(name: str, seed: int):
    module = filecheck_case(FILECHECK, name)
    gen = torch.Generator().manual_seed(seed)
    store = WeightStore()
    for op in module.walk():
        if isinstance(op, aten.WeightOp) and op.weight_name.data not in store:
            store.add(op.weight_name.data, torch.randn(shape_of(op.result.type), generator=gen))
    (function,) = module.ops
    inputs = [torch.randn(shape_of(a.type), generator=gen) for a in function.body.block.args]
    return module, store, inputs


def _rewrite(module, store, **options):
    after = module.clone()
    attach_weights(after, store)
    with collect_pattern_stats(PatternStats(explain="DenseExperts")) as stats:
        FuseOpsPass(**options).apply(make_context(), after)
    after.verify()
    return after, stats


@pytest.mark.parametrize("seed", range(3))
def test_dense_experts_computes_the_same_function(seed: int) -> None:
    before, store, inputs = _case("moe_experts", seed)
    after, stats = _rewrite(before, store)
    assert stats.fired.get("DenseExperts") == 2
    assert not any(isinstance(op, (aten.BmmOp, aten.IndexTensorOp)) for op in after.walk())
    assert_preserves_semantics(before, after, store, inputs, name="moe_experts")


def test_many_experts_per_sample_stay_gathered() -> None:
    before, store, inputs = _case("moe_many_experts", 0)
    after, stats = _rewrite(before, store)
    assert "DenseExperts" not in stats.fired
    assert any(f"exceed {DENSE_BOUND} x 2 samples" in event for event in stats.events), stats.events
    assert_preserves_semantics(before, after, store, inputs, name="moe_many_experts")


def test_the_family_switches_off() -> None:
    before, store, _ = _case("moe_experts", 0)
    after, stats = _rewrite(before, store, dense_experts=False)
    assert "DenseExperts" not in stats.fired
    assert sum(isinstance(op, aten.BmmOp) for op in after.walk()) == 2
    assert DenseExperts in FuseOpsPass.families()["dense_experts"]
