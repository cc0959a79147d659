"""The layer contracts of `pyproject.toml` (import-linter) hold, and they catch an upward import.

The contracts are the executable form of the layers in `docs/architecture.md`: dialects < core <
passes/frontend < lowering < backends < drivers. `make test` also runs `lint-imports` and `ruff`;
these tests show that the contracts are not vacuous.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("forge", "dialects", "lowering", "backends")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter (a dev extra) is not installed")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run `lint-imports` on the packages under `root` (they shadow the installed ones)."""
    return subprocess.run(
        [str(LINT_IMPORTS), str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for package in PACKAGES:
        shutil.copytree(ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_contracts_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "upward_import"),
    [
        ("lowering/_probe.py", "import forge.compiler"),  # lowering -> driver
        ("dialects/_probe.py", "from lowering import affinity"),  # dialects -> lowering
        ("forge/kinds/_probe.py", "import backends.nnfactory.runtime"),  # core -> backends
    ],
)
def test_an_upward_import_breaks_a_contract(tmp_path, module, upward_import):
    root = _copy_tree(tmp_path)
    probe = root / module
    probe.write_text(f'"""A module that imports a higher layer."""\n\n\ndef f():\n    {upward_import}\n')
    result = _lint_imports(root)
    assert result.returncode != 0, result.stdout
    probe_module = module.removesuffix(".py").replace("/", ".")
    assert probe_module in result.stdout, result.stdout
