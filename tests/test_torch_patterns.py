"""Patterns written in PyTorch (forge.frontend.torch_patterns.from_torch) and the graph matcher
under them (forge.patterns.graph.GraphPattern): matching rules, failure reasons, rewrites, and a
check_pattern property test of the tutorial's two patterns (docs/examples/torch_patterns.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dialects import aten
from forge.frontend.torch_patterns import PatternMismatchError, from_torch
from forge.patterns import PatternStats, apply_patterns, collect_pattern_stats
from forge.patterns.graph import GraphPattern
from forge.plugins import pass_plugin
from forge.testing import check_pattern
from forge.testing.strategies import GraphBuilder, register_motif
from tests.dialects.ir_util import parse as parse_module

EXAMPLES = Path(__file__).resolve().parents[1] / "docs" / "examples"


@pytest.fixture(scope="module")
def examples():
    """docs/examples/torch_patterns.py, loaded as forge-opt loads it (its pass unregistered after)."""
    with pass_plugin(EXAMPLES / "torch_patterns.py") as module:
        yield module


def sub_neg(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """a - (-b); negative variant: (-b) - a (the negation on the other side)."""
    a = b.pick(lambda t: t.dtype == torch.float32)
    other = b.input(b.shape_of(a), pool=False)
    negative = b.chance(30) if negative is None else negative
    neg = b.op(aten.NegOp, other)
    b.to_pool(b.op(aten.SubTensorOp, *((neg, a) if negative else (a, neg))))
    b.note("sub_neg[NEGATIVE swapped]" if negative else "sub_neg", "sub_neg",
           *(["sub_neg:negative"] if negative else []))


def softmax(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """exp(x - amax(x)) / sum(exp(...)) over the last dim; negative variant: the sum over dim 0."""
    x = b.pick(lambda t: t.dtype == torch.float32 and t.dim() >= 2)
    negative = b.chance(30) if negative is None else negative
    e = b.op(aten.ExpOp, b.op(aten.SubTensorOp, x, b.op(aten.AmaxOp, x, [-1], True)))
    total = b.op(aten.SumDimIntListOp, e, [0 if negative else -1], True)
    b.to_pool(b.op(aten.DivTensorOp, e, total))
    b.note("softmax[NEGATIVE dim 0]" if negative else "softmax", "softmax",
           *(["softmax:negative"] if negative else []))


def test_the_pytorch_patterns_keep_semantics(examples):
    with register_motif("sub_neg", sub_neg), register_motif("written_softmax", softmax):
        check_pattern(examples.SUB_NEG, motifs=["sub_neg"], max_examples=25)
        check_pattern(examples.SOFTMAX, motifs=["written_softmax"], max_examples=25)


def test_they_fire_on_their_motif_only(examples):
    module = parse_module("""
    func.func @f(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
      %n = aten.neg %y : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %a = aten.sub.Tensor %x, %n : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      %n2 = aten.neg %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
      %b = aten.sub.Tensor %n2, %y : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
      func.return %a, %b : tensor<2x3xf32>, tensor<2x3xf32>
    }""")
    with collect_pattern_stats(PatternStats(explain="SubNeg")) as stats:
        assert apply_patterns(module, [examples.SUB_NEG]) == 1
    assert stats.fired["SubNeg"] == 1
    assert any("node %neg (aten.neg): the value is a block argument, not aten.neg" in e for e in stats.events)
    assert [op.name for op in module.walk()][2:5] == ["aten.add.Tensor", "aten.neg", "aten.sub.Tensor"]


def _double(x):
    return x * 2.5


def _mul_commuted(a, b):
    return torch.sigmoid(a) * b


def test_commutative_operands_scalar_wildcards_and_predicate():
    pattern = from_torch(_mul_commuted, lambda a, b: b * torch.sigmoid(a), [torch.randn(3), torch.randn(3)],
                         name="Commuted")
    module = parse_module("""
    func.func @f(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<3xf32> {
      %s = aten.sigmoid %x : (tensor<3xf32>) -> tensor<3xf32>
      %m = aten.mul.Tensor %y, %s : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      func.return %m : tensor<3xf32>
    }""")
    assert not isinstance(pattern.match(_mul_of(module)), str)  # sigmoid on the right: operands swapped
    scaled = from_torch(lambda x, k: x * k, lambda x, k: x + x * (k - 1), [torch.randn(3), 7.25], name="Scaled")
    assert scaled.wildcards == {"other"}
    vetoed = from_torch(lambda x, k: x * k, lambda x, k: x, [torch.randn(3), 7.25], name="Vetoed",
                        predicate=lambda m: False, check=False)  # wrong on purpose, never fires
    module = parse_module("""
    func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
      %m = aten.mul.Scalar %x {other = 1.5} : (tensor<3xf32>) -> tensor<3xf32>
      func.return %m : tensor<3xf32>
    }""")
    mul = next(op for op in module.walk() if isinstance(op, aten.MulScalarOp))
    assert not isinstance(scaled.match(mul), str)
    assert vetoed.match(mul) == "the predicate rejected the match"
    exact = from_torch(_double, lambda x: x + x * 1.5, [torch.randn(3)], name="Exact")
    assert exact.match(mul) == "node %mul (aten.mul.Scalar): property 'other' is 1.5, the pattern wants 2.5"


def _mul_of(module):
    return next(op for op in module.walk() if isinstance(op, aten.MulTensorOp))


def test_several_outputs_are_replaced_together():
    def search(x):
        s = torch.sigmoid(x)
        return s * x, s + 1

    def replacement(x):
        s = torch.sigmoid(x)
        return torch.nn.functional.silu(x), s + 1

    pattern = from_torch(search, replacement, [torch.randn(4)], name="TwoOutputs")
    module = parse_module("""
    func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %s = aten.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
      %m = aten.mul.Tensor %s, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %a = aten.add.Scalar %s {other = 1} : (tensor<4xf32>) -> tensor<4xf32>
      func.return %m, %a : tensor<4xf32>, tensor<4xf32>
    }""")
    assert apply_patterns(module, [pattern]) == 1
    module.verify()
    assert "aten.silu" in [op.name for op in module.walk()]
    assert "aten.mul.Tensor" not in [op.name for op in module.walk()]


def test_bad_pattern_functions_are_refused():
    with pytest.raises(ValueError, match="same arguments"):
        GraphPattern.from_mlir("""
        func.func @search(%x: tensor<2xf32>) -> tensor<2xf32> {
          %n = aten.neg %x : (tensor<2xf32>) -> tensor<2xf32>
          func.return %n : tensor<2xf32>
        }
        func.func @replacement(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
          func.return %x : tensor<2xf32>
        }""")
    with pytest.raises(ValueError, match="no func.func @replacement"):
        GraphPattern.from_mlir("func.func @search() -> () { func.return }")


def test_a_replacement_that_computes_something_else_is_refused():
    """issue 30: `pow(x, 3)` -> `x * x` loaded silently; the example inputs already show it is wrong."""
    with pytest.raises(PatternMismatchError, match=r"pattern Cube: the replacement does not compute what the search "
                       r"computes: on the example inputs, output #0 differs \(max \|diff\| [0-9.e+-]+; at \[\d+\]"):
        from_torch(lambda x: torch.pow(x, 3), lambda x: x * x, [torch.randn(8)], name="Cube")
    with pytest.raises(PatternMismatchError, match=r"\(torch.float32 \[4\] instead of torch.float32 \[1\]\)"):
        from_torch(lambda x: x.sum(-1, keepdim=True), lambda x: x, [torch.randn(4)], name="Shape")


def test_random_inputs_find_what_the_examples_hide():
    """Right on the even example values, wrong on odd ones: the random inputs (same dtype and range) differ."""
    with pytest.raises(PatternMismatchError, match=r"on random inputs #\d \(seed 0\), output #0 differs"):
        from_torch(lambda x: x // 2 * 2, lambda x: x + 0, [torch.tensor([2, 4, 6, 8, 10, 12])], name="Evens")


def test_equal_functions_pass_the_check_within_float_tolerance():
    def written_out(x):
        e = torch.exp(x - torch.amax(x, dim=-1, keepdim=True))
        return e / torch.sum(e, dim=-1, keepdim=True)

    from_torch(written_out, lambda x: torch.softmax(x, dim=-1), [torch.randn(2, 8)], name="Softmax")
    from_torch(lambda x: torch.sqrt(x) * torch.sqrt(x), lambda x: torch.abs(x), [torch.rand(6) + 0.1],
               name="PositiveOnly")  # the random inputs stay in the examples' (positive) range


def test_scalar_properties_match_across_int_and_float_spellings():
    """One pattern for pow(x, 2) and pow(x, 2.0) (issue 30: they needed two)."""
    pattern = from_torch(lambda x: torch.pow(x, 2), lambda x: x * x, [torch.randn(4)], name="Square")
    module = parse_module("""
    func.func @f(%x: tensor<4xf32>, %i: tensor<4xi64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
      %a = aten.pow.Tensor_Scalar %x {exponent = 2} : (tensor<4xf32>) -> tensor<4xf32>
      %b = aten.pow.Tensor_Scalar %x {exponent = 2.0} : (tensor<4xf32>) -> tensor<4xf32>
      %c = aten.pow.Tensor_Scalar %x {exponent = 2.5} : (tensor<4xf32>) -> tensor<4xf32>
      %d = aten.pow.Tensor_Scalar %i {exponent = 2.0} : (tensor<4xi64>) -> tensor<4xf32>
      func.return %a, %b, %c, %d : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    }""")
    pows = [op for op in module.walk() if isinstance(op, aten.PowTensorScalarOp)]
    assert not isinstance(pattern.match(pows[0]), str) and not isinstance(pattern.match(pows[1]), str)
    assert pattern.match(pows[2]) == (
        "node %pow (aten.pow.Tensor_Scalar): property 'exponent' is 2.5, the pattern wants 2")
    with collect_pattern_stats(PatternStats(explain="Square")) as stats:
        assert apply_patterns(module, [pattern]) == 2
    # an integer tensor raised to 2.0 is a float tensor: x * x would be an integer one, so it stays
    assert any("%d" in e and "the replacement computes tensor<4xi64>, the match tensor<4xf32>" in e
               for e in stats.events), stats.events
    module.verify()
