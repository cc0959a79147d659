"""The fixed fuzz budget of `make test` (forge.testing.fuzz.budget), part: activations and reductions. Each overload's
cases (fixed seed and count) run on the interpreter and both runtimes against torch's kernel; a
failure of a kind no regression case lists as open fails the test, naming the case. (Two files so that
pytest-xdist's --dist loadfile spreads the budget over both workers.)"""

from __future__ import annotations

import pytest

from forge.testing.fuzz import budget, regressions
from tests.conftest import require_runtime

REGRESSIONS = regressions.load()


@pytest.mark.parametrize("op", budget.ACTIVATIONS_AND_REDUCTIONS)
def test_generated_cases_match_torch_or_fail_only_as_listed_open(op):
    require_runtime("openvino")
    require_runtime("nnfactory")
    budget.check_op(op, REGRESSIONS)
