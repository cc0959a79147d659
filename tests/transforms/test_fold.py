"""fold: constant folding (weights included when a WeightStore is attached) and identities.

* after `dce,cse,fold` every small zoo model keeps its output (within 1e-5 of eager) and the
  position-id / causal-mask subgraphs are gone (no arange, cumsum, index, bitwise and, ...);
  fold alone and fold without a store are correct too;
* every function of `filecheck/transforms/fold.mlir` keeps its semantics, with and without the
  store its RUN line builds;
* the folding policy on hand-written IR: small values inline, large ones as new weights, a large
  re-layout of a weight kept, an op that fails to evaluate kept, the inline limit option;
* hypothesis: `check_pattern` on the fold motifs and all motifs, with "no constant op is left
  unfolded (but large re-layouts)" and "a second fold changes nothing"; positive identity motifs
  vanish entirely, negative ones keep their op.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from dialects import aten
from dialects.torch_types import shape_of
from forge.driver.registry import make_context
from forge.driver.semantics import random_inputs
from forge.interpreter import interpret
from forge.pass_runner import run_pipeline
from forge.patterns import collect_pattern_stats
from forge.testing.check import check_case, check_pattern, copy_weights, working_copy
from forge.testing.strategies import PASS_MOTIFS, motif
from forge.transforms import PASSES
from forge.transforms.fold import (
    _FOLDABLE,
    LIKE_FACTORIES,
    RELAYOUT_OPS,
    SPLAT_FACTORIES,
    FoldPass,
    _kind,
    _random,
)
from forge.weights import WeightStore, weights_of
from tests.conftest import ZOO_CASES, imported_small_model

FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms" / "fold.mlir"

MASK_AND_POSITION_OPS = (
    "aten.arange", "aten.cumsum", "aten.diff", "aten.index.Tensor", "aten.__and__.Tensor",
    "aten.new_ones", "aten.le.Tensor", "aten.eq.Tensor", "aten.ne.Scalar", "aten.where.ScalarOther",
    "aten.zeros", "aten.gather", "aten.ge.Scalar",
)


def _ctx():
    return make_context()


def _apply(passes: str, module: ModuleOp, store: WeightStore | None = None) -> None:
    run_pipeline(module, _ctx(), [PASSES[name]()() for name in passes.split(",")], weights=store)


def _counts(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in module.walk())


def _zoo(name: str, attn: str, *, with_store: bool = True):
    imported, inputs, expected = imported_small_model(name, attn)
    if with_store:
        module, weights = working_copy(imported.module, imported.weights)
    else:
        module, weights = imported.module.clone(), copy_weights(imported.weights)
    return imported.module, module, weights, inputs, expected


def _is_constant(value, store: WeightStore | None) -> bool:
    owner = value.owner
    return isinstance(owner, aten.ConstantOp) or (
        isinstance(owner, aten.WeightOp) and store is not None and owner.weight_name.data in store
    )


def unfolded_constant_ops(module: ModuleOp, store: WeightStore | None, max_inline: int = 64) -> list[str]:
    """Ops fold should have folded but did not (large re-layouts and splats are kept on purpose)."""
    left = []
    for op in module.walk():
        if _kind(type(op)) != _FOLDABLE or not op.results or _random(op):
            continue
        if type(op) not in LIKE_FACTORIES and not all(_is_constant(v, store) for v in op.operands):
            continue
        large = any(shape_numel(r.type) > max_inline for r in op.results)
        if large and (type(op) in RELAYOUT_OPS or type(op) in SPLAT_FACTORIES or store is None):
            continue
        left.append(op.name)
    return left


def shape_numel(ty) -> int:
    n = 1
    for d in shape_of(ty):
        n *= d
    return n


# --- zoo models --------------------------------------------------------------------------------


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_pipeline_folds_masks_and_positions(name: str, attn: str):
    original, module, weights, inputs, expected = _zoo(name, attn)
    stored_before = len(weights)
    with collect_pattern_stats() as stats:
        _apply("dce,cse,fold", module)
    module.verify()
    (got,) = interpret(module, weights, *inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)

    before, after = _counts(original), _counts(module)
    left = {n: after[n] for n in MASK_AND_POSITION_OPS if after[n]}
    assert not left, f"constant subgraph ops survived: {left}"
    assert sum(after.values()) < sum(before.values())
    assert unfolded_constant_ops(module, weights) == []
    # Every new store entry is referenced by one new aten.weight, and nothing else was added.
    folded = [op.weight_name.data for op in module.walk()
              if isinstance(op, aten.WeightOp) and op.weight_name.data.startswith("fold.")]
    assert folded and len(folded) == len(set(folded)) == len(weights) - stored_before
    assert all(name in weights for name in folded)
    assert stats.fired["NewFoldedWeight"] == len(folded)
    assert stats.fired["FoldConstantOp"] > 0


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_fold_alone_and_without_store(name: str, attn: str):
    _, alone, weights, inputs, expected = _zoo(name, attn)
    _apply("fold", alone)
    alone.verify()
    torch.testing.assert_close(interpret(alone, weights, *inputs)[0], expected, atol=1e-5, rtol=1e-5)

    _, opaque, weights, inputs, expected = _zoo(name, attn, with_store=False)
    count_before = len(weights)
    _apply("dce,cse,fold", opaque)
    opaque.verify()
    torch.testing.assert_close(interpret(opaque, weights, *inputs)[0], expected, atol=1e-5, rtol=1e-5)
    assert len(weights) == count_before  # nothing stored without a store
    assert not any(isinstance(op, aten.WeightOp) and op.weight_name.data.startswith("fold.")
                   for op in opaque.walk())
    assert unfolded_constant_ops(opaque, None) == []


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_second_fold_changes_nothing(name: str, attn: str):
    _, module, weights, _, _ = _zoo(name, attn)
    _apply("dce,cse,fold", module)
    once, stored = str(module), len(weights)
    with collect_pattern_stats() as stats:
        _apply("fold", module)
    assert str(module) == once and len(weights) == stored
    assert sum(stats.fired.values()) == 0


def test_registered_as_fold():
    assert PASSES["fold"]() is FoldPass
    assert FoldPass().max_inline_elements == 64


# --- the FileCheck cases keep their semantics ----------------------------------------------------


def filecheck_store() -> WeightStore:
    """The store the RUN line of fold.mlir writes."""
    store = WeightStore()
    store.add("table", torch.arange(32.0).reshape(8, 4))
    store.add("big", torch.arange(800.0).reshape(100, 8))
    store.add("proj", torch.arange(128.0).reshape(8, 16))
    store.add("tiny", torch.ones(2, 3))
    return store


@pytest.mark.parametrize("with_store", [False, True], ids=["no-store", "store"])
def test_filecheck_cases_keep_semantics(with_store: bool):
    module = Parser(_ctx(), FILECHECK.read_text(), str(FILECHECK)).parse_module()
    after = module.clone()
    store = filecheck_store()
    _apply("fold", after, store if with_store else None)
    after.verify()
    checked = 0
    for function in module.ops:
        assert isinstance(function, func.FuncOp)
        if any(isinstance(op, aten.DropoutOp) for op in function.walk()):
            continue  # training dropout is random
        name = function.sym_name.data
        inputs = random_inputs(function)
        want = interpret(module, store, *inputs, func_name=name)
        got = interpret(after, store, *inputs, func_name=name)
        for w, g in zip(want, got, strict=True):
            torch.testing.assert_close(g, w, msg=lambda m, name=name: f"@{name}: {m}")
        checked += 1
    assert checked >= 15


# --- the folding policy --------------------------------------------------------------------------


def _fold_text(text: str, store: WeightStore | None, **options) -> ModuleOp:
    module = Parser(_ctx(), text).parse_module()
    run_pipeline(module, _ctx(), [FoldPass(**options)], weights=store)
    module.verify()
    return module


def _body(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("aten.")]


POLICY = """
func.func @f(%x: tensor<16x8xf32>, %y: tensor<4x16xf32>) -> (tensor<16x8xf32>, tensor<4x8xf32>) {
  %big = aten.weight "big" : tensor<100x8xf32>
  %ids = aten.arange {end = 16} : () -> tensor<16xi64>
  %rows = aten.embedding %big, %ids : (tensor<100x8xf32>, tensor<16xi64>) -> tensor<16x8xf32>
  %a = aten.mul.Tensor %x, %rows : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %w = aten.weight "proj" : tensor<8x16xf32>
  %wt = aten.transpose.int %w {dim0 = 0, dim1 = 1} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %b = aten.mm %y, %wt : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return %a, %b : tensor<16x8xf32>, tensor<4x8xf32>
}
"""


def test_large_lookup_becomes_a_weight_but_a_large_relayout_stays():
    store = filecheck_store()
    module = _fold_text(POLICY, store)
    assert _body(module) == ["aten.weight", "aten.mul.Tensor", "aten.weight", "aten.transpose.int", "aten.mm"]
    new = [op for op in module.walk() if isinstance(op, aten.WeightOp) and op.weight_name.data.startswith("fold.")]
    assert [op.weight_name.data for op in new] == ["fold.rows_0"]
    torch.testing.assert_close(store["fold.rows_0"], store["big"][:16])
    assert weights_of(module) is store


def test_without_store_weights_are_opaque():
    module = _fold_text(POLICY, None)
    assert "aten.embedding" in _body(module)
    assert "aten.arange" not in _body(module)  # 16 ids: inlined


def test_inline_limit_option():
    store = filecheck_store()
    module = _fold_text(POLICY, store, max_inline_elements=128)
    consts = [op for op in module.walk() if isinstance(op, aten.ConstantOp)]
    assert [tuple(shape_of(c.result.type)) for c in consts] == [(16, 8), (16, 8)]  # rows, and wt (128)
    assert len(store) == 4
    module = _fold_text(POLICY, store, max_inline_elements=0)
    assert not any(isinstance(op, aten.ConstantOp) for op in module.walk())


def test_an_op_that_fails_to_evaluate_is_kept():
    text = """
