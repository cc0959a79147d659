"""Each documented deviation from torch (forge.testing.fuzz.deviations, the table in docs/coverage.md)
pinned by its example: the interpreter matches torch and every runtime the entry names still shows
the deviation. A deviation that disappears (a runtime update, a correction in the graph) fails here,
so the table is corrected, never stale; one that spreads to another op or stage is no longer
documented and fails the fuzz tests."""

from __future__ import annotations

import re

import pytest
import torch

from forge.testing.fuzz.deviations import DEVIATIONS, documented, example_case
from forge.testing.fuzz.run import DEVIATION, PASS, run_cases
from tests.conftest import require_runtime


@pytest.fixture(scope="module")
def outcomes():
    require_runtime("openvino")
    require_runtime("nnfactory")
    return dict(zip([d.id for d in DEVIATIONS], run_cases([example_case(d) for d in DEVIATIONS]), strict=True))


@pytest.mark.parametrize("dev", DEVIATIONS, ids=[d.id for d in DEVIATIONS])
def test_a_documented_deviation_still_shows_on_its_runtimes_and_nowhere_else(dev, outcomes):
    from backends.nnfactory.runtime.openvino_runtime import cpu_runs_avx512_kernels

    stages = outcomes[dev.id].stages
    assert stages["interpret"] == (PASS, ""), stages
    for runtime in dev.stages:
        status, detail = stages[runtime]
        if dev.kernels == "avx512" and not cpu_runs_avx512_kernels():
            assert (status, detail) == (PASS, ""), (runtime, status, detail)  # AVX2 kernels give torch's values
            continue
        assert status == DEVIATION and detail.startswith(f"{dev.id}: "), (runtime, status, detail)


def test_openvino_names_the_instruction_set_of_its_cpu_kernels():
    """`cpu_isa` reads OpenVINO's `RUNTIME_REQUIREMENTS` (`meta=...;ov=...;isa=Intel AVX2`): the deviations
    tied to AVX-512 kernels rely on it naming one."""
    from backends.nnfactory.runtime.openvino_runtime import cpu_isa

    require_runtime("openvino")
    assert re.fullmatch(r"Intel [\w .()-]*(AVX|AMX|SSE)[\w .()-]*", cpu_isa()), cpu_isa()


def test_a_difference_of_another_kind_or_without_the_trigger_is_not_documented():
    relu = example_case(DEVIATIONS[0])
    assert documented(relu, "openvino", "NaN differs at [0] (1 of 2): 0.0, torch gives nan") is DEVIATIONS[0]
    assert documented(relu, "openvino", "value differs at [1] (1 of 2): 2.0, torch gives 1.0") is None
    assert documented(relu, "interpret", "NaN differs at [0] (1 of 2): 0.0, torch gives nan") is None
    plain = relu.with_tensors([relu.tensors()[0].nan_to_num()])
    assert documented(plain, "openvino", "NaN differs at [0] (1 of 2): 0.0, torch gives nan") is None


def _entry(id_: str):
    return next(d for d in DEVIATIONS if d.id == id_)


def test_an_entry_for_any_overload_holds_only_where_its_check_confirms_it():
    """The two entries not tied to overloads are checked on each case's values: Forge's result must be
    torch's float32 call rounded back (half), or OpenVINO's own conversion's (kernel); another value
    at the same place is a failure, and without the values nothing is documented."""
    half = _entry("half-computed-in-float32")
    case = example_case(half)
    expected = case.call()
    wide = [w.to(e.dtype) for w, e in zip(case.call([t.float() for t in case.tensors()]), expected, strict=True)]
    problem = "signed zero differs at [0] (1 of 1): -0.0, torch gives 0.0"
    assert documented(case, "openvino", problem, expected, wide) is half
    assert documented(case, "openvino", problem, expected, [w + 1 for w in wide]) is None
    assert documented(case, "openvino", problem) is None

    kernel = _entry("openvino-kernel-reproduced")
    case = example_case(kernel)
    expected = case.call()
    problem = f"value differs at [] (1 of 1): 0.0, torch gives {expected[0].item()}"
    assert documented(case, "nnfactory", problem, expected, [torch.tensor(0.0)]) is kernel
    assert documented(case, "nnfactory", problem, expected, [torch.tensor(7.0)]) is None
