"""The supported torch release is stated and checked (forge/torch_support.py): a torch outside it gets one line
naming the supported release and the install command, from the library and from the CLI, instead of an
AttributeError deep inside torch.export."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from forge.torch_support import SUPPORTED, UnsupportedTorchError, check_torch

EXPECTED = "Forge supports torch 2.13.x; found 2.11.0; install it with: pip install 'torch==2.13.0'"


def test_the_installed_torch_is_the_supported_release():
    check_torch()
    assert torch.__version__.startswith(SUPPORTED + ".")


@pytest.mark.parametrize("version", ["2.13.0", "2.13.0+cpu", "2.13.1"])
def test_any_patch_release_of_the_supported_one_passes(version):
    check_torch(version)


@pytest.mark.parametrize("version", ["2.11.0", "2.14.1+cu128", "2.1.3", "3.13.0"])
def test_another_release_is_one_clear_error(version):
    with pytest.raises(UnsupportedTorchError) as err:
        check_torch(version)
    assert str(err.value) == EXPECTED.replace("2.11.0", version)


FAKE = "import forge.torch_support as t; t.installed_torch_version = lambda: '2.11.0'\n"


def _fresh(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", FAKE + code], capture_output=True, text=True, timeout=120)


def test_the_cli_prints_one_line_and_exits_nonzero_for_a_fake_old_torch():
    run = _fresh("from forge.cli.main import main\nraise SystemExit(main(['compile', 'gpt2', '--small']))")
    assert run.returncode == 1
    assert run.stderr == f"forge: error: {EXPECTED}\n"


@pytest.mark.parametrize("code", ["import forge\nforge.compile", "import forge.compiler"])
def test_the_library_raises_it_before_touching_torch_internals(code):
    run = _fresh(code)
    assert run.returncode == 1
    assert run.stderr.strip().splitlines()[-1] == f"forge.torch_support.UnsupportedTorchError: {EXPECTED}"
