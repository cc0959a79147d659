"""The fuzzer's own rules (forge/testing/fuzz): what counts as a match, how cases are written to and
read from regression files, how a failing batch is split, and that generated cases are valid calls."""

from __future__ import annotations

import math

import pytest
import torch

from forge.testing.fuzz.cases import BatchModule, Case, decode, encode
from forge.testing.fuzz.compare import mismatch, tolerance
from forge.testing.fuzz.reduce import failure_kind, minimize
from forge.testing.fuzz.strategies import draw_cases, fuzzed_ops, valid

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    ("got", "problem"),
    [
        ([1.0, NAN, -0.0, INF], None),
        ([1.0, 2.0, -0.0, INF], "NaN differs at [1]"),
        ([1.0, NAN, 0.0, INF], "signed zero differs at [2]"),
        ([1.0, NAN, -0.0, -INF], "infinity differs at [3]"),
        ([1.0, NAN, -0.0, 3.0e38], "infinity differs at [3]"),
        ([1.001, NAN, -0.0, INF], "value differs at [0]"),
        ([1.0 + 1e-7, NAN, -0.0, INF], None),
    ],
)
def test_floats_match_within_tolerance_with_nan_infinity_and_zero_sign_exact(got, problem):
    expected = [torch.tensor([1.0, NAN, -0.0, INF])]
    found = mismatch("aten::add.Tensor", expected, [torch.tensor(got)])
    assert (found is None) if problem is None else (found is not None and found.startswith(problem)), found


def test_dtype_shape_count_and_integers_are_exact():
    e = [torch.tensor([1, 2, 3])]
    assert mismatch("aten::add.Tensor", e, [torch.tensor([1, 2, 4])]).startswith("value differs at [2] (1 of 3)")
    assert mismatch("aten::add.Tensor", e, [torch.tensor([1.0, 2.0, 3.0])]).startswith("dtype float32")
    assert mismatch("aten::add.Tensor", e, [torch.tensor([[1, 2, 3]])]).startswith("shape (1, 3)")
    assert mismatch("aten::add.Tensor", e, e + e) == "2 results, torch gives 1"


def test_random_and_uninitialized_results_compare_by_dtype_and_shape_only():
    e = [torch.zeros(3)]
    assert mismatch("aten::rand_like.default", e, [torch.ones(3)]) is None
    assert mismatch("aten::empty_like.default", e, [torch.ones(3)]) is None
    assert mismatch("aten::empty_like.default", e, [torch.ones(4)]) is not None


def test_tolerance_is_stated_per_dtype_and_widened_per_op():
    assert tolerance("aten::add.Tensor", torch.float32) == (1e-6, 1e-6)
    assert tolerance("aten::exp.default", torch.float32) == (1e-5, 1e-5)
    assert tolerance("aten::add.Tensor", torch.bfloat16)[1] == 2 * 2.0**-8


def test_a_case_round_trips_through_its_data_file_form():
    case = Case("aten::div.Tensor_mode", (torch.tensor([-0.0, NAN, INF, 2.5], dtype=torch.bfloat16), -2.5),
                {"rounding_mode": "floor"})
    back = Case.from_json(case.to_json())
    assert back.key() == case.key()
    assert torch.equal(back.call()[0].isnan(), case.call()[0].isnan())
    assert torch.signbit(back.args[0][0]) and back.args[0].dtype == torch.bfloat16
    assert decode(encode([torch.int8, None, -0.0, (1, 2)])) == [torch.int8, None, -0.0, (1, 2)]
    assert math.copysign(1, decode(encode(-0.0))) < 0
    assert case.special_values() == {"nan", "inf", "-0.0"}
    assert case.describe() == "aten.div.Tensor_mode(bfloat16[4]{-0.0, nan, inf, 2.5}, -2.5, rounding_mode='floor')"


def test_a_batch_module_makes_every_call_and_splits_the_results_back():
    cases = [Case("aten::add.Tensor", (torch.ones(2), torch.ones(2))), Case("aten::split.Tensor", (torch.arange(5), 2))]
    module = BatchModule(cases)
    module.counts = [1, 3]
    per_case = module.split(list(module(*module.inputs())))
    assert [len(r) for r in per_case] == [1, 3]
    assert per_case[1][2].tolist() == [4]


def test_failure_kinds_drop_the_numbers():
    assert failure_kind("wrong", "NaN differs at [0, 2] (1 of 3): -inf, torch gives nan") == "wrong: NaN differs at #"
    assert failure_kind("error", "compile: PassFailure: pass 'x' failed: Integer value -2 is out") == (
        "error: compile: PassFailure: pass # failed: Integer")


def test_minimize_keeps_the_failure_and_shrinks_the_case():
    case = Case("aten::add.Tensor", (torch.tensor([[1.0, NAN, 3.0], [4.0, 5.0, 6.0]]), torch.tensor([2.0, 2.0, 2.0])))
    small = minimize(case, lambda c: bool(torch.isnan(c.tensors()[0]).any()))
    assert [t.numel() for t in small.tensors()] == [1, 1]
    assert torch.isnan(small.tensors()[0]).all() and valid(small)


def test_every_overload_of_the_table_has_a_strategy():
    assert len(fuzzed_ops()) > 400
    assert "aten::div.Scalar_mode" in fuzzed_ops() and "forge::fused_linear.default" in fuzzed_ops()


@pytest.mark.parametrize("op", ["aten::div.Tensor_mode", "aten::conv2d.default", "aten::scatter.src",
                                "aten::max_pool2d.default", "aten::linalg_lu_solve.default"])
def test_drawn_cases_are_valid_calls_and_the_same_for_a_seed(op):
    cases = draw_cases(op, 8, seed=3)
    assert len(cases) >= 6 and all(valid(c) for c in cases)
    assert [c.key() for c in cases] == [c.key() for c in draw_cases(op, 8, seed=3)]
