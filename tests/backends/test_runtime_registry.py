"""A new runtime is one module plus one registration: everything that names a runtime finds it."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import forge
from backends.nnfactory import runtime as runtimes
from backends.nnfactory.pyemit import emit_python
from forge.driver.compile_errors import CompileError
from tests.backends import recording_runtime

TARGET = "tests.backends.recording_runtime:RecordingRuntime"


@pytest.fixture
def recording(monkeypatch):
    monkeypatch.setattr(runtimes, "_REGISTRY", dict(runtimes._REGISTRY))
    runtimes.register_runtime("recording", TARGET)
    recording_runtime.COMPILED.clear()
    return "recording"


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.proj(x)) * 2


def test_a_registered_runtime_is_listed_and_built_by_name(recording):
    assert recording in runtimes.runtime_names()
    assert recording in runtimes.available_runtimes()
    assert isinstance(runtimes.get_runtime(recording, "CPU"), recording_runtime.RecordingRuntime)


def test_forge_compile_runs_on_a_registered_runtime(recording):
    torch.manual_seed(0)
    model, x = Small().eval(), torch.randn(3, 8)
    compiled = forge.compile(model, (x,), runtime=recording)
    assert recording_runtime.COMPILED, "the registered runtime compiled no graph"
    assert compiled.report["runtime"] == recording
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


def test_pyemit_writes_a_program_for_a_registered_runtime(recording, tmp_path):
    torch.manual_seed(0)
    compiled = forge.compile(Small().eval(), (torch.randn(3, 8),), runtime=recording)
    path = emit_python(compiled.buffer_module, compiled.weights, tmp_path / "prog.py", runtime=recording)
    assert "RUNTIME = 'recording'" in path.read_text()


def test_an_unknown_runtime_is_a_compile_error_naming_the_registered_ones():
    with pytest.raises(CompileError, match=r"unknown runtime 'nosuch'; known: openvino, nnfactory"):
        forge.compile(Small().eval(), (torch.randn(3, 8),), runtime="nosuch")


def test_register_runtime_wants_module_colon_class():
    with pytest.raises(ValueError, match="module:Class"):
        runtimes.register_runtime("broken", "no_colon_here")
