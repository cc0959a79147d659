"""SSA dominance verification and the xDSL lexer fix it came with (both found by the fuzz test)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.equivalence import Equivalence
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from forge.analysis.dominance import verify_dominance, verify_module
from forge.diagnostics import attached_op
from forge.driver.registry import make_context
from forge.testing.strategies import aten_graphs
from forge.xdsl_fixes import _LINEAR_STRING_LITERAL, _XDSL_STRING_LITERAL


def _body_ops(case):
    func = next(op for op in case.module.walk() if op.name == "func.func")
    return func, list(func.body.block.ops)


@settings(max_examples=40, deadline=None)
@given(aten_graphs(max_ops=8, max_motifs=1))
def test_generated_graphs_satisfy_dominance(case) -> None:
    verify_module(case.module)


@settings(max_examples=40, deadline=None)
@given(aten_graphs(max_ops=8, max_motifs=1), st.data())
def test_moving_a_user_above_its_operand_is_rejected_at_that_user(case, data) -> None:
    func, ops = _body_ops(case)
    position = {op: i for i, op in enumerate(ops)}
    pairs = [
        (user, operand.op)
        for user in ops
        for operand in user.operands
        if getattr(operand, "op", None) in position
    ]
    if not pairs:
        return
    user, definition = data.draw(st.sampled_from(pairs))
    user.detach()
    func.body.block.insert_op_before(user, definition)
    with pytest.raises(VerifyException, match=r"operand #\d+ uses .* before its definition") as info:
        verify_dominance(case.module)
    assert attached_op(info.value) is user


def test_values_of_enclosing_blocks_are_visible_in_nested_regions() -> None:
    text = """
    func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = aten.neg %x : (tensor<2xf32>) -> tensor<2xf32>
      func.return %y : tensor<2xf32>
    }
    func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
      func.return %x : tensor<2xf32>
    }
    """
    verify_module(Parser(make_context(), text).parse_module())


STRING_BODY = st.text(alphabet='ab "\\ntq0A\n', max_size=12)


@settings(max_examples=300, deadline=None)
@given(STRING_BODY)
def test_linear_string_literal_pattern_matches_what_xdsl_matches(body: str) -> None:
    text = '"' + body
    old = re.compile(_XDSL_STRING_LITERAL).match(text)
    new = re.compile(_LINEAR_STRING_LITERAL).match(text)
    assert (old and old.group()) == (new and new.group())


def test_unterminated_string_with_a_long_tail_is_a_parse_error() -> None:
    # Before forge.xdsl_fixes this line made xDSL's lexer backtrack for hours.
    tail = "a long tail of words that the old pattern backtracks over " * 4
    text = "func.func @f() {\n  %0 = aten.weight {name = \"" + tail + ": tensor<2xf32>\n}\n"
    with pytest.raises(Exception, match="string literal"):
        Parser(make_context(), text).parse_module()


# --- region kinds (MLIR's RegionKindInterface): dominance only in SSACFG regions ---------------------


def _parse(text: str):
    ctx = make_context()
    ctx.allow_unregistered = True
    if "equivalence" not in ctx.registered_dialect_names:
        ctx.load_dialect(Equivalence)
    return Parser(ctx, text).parse_module()


@pytest.mark.parametrize(
    "text",
    [
        # an unregistered op may have graph regions (MLIR's mayBeGraphRegion)
        '"test.graph_region"() ({\n  %a = arith.addi %b, %b : i32\n  %b = arith.constant 1 : i32\n}) : () -> ()',
        # xDSL's generic test.op stands for any op: a cycle inside it is accepted, as xdsl-opt does
        '"test.op"() ({\n  %0 = "test.pureop"(%1) : (i32) -> i32\n  %1 = "test.pureop"(%0) : (i32) -> i32\n'
        '  "test.termop"() : () -> ()\n}) : () -> ()',
        # an e-graph in a func.func body: classes and their members refer to each other
        "func.func @f(%a: index) -> index {\n  %one = arith.constant 1 : index\n"
        "  %m = arith.muli %a_eq, %one : index\n  %a_eq = equivalence.class %m, %a : index\n"
        "  func.return %a_eq : index\n}",
    ],
    ids=["unregistered", "test.op", "e-graph"],
)
def test_graph_regions_need_no_dominance(text) -> None:
    verify_module(_parse(text))


def test_ssacfg_regions_inside_graph_regions_still_need_it() -> None:
    module = _parse(
        '"test.graph_region"() ({\n  func.func @f() -> i32 {\n    %a = arith.addi %b, %b : i32\n'
        "    %b = arith.constant 1 : i32\n    func.return %a : i32\n  }\n}) : () -> ()"
    )
    with pytest.raises(VerifyException, match="before its definition"):
        verify_module(module)
