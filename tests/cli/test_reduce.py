"""forge-reduce on small modules with cheap test commands (the Llama case is filecheck/cli/reduce-reproducer.py)."""

from __future__ import annotations

import shlex

from forge.cli.reduce import main, reduce_command

MODULE = """builtin.module {
  func.func @f(%x: tensor<4xf32>, %unused: tensor<2xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %a = aten.exp %x : (tensor<4xf32>) -> tensor<4xf32>
    %b = aten.tanh %a : (tensor<4xf32>) -> tensor<4xf32>
    %c = aten.neg %b : (tensor<4xf32>) -> tensor<4xf32>
    %d = aten.sigmoid %c : (tensor<4xf32>) -> tensor<4xf32>
    %e = aten.add.Tensor %d, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %e, %c : tensor<4xf32>, tensor<4xf32>
  }
  func.func @g(%y: tensor<4xf32>) -> tensor<4xf32> {
    %r = aten.relu %y : (tensor<4xf32>) -> tensor<4xf32>
    func.return %r : tensor<4xf32>
  }
}
"""


def test_reduces_to_the_op_the_test_needs(tmp_path, capsys):
    src, out = tmp_path / "in.mlir", tmp_path / "out.mlir"
    src.write_text(MODULE)
    assert main([str(src), "--test", "grep -q aten.tanh", "-o", str(out)]) == 0
    text = out.read_text()
    assert "aten.tanh" in text
    for gone in ("aten.exp", "aten.neg", "aten.sigmoid", "aten.add", "aten.relu", "@g", "%unused"):
        assert gone not in text, gone
    err = capsys.readouterr().err
    assert "forge-reduce: 8 ops -> 2 ops" in err  # tanh and the return


def test_expect_error_keeps_the_failure(tmp_path):
    src, out = tmp_path / "in.mlir", tmp_path / "out.mlir"
    src.write_text(MODULE)
    # "fails with a message naming sigmoid": a shell test that exits 1 and prints the match
    test = "sh -c 'grep -q aten.sigmoid \"$0\" && echo found aten.sigmoid && exit 1; exit 0'"
    assert main([str(src), "--test", test, "--expect-error", "found aten\\.sigmoid", "-o", str(out)]) == 0
    assert "aten.sigmoid" in out.read_text() and "aten.tanh" not in out.read_text()


def test_an_input_that_is_not_interesting_is_an_error(tmp_path, capsys):
    src = tmp_path / "in.mlir"
    src.write_text(MODULE)
    assert main([str(src), "--test", "false"]) == 1
    assert "the input is not interesting" in capsys.readouterr().err


def test_reduce_command_replays_the_reproducer_with_a_placeholder():
    reproduce = "forge-opt /r/x.mlir --verify-semantics -p 'my-pass{a=1}'"
    cmd = reduce_command("/r/x.mlir", "semantics", "my-pass{a=1}", reproduce)
    argv = shlex.split(cmd)
    assert argv[:2] == ["forge-reduce", "/r/x.mlir"] and argv[-2:] == ["-o", "/r/x.reduced.mlir"]
    assert argv[argv.index("--test") + 1] == "forge-opt {} --verify-semantics -p 'my-pass{a=1}' --no-reproducer"
    assert argv[argv.index("--expect-error") + 1] == r"pass 'my\-pass\{a=1\}' \(#\d+ of \d+\) changed the results"
