"""The layer contracts of `pyproject.toml` (import-linter) hold, and they catch an upward import.

The contracts are the executable form of the layers in `docs/architecture.md`: dialects < core <
passes/frontend < lowering < backends < drivers, each layer a set of folders (scripts/folder_layers.py).
`make test` also runs `lint-imports` and `ruff`; these tests show that the contracts are not vacuous and
that a module is in a layer by its path.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from scripts.folder_layers import folder_of, parse_layers

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
    (root / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "folder_layers.py", root / "scripts" / "folder_layers.py")
    return root


def test_the_contracts_hold():
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "upward_import"),
    [
        ("lowering/_probe.py", "import forge.driver.compiler"),  # lowering -> driver
        ("dialects/_probe.py", "from lowering import affinity"),  # dialects -> lowering
        ("forge/kinds/_probe.py", "import backends.nnfactory.runtime"),  # core -> backends
        ("forge/newcore.py", "from lowering import affinity"),  # a new root module is core by its path
        ("forge/frontend/_probe.py", "from forge.transforms import dce"),  # independent siblings
        ("backends/nnfactory/runtime/_probe.py", "from dialects import npuir"),  # the graph library knows no IR
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


def test_a_new_core_module_importing_up_and_imported_back_breaks_the_contract(tmp_path):
    """The case a list of modules missed: forge/newcore.py imports lowering, lowering/_probe.py imports it."""
    root = _copy_tree(tmp_path)
    (root / "forge" / "newcore.py").write_text('"""New."""\n\nfrom lowering import affinity\n')
    (root / "lowering" / "_probe.py").write_text('"""Probe."""\n\nfrom forge import newcore\n')
    result = _lint_imports(root)
    assert result.returncode != 0, result.stdout
    assert "forge.newcore -> lowering.affinity" in result.stdout, result.stdout


def _declared_layers() -> list[str]:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["type"] == "folder_layers")["layers"]


def _layer_by_path(module: str) -> str:
    """The layer a reader reads off the path: the first folder that names one."""
    parts = module.split(".")
    if parts[0] in ("dialects", "lowering", "backends"):
        return parts[0]
    if len(parts) >= 2 and parts[1] in ("driver", "cli", "models", "testing", "coverage"):
        return "drivers"
    if len(parts) >= 2 and parts[1] in ("transforms", "frontend"):
        return "passes"
    return "core"


def test_every_module_is_in_exactly_one_layer_by_its_path():
    folders = parse_layers(_declared_layers())
    packages = [f.package for f in folders]
    assert len(packages) == len(set(packages)), "a folder is declared in two layers"
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            holding = [f.package for f in folders if module == f.package or module.startswith(f.package + ".")]
            assert holding, f"{module} is in no layer"
            assert folder_of(module, folders).layer == _layer_by_path(module), module


def test_a_folder_declared_in_two_layers_is_refused(tmp_path):
    root = _copy_tree(tmp_path)
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('"core: forge",', '"core: forge forge.cli",'))
    result = _lint_imports(root)
    assert result.returncode != 0
    assert "declared in more than one layer: forge.cli" in result.stdout + result.stderr
