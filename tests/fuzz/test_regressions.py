"""Every failure the fuzzer saved (tests/fuzz/regressions/) replayed on the interpreter and both runtimes.

A case must pass, show a documented deviation or be refused clearly; a failure not fixed yet must be
exactly the one its file lists as `open` (so it is written down and pinned, and its fix is noticed:
`python -m forge.testing.fuzz --replay --refresh` then drops it). All cases run once, one batch per
overload (about 30 s)."""

from __future__ import annotations

import pytest

from forge.testing.fuzz import regressions
from tests.conftest import require_runtime

REGRESSIONS = regressions.load()


@pytest.fixture(scope="module")
def outcomes():
    require_runtime("openvino")
    require_runtime("nnfactory")
    return dict(zip([r.path.name for r in REGRESSIONS], regressions.replay(REGRESSIONS), strict=True))


@pytest.mark.parametrize("regression", REGRESSIONS, ids=[r.path.name for r in REGRESSIONS])
def test_a_regression_case_fails_only_as_its_file_says(regression, outcomes):
    now = regressions.failures_now(outcomes[regression.path.name])
    assert now == regression.open, (
        f"{regression.case.describe()}: fails {now or 'nowhere'} now, its file lists {regression.open or 'nothing'}"
        " open (a fix: run `python -m forge.testing.fuzz --replay --refresh`; a new failure: fix it)"
    )


def test_there_are_regression_cases_and_each_says_what_it_found():
    assert len(REGRESSIONS) > 100
    assert all(r.found for r in REGRESSIONS)
