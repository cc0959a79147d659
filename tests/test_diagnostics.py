"""forge.diagnostics: parsed ops carry locations; verifier errors are found at their op."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import FileLineColLoc
from xdsl.utils.exceptions import ParseError, VerifyException

from forge.diagnostics import (
    SourceManager,
    find_failing_op,
    op_diagnostic,
    op_location,
    parse_with_locations,
)
from forge.driver.registry import make_context

IR = """\
func.func @f(%a: i32, %b: i64) -> i32 {
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  %d, %e = "test.two"() : () -> (i32, i32)
  func.return %c : i32
}
"""


def test_ops_get_file_line_col_at_their_name():
    ctx = make_context(allow_unregistered=True)
    module = parse_with_locations(ctx, IR, "in.mlir", line_offset=10)
    names = {op.name: op_location(op) for op in module.walk()}
    assert str(names["func.func"]) == "in.mlir:11:1"
    assert str(names["arith.addi"]) == "in.mlir:12:8"
    assert str(names["builtin.unregistered"]) == "in.mlir:13:12"  # past `%d, %e = `
    assert names["builtin.module"] is None  # implicit module


def test_explicit_locations_win():
    text = 'func.func @f() {\n  func.return loc("orig.py":42:0)\n}\n'
    module = parse_with_locations(make_context(), text, "x.mlir")
    ret = next(op for op in module.walk() if op.name == "func.return")
    assert isinstance(ret.location, FileLineColLoc)
    assert str(op_location(ret)) == "orig.py:42"


def test_failing_op_and_diagnostic():
    module = parse_with_locations(
        make_context(), IR.replace('  %d, %e = "test.two"() : () -> (i32, i32)\n', ""), "in.mlir"
    )
    with pytest.raises(VerifyException) as info:
        module.verify()
    op = find_failing_op(module, info.value)
    assert op is not None and op.name == "arith.addi"
    sources = SourceManager()
    sources.add("in.mlir", IR)
    text = op_diagnostic(str(info.value), op).format(sources)
    first, line, caret = text.splitlines()
    assert first.startswith("in.mlir:2:8: error: 'arith.addi' op operand 'rhs'")
    assert line == '  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32'
    assert caret == "       ^~~~~~~~~~"


def test_parse_errors_keep_their_position():
    with pytest.raises(ParseError) as info:
        parse_with_locations(make_context(), "func.func @f(%a: i32) {\n  %x = arith.addi %a, : i32\n}\n", "e.mlir")
    loc = info.value.span.get_location()
    assert (loc.file, loc.line) == ("e.mlir", 2)
