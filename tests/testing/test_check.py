"""check_pattern: passes on rewrites that keep semantics, fails (with the IR) on wrong ones."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from dialects import aten
from dialects.torch_types import tensor_type
from forge.testing.check import assert_preserves_semantics, check_pattern


@dataclass(frozen=True)
class IdentityPass(ModulePass):
    name = "test-identity"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pass


class SubToAdd(RewritePattern):
    """Deliberately wrong: a - b rewritten to a + b."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.SubTensorOp, rewriter: PatternRewriter) -> None:
        new = aten.AddTensorOp.build_op([[op.input], [op.other]], dict(op.properties), op.result_types)
        rewriter.replace(op, new)


class ReluToNeg(RewritePattern):
    """Deliberately wrong, and the result still verifies."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.ReluOp, rewriter: PatternRewriter) -> None:
        rewriter.replace(op, aten.NegOp.build_op([[op.input]], {}, op.result_types))


class BreaksTypes(RewritePattern):
    """Deliberately wrong: the rewritten IR does not verify (softmax claims another result shape)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.SoftmaxIntOp, rewriter: PatternRewriter) -> None:
        wrong = tensor_type((99,), torch.float32)
        if op.result.type != wrong:
            rewriter.replace(op, aten.SoftmaxIntOp.build_op([[op.input]], dict(op.properties), [wrong]))


def test_identity_pass_instance_and_class() -> None:
    check_pattern(IdentityPass(), max_examples=20, seed=1)
    check_pattern(IdentityPass, motifs=["attention", "layout"], max_examples=10, seed=2)


def test_xdsl_builtin_passes_preserve_semantics() -> None:
    check_pattern(DeadCodeElimination(), motifs=["dead_code", "duplicates"], max_examples=20, seed=3)
    check_pattern(CommonSubexpressionElimination(), motifs=["duplicates"], max_examples=20, seed=4)


def test_wrong_pattern_fails_with_ir() -> None:
    with pytest.raises(AssertionError) as info:
        check_pattern(SubToAdd(), max_examples=50, seed=5, motifs=["identities", "duplicates"], shrink=False)
    message = str(info.value)
    assert "SubToAdd" in message and "outputs changed" in message
    assert "--- IR before ---" in message and "--- IR after ---" in message
    assert "aten.sub.Tensor" in message.split("--- IR after ---")[0]


def test_several_patterns_and_a_failing_one() -> None:
    with pytest.raises(AssertionError, match="ReluToNeg"):
        check_pattern(IdentityPassPattern(), ReluToNeg(), motifs=["linear_act"], max_examples=50, seed=6, shrink=False)


def test_unverifiable_rewrite_fails() -> None:
    with pytest.raises(AssertionError, match="does not verify"):
        check_pattern(BreaksTypes(), motifs=["attention"], max_examples=30, seed=7)


class IdentityPassPattern(RewritePattern):
    def match_and_rewrite(self, op, rewriter) -> None:
        pass


def test_bad_argument_is_rejected() -> None:
    with pytest.raises(TypeError):
        check_pattern(42)


def test_assert_preserves_semantics_directly() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from forge.testing.strategies import GraphBuilder

    @settings(max_examples=1, deadline=None)
    @given(st.data())
    def run(data) -> None:
        b = GraphBuilder(data.draw, seed=0)
        x = b.input((3, 4), pool=False)
        b.ret(b.op(aten.SubTensorOp, x, b.op(aten.ReluOp, x)))
        case = b.finish()
        before = case.module.clone()
        assert_preserves_semantics(before, case.module, case.weights, case.inputs)  # unchanged: fine
        from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
        PatternRewriteWalker(GreedyRewritePatternApplier([SubToAdd()])).rewrite_module(case.module)
        with pytest.raises(AssertionError, match="outputs changed"):
            assert_preserves_semantics(before, case.module, case.weights, case.inputs, 1e-5, 1e-5)

    run()
