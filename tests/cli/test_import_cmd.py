"""`forge import`: a user's `module:callable` factory, and bad specs as one-line errors."""

from __future__ import annotations

import sys

import pytest

from forge.cli.main import main


@pytest.fixture
def factory_module(tmp_path, monkeypatch):
    (tmp_path / "my_models.py").write_text(
        "import torch\n\n"
        "def make():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU()), (torch.randn(2, 4),)\n\n"
        "def wrong():\n"
        "    return 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_models"
    sys.modules.pop("my_models", None)


def test_import_a_user_factory_writes_raw_ir_and_weights(tmp_path, factory_module, capsys):
    out = tmp_path / "m.mlir"
    assert main(["import", f"{factory_module}:make", "-o", str(out)]) == 0
    text = out.read_text()
    assert "aten.linear" in text and "aten.relu" in text and 'aten.weight "0.weight"' in text
    assert (tmp_path / "m.safetensors").exists()
    assert "wrote" in capsys.readouterr().err


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_such_model", "not a zoo model"),
        ("no_such_module_xyz:make", "cannot import 'no_such_module_xyz'"),
        ("my_models:missing", "has no attribute 'missing'"),
        ("my_models:wrong", "must return (model, example_args)"),
    ],
)
def test_bad_model_spec_is_a_one_line_error(factory_module, spec, message, capsys):
    assert main(["import", spec]) == 1
    err = capsys.readouterr().err
    assert err.startswith("forge: error:") and message in err and "Traceback" not in err
