"""Every failure the fuzzer saved (tests/fuzz/regressions/) replayed on the interpreter and both runtimes.

A case must pass, show a documented deviation or be refused clearly; a failure not fixed yet must be
exactly the one its file lists as `open` (so it is written down and pinned, and its fix is noticed:
`python -m forge.testing.fuzz --replay --refresh` then drops it). All cases run once, one batch per
overload (about 30 s)."""

from __future__ import annotations

import pytest
import torch

from forge.testing.fuzz import regressions
from tests.conftest import require_runtime

REGRESSIONS = regressions.load()


@pytest.fixture(scope="module")
def outcomes():
    require_runtime("openvino")
    require_runtime("nnfactory")
    return dict(zip([r.path.name for r in REGRESSIONS], regressions.replay(REGRESSIONS), strict=True))


REDUCED = {torch.bfloat16: "bf16", torch.float16: "f16"}
"""The reduced float dtypes, as precision names (`forge.precision.NATIVE_CAPABILITY` says which capability
computes each natively)."""


def emulated_dtypes(case) -> set[torch.dtype]:
    """The case's reduced float dtypes this CPU has no native arithmetic for (OpenVINO computes them in f32)."""
    from backends.nnfactory.runtime.openvino_runtime import cpu_capabilities
    from forge.precision import NATIVE_CAPABILITY

    native = {d for d, name in REDUCED.items() if NATIVE_CAPABILITY[name] in cpu_capabilities()}
    return {t.dtype for t in case.tensors() if t.dtype in REDUCED and t.dtype not in native}


@pytest.mark.parametrize("regression", REGRESSIONS, ids=[r.path.name for r in REGRESSIONS])
def test_a_regression_case_fails_only_as_its_file_says(regression, outcomes):
    now = regressions.failures_now(outcomes[regression.path.name])
    if now != regression.open and emulated_dtypes(regression.case):
        # recorded on a CPU with native bf16/f16 kernels: here the runtimes compute in f32, where an open
        # failure of those kernels may not show; a failure the file does not list is still one
        assert now.items() <= regression.open.items(), (regression.case.describe(), now, regression.open)
        return
    assert now == regression.open, (
        f"{regression.case.describe()}: fails {now or 'nowhere'} now, its file lists {regression.open or 'nothing'}"
        " open (a fix: run `python -m forge.testing.fuzz --replay --refresh`; a new failure: fix it)"
    )


def test_there_are_regression_cases_and_each_says_what_it_found():
    assert len(REGRESSIONS) > 100
    assert all(r.found for r in REGRESSIONS)
