"""No drift between the tutorial and what it shows (docs/tutorials/first-rewrite-pattern.md).

* A fenced code block whose first line is a comment naming a file (`# docs/examples/x.py`,
  `// filecheck/examples/x.mlir`) must appear verbatim in that file.
* A `console` block is a shell session: each `$ command` is run from the repository root with
  the virtual environment's bin directory first on PATH, and its output (stdout and stderr)
  must match the lines that follow it. `...` inside a line matches any text; a line that is just
  `...` matches any number of lines. Trailing blank lines are ignored.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorials" / "first-rewrite-pattern.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
FILE_MARKER = re.compile(r"^(?:#|//) ((?:docs|filecheck|tests|forge)/\S+)$")


def blocks(kind: str | None = None) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(TUTORIAL.read_text())
            if kind is None or m.group(1) == kind]


def excerpts() -> list[tuple[str, str]]:
    found = []
    for _, body in blocks():
        first, _, rest = body.partition("\n")
        if (m := FILE_MARKER.match(first)) is not None:
            found.append((m.group(1), rest))
    return found


def sessions() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of every `$` line of the console blocks."""
    found: list[tuple[str, list[str]]] = []
    for _, body in blocks("console"):
        for line in body.splitlines():
            if line.startswith("$ "):
                found.append((line[2:], []))
            else:
                found[-1][1].append(line)
    return found


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` matches `expected` (with the `...` wildcards of the module docstring)."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(matches(rest, actual[i:]) for i in range(len(actual) + 1))
    pattern = ".*".join(re.escape(part) for part in head.split("..."))
    return bool(actual) and re.fullmatch(pattern, actual[0]) is not None and matches(rest, actual[1:])


def strip_blank_tail(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def test_the_tutorial_shows_code_and_commands():
    assert len(excerpts()) >= 4 and len(sessions()) >= 4


@pytest.mark.parametrize("path,text", excerpts(), ids=[p for p, _ in excerpts()])
def test_code_excerpt_is_in_its_file(path: str, text: str):
    assert text in (ROOT / path).read_text(), f"the tutorial's excerpt of {path} is not in that file"


@pytest.mark.parametrize("command,expected", sessions(), ids=[c.split(" -p ")[-1][:40] for c, _ in sessions()])
def test_console_session_output(command: str, expected: list[str]):
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(ROOT / ".venv" / "bin"), os.path.dirname(sys.executable), env["PATH"]])
    env.pop("FORGE_TEST_PASSES", None)
    result = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=600)
    actual = strip_blank_tail((result.stderr + result.stdout).splitlines())
    assert matches(strip_blank_tail(expected), actual), (
        f"$ {command}\n--- the tutorial shows ---\n" + "\n".join(expected)
        + "\n--- the command printed ---\n" + "\n".join(actual)
    )


def test_matches_wildcards():
    assert matches(["a ... c", "...", "end"], ["a b c", "x", "y", "end"])
    assert matches(["...", "end"], ["end"])
    assert not matches(["a ... c"], ["a b d"])
    assert not matches(["a"], ["a", "extra"])


NOT_PYTHON_NAMES = {"forge.passes"}
"""Dotted names in the tutorial that are not Python objects (`forge.passes`: an entry point group)."""
DOTTED = re.compile(r"`((?:forge|dialects)\.[A-Za-z_][\w.]*)")


def _resolve(dotted: str) -> object:
    """The object `a.b.c` names: the longest importable module prefix, then attributes."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_every_name_the_tutorial_uses_is_importable_as_written():
    names = sorted({m.group(1).rstrip(".") for m in DOTTED.finditer(TUTORIAL.read_text())} - NOT_PYTHON_NAMES)
    assert "forge.testing.check_pattern" in names
    broken = []
    for name in names:
        try:
            _resolve(name)
        except (ImportError, AttributeError) as e:
            broken.append(f"{name}: {type(e).__name__}: {e}")
    assert not broken, broken
