"""`forge lit-init DIR` gives a researcher a working lit suite in a folder of their own (issue 30): lit finds
Forge's tools without the virtual environment on PATH, a pass plug-in beside the tests is not collected
as a test, and `--verify-diagnostics` tests fail when an `expected-error` is wrong and pass when it is
right. One lit run in a fresh process (about 3 s)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from forge.cli.lit_init import SUBSTITUTIONS
from forge.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "filecheck" / "cli" / "inputs" / "plugins" / "pow_two_to_mul.py"
LIT = Path(sys.executable).parent / "lit"

POW_TEST = """\
// RUN: forge-opt %s --load-pass-plugin %S/pow_to_mul.py -p pow-to-mul | filecheck %s
// RUN: forge-opt %s | %forge_roundtrip | filecheck %s --check-prefix=ROUNDTRIP
// CHECK: %a = aten.mul.Tensor %x, %x
// ROUNDTRIP: aten.pow.Tensor_Scalar %x {exponent = 2}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = aten.pow.Tensor_Scalar %x {exponent = 2} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a : tensor<4xf32>
}
"""
DIAG_TEST = """\
// RUN: forge-opt %s --split-input-file --verify-diagnostics
func.func @bad(%a: i32, %b: i64) -> i32 {
  // expected-error @+1 {{MESSAGE}}
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}
"""
PY_TEST = """\
# RUN: %python %s | filecheck %s
# CHECK: a python test
print("a python test")
"""


def test_lit_init_writes_a_suite_that_runs_forges_tools(tmp_path: Path, capsys):
    suite = tmp_path / "my-pattern"
    assert main(["lit-init", str(suite)]) == 0
    assert f"run the tests: {LIT} -v {suite}" in capsys.readouterr().out
    assert main(["lit-init", str(suite)]) == 1  # an existing lit.cfg is kept
    assert "exists (--force overwrites it)" in capsys.readouterr().err
    shutil.copyfile(PLUGIN, suite / "pow_to_mul.py")
    (suite / "pow-to-mul.mlir").write_text(POW_TEST)
    (suite / "right.mlir").write_text(DIAG_TEST.replace("MESSAGE", "operand 'rhs' at position 1 does not verify"))
    (suite / "wrong.mlir").write_text(DIAG_TEST.replace("MESSAGE", "this text is deliberately wrong"))
    (suite / "nested").mkdir()
    (suite / "nested" / "script.py").write_text(PY_TEST)
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "PATH": "/usr/bin:/bin"}  # no virtual environment
    result = subprocess.run([str(LIT), "-v", str(suite)], capture_output=True, text=True, env=env, cwd=tmp_path,
                            check=False)
    verdicts = dict((name, verdict) for verdict, name in
                    re.findall(r"^(PASS|FAIL|UNRESOLVED): my-pattern :: (\S+)", result.stdout, re.M))
    assert verdicts == {"pow-to-mul.mlir": "PASS", "right.mlir": "PASS", "wrong.mlir": "FAIL",
                        "nested/script.py": "PASS"}, result.stdout
    assert 'expected error "this text is deliberately wrong" was not produced' in result.stdout


def test_forges_own_suite_uses_the_same_substitutions():
    assert "from forge.cli.lit_init import SUBSTITUTIONS" in (ROOT / "filecheck" / "lit.cfg").read_text()
    assert SUBSTITUTIONS["%forge_roundtrip"] == "forge-opt --print-op-generic | forge-opt"
