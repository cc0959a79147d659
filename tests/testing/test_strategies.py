"""The graph strategies: generated modules verify, every motif shows up, interpretation works."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dialects import aten
from forge.interpreter import interpret
from forge.testing.strategies import (
    ALL_MOTIFS,
    GraphBuilder,
    GraphCase,
    aten_graphs,
    motif,
)
from forge.weights import weights_of

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_case(case: GraphCase) -> tuple:
    """Every generated case verifies, carries its store, and interprets to its eager values."""
    assert isinstance(case, GraphCase)
    case.module.verify()
    assert weights_of(case.module) is case.weights
    funcs = [op for op in case.module.ops]
    assert len(funcs) == 1 and funcs[0].sym_name.data == "forward"
    for op in case.module.walk():
        if isinstance(op, aten.WeightOp):
            assert op.weight_name.data in case.weights
        for t in op.result_types:
            assert all(1 <= d <= 4096 for d in t.get_shape()) and len(t.get_shape()) <= 5, t
    outputs = interpret(case.module, case.weights, *case.inputs)
    assert len(outputs) == len(case.expected) >= 1
    for got, want in zip(outputs, case.expected, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    return outputs


@FAST
@given(aten_graphs())
def test_aten_graphs_verify_and_interpret(case: GraphCase) -> None:
    _check_case(case)
    assert case.tags & set(ALL_MOTIFS), case.tags


@pytest.mark.parametrize("name", ALL_MOTIFS)
def test_each_motif_builds_and_is_tagged(name: str) -> None:
    @FAST
    @given(motif(name))
    def run(case: GraphCase) -> None:
        _check_case(case)
        assert name in case.tags
        assert name in case.description

    run()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(aten_graphs(motifs=[], max_ops=6))
def test_random_ops_only(case: GraphCase) -> None:
    _check_case(case)


@pytest.mark.parametrize("neg", ["k_not_transposed", "k_batch_permuted", "softmax_dim",
                                 "mask_after_softmax", "scale_after_softmax"])
def test_attention_negative_variants_are_flagged(neg: str) -> None:
    @settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(motif("attention", negative=neg))
    def run(case: GraphCase) -> None:
        _check_case(case)
        assert case.negative("attention") and f"attention:negative:{neg}" in case.tags
        assert "NEGATIVE" in case.description

    run()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(motif("attention", negative=False))
def test_attention_positive_has_the_pieces(case: GraphCase) -> None:
    _check_case(case)
    assert not case.negative("attention")
    names = {op.name for op in case.module.walk()}
    assert {"aten.matmul", "aten.bmm"} & names
    assert {"aten.softmax.int", "aten._softmax"} & names


def test_motifs_cover_each_pass_target() -> None:
    """Over a modest number of draws, every motif and the key variants appear."""
    seen: set[str] = set()
    ops: set[str] = set()

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True,
              database=None)
    @given(aten_graphs())
    def collect(case: GraphCase) -> None:
        seen.update(case.tags)
        ops.update(op.name for op in case.module.walk())

    collect()
    assert set(ALL_MOTIFS) <= seen, set(ALL_MOTIFS) - seen
    assert "attention:negative" in seen
    for name in ["aten.weight", "aten.constant", "aten.matmul", "aten.linear", "aten.softmax.int",
                 "aten.view", "aten.transpose.int", "aten.layer_norm"]:
        assert name in ops, name


def test_unknown_motif_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown motif"):
        aten_graphs(["no_such_motif"])
    with pytest.raises(ValueError, match="unknown motif"):
        motif("nope")


def test_builder_op_binds_schema_arguments() -> None:
    @settings(max_examples=1, deadline=None)
    @given(st.data())
    def run(data) -> None:
        b = GraphBuilder(data.draw, seed=0)
        x = b.input((2, 3), pool=False)
        y = b.op(aten.SoftmaxIntOp, x, -1)
        z = b.op(aten.AddTensorOp, y, x, alpha=2)
        s = b.op(aten.SumDimIntListOp, z, [1], keepdim=True)
        b.ret(s)
        assert s.owner.arg("keepdim") is True and z.owner.arg("alpha") == 2
        case = b.finish("hand-written")
        out = interpret(case.module, case.weights, *case.inputs)[0]
        t = case.inputs[0]
        torch.testing.assert_close(out, (torch.softmax(t, -1) + 2 * t).sum(1, keepdim=True))
        assert "hand-written" in case.description and "aten.softmax.int" in repr(case)

    run()


def test_pass_motifs_name_real_passes_and_motifs() -> None:
    from forge.testing.strategies import PASS_MOTIFS
    from forge.transforms import PASSES

    assert set(PASS_MOTIFS) == set(PASSES)
    for motifs in PASS_MOTIFS.values():
        assert set(motifs) <= set(ALL_MOTIFS)
