"""The examples of docs/tutorials/first-rewrite-pattern.md: property tests of the patterns.

The FileCheck tests of the same examples are filecheck/examples/*.mlir; that the tutorial shows
exactly these files and commands is tests/docs/test_tutorial.py.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from dialects import aten
from forge.driver.plugins import pass_plugin
from forge.testing import check_pattern
from forge.testing.strategies import GraphBuilder, GraphCase, register_motif

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.fixture
def example():
    """`example("swish_to_silu.py")`: that file's module, loaded as forge-opt --load-pass-plugin loads
    it; the passes it registers are unregistered when the test ends."""
    with contextlib.ExitStack() as stack:
        yield lambda file: stack.enter_context(pass_plugin(EXAMPLES / file))


def swish(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """x * sigmoid(x) in either order; negative variant: a gate, x * sigmoid(g)."""
    x = b.pick()
    negative = b.chance(30) if negative is None else negative
    gate = b.input(b.shape_of(x), pool=False) if negative else x
    sigmoid = b.op(aten.SigmoidOp, gate)
    b.to_pool(b.op(aten.MulTensorOp, *((x, sigmoid) if b.chance(50) else (sigmoid, x))))
    b.note("swish[NEGATIVE gate]" if negative else "swish", "swish", *(["swish:negative"] if negative else []))


@pytest.fixture
def swish_motif():
    """Register the `swish` motif so that check_pattern generates graphs the pattern is for."""
    with register_motif("swish", swish), register_motif("true_swish", functools.partial(swish, negative=False)):
        yield


def no_swish_left(case: GraphCase, module: ModuleOp) -> None:
    for op in module.walk():
        if isinstance(op, aten.MulTensorOp):
            for x, gate in ((op.input, op.other), (op.other, op.input)):
                sigmoid = gate.owner
                assert not (isinstance(sigmoid, aten.SigmoidOp) and sigmoid.input == x), case.description


def test_swish_to_silu_keeps_semantics_and_leaves_no_swish(swish_motif, example):
    check_pattern(example("swish_to_silu.py").SwishToSilu(), motifs=["swish"], max_examples=40,
                  on_case=no_swish_left)


def test_swish_to_silu_pass_leaves_other_code_intact(example):
    check_pattern(example("swish_to_silu.py").SwishToSiluPass(), max_examples=20)


def test_check_pattern_catches_the_wrong_pattern(swish_motif, example):
    wrong = example("wrong_swish_to_silu.py").WrongSwishToSilu()
    with pytest.raises(AssertionError, match="outputs changed") as failure:
        check_pattern(wrong, motifs=["swish"], max_examples=40, shrink=False)
    assert "NEGATIVE gate" in str(failure.value)  # it is the gate it gets wrong


def test_the_wrong_pattern_passes_on_true_swishes_only(swish_motif, example):
    """Its bug only shows on gates: a test without the negative case would not find it. Seeded: the random
    filler around the motifs can build a negated gate by chance (CI drew one: `x * sigmoid(-x)`-like ops
    among 15), which the wrong pattern rightly fails on."""
    wrong = example("wrong_swish_to_silu.py").WrongSwishToSilu()
    check_pattern(wrong, motifs=["true_swish"], max_examples=15, on_case=no_swish_left, seed=0)


def test_the_tutorial_pattern_is_at_most_30_lines():
    source = (EXAMPLES / "swish_to_silu.py").read_text()
    body = source[source.index("class SwishToSilu"):]
    assert len([line for line in body.splitlines() if line.strip()]) <= 30
