"""docs/coverage.md lists every documented deviation and every open failure the fuzzer found, as the
code and the regression cases say now: no known difference from torch goes unlisted, and a fix or a
new failure shows in the page (`python -m forge.testing.fuzz --docs` rewrites the section)."""

from __future__ import annotations

from pathlib import Path

from forge.testing.fuzz import regressions, report

PAGE = Path(__file__).resolve().parents[2] / "docs" / "coverage.md"


def test_the_coverage_page_lists_every_deviation_and_every_open_failure():
    page = PAGE.read_text()
    assert report.MARKER in page
    assert report.deviations_table() in page, "the deviations changed: run python -m forge.testing.fuzz --docs"
    assert report.open_table(regressions.load()) in page, (
        "the open failures changed: run python -m forge.testing.fuzz --docs"
    )


def test_the_section_replaces_itself_and_keeps_the_page_above(tmp_path):
    page = tmp_path / "coverage.md"
    page.write_text("# Coverage\n\nabove\n")
    report.write_section(page, report.MARKER + "\n\nfirst\n")
    report.write_section(page, report.MARKER + "\n\nsecond\n")
    text = page.read_text()
    assert text.startswith("# Coverage\n\nabove\n") and "second" in text and "first" not in text
    assert text.count(report.MARKER) == 1
