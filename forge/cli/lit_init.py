"""`forge lit-init [DIR]`: a lit test suite in a researcher's own folder.

lit finds a suite by walking up from a test to the nearest `lit.cfg`; outside Forge's repository
there is none ("unable to find test suite"), and a copy of `filecheck/lit.cfg` collects every `.py`
file, pass plug-ins included, as a test. The `lit.cfg` written here:

- puts the directory of this Forge installation's programs first on PATH (forge-opt, forge,
  forge-gen-checks, forge-reduce and, when installed beside them, filecheck and lit);
- runs `.mlir` files, and `.py` files that have a `RUN:` line (a plug-in has none, so it is not a test);
- skips `Output/` (lit's scratch files, `%t`) and `inputs/` directories;
- defines Forge's substitutions (`SUBSTITUTIONS`, shared with Forge's own `filecheck/lit.cfg`) and
  `%python`, the interpreter Forge runs in.

It is self-contained (paths written in, nothing imported from Forge), so any `lit` can read it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import sysconfig
from pathlib import Path

SUBSTITUTIONS: dict[str, str] = {
    "%forge_roundtrip": "forge-opt --print-op-generic | forge-opt",
}
"""lit substitutions of Forge's suites (filecheck/lit.cfg and the ones `forge lit-init` writes)."""

EXCLUDES = ["Output", "lit.cfg", "lit.local.cfg", "inputs", "__pycache__"]
"""Names lit never collects as tests."""

TOOLS = ("forge-opt", "forge", "forge-gen-checks", "forge-reduce", "filecheck", "lit")

TEMPLATE = '''\
# -*- Python -*-
# A lit suite for Forge's tools, written by `forge lit-init` (docs/lit-workflow.md). Run the tests with
#     {lit} -v {suite_dir}
# or one of them (`lit -v my-test.mlir` in this folder). To point it at another Forge installation, run
# that installation's `forge lit-init --force` here.
import os

import lit.formats

FORGE_BIN = {bin_dir!r}
"""Where forge-opt, forge-gen-checks, forge-reduce (and filecheck, lit) are."""


def _plugin_sources(root):
    """The .py files under `root` without a RUN: line (pass plug-ins, helpers): not tests."""
    found = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in ("Output", "inputs", "__pycache__")]
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(directory, name), encoding="utf-8", errors="replace") as f:
                    if "RUN:" not in f.read():
                        found.append(name)
    return found


config.name = {name!r}
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = {excludes!r} + _plugin_sources(config.test_source_root)
config.environment["PATH"] = os.pathsep.join([FORGE_BIN, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.environment["PYTHONHASHSEED"] = "0"
config.environment.pop("FORGE_TEST_PASSES", None)
for name, value in {substitutions!r}.items():
    config.substitutions.append((name, value))
config.substitutions.append(("%python", {python!r}))
'''


def bin_dir() -> str:
    """The directory of this installation's programs (forge-opt, ...)."""
    scripts = sysconfig.get_path("scripts")
    if scripts and os.path.exists(os.path.join(scripts, "forge-opt")):
        return os.path.abspath(scripts)
    return os.path.dirname(os.path.abspath(sys.executable))


def lit_cfg_text(suite_dir: Path) -> str:
    """The lit.cfg for a suite in `suite_dir`."""
    tools = bin_dir()
    lit = os.path.join(tools, "lit") if os.path.exists(os.path.join(tools, "lit")) else "lit"
    return TEMPLATE.format(lit=lit, suite_dir=str(suite_dir), bin_dir=tools, name=suite_dir.name or "tests",
                           excludes=EXCLUDES, substitutions=SUBSTITUTIONS, python=sys.executable)


def add_lit_init_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("lit-init", help="write a lit.cfg that runs Forge's tools in a folder of your own")
    p.add_argument("directory", nargs="?", default=".", type=Path, help="the suite's folder (default: here)")
    p.add_argument("--force", action="store_true", help="overwrite an existing lit.cfg")


def cmd_lit_init(args: argparse.Namespace) -> int:
    directory = args.directory.resolve()
    path = directory / "lit.cfg"
    if path.exists() and not args.force:
        print(f"forge lit-init: error: {path} exists (--force overwrites it)", file=sys.stderr)
        return 1
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(lit_cfg_text(directory))
    tools = bin_dir()
    missing = [t for t in ("filecheck", "lit") if not os.path.exists(os.path.join(tools, t))]
    print(f"forge lit-init: wrote {path}: {', '.join(TOOLS[:4])} from {tools}; substitutions "
          f"{', '.join([*SUBSTITUTIONS, '%python'])}; .py files are tests only with a RUN: line")
    lit = os.path.join(tools, "lit") if "lit" not in missing else (shutil.which("lit") or "lit")
    print(f"run the tests: {lit} -v {directory}")
    if missing:
        print(f"note: {' and '.join(missing)} not installed beside Forge: pip install {' '.join(missing)}")
    return 0
