"""forge-opt's --timing accounts for the whole run, and a companion weights file costs no torch import
until a pass reads its tensors (forge/cli/timing.py, forge/cli/companion_weights.py). Fresh processes:
what is measured is the program's own start-up."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from forge.weights import WeightStore

BIN = Path(sys.executable).parent
IR = """\
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = aten.weight "w" : tensor<4xf32>
  %y = aten.add.Tensor %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %z = aten.add.Tensor %x, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""
PLUGIN = textwrap.dedent('''\
    from dataclasses import dataclass

    from xdsl.passes import ModulePass

    from forge.context import register_pass
    from forge.weights import weights_of


    @register_pass
    @dataclass(frozen=True)
    class ReadWeights(ModulePass):
        """Reads the module's weights (for the test of --timing)."""

        name = "read-weights"

        def apply(self, ctx, op):
            assert weights_of(op)["w"].tolist() == [1.0, 2.0, 3.0, 4.0]
''')


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.mlir"
    path.write_text(IR)
    store = WeightStore()
    store.add("w", torch.tensor([1.0, 2.0, 3.0, 4.0]))
    store.save(tmp_path / "model.safetensors")
    (tmp_path / "read_weights.py").write_text(PLUGIN)
    return path


def rows(report: str) -> list[tuple[float, str]]:
    """(ms, name) of each row of the table, Total last."""
    found = []
    for line in report.splitlines():
        m = re.match(r"^\s+([0-9.]+)\s+[0-9.]+%\s+(?:\d+ -> \d+\s+)?(.+?)(?:\s+\[.*\])?$", line)
        if m:
            name = m.group(2)
            found.append((float(m.group(1)), name[1:-1] if name.startswith("(") else name))
    return found


def test_timing_rows_cover_the_run_and_add_up_to_its_total(model: Path, tmp_path: Path):
    result = subprocess.run(
        [str(BIN / "forge-opt"), str(model), "--load-pass-plugin", str(tmp_path / "read_weights.py"),
         "-p", "read-weights,cse", "--timing", "-o", str(tmp_path / "out.mlir")],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    table = rows(result.stderr)
    assert [name for _, name in table] == [
        "start-up (process start to main)",
        "set-up (flags, dialects, pass registry)",
        "plug-in read_weights.py",
        "parse",
        "weights model.safetensors (header)",
        "weights model.safetensors (tensors, torch)",
        "read-weights",
        "cse",
        "verify",
        "pipeline (IR copies for reproducers, --verify-each, debug output)",
        "output",
        "other (reading the input, ...)",
        "Total",
    ]
    *parts, (total, _) = table
    assert sum(ms for ms, _ in parts) == pytest.approx(total, abs=0.001 * len(parts))
    total_line = re.search(r"Total Execution Time: ([0-9.]+) ms", result.stderr)
    assert total_line is not None and float(total_line.group(1)) == pytest.approx(total, abs=0.001)
    # the pass that first read the weights is charged its own work only, not torch's import
    read_ms = next(ms for ms, name in table if name == "read-weights")
    load_ms = next(ms for ms, name in table if name.endswith("(tensors, torch)"))
    assert read_ms < load_ms
    assert WeightStore.load(tmp_path / "out.safetensors")["w"].tolist() == [1.0, 2.0, 3.0, 4.0]


HARNESS = """
import sys
from forge.cli.opt import main
code = main(sys.argv[1:])
print("torch imported" if "torch" in sys.modules else "no torch", file=sys.stderr)
sys.exit(code)
"""


def test_companion_weights_are_checked_and_copied_without_torch(model: Path, tmp_path: Path):
    out = tmp_path / "out.mlir"
    result = subprocess.run([sys.executable, "-c", HARNESS, str(model), "-p", "cse", "-o", str(out)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "no torch"
    assert (tmp_path / "out.safetensors").read_bytes() == (tmp_path / "model.safetensors").read_bytes()
    assert out.read_text().count("aten.add.Tensor") == 1  # cse ran


def test_a_broken_weights_file_is_an_error_before_any_pass(model: Path, tmp_path: Path):
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-3])  # truncated
    result = subprocess.run([sys.executable, "-c", HARNESS, str(model), "-p", "cse"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.startswith(f"forge-opt: error: cannot read weights file {weights}: ")
    assert "no torch" in result.stderr
