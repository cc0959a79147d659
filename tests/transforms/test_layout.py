"""layout: transposes into matmul flags and the WeightStore, permutes cancelled, reshapes collapsed.

* every case of `filecheck/transforms/layout.mlir` keeps its semantics; negative cases are declined
  for the reason the explain hook reports;
* weights: a transposed `aten.weight` becomes one pre-transposed store entry (memoized, a view of
  the original storage unless `materialize-weights`), the original stays only while used; GPT-2's
  Conv1D weights end as plain [out, in] fused_linear weights;
* every small zoo model stays within 1e-5 of eager PyTorch after layout and after the default
  pipeline;
* hypothesis properties: `check_pattern` on the layout motifs and on all motifs, and on single
  `layout` motifs no copy, reshape chain, permute chain or foldable transpose is left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass

from dialects import aten
from dialects.torch_types import dtype_of, shape_of
from forge.driver.registry import make_context
from forge.interpreter import interpret
from forge.pass_runner import run_pipeline
from forge.patterns import PatternStats, collect_pattern_stats
from forge.pipelines import DEFAULT_PIPELINE
from forge.testing.check import assert_preserves_semantics, check_case, check_pattern, working_copy
from forge.testing.strategies import ALL_MOTIFS, PASS_MOTIFS, motif
from forge.transforms import PASSES
from forge.transforms.fuse_ops import FuseOpsPass
from forge.transforms.ir_queries import permutation
from forge.transforms.layout import LayoutPass
from forge.weights import WeightStore, weights_of
from tests.conftest import ZOO_CASES, imported_small_model
from tests.transforms.filecheck_cases import filecheck_case, filecheck_functions

FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms" / "layout.mlir"
PERMUTES = (aten.PermuteOp, aten.TransposeIntOp, aten.TOp)
MATMULS = (aten.MatmulOp, aten.BmmOp, aten.MmOp, aten.MatmulTransposedOp)
COPIES = (aten.ContiguousOp, aten.CloneOp, aten.AliasOp, aten.DetachOp)
RESHAPES = (aten.ViewOp, aten.ReshapeOp, aten.UnsafeViewOp, aten.FlattenUsingIntsOp, aten.UnsqueezeOp,
            aten.SqueezeOp, aten.SqueezeDimOp, aten.SqueezeDimsOp)


def _ops(module: ModuleOp, *classes: type) -> list:
    return [op for op in module.walk() if isinstance(op, classes)]


def _count(module: ModuleOp, *classes: type) -> int:
    return len(_ops(module, *classes))


def _live_ops(module: ModuleOp) -> list:
    """Ops the function results depend on (dead code is dce's business, not layout's)."""
    live: set = set()
    work = [op for op in module.walk() if isinstance(op, func.ReturnOp)]
    while work:
        op = work.pop()
        if op in live:
            continue
        live.add(op)
        work += [v.owner for v in op.operands if isinstance(v.owner, Operation)]
    return [op for op in module.walk() if op in live]


def _layout_traffic(module: ModuleOp) -> list[str]:
    """What layout should have removed from live code: copies, reshape chains, permute chains."""
    left = []
    for op in _live_ops(module):
        source = op.operands[0].owner if op.operands else None
        if isinstance(op, COPIES) or (isinstance(op, RESHAPES) and isinstance(source, RESHAPES)) or (
                isinstance(op, PERMUTES) and isinstance(source, PERMUTES)):
            left.append(str(op))
    return left


def _parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def _random_store(module: ModuleOp, seed: int = 0) -> WeightStore:
    gen = torch.Generator().manual_seed(seed)
    store = WeightStore()
    for op in _ops(module, aten.WeightOp):
        if op.weight_name.data not in store:
            store.add(op.weight_name.data, torch.randn(shape_of(op.result.type), generator=gen))
    return store


def _random_inputs(module: ModuleOp, seed: int = 0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    (function,) = module.ops
    return [torch.randn(shape_of(a.type), generator=gen, dtype=dtype_of(a.type))
            for a in function.body.block.args]


# --- the FileCheck cases -------------------------------------------------------------------------


# Cases the pass must decline: (pattern, fragment of its explain-pattern reason).
DECLINED = {
    "transpose_not_last_two": ("TransposeIntoMatmul", "no operand is a transpose of its last two dims"),
    "lone_reshapes": ("CollapseReshapes", "a single reshape that changes the shape"),
    "unary_with_other_user": ("ComposePermutes", "a single permute that is not the identity"),
    "weight_transpose_without_store": ("FoldWeightPermute", "no WeightStore attached"),
}


def test_filecheck_file_has_negative_cases():
    names = filecheck_functions(FILECHECK)
    assert len(names) == len(set(names)) and len(names) >= 15
    assert set(DECLINED) <= set(names)


@pytest.mark.parametrize("name", filecheck_functions(FILECHECK))
def test_filecheck_case(name: str):
    before = filecheck_case(FILECHECK, name)
    after = before.clone()  # no store attached, as in forge-opt
    pattern = DECLINED.get(name, (None, ""))[0]
    with collect_pattern_stats(PatternStats(explain=pattern)) as stats:
        LayoutPass().apply(make_context(), after)
    after.verify()
    if name in DECLINED:
        assert str(after) == str(before)
        assert any(DECLINED[name][1] in event for event in stats.events), stats.events
    else:
        assert stats.fired, "a positive case must rewrite something"
        assert _layout_traffic(after) == []
    if name == "permutes_not_inverse":  # composed, not cancelled
        (permute,) = _ops(after, aten.PermuteOp)
        assert permute.arg("dims") == [1, 2, 0]
    store = _random_store(before)
    for seed in range(3):
        assert_preserves_semantics(before, after, store, _random_inputs(before, seed), name=name)


# --- weights transposed at compile time ----------------------------------------------------------

TWO_USES = """
func.func @forward(%x: tensor<4x8xf32>, %y: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x16xf32>) {
  %w = aten.weight "proj.weight" : tensor<16x8xf32>
  %wt = aten.t %w : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %mm = aten.mm %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %wt_1 = aten.transpose.int %w {dim0 = 0, dim1 = 1} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %mm_1 = aten.matmul %x, %wt_1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %back = aten.mm %y, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  func.return %mm, %back, %mm_1 : tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x16xf32>
}
"""


def _layout_with_store(text: str, *, materialize: bool = False, store: WeightStore | None = None):
    module = _parse(text)
    store = store if store is not None else _random_store(module)
    before = module.clone()
    inputs = _random_inputs(module)
    with collect_pattern_stats() as stats:
        run_pipeline(module, make_context(), [LayoutPass(materialize_weights=materialize)], weights=store)
    assert_preserves_semantics(before, module, store, inputs)
    return module, store, stats


def test_weight_transposed_once_and_original_kept_while_used():
    module, store, stats = _layout_with_store(TWO_USES)
    assert stats.fired["FoldWeightPermute"] == 2
    names = sorted(op.weight_name.data for op in _ops(module, aten.WeightOp))
    assert names == ["proj.weight", "proj.weight.T"]  # one new entry for both transposes
    assert _count(module, *PERMUTES) == 0
    assert torch.equal(store["proj.weight.T"], store["proj.weight"].T)
    # No memory is duplicated: the entry is a transposed view of the original storage.
    assert store["proj.weight.T"].untyped_storage().data_ptr() == store["proj.weight"].untyped_storage().data_ptr()


def test_materialized_weight_is_contiguous():
    module, store, _ = _layout_with_store(TWO_USES, materialize=True)
    assert store["proj.weight.T"].is_contiguous()
    assert torch.equal(store["proj.weight.T"], store["proj.weight"].T)


ONE_USE = """
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = aten.weight "proj.weight" : tensor<16x8xf32>
  %wt = aten.permute %w {dims = [1, 0]} : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %mm = aten.matmul %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  func.return %mm : tensor<4x16xf32>
}
"""


def test_unused_original_weight_op_is_dropped():
    module, store, _ = _layout_with_store(ONE_USE)
    assert [op.weight_name.data for op in _ops(module, aten.WeightOp)] == ["proj.weight.T"]
    assert _count(module, *PERMUTES, aten.MatmulTransposedOp) == 0


def test_existing_entry_with_other_data_is_not_overwritten():
    module = _parse(TWO_USES)
    store = _random_store(module)
    store.add("proj.weight.T", torch.zeros(8, 16))
    module, store, _ = _layout_with_store(TWO_USES, store=store)
    (new,) = [op.weight_name.data for op in _ops(module, aten.WeightOp) if op.weight_name.data != "proj.weight"]
    assert new.startswith("proj.weight.T_") and torch.equal(store[new], store["proj.weight"].T)
    assert torch.equal(store["proj.weight.T"], torch.zeros(8, 16))


def test_fold_weights_option_disables_the_store_rewrite():
    module = _parse(TWO_USES)
    run_pipeline(module, make_context(), [LayoutPass(fold_weights=False)], weights=_random_store(module))
    assert [op.weight_name.data for op in _ops(module, aten.WeightOp)] == ["proj.weight"]
    assert _count(module, aten.MatmulTransposedOp) == 2  # the transposes became flags instead


def test_gpt2_conv1d_weights_become_linear_weights():
    imported, inputs, expected = imported_small_model("gpt2", "sdpa")
    module, store = working_copy(imported.module, imported.weights)
    ctx = make_context()
    FuseOpsPass().apply(ctx, module)
    LayoutPass().apply(ctx, module)
    module.verify()
    assert _count(module, aten.TOp, aten.AddmmOp) == 0
    conv1d = [n for n in imported.weights.names() if re.search(r"\.(c_attn|c_proj|c_fc)\.weight$", n)]
    assert len(conv1d) == 4 * 2
    for op in _ops(module, aten.FusedLinearOp):
        weight = op.weight.owner
        assert isinstance(weight, aten.WeightOp)
        name = weight.weight_name.data
        if name.endswith(".T"):
            original = name.removesuffix(".T")
            assert original in conv1d
            assert torch.equal(store[name], store[original].T)
            assert tuple(store[name].shape) == tuple(shape_of(op.weight.type))  # [out, in]
    referenced = {op.weight_name.data for op in _ops(module, aten.WeightOp)}
    assert referenced.isdisjoint(conv1d)  # the [in, out] originals are no longer used
    (got,) = interpret(module, store, *inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


# --- the zoo models --------------------------------------------------------------------------------


def _passes(names) -> list:
    passes = []
    for n in names:
        try:
            passes.append(PASSES[n]()())
        except (ImportError, AttributeError):
            pytest.skip(f"pass {n} is not implemented yet")
    return passes


PIPELINES = {
    "alone": ("layout",),
    "after-dce-cse-fold": ("dce", "cse", "fold", "layout"),
    "default": DEFAULT_PIPELINE,
}


@pytest.mark.parametrize("pipeline", list(PIPELINES))
@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_model_matches_eager(name: str, attn: str, pipeline: str):
    imported, inputs, expected = imported_small_model(name, attn)
    module, store = working_copy(imported.module, imported.weights)
    ctx = make_context()
    for p in _passes(PIPELINES[pipeline]):
        p.apply(ctx, module)
    module.verify()
    (got,) = interpret(module, weights_of(module), *inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert _layout_traffic(module) == []
    for op in _ops(module, *MATMULS):  # no last-two-dims swap left in front of a matmul
        for operand in op.operands[:2]:
            producer = operand.owner
            if isinstance(producer, PERMUTES):
                perm = permutation(producer)
                assert perm[-2:] != [len(perm) - 1, len(perm) - 2], str(op)


def test_pass_is_registered_and_idempotent():
    assert PASSES["layout"]() is LayoutPass
    imported = imported_small_model("llama", "eager")[0]
    module, _ = working_copy(imported.module, imported.weights)
    LayoutPass().apply(make_context(), module)
    text = str(module)
    with collect_pattern_stats() as stats:
        LayoutPass().apply(make_context(), module)
    assert not stats.fired
    assert str(module) == text


# --- hypothesis properties -------------------------------------------------------------------------


def test_property_layout_motifs():
    check_pattern(LayoutPass(), motifs=PASS_MOTIFS["layout"], max_examples=60, seed=0)


def test_property_all_motifs():
    check_pattern(LayoutPass(), motifs=ALL_MOTIFS, max_examples=40, seed=1)


@dataclass(frozen=True)
class _FuseThenLayout(ModulePass):
    """fuse-ops then layout, as in the default pipeline."""

    name = "fuse-ops,layout"

    def apply(self, ctx, op: ModuleOp) -> None:
        FuseOpsPass().apply(ctx, op)
        LayoutPass().apply(ctx, op)


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(motif("linear_act"))
def test_property_linear_weights_end_in_out_in_layout(case):
    rewritten = check_case(_FuseThenLayout(), case)
    # The store is attached: every linear ends with a plain [out, in] weight, no transpose.
    for op in _ops(rewritten, aten.FusedLinearOp):
        assert isinstance(op.weight.owner, aten.WeightOp), case.description


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(motif("layout"))
def test_property_layout_motif_leaves_no_layout_traffic(case):
    rewritten = check_case(LayoutPass(), case)
    assert _layout_traffic(rewritten) == [], case.description
    for op in _ops(rewritten, *PERMUTES):
        assert not isinstance(op.operands[0].owner, aten.WeightOp), f"weight transpose left: {case.description}"
    for op in _ops(rewritten, *MATMULS):
        for operand in op.operands[:2]:
            producer = operand.owner
            if isinstance(producer, PERMUTES):
                perm = permutation(producer)
                assert perm[-2:] != [len(perm) - 1, len(perm) - 2], case.description
