"""--verify-diagnostics' annotations, as MLIR's -verify-diagnostics reads them (mlir/docs/Diagnostics.md):
`expected-<severity>[-re] [@+N|@-N|@above|@below|@unknown] {{message}}`, a substring of the message (with
`-re`, `{{...}}` parts are regular expressions); each annotation meets one diagnostic of its line."""

from __future__ import annotations

import pytest

from forge.cli.opt import main
from forge.cli.verify_diagnostics import check, read_expectations
from forge.diagnostics import Diagnostic, SourceLoc

F = "t.mlir"


def at(line: int, message: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(message, SourceLoc(F, line, 3), severity=severity)


def problems(text: str, *emitted: Diagnostic, offset: int = 0) -> list[str]:
    expected, errors = read_expectations(text, F, offset)
    return [f"{p.loc.line if p.loc else '?'}: {p.message}" for p in errors + check(expected, emitted, F)]


def lines_of(text: str) -> dict[str, int | None]:
    expected, errors = read_expectations(text, F)
    assert not errors, [e.message for e in errors]
    return {e.text: e.line for e in expected}


def test_where_an_annotation_points():
    text = "\n".join([
        "op0",                                   # 1
        "op1 // expected-error {{same}}",        # 2
        "// expected-error @+2 {{plus}}",        # 3
        "// expected-error @-3 {{minus}}",       # 4
        "op5",                                   # 5
        "// expected-error @above {{above}}",    # 6: line 5
        "// expected-error @above {{above2}}",   # 7: skips the annotation line 6, line 5 too
        "// expected-error @below {{below}}",    # 8: line 10
        "// expected-error @below {{below2}}",   # 9: line 10
        "op10",                                  # 10
        "// expected-error @unknown {{nowhere}}",
    ])
    assert lines_of(text) == {"same": 2, "plus": 5, "minus": 1, "above": 5, "above2": 5, "below": 10,
                              "below2": 10, "nowhere": None}


def test_lines_count_from_the_whole_file_in_a_chunk():
    assert lines_of("\n// expected-error @+1 {{x}}\nop") == {"x": 3}
    expected, _ = read_expectations("\n// expected-error @+1 {{x}}\nop", F, line_offset=40)
    assert expected[0].line == 43 and expected[0].at.line == 42


def test_a_met_annotation_and_a_substring():
    emitted = at(2, "'a.b' op operand 'x' does not verify: i64")
    assert problems("// expected-error @+1 {{does not verify}}\nop", emitted) == []


def test_a_wrong_message_is_two_errors():
    assert problems("// expected-error @+1 {{deliberately wrong}}\nop", at(2, "real message")) == [
        "2: unexpected error: real message",
        '1: expected error "deliberately wrong" was not produced on line 2',
    ]


def test_the_wrong_line():
    assert problems("// expected-error @+2 {{msg}}\nop\nop", at(2, "msg")) == [
        "2: unexpected error: msg", '1: expected error "msg" was not produced on line 3']


def test_the_wrong_severity():
    assert problems("op // expected-warning {{msg}}", at(1, "msg", "remark")) == [
        "1: 'remark' diagnostic emitted when expecting a 'warning': msg"]


def test_regex_only_with_re():
    text = "op // expected-error-re {{value {{[0-9]+}} is negative}}"
    assert problems(text, at(1, "'x' op: value 42 is negative")) == []
    assert problems(text, at(1, "'x' op: value -4 is negative")) != []
    # without -re, braces inside the message are literal text
    assert problems("op // expected-error {{value {{[0-9]+}} is}}", at(1, "value 42 is")) != []
    assert problems("op // expected-error {{a.b(c)}}", at(1, "x a.b(c) y")) == []


def test_one_annotation_meets_one_diagnostic():
    text = "op // expected-remark {{r}}"
    assert problems(text, at(1, "r", "remark"), at(1, "r", "remark")) == ["1: unexpected remark: r"]
    assert problems(text + "\n// expected-remark @-1 {{r}}", at(1, "r", "remark"), at(1, "r", "remark")) == []


def test_unknown_locations():
    nowhere = Diagnostic("lost", None, severity="warning")
    assert problems("// expected-warning @unknown {{lost}}\nop", nowhere) == []
    elsewhere = Diagnostic("lost", SourceLoc("plugin.py", 1, 0), severity="warning")
    assert problems("// expected-warning @unknown {{lost}}\nop", elsewhere) == []
    assert problems("op", nowhere) == ["?: unexpected warning: lost"]
    assert problems("// expected-warning {{lost}}\nop", nowhere) == [
        "?: unexpected warning: lost", '1: expected warning "lost" was not produced']


@pytest.mark.parametrize("line", [
    "// expected-error @+1 {single braces}}",
    "// expected-error @+1 message without braces",
    "// expected-error @next {{bad anchor}}",
    "// expected-error {{unclosed",
    "// expected-warning-re @+1 {{bad {{(regex}}}}",
])
def test_a_mistyped_annotation_is_an_error(line):
    found = problems(line + "\nop")
    assert len(found) == 1 and found[0].startswith("1: ") and (
        "malformed diagnostic annotation" in found[0] or "invalid regular expression" in found[0]), found


def test_prose_that_mentions_annotations_is_not_one():
    assert problems("// a wrong expected-error fails the test\nop") == []


def test_above_and_below_need_a_line():
    assert problems("// expected-error @above {{x}}")[0].startswith("1: '@above' annotation on the first line")
    assert problems("op\n// expected-error @below {{x}}")[0].startswith("2: '@below' annotation with no line below")


GOOD = """\
func.func @f(%a: i32, %b: i64) -> i32 {
  // expected-error @+1 {{operand 'rhs' at position 1 does not verify}}
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}
"""


def test_forge_opt_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.mlir"
    good.write_text(GOOD)
    assert main([str(good), "--verify-diagnostics"]) == 0
    bad = tmp_path / "bad.mlir"
    bad.write_text(GOOD.replace("operand 'rhs'", "this text is deliberately wrong"))
    assert main([str(bad), "--verify-diagnostics"]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:3:8: error: unexpected error: 'arith.addi' op operand 'rhs'" in err
    assert f'{bad}:2:6: error: expected error "this text is deliberately wrong at position 1 does not verify" ' \
           "was not produced on line 3" in err
    # xdsl-opt's behaviour, for FileCheck: the message on stdout, exit 0
    assert main([str(bad), "--xdsl-verify-diagnostics"]) == 0
    assert "operand 'rhs' at position 1 does not verify" in capsys.readouterr().out
