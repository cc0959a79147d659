"""The README and the tutorial give one recipe for a pattern (issue 30): the README's "Adding a pass"
and the tutorial (with the example files it shows) drive patterns the same way, and every pattern the
examples define runs in that driver as written (its op classes come from its annotation or ROOTS).
A researcher who combines the two must not get a pattern the driver refuses."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from forge.patterns import ForgePattern, pattern_roots
from forge.plugins import pass_plugin

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
TUTORIAL = ROOT / "docs" / "tutorials" / "first-rewrite-pattern.md"
EXAMPLES = ROOT / "docs" / "examples"

DRIVERS = ("apply_patterns", "PatternRewriteWalker", "GreedyRewritePatternApplier", "rewrite_module")
"""Ways to run patterns over a module: a recipe names exactly one."""


def section(text: str, heading: str) -> str:
    """The text under a `## heading`, up to the next heading of that level."""
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start: end if end != -1 else len(text)]


def tutorial_files() -> list[Path]:
    """The example files the tutorial shows (links and code excerpts)."""
    names = set(re.findall(r"docs/examples/(\w+\.py)", TUTORIAL.read_text()))
    return sorted(EXAMPLES / name for name in names)


def drivers(text: str) -> set[str]:
    return {d for d in DRIVERS if re.search(rf"\b{d}\b", text)}


def test_the_readme_and_the_tutorial_run_patterns_with_one_driver():
    readme = section(README.read_text(), "## Adding a pass")
    tutorial = TUTORIAL.read_text() + "".join(path.read_text() for path in tutorial_files())
    assert len(tutorial_files()) >= 3
    assert drivers(readme) == {"apply_patterns"}, "the README's recipe drives patterns with something else"
    assert drivers(tutorial) == drivers(readme), (
        f"the tutorial drives patterns with {sorted(drivers(tutorial))}, the README with {sorted(drivers(readme))}")


@pytest.mark.parametrize("path", tutorial_files(), ids=lambda p: p.name)
def test_every_example_pattern_runs_in_the_readme_driver(path: Path):
    with pass_plugin(path) as module:
        patterns = [obj for obj in vars(module).values()
                    if isinstance(obj, ForgePattern)
                    or inspect.isclass(obj) and issubclass(obj, ForgePattern) and obj.__module__ == module.__name__]
        for pattern in patterns:
            instance = pattern if isinstance(pattern, ForgePattern) else pattern.__new__(pattern)
            assert pattern_roots(instance), pattern
