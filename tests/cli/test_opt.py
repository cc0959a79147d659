"""forge-opt run in-process: user errors give one diagnostic and exit code 1, no traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forge.cli.errors import EXIT_ERROR, EXIT_INTERNAL
from forge.cli.opt import main

GOOD = """\
func.func @f(%a: i32, %b: i32) -> i32 {
  %c = arith.addi %a, %b : i32
  %d = arith.addi %a, %b : i32
  func.return %c : i32
}
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_diagnostic(err: str, pattern: str) -> str:
    """One `error:` line, first, matching `pattern`; other lines are source context."""
    assert "Traceback" not in err
    lines = err.rstrip("\n").splitlines()
    assert lines, "no diagnostic printed"
    assert re.fullmatch(pattern, lines[0]), lines[0]
    assert sum("error:" in line for line in lines) == 1, err
    return lines[0]


@pytest.fixture
def write(tmp_path: Path):
    def write(text: str, name: str = "input.mlir") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def test_valid_input_prints_module(capsys, write):
    code, out, err = run(capsys, write(GOOD), "-p", "xdsl-cse")
    assert code == 0, err
    assert out.count("arith.addi") == 1
    assert err == ""


def test_truncated_file(capsys, write):
    path = write(GOOD[: GOOD.index("%b : i32\n  %d")])
    code, out, err = run(capsys, path)
    assert code == EXIT_ERROR
    assert out == ""
    assert_one_diagnostic(err, re.escape(path) + r":\d+:\d+: error: .+")


def test_operand_type_mismatch_reported_at_op(capsys, write):
    path = write(
        "func.func @f(%a: i32, %b: i64) -> i32 {\n"
        '  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32\n'
        "  func.return %c : i32\n"
        "}\n"
    )
    code, _, err = run(capsys, path)
    assert code == EXIT_ERROR
    line = assert_one_diagnostic(err, re.escape(path) + r":2:8: error: 'arith.addi' op .+")
    assert "i64" in line


def test_unknown_pass(capsys, write):
    code, out, err = run(capsys, write(GOOD), "-p", "canonicalize,no-such-pass")
    assert code == EXIT_ERROR
    assert out == ""
    assert_one_diagnostic(err, r"forge-opt: error: unknown pass 'no-such-pass'.*")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("canonicalize{bogus=1}", r"pass 'canonicalize' has no option 'bogus'; it takes no options"),
        ("canonicalize{", r"invalid pass pipeline at column 14: .+"),
    ],
)
def test_bad_pass_option(capsys, write, spec, message):
    code, out, err = run(capsys, write(GOOD), "-p", spec)
    assert code == EXIT_ERROR
    assert out == ""
    assert_one_diagnostic(err, r"forge-opt: error: " + message)


def test_missing_input_file(capsys, tmp_path):
    path = str(tmp_path / "nope.mlir")
    code, _, err = run(capsys, path)
    assert code == EXIT_ERROR
    assert_one_diagnostic(err, r"forge-opt: error: cannot open input file .*nope\.mlir.*")


def test_help_lists_passes(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "Forge passes" in out
    assert re.search(r"^  fold +Fold constant subgraphs", out, re.M)  # Forge's passes described
    xdsl = out[out.index("xDSL passes"):]
    assert re.search(r"\bcanonicalize, ", xdsl) and "xdsl-cse" in xdsl  # xDSL's by name
    names = re.findall(r"[a-z][a-z0-9-]+", xdsl.split("\n\n")[0].split("\n", 1)[1])
    assert len(names) == len(set(names)) and "xdsl-fold" not in names  # each pass once


IDENTITIES = """\
func.func @f(%a: i32) -> i32 {
  %one = arith.constant 1 : i32
  %b = arith.muli %a, %one : i32
  %c = arith.muli %b, %b : i32
  func.return %c : i32
}
"""


def test_failing_pass_writes_a_reproducer(capsys, write, tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_TEST_PASSES", "1")
    path = write(IDENTITIES)
    repro_dir = tmp_path / "repro"
    code, out, err = run(
        capsys,
        path,
        "-p",
        "test-arith-identities,test-fail-on-op,canonicalize",
        "--reproducer-dir",
        str(repro_dir),
    )
    assert code == EXIT_ERROR
    assert out == ""
    assert "Traceback" not in err
    assert err.splitlines()[0] == (
        f"{path}:4:8: error: 'arith.muli' op test-fail-on-op: found arith.muli"
    )
    assert "note: while running pass 'test-fail-on-op' (#2 of 3)" in err
    reproducer = repro_dir / "forge-opt-reproducer.mlir"
    text = reproducer.read_text()
    assert '"arith.muli"(%a, %a)' in text  # the IR after test-arith-identities
    command = f"FORGE_TEST_PASSES=1 forge-opt {reproducer} -p test-fail-on-op"
    assert f"note: reproduce with: {command}" in err

    code, _, err = run(capsys, str(reproducer), "-p", "test-fail-on-op", "--no-reproducer")
    assert code == EXIT_ERROR
    assert "test-fail-on-op: found arith.muli" in err.splitlines()[0]


def test_crashing_pass_is_an_internal_error(capsys, write, monkeypatch, tmp_path):
    monkeypatch.setenv("FORGE_TEST_PASSES", "1")
    code, _, err = run(
        capsys,
        write(IDENTITIES),
        "-p",
        "test-fail-on-op{crash=true}",
        "--reproducer-dir",
        str(tmp_path),
    )
    assert code == EXIT_INTERNAL
    assert "Traceback" in err
    assert "forge-opt: error: internal error: RuntimeError" in err


def test_test_passes_need_the_environment_variable(capsys, write, monkeypatch):
    monkeypatch.delenv("FORGE_TEST_PASSES", raising=False)
    code, _, err = run(capsys, write(IDENTITIES), "-p", "test-fail-on-op")
    assert code == EXIT_ERROR
    assert "unknown pass 'test-fail-on-op'" in err
