"""forge-reduce's fork server (`forge.cli.forked_runs`): which commands take it, and that a fork gives the
same exit status and output as the shell would."""

from __future__ import annotations

import os
import sys

import pytest

from forge.cli.forked_runs import PROGRAM, ForkedForgeOpt, run_test
from forge.cli.reduce import main

BIN = os.path.dirname(sys.executable)
pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(BIN, PROGRAM)),
                                reason="forge-opt is not installed beside this interpreter")


@pytest.fixture(autouse=True)
def installed_forge_opt_first(monkeypatch):
    """The commands name `forge-opt`: this environment's, as in a user's shell with it activated."""
    monkeypatch.setenv("PATH", os.pathsep.join([BIN, os.environ.get("PATH", "")]))
    monkeypatch.delenv("FORGE_REDUCE_SUBPROCESS", raising=False)

MULI = """builtin.module {
  func.func @f(%a: i32, %b: i32) -> i32 {
    %c = arith.addi %a, %b : i32
    %d = arith.muli %c, %c : i32
    %e = arith.subi %d, %a : i32
    func.return %e : i32
  }
}
"""


@pytest.mark.parametrize("command, args", [
    ("forge-opt in.mlir -p 'canonicalize,cse' --no-reproducer", ["in.mlir", "-p", "canonicalize,cse",
                                                                 "--no-reproducer"]),
    ('forge-opt "a b.mlir"', ["a b.mlir"]),
    ("forge-opt x.mlir | grep y", None),  # a pipeline
    ("forge-opt x.mlir > out", None),  # a redirection
    ("forge-opt $FILE", None),  # an expansion
    ('forge-opt "$FILE"', None),  # still one, inside double quotes
    ("forge-opt x.mlir; true", None),
    ("FORGE_TEST_PASSES=1 forge-opt x.mlir", None),  # an assignment: not forge-opt first
    ("xdsl-opt x.mlir", None),
    ("forge-opt 'unbalanced", None),
])
def test_only_plain_forge_opt_commands_take_the_fork(command, args):
    assert ForkedForgeOpt.argv(command) == args


def test_forced_shell(monkeypatch):
    monkeypatch.setenv("FORGE_REDUCE_SUBPROCESS", "1")
    assert ForkedForgeOpt.argv("forge-opt x.mlir") is None


def test_a_fork_answers_as_the_program_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative path: the fork runs in the caller's directory
    (tmp_path / "in.mlir").write_text(MULI)
    (tmp_path / "bad.mlir").write_text("builtin.module {\n  %x = arith.constant\n}\n")
    server = ForkedForgeOpt()
    try:
        for command in ("forge-opt in.mlir -p canonicalize", "forge-opt bad.mlir", "forge-opt in.mlir -p no-such-pass"):
            forked = server.run(ForkedForgeOpt.argv(command))
            assert forked == run_test(command), command
    finally:
        server.close()
    assert forked[0] != 0 and "no-such-pass" in forked[1]


def test_reduce_through_the_fork(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_TEST_PASSES", "1")  # the fork server inherits the environment
    src, out = tmp_path / "in.mlir", tmp_path / "out.mlir"
    src.write_text(MULI)
    test = "forge-opt {} -p test-fail-on-op --no-reproducer"
    assert main([str(src), "--test", test, "--expect-error", "found arith.muli", "-o", str(out)]) == 0
    text = out.read_text()
    assert "arith.muli" in text and "arith.subi" not in text and "arith.addi" not in text
