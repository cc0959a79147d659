"""forge.semantics (forge-opt --verify-semantics): comparisons, weights, and the driver."""

from __future__ import annotations

import math
import shlex

import pytest
import torch
from xdsl.parser import Parser

from dialects import aten
from forge import context
from forge.cli.opt import main as forge_opt
from forge.context import make_context
from forge.diagnostics import parse_with_locations
from forge.interpreter import interpret
from forge.semantics import (
    SemanticChecker,
    SemanticsError,
    compare_output,
    generated_weights,
    random_inputs,
    rewritten_sites,
    tolerance_for,
)
from forge.weights import WeightStore

LINEAR = """
func.func @f(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %w = aten.weight "fc.weight" : tensor<3x4xf32>
  %wt = aten.t %w : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %y = aten.linear %x, %wt, none : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}
"""


def parse(text: str):
    return Parser(make_context(), text).parse_module()


def test_tolerances_depend_on_the_dtype_and_can_be_overridden():
    assert tolerance_for(torch.float32) == (1e-4, 1e-4)
    assert tolerance_for(torch.float16) == (1e-2, 1e-2)
    assert tolerance_for(torch.float32, atol=0.5) == (0.5, 1e-4)
    assert tolerance_for(torch.int64, atol=0.5, rtol=0.5) == (0.0, 0.0)
    assert tolerance_for(torch.bool) == (0.0, 0.0)


def test_compare_output_reports_the_largest_difference_and_where():
    before = torch.zeros(2, 3)
    after = before.clone()
    after[1, 2] = 0.75
    after[0, 0] = 1e-6  # within tolerance: not counted
    what, tolerance = compare_output(before, after)
    assert what.startswith("max |diff| 0.75 at [1, 2] (before 0, after 0.75); 1 of 6 elements differ")
    assert tolerance == "atol=0.0001, rtol=0.0001 (float32)"


def test_compare_output_within_tolerance_records_the_largest_difference():
    largest: list[float] = []
    assert compare_output(torch.ones(3), torch.ones(3) + 5e-5, largest=largest) is None
    assert largest and math.isclose(largest[0], 5e-5, rel_tol=1e-2)


def test_compare_output_integers_are_exact_and_nans_match_nans():
    assert compare_output(torch.tensor([1, 2]), torch.tensor([1, 3]))[1] == "exact (int64)"
    assert compare_output(torch.tensor([float("nan")]), torch.tensor([float("nan")])) is None
    what, _ = compare_output(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0]))
    assert "at [1]" in what


def test_compare_output_shape_and_dtype_changes():
    assert compare_output(torch.zeros(2), torch.zeros(3))[0] == "shape (2,) before, (3,) after"
    assert compare_output(torch.zeros(2), torch.zeros(2, dtype=torch.float64))[0] == (
        "dtype torch.float32 before, torch.float64 after")


def test_generated_weights_are_seeded_and_typed():
    module = parse(LINEAR)
    a, b, c = generated_weights(module, 0), generated_weights(module, 0), generated_weights(module, 1)
    assert a["fc.weight"].shape == (3, 4) and a["fc.weight"].dtype == torch.float32
    assert torch.equal(a["fc.weight"], b["fc.weight"]) and not torch.equal(a["fc.weight"], c["fc.weight"])


def test_generated_integer_weights_index_any_table():
    """BERT's token_type_ids buffer indexes a 2-row table: random ids would be out of range."""
    module = parse("""
func.func @f() -> tensor<1x3x4xf32> {
  %ids = aten.weight "token_type_ids" : tensor<1x3xi64>
  %table = aten.weight "token_type.weight" : tensor<2x4xf32>
  %e = aten.embedding %table, %ids : (tensor<2x4xf32>, tensor<1x3xi64>) -> tensor<1x3x4xf32>
  func.return %e : tensor<1x3x4xf32>
}
""")
    assert torch.equal(generated_weights(module, 0)["token_type_ids"], torch.zeros(1, 3, dtype=torch.int64))
    assert SemanticChecker(module, None).reference["f"][0].shape == (1, 3, 4)


