"""The harness's own rules (forge/coverage): what counts as a match, how failures are classified,
and that a wrong value can never become an expected failure."""

from __future__ import annotations

import pytest
import torch

from forge.coverage.opinfo import FAIL, NOT_EXPORTABLE, PASS, OpResult, SampleModule, StageFailure, classify, compare
from forge.coverage.page import is_wrong_value, read_expected, render_page, write_expected, write_failures
from forge.coverage.zoo import ZooResult
from forge.frontend.fx_importer import UnsupportedOpsError


def test_compare_accepts_within_tolerance_and_equal_nans():
    e = torch.tensor([1.0, float("nan"), float("inf")])
    assert compare("run", e, e + torch.tensor([1e-6, 0.0, 0.0]), 1e-5, 1e-5) == pytest.approx(1e-6, rel=0.1)


@pytest.mark.parametrize(
    ("got", "reason"),
    [
        (torch.tensor([1.0, 2.1]), "wrong value: output max |diff| 0.1"),
        (torch.tensor([1.0, 2.0, 3.0]), "wrong shape: output (3,), expected (2,)"),
        (torch.tensor([1, 2]), "wrong dtype: output torch.int64, expected torch.float32"),
        ([torch.tensor([1.0, 2.0])] * 2, "wrong output count: 2, expected 1"),
    ],
)
def test_compare_names_what_differs(got, reason):
    with pytest.raises(StageFailure, match=reason.replace("|", r"\|").replace("(", r"\(").replace(")", r"\)")):
        compare("run", torch.tensor([1.0, 2.0]), got, 1e-5, 1e-5)


def test_integer_and_boolean_outputs_compare_exactly():
    with pytest.raises(StageFailure, match="differs in 1 of 3 elements"):
        compare("run", torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]), 1.0, 1.0)
    assert compare("run", torch.tensor(True), torch.tensor(True), 0.0, 0.0) == 0.0


def test_classify_names_unsupported_ops_and_drops_paths():
    err = UnsupportedOpsError({"aten.sort.default": (1, "x.py:3"), "aten.topk.default": (2, "x.py:4")})
    assert classify("import", err).reason == "unsupported aten op aten.sort.default, aten.topk.default"
    located = classify("import", ValueError("/work/main/forge/m.py:12: bad thing at 0x7f3a12"))
    assert located.reason == "ValueError: bad thing at 0x?"
    assert classify("import", RuntimeError("unsupported torch dtype torch.complex64")).reason.startswith("dtype: ")


def test_sample_module_takes_the_tensors_and_bakes_the_rest():
    class Sample:
        input = [torch.ones(2), torch.zeros(2)]
        args = (0,)
        kwargs = {"out": None}

    module = SampleModule(lambda xs, dim, out: torch.cat(xs, dim), Sample())
    assert len(module.tensors) == 2
    assert torch.equal(module(torch.full((2,), 3.0), torch.ones(2)), torch.tensor([3.0, 3.0, 1.0, 1.0]))


def _results():
    return [
        OpResult("abs", PASS, "run", "", 0.1),
        OpResult("sort", FAIL, "import", "unsupported aten op aten.sort.default", 0.2),
        OpResult("equal", NOT_EXPORTABLE, "export", "data-dependent shape: aten.equal.default", 0.1),
        OpResult("mul", FAIL, "run", "wrong value: output max |diff| 0.5 (atol=1e-05, rtol=1e-05)", 0.1),
    ]


def test_a_wrong_value_is_never_written_as_expected(tmp_path):
    path = tmp_path / "expected.txt"
    wrong = write_expected(path, _results())
    assert [r.op for r in wrong] == ["mul"]
    expected = read_expected(path)
    assert sorted(expected) == ["equal", "sort"]
    assert expected["sort"].reason == "unsupported aten op aten.sort.default"
    assert "1 of 3 exportable samples pass" in path.read_text()
    assert is_wrong_value(_results()[3]) and not is_wrong_value(_results()[1])


def test_failure_list_and_page(tmp_path):
    write_failures(tmp_path / "f.txt", _results())
    text = (tmp_path / "f.txt").read_text()
    assert "## fail: unsupported aten op (1)\nsort\tfail\timport" in text
    zoo = [ZooResult("gpt2", "sdpa", "pass", "", 10, 5, {"aten.gather": 2}, 2, 3, 1, 1e-7, 1e-15, 1.5, 0.8, 0.955),
           ZooResult("bert", "sdpa", "error", "compile: EmitError: no")]
    page = render_page(_results(), zoo, {"when": "now", "seconds": 1.0, "torch": "2"})
    assert "| 4 | 3 | 1 | 2 | **33.3%** | 1 | 0 | 0 |" in page
    assert "| gpt2 | sdpa | pass | 10 | 5 | aten.gather: 2 | 2 | 80.0% / 95.5% | 3 → 1 |" in page
    assert "| bert | sdpa | error: compile: EmitError: no |" in page
    assert "| `sort` | fail | import | unsupported aten op aten.sort.default |" in page
