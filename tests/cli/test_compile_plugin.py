"""`forge compile --load-pass-plugin FILE`: a plug-in's pass runs in the model compiler's pipeline, end to
end with the parity check against eager PyTorch, without packaging it (issue 30). In-process: one small
GPT-2 compile (~3 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forge import context
from forge.cli.main import main

PLUGIN = Path(__file__).parent / "plugins" / "pow_cube_to_mul.py"
PIPELINE = "dce,cse,pow-cube-to-mul,fold,fuse-attention,fuse-ops,layout,dce,cse"


@pytest.fixture
def unregister_plugins():
    before = dict(context._REGISTERED_PASSES)
    yield
    context._REGISTERED_PASSES.clear()
    context._REGISTERED_PASSES.update(before)


def test_a_plugin_pass_runs_in_forge_compile_with_the_parity_check(tmp_path: Path, unregister_plugins, capsys):
    report = tmp_path / "report.json"
    code = main(["compile", "gpt2", "--small", "--seq-len", "8", "--quiet", "--check", "--load-pass-plugin",
                 str(PLUGIN), "--pipeline", PIPELINE, "--report", str(report)])
    assert code == 0, capsys.readouterr().err
    data = json.loads(report.read_text())
    passes = {record["name"]: record for record in data["passes"]}
    assert passes["pow-cube-to-mul"]["fired"] == {"PowCubeToMul": 2}  # GELU's x**3 in each of the 2 layers
    assert data["parity"]["max_abs"] < 1e-4


def test_a_plugin_that_fails_to_load_is_one_error(tmp_path: Path, unregister_plugins, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("import nothing_by_this_name\n")
    assert main(["compile", "gpt2", "--small", "--load-pass-plugin", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{bad}:1: error: pass plug-in raised ModuleNotFoundError: No module named")


def test_without_the_plugin_its_pass_is_unknown(unregister_plugins, capsys):
    assert main(["compile", "gpt2", "--small", "--quiet", "--pipeline", "dce,pow-cube-to-mul"]) == 1
    assert "pow-cube-to-mul" in capsys.readouterr().err