func.func @f(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
  %t = aten.weight "table" : tensor<8x4xf32>
  %ids = aten.constant dense<[9]> : tensor<1xi64>
  %rows = aten.embedding %t, %ids : (tensor<8x4xf32>, tensor<1xi64>) -> tensor<1x4xf32>
  %s = aten.slice.Tensor %rows {dim = 1, start = 0, end = 2} : (tensor<1x4xf32>) -> tensor<1x2xf32>
  %y = aten.add.Tensor %x, %s : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  func.return %y : tensor<1x2xf32>
}
"""
    module = _fold_text(text, filecheck_store())
    assert _body(module) == ["aten.weight", "aten.constant", "aten.embedding", "aten.slice.Tensor", "aten.add.Tensor"]


def test_statistics():
    store = filecheck_store()
    module = Parser(_ctx(), POLICY).parse_module()
    with collect_pattern_stats() as stats:
        run_pipeline(module, _ctx(), [FoldPass()], weights=store)
    assert stats.fired == {"FoldConstantOp": 2, "NewFoldedWeight": 1}


# --- hypothesis ----------------------------------------------------------------------------------


def _fully_folded(case, module: ModuleOp) -> None:
    store = weights_of(module)
    assert unfolded_constant_ops(module, store) == [], case.description
    text = str(module)
    with collect_pattern_stats() as stats:
        FoldPass().apply(_ctx(), module)
    assert sum(stats.fired.values()) == 0 and str(module) == text, "a second fold changed the IR"


def test_property_fold_motifs():
    check_pattern(FoldPass(), motifs=PASS_MOTIFS["fold"], max_examples=50, on_case=_fully_folded)


def test_property_all_motifs():
    check_pattern(FoldPass(), max_examples=25, on_case=_fully_folded)


_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(motif("identities", negative=False))
def test_property_positive_identities_vanish(case):
    module = check_case(FoldPass(), case)
    left = [op.name for op in module.walk() if op.name.startswith("aten.")
            and not isinstance(op, (aten.ConstantOp, aten.WeightOp))]
    assert left == [], case.description


@_SETTINGS
@given(motif("identities", negative=True))
def test_property_negative_identities_stay(case):
    before = Counter(op.name for op in case.module.walk() if op.name.startswith("aten.")
                     and not isinstance(op, (aten.ConstantOp, aten.WeightOp)) and op.operands)
    module = check_case(FoldPass(), case)
    after = Counter(op.name for op in module.walk() if op.name.startswith("aten.")
                    and not isinstance(op, (aten.ConstantOp, aten.WeightOp)) and op.operands)
    assert after == before, case.description
