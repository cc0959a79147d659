"""The fixed fuzz budget of `make test` (forge.testing.fuzz.budget), part: activations and reductions. Each overload's
cases (fixed seed and count) run on the interpreter and both runtimes against torch's kernel; a
failure of a kind no regression case lists as open fails the test, naming the case."""

from __future__ import annotations

import pytest

from forge.testing.fuzz import budget, regressions
from forge.testing.fuzz.run import PASS
from tests.conftest import require_runtime

REGRESSIONS = regressions.load()


@pytest.mark.parametrize("op", budget.ACTIVATIONS_AND_REDUCTIONS)
def test_generated_cases_match_torch_or_fail_only_as_listed_open(op):
    require_runtime("openvino")
    require_runtime("nnfactory")
    outcomes = budget.run_op(op)
    assert len(outcomes) == budget.CASES, f"{op}: drew {len(outcomes)} cases"
    new = budget.new_failures(outcomes, budget.known_open(op, REGRESSIONS))
    assert not new, "\n".join(new)
    assert sum(o.status == PASS for o in outcomes) >= budget.CASES // 2, [o.summary() for o in outcomes]
