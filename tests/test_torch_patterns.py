"""Patterns written in PyTorch (forge.frontend.torch_patterns.from_torch) and the graph matcher
under them (forge.patterns.graph.GraphPattern): matching rules, failure reasons, rewrites, and a
check_pattern property test of the tutorial's two patterns (docs/examples/torch_patterns.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from dialects import aten
from forge.frontend.torch_patterns import from_torch
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
                        predicate=lambda m: False)
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
