"""`make compat`: xDSL's own lit suite with `forge-opt` in place of `xdsl-opt`.

Downloads the source distribution of the installed xDSL version from the package index
(`pip download --no-deps --no-binary :all: xdsl==<version>`, cached in out/compat/, never vendored),
checks that it contains tests/filecheck, and runs the suite's lit tests with a shim directory first
on PATH whose `xdsl-opt` execs this venv's `forge-opt` (xDSL's lit.cfg calls `xdsl-opt` by name).
The shim spells xdsl-opt's `--verify-diagnostics` (print each chunk's error for FileCheck, exit 0) as
forge-opt's `--xdsl-verify-diagnostics`: forge-opt's own `--verify-diagnostics` is mlir-opt's, which
checks `expected-error` annotations instead.

Forge must be a superset of xdsl-opt: every test fails the run unless it passes, except those listed
with a reason in scripts/compat/expected-failures.txt (an excepted test that passes fails the run
too: the list must stay true). `--baseline` runs the same tests with the real `xdsl-opt` instead.

    python scripts/compat/run.py [--all] [--baseline] [-j N] [TEST_PATH ...]

By default the suite is the part that exercises what Forge builds on (SUITE: parser-printer, the
builtin/func/arith/scf/memref/linalg/tensor dialects, every transform, the xdsl-opt driver);
`--all` runs the whole tests/filecheck directory. Exit 0 when Forge passes.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile
import time
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / "out" / "compat"
EXPECTED = Path(__file__).with_name("expected-failures.txt")
SUITE = (
    "parser-printer", "dialects/builtin", "dialects/func", "dialects/arith", "dialects/scf",
    "dialects/memref", "dialects/linalg", "dialects/tensor", "transforms", "xdsl_opt", "dce.mlir", "version.mlir",
)
BIN = Path(sys.executable).parent


def fetch_suite(xdsl_version: str) -> Path:
    """tests/filecheck of the xDSL sdist for `xdsl_version`, downloaded and unpacked once."""
    root = CACHE / f"xdsl-{xdsl_version}"
    suite = root / "tests" / "filecheck"
    if suite.is_dir():
        return suite
    CACHE.mkdir(parents=True, exist_ok=True)
    sdist = CACHE / f"xdsl-{xdsl_version}.tar.gz"
    if not sdist.exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             f"xdsl=={xdsl_version}", "-d", str(CACHE), "--quiet"],
            check=True,
        )
    with tarfile.open(sdist) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith(f"xdsl-{xdsl_version}/tests/filecheck/")]
        if not members:
            sys.exit(f"compat: {sdist.name} has no tests/filecheck; xDSL's suite must come from another source")
        tar.extractall(CACHE, members=members, filter="data")
    return suite


SHIM = """#!/bin/sh
# xdsl-opt as forge-opt (scripts/compat/run.py); xdsl-opt's --verify-diagnostics is forge-opt's
# --xdsl-verify-diagnostics.
for arg do
  shift
  case "$arg" in
    --verify-diagnostics) set -- "$@" --xdsl-verify-diagnostics ;;
    *) set -- "$@" "$arg" ;;
  esac
done
exec "{forge_opt}" "$@"
"""


def shim_dir() -> Path:
    """A directory whose `xdsl-opt` is this venv's `forge-opt`."""
    shim = CACHE / "bin"
    shim.mkdir(parents=True, exist_ok=True)
    script = shim / "xdsl-opt"
    script.write_text(SHIM.format(forge_opt=BIN / "forge-opt"))
    script.chmod(0o755)
    return shim


def expected_failures() -> dict[str, str]:
    """test path -> reason, from expected-failures.txt (`path: reason` lines, `#` comments)."""
    entries = {}
    for line in EXPECTED.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, _, reason = line.partition(":")
            entries[path.strip()] = reason.strip()
    return entries


def run_lit(suite: Path, tests: list[str], path_dirs: list[Path], jobs: int) -> tuple[set[str], int]:
    """(failed test paths, number of tests) of one lit run."""
    env = dict(os.environ, PATH=os.pathsep.join([*map(str, path_dirs), os.environ.get("PATH", "")]))
    proc = subprocess.run(
        [str(BIN / "lit"), "-q", f"-j{jobs}", *tests], cwd=suite, env=env, capture_output=True, text=True
    )
    failed = set(re.findall(r"^\s*(?:FAIL|XPASS|UNRESOLVED|TIMEOUT): xDSL :: (\S+)", proc.stdout, re.M))
    total = re.search(r"Total Discovered Tests: (\d+)", proc.stdout)
    if total is None:
        sys.exit(f"compat: lit did not run:\n{proc.stdout}\n{proc.stderr}")
    return failed, int(total.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tests", nargs="*", help="paths under tests/filecheck (default: SUITE)")
    parser.add_argument("--all", action="store_true", help="the whole tests/filecheck directory")
    parser.add_argument("--baseline", action="store_true", help="run the real xdsl-opt instead of forge-opt")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    xdsl_version = version("xdsl")
    suite = fetch_suite(xdsl_version)
    tests = ["."] if args.all else (args.tests or list(SUITE))
    tool = "xdsl-opt" if args.baseline else "forge-opt"
    start = time.perf_counter()
    failed, total = run_lit(suite, tests, [BIN] if args.baseline else [shim_dir(), BIN], args.jobs)
    seconds = time.perf_counter() - start
    expected = {} if args.baseline else expected_failures()
    unexpected = sorted(failed - set(expected))
    stale = sorted(t for t in expected if t not in failed and (suite / t).exists() and _selected(t, tests))
    print(f"compat: xDSL {xdsl_version} tests/filecheck with {tool}: {total - len(failed)} of {total} pass "
          f"in {seconds:.0f} s ({len(failed & set(expected))} excepted)")
    for test in sorted(failed & set(expected)):
        print(f"  excepted: {test}: {expected[test]}")
    for test in unexpected:
        print(f"  FAIL: {test}  (rerun: cd {suite} && PATH={shim_dir()}:$PATH {BIN / 'lit'} -v {test})")
    for test in stale:
        print(f"  PASSES but is listed in {EXPECTED.name}: {test}")
    return 1 if unexpected or stale else 0


def _selected(test: str, selection: list[str]) -> bool:
    return any(s == "." or test == s or test.startswith(s.rstrip("/") + "/") for s in selection)


if __name__ == "__main__":
    sys.exit(main())
