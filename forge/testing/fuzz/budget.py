"""The fuzz budget of `make test`: a fixed set of overloads, a fixed seed and a fixed number of cases
each, so the run is the same every time (deterministic, not flaky) and costs about 1.5 minutes of
one core (measured: 800 cases in 93 s). The long campaign (`make fuzz`) explores further.

The overloads are the ones models use most and the ones issue 28 found wrong: every division and
remainder, the arithmetic, comparisons and selections, the activations and the reductions that
meet special values (NaN through relu/clamp/minimum/amax, -inf rows). A case may pass, be refused
clearly, or show a documented deviation; it may fail only as a regression case of its overload
already lists as open (forge.testing.fuzz.regressions), so any new failure fails the test.
"""

from __future__ import annotations

from forge.testing.fuzz import regressions
from forge.testing.fuzz.run import PASS, Outcome, run_cases
from forge.testing.fuzz.strategies import draw_cases

SEED = 0
CASES = 20

ARITHMETIC = tuple(f"aten::{name}" for name in (
    "div.Tensor", "div.Scalar", "div.Tensor_mode", "div.Scalar_mode", "remainder.Tensor", "remainder.Scalar",
    "fmod.Tensor", "fmod.Scalar", "add.Tensor", "add.Scalar", "sub.Tensor", "mul.Tensor", "mul.Scalar",
    "pow.Tensor_Scalar", "gt.Scalar", "lt.Tensor", "eq.Tensor", "where.self", "neg.default", "abs.default",
))  # fmt: skip
ACTIVATIONS_AND_REDUCTIONS = tuple(f"aten::{name}" for name in (
    "clamp.default", "relu.default", "minimum.default", "maximum.default", "amax.default", "max.dim",
    "softmax.int", "exp.default", "gelu.default", "sigmoid.default", "tanh.default", "sqrt.default",
    "rsqrt.default", "mean.dim", "sum.dim_IntList", "trunc.default", "floor.default", "ceil.default",
    "round.default", "sign.default",
))  # fmt: skip


def run_op(op: str) -> list[Outcome]:
    """The budget's cases of `op`, run on the interpreter and both runtimes."""
    return run_cases(draw_cases(op, CASES, SEED))


def known_open(op: str, found: list[regressions.Regression] | None = None) -> set[tuple[str, str]]:
    """(stage, failure kind) pairs the regression cases of `op` list as open."""
    found = regressions.load() if found is None else found
    return {(stage, kind) for r in found if r.case.op == op for stage, kind in r.open.items()}


def new_failures(outcomes: list[Outcome], known: set[tuple[str, str]]) -> list[str]:
    """One line per failure of a kind not known open: what to fix (or to save and list)."""
    return [
        f"{stage}: {kind}: {o.case.describe()}"
        for o in outcomes for stage, kind in regressions.failures_now(o).items() if (stage, kind) not in known
    ]


def check_op(op: str, found: list[regressions.Regression]) -> None:
    """The budget test of one overload (an AssertionError naming what to fix): every case drawn, no failure
    of a kind not listed open, and at least half passing (a broken strategy is not a passing budget)."""
    outcomes = run_op(op)
    assert len(outcomes) == CASES, f"{op}: drew {len(outcomes)} cases"
    new = new_failures(outcomes, known_open(op, found))
    assert not new, "\n".join(new)
    assert sum(o.status == PASS for o in outcomes) >= CASES // 2, [o.summary() for o in outcomes]
