"""cse: merge side-effect-free ops with the same name, operands, properties and result types.

* every small zoo model keeps its output (within 1e-5 of eager), and afterwards no two
  mergeable ops compute the same thing; one sweep is a fixpoint;
* every function of `filecheck/transforms/cse.mlir` keeps its semantics on random inputs;
* crowded (name, operands) buckets and nested regions (scoping) on hand-built IR;
* hypothesis: `check_pattern` on the cse motifs (and all motifs), with "no duplicates are left"
  and "near-duplicates stay apart".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i1, i32
from xdsl.ir import Block, Region
from xdsl.parser import Parser

from dialects import aten
from dialects.torch_types import tensor_type
from forge.driver.registry import make_context
from forge.driver.semantics import random_inputs
from forge.interpreter import interpret
from forge.patterns import collect_pattern_stats
from forge.testing.check import check_pattern, working_copy
from forge.testing.strategies import PASS_MOTIFS
from forge.transforms import PASSES
from forge.transforms.cse import CsePass, _full_key, _mergeable_class, eliminate_common_subexpressions
from forge.weights import WeightStore
from tests.conftest import ZOO_CASES, imported_small_model

FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms" / "cse.mlir"


def _run(module: ModuleOp) -> None:
    CsePass().apply(make_context(), module)


def _duplicates(module: ModuleOp) -> list[str]:
    """Ops that compute what an earlier op of the same block already computes."""
    seen: dict[tuple, object] = {}
    found = []
    for op in module.walk():
        if op.regions or not op.results or not _mergeable_class(type(op)):
            continue
        key = (id(op.parent), *_full_key(op))
        if key in seen:
            found.append(op.name)
        seen[key] = op
    return found


def _op_count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


# --- zoo models --------------------------------------------------------------------------------


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_model_keeps_output_and_has_no_duplicates_left(name: str, attn: str):
    imported, inputs, expected = imported_small_model(name, attn)
    module, weights = working_copy(imported.module, imported.weights)
    before = _op_count(module)
    assert _duplicates(module), "the imported models repeat aranges and unsqueezes"
    with collect_pattern_stats() as stats:
        _run(module)
    module.verify()
    (got,) = interpret(module, weights, *inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)
    assert _duplicates(module) == []
    assert stats.fired["MergeDuplicateOp"] == before - _op_count(module) > 0

    # A second run merges nothing; it may erase ops the first left dead (xDSL's cse, which Forge's is,
    # erases an op that is dead when reached, one level of a dead chain per run).
    once = _op_count(module)
    _run(module)
    assert _duplicates(module) == [] and _op_count(module) <= once
    (again,) = interpret(module, weights, *inputs)
    torch.testing.assert_close(again, expected, atol=1e-5, rtol=1e-5)


def test_registered_as_cse():
    assert PASSES["cse"]() is CsePass
    assert CsePass.name == "cse"


# --- the FileCheck cases keep their semantics ----------------------------------------------------


def test_filecheck_cases_keep_semantics():
    module = Parser(make_context(), FILECHECK.read_text(), str(FILECHECK)).parse_module()
    after = module.clone()
    _run(after)
    after.verify()
    weights = WeightStore()
    for name, shape in (("scale", (3,)), ("w1", (3,)), ("w2", (3,))):
        weights.add(name, torch.randn(shape))
    checked = 0
    for function in module.ops:
        assert isinstance(function, func.FuncOp)
        ops = [op for op in function.walk() if op is not function]
        if any(op.name.startswith("arith.") or isinstance(op, aten.DropoutOp) for op in ops):
            continue  # no arith interpreter; training dropout is random
        name = function.sym_name.data
        inputs = random_inputs(function)
        want = interpret(module, weights, *inputs, func_name=name)
        got = interpret(after, weights, *inputs, func_name=name)
        for w, g in zip(want, got, strict=True):
            torch.testing.assert_close(g, w, msg=lambda m, name=name: f"@{name}: {m}")
        checked += 1
    assert checked >= 5


# --- hand-built IR ---------------------------------------------------------------------------------


def _function(arg_types, build) -> ModuleOp:
    block = Block(arg_types=arg_types)
    results = build(block)
    block.add_op(func.ReturnOp(*results))
    f = func.FuncOp("f", (arg_types, [r.type for r in results]), Region(block))
    return ModuleOp([f])


def test_crowded_bucket_falls_back_to_full_keys():
    """Twelve slices of one tensor share (name, operand) but not properties; each is repeated."""
    x_type = tensor_type((16, 4), torch.float32)
    row_type = tensor_type((1, 4), torch.float32)

    def build(block: Block):
        x = block.args[0]
        results = []
        for _repeat in range(2):
            for start in range(12):
                props = {"start": IntegerAttr(start, 64), "end": IntegerAttr(start + 1, 64)}
                op = aten.SliceTensorOp.build_op([[x]], props, [row_type])
                block.add_op(op)
                results.append(op.result)
        return results

    module = _function([x_type], build)
    module.verify()
    x = torch.randn(16, 4)
    want = interpret(module, None, x, func_name="f")
    assert eliminate_common_subexpressions(module) == 12
    module.verify()
    assert sum(isinstance(op, aten.SliceTensorOp) for op in module.walk()) == 12
    got = interpret(module, None, x, func_name="f")
    for w, g in zip(want, got, strict=True):
        torch.testing.assert_close(g, w)


def test_nested_regions_see_enclosing_ops_but_not_their_siblings():
    def build(block: Block):
        c7 = arith.ConstantOp(IntegerAttr(7, i32))
        cond = arith.ConstantOp(IntegerAttr(1, i1))
        block.add_ops([c7, cond])

        def branch() -> Region:
            inner7 = arith.ConstantOp(IntegerAttr(7, i32))  # same as the outer one: merged
            inner8 = arith.ConstantOp(IntegerAttr(8, i32))  # in both branches: not merged
            total = arith.AddiOp(inner7, inner8)
            return Region(Block([inner7, inner8, total, scf.YieldOp(total)]))

        if_op = scf.IfOp(cond, [i32], branch(), branch())
        after = arith.ConstantOp(IntegerAttr(8, i32))  # after the if: its branches do not dominate it
        block.add_ops([if_op, after])
        return [if_op.results[0], after.result, c7.result]  # c7 used: an unused op is erased first, as in xDSL

    module = _function([], build)
    module.verify()
    assert eliminate_common_subexpressions(module) == 2
    module.verify()
    if_op = next(op for op in module.walk() if isinstance(op, scf.IfOp))
    for region in if_op.regions:
        names = [op.name for op in region.block.ops]
        assert names == ["arith.constant", "arith.addi", "scf.yield"]  # the 8 stays, the 7 is outer
    constants = Counter(op.value.value.data for op in module.walk()
                        if isinstance(op, arith.ConstantOp) and op.result.type == i32)
    assert constants == {7: 1, 8: 3}


# --- hypothesis ----------------------------------------------------------------------------------


def _no_duplicates_left(case, module: ModuleOp) -> None:
    assert _duplicates(module) == [], case.description


def test_property_cse_motifs():
    check_pattern(CsePass(), motifs=PASS_MOTIFS["cse"], max_examples=40, on_case=_no_duplicates_left)


def test_property_all_motifs():
    check_pattern(CsePass(), max_examples=25, on_case=_no_duplicates_left)