def test_the_checker_uses_the_weights_it_is_given():
    module = parse(LINEAR)
    store = WeightStore()
    store.add("fc.weight", torch.arange(12.0).reshape(3, 4))
    checker = SemanticChecker(module, store, seed=5)
    expected = interpret(module, store, *random_inputs(module.ops.first, 5), func_name="f")
    assert torch.equal(checker.reference["f"][0], expected[0])
    assert checker.inputs_note().endswith("weights: the module's WeightStore (companion .safetensors)")


def test_a_module_without_functions_cannot_be_checked():
    with pytest.raises(SemanticsError, match="no function with a body"):
        SemanticChecker(parse("func.func private @decl(tensor<2xf32>) -> tensor<2xf32>"), None)


def test_companion_weights_reach_the_check_and_the_passes(tmp_path, capsys):
    """layout folds t(W) into a new WeightStore entry: only the companion store has it."""
    model = tmp_path / "model.mlir"
    model.write_text(LINEAR)
    store = WeightStore()
    store.add("fc.weight", torch.randn(3, 4))
    store.save(tmp_path / "model.safetensors")
    assert forge_opt([str(model), "-p", "layout", "--verify-semantics"]) == 0
    captured = capsys.readouterr()
    assert 'aten.weight "fc.weight.T"' in captured.out
    assert "the results of @f did not change in 1 pass (seed 0)" in captured.err


def test_the_reproducer_command_fails_the_same_way(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(context, "_REGISTERED_PASSES", {})  # the plug-in's pass stays in this test
    plugin = tmp_path / "rename.py"
    plugin.write_text(
        "from dataclasses import dataclass\n"
        "from xdsl.passes import ModulePass\n"
        "from dialects import aten\n"
        "from forge.context import register_pass\n\n"
        "@register_pass\n@dataclass(frozen=True)\n"
        "class RenameWeights(ModulePass):\n"
        "    name = 'test-rename-weights'\n"
        "    def apply(self, ctx, op):\n"
        "        for w in [o for o in op.walk() if isinstance(o, aten.WeightOp)]:\n"
        "            w.properties['name'] = type(w.weight_name)('other.weight')\n"
    )
    model = tmp_path / "model.mlir"
    model.write_text(LINEAR)
    argv = ["--load-pass-plugin", str(plugin), str(model), "-p", "test-rename-weights",
            "--verify-semantics", "--reproducer-dir", str(tmp_path / "repro")]
    assert forge_opt(argv) == 1
    err = capsys.readouterr().err
    assert "error: the reference interpreter cannot run the IR after pass 'test-rename-weights' (#1 of 1)" in err
    assert "MissingWeightError" in err and "Traceback" not in err
    command = next(line for line in err.splitlines() if line.startswith("note: reproduce with: "))
    argv = shlex.split(command.removeprefix("note: reproduce with: "))[1:]
    assert forge_opt(argv) == 1
    assert "cannot run the IR after pass 'test-rename-weights'" in capsys.readouterr().err


TWO_FUNCTIONS = """
func.func @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %s = aten.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %m = aten.mul.Tensor %x, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %m : tensor<4xf32>
}
func.func @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = aten.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}
"""


def test_rewritten_sites_name_the_replaced_erased_and_inserted_ops_in_source_order():
    before = parse_with_locations(make_context(), TWO_FUNCTIONS, "t.mlir")
    after = before.clone()
    ops = {op.results[0].name_hint: op for op in after.walk() if op.results}
    mul, sigmoid, exp = ops["m"], ops["s"], ops["e"]
    silu = aten.SiluOp.build_op([[mul.input]], {}, [mul.result.type], location=mul.location)  # keeps the location
    mul.parent_block().insert_op_before(silu, mul)
    mul.result.replace_all_uses_with(silu.result)
    mul.detach(), mul.erase()
    sigmoid.detach(), sigmoid.erase()
    neg = aten.NegOp.build_op([[exp.input]], {}, [exp.input.type])  # no location: placed at its user's
    exp.parent_block().insert_op_before(neg, exp)
    exp.operands[0] = neg.result
    sites = [site.describe() for site in rewritten_sites(before, after, function="b")]
    assert sites == ["t.mlir:8:8: aten.neg inserted", "t.mlir:3:8: aten.sigmoid erased",
                     "t.mlir:4:8: aten.mul.Tensor -> aten.silu"]
    assert rewritten_sites(before, before.clone()) == []
