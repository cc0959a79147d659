"""The harness's own rules (forge/coverage): how a sample is judged (the fuzzer's comparison with the
OpInfo's tolerance, documented deviations apart), what eager alone rules out, how an entry's samples
add up, and that a wrong value can never become an expected failure."""

from __future__ import annotations

import torch

from forge.coverage.opinfo import (
    DEVIATION,
    NOT_EXPORTABLE,
    PASS,
    RANDOM,
    REFUSED,
    SKIPPED,
    WRONG,
    OpResult,
    SampleCase,
    SampleResult,
    entry_result,
    prejudge,
    summary,
)
from forge.coverage.page import is_wrong_value, read_expected, render_page, write_expected, write_failures
from forge.coverage.zoo import ZooResult
from forge.testing.fuzz import run as batch
from tests.coverage.test_samples import Sample, entry


def test_a_sample_is_judged_by_the_fuzzers_rules_with_the_opinfo_tolerance():
    case = SampleCase(entry(torch.abs, [], "abs"), Sample(torch.ones(2)), 0)
    e = [torch.tensor([1.0, 0.0])]
    assert case.mismatch(e, [torch.tensor([1.0 + 5e-6, 0.0])]) is None  # within 1e-5
    assert case.mismatch(e, [torch.tensor([1.1, 0.0])]).startswith("value differs at [0]")
    assert case.mismatch(e, [torch.tensor([1.0, -0.0])]).startswith("signed zero differs at [1]")
    assert case.mismatch(e, [torch.tensor([1, 0])]).startswith("dtype int64")


def test_a_documented_deviation_is_not_a_pass():
    case = SampleCase(entry(torch.relu, [], "relu"), Sample(torch.tensor([float("nan"), 1.0])), 0)
    status, detail = batch._judge("openvino", case, [torch.tensor([float("nan"), 1.0])], [torch.tensor([0.0, 1.0])])
    assert status == DEVIATION and detail.startswith("nan-through-max-min")
    plain = SampleCase(entry(torch.relu, [], "relu"), Sample(torch.tensor([2.0, 1.0])), 0)
    assert batch._judge("openvino", plain, [torch.tensor([2.0, 1.0])], [torch.tensor([0.0, 1.0])])[0] == WRONG


def test_eager_rules_out_random_uninitialized_and_non_tensor_outputs():
    def seeded(x):  # as OpInfo's wrapper_set_seed: a fixed seed inside the op
        torch.manual_seed(42)
        return torch.bernoulli(x)

    half = torch.full((64,), 0.5)
    assert prejudge(SampleCase(entry(seeded, [], "bernoulli"), Sample(half), 0)).status == RANDOM
    assert prejudge(SampleCase(entry(torch.empty_like, [], "empty_like"), Sample(half), 0)).reason.startswith(
        "uninitialized output (aten::empty_like)"
    )
    assert prejudge(SampleCase(entry(torch.equal, [], "equal"), Sample(half, (half,)), 0)).status == SKIPPED
    assert prejudge(SampleCase(entry(torch.abs, [], "abs"), Sample(half), 0)) is None


def test_an_entry_is_its_worst_sample_and_counts_every_sample():
    r = entry_result(
        "div", [SampleResult(3, REFUSED, "interpret", "import: x"), SampleResult(1, RANDOM, "sample", "r")], 5
    )
    assert (r.status, r.stage, r.reason, r.counts, r.total) == (REFUSED, "interpret", "import: x", {
        REFUSED: 1, PASS: 5, RANDOM: 1}, 7)  # fmt: skip
    assert [s.index for s in r.samples] == [1, 3]
    assert OpResult.from_json(r.to_json()) == r
    assert entry_result("x", [SampleResult(0, NOT_EXPORTABLE, "interpret", "export: no")], 0).status == NOT_EXPORTABLE


def _results():
    wrong = SampleResult(2, WRONG, "openvino", "value differs at [0] (1 of 2): 0.5, torch gives 0.4")
    return [
        entry_result("abs", [], 3, 0.1),
        entry_result("sort", [SampleResult(0, REFUSED, "interpret", "import: unsupported aten.sort")], 2, 0.2),
        entry_result("equal", [SampleResult(0, NOT_EXPORTABLE, "interpret", "export: data-dependent")], 0, 0.1),
        entry_result("mul", [wrong], 4, 0.1),
    ]


def test_summary_counts_samples_and_entries():
    s = summary(_results())
    assert (s["entries"], s["samples"], s["judged_samples"], s["wrong_values"]) == (4, 12, 11, 1)
    assert s["sample_counts"][PASS] == 9 and s["sample_pass_rate"] == 0.8182
    assert s["entry_counts"][PASS] == 1 and s["judged_entries"] == 3


def test_a_wrong_value_is_never_written_as_expected(tmp_path):
    path = tmp_path / "expected.txt"
    wrong = write_expected(path, _results())
    assert [r.op for r in wrong] == ["mul"]
    expected = read_expected(path)
    assert sorted(expected) == ["abs", "equal", "sort"]
    assert expected["sort"].counts == {REFUSED: 1, PASS: 2}
    assert expected["sort"].reason == "import: unsupported aten.sort"
    assert "9 of 11 judged samples pass (81.8%)" in path.read_text()
    assert is_wrong_value(_results()[3]) and not is_wrong_value(_results()[1])


def test_failure_list_and_page(tmp_path):
    write_failures(tmp_path / "f.txt", _results())
    text = (tmp_path / "f.txt").read_text()
    assert "## openvino wrong: value differs at # (1)\nmul#2\twrong\topenvino" in text
    zoo = [
        ZooResult("gpt2", "sdpa", "pass", "", 10, 5, {"aten.gather": 2}, 2, 3, 1, 1e-7, 1e-15, 1.5, 0.8, 0.955),
        ZooResult("bert", "sdpa", "error", "compile: EmitError: no"),
    ]
    page = render_page(_results(), zoo, {"when": "now", "seconds": 1.0, "torch": "2"})
    assert "| samples | 12 | 11 | **81.8%** | 1 | 0 | 1 | 0 | 9 | 1 | 0 | 0 |" in page
    assert "| entries | 4 | 3 | **33.3%** | 1 | 0 | 1 | 0 | 1 | 1 | 0 | 0 |" in page
    assert "**Wrong values: 1** (samples)." in page
    assert "| `mul` #2 | openvino | value differs at [0] (1 of 2): 0.5, torch gives 0.4 |" in page
    assert "| gpt2 | sdpa | pass | 10 | 5 | aten.gather: 2 | 2 | 80.0% / 95.5% | 3 → 1 |" in page
    assert "| bert | sdpa | error: compile: EmitError: no |" in page
    assert "| `sort` | refused | 3 |  |  | 1 |  | 2 |  |  |  | interpret: import: unsupported aten.sort |" in page


def test_a_reason_is_the_same_text_wherever_the_clone_lives():
    """CI clones into a longer path than a developer's: the 300-character clip must not cut a
    location before it is written as <file> (fft.ihfft2's record differed only by that)."""
    from forge.coverage.opinfo import stable

    def reason(root: str) -> str:
        where = f"(first at {root}/.venv/lib/python3.11/site-packages/torch/fft.py:12)"
        message = "import: 3 unsupported ATen op(s): " + " ".join(f"aten.op{i}.default x1 {where}" for i in range(3))
        return stable(batch._one_line(ValueError(message)))

    assert reason("/w") == reason("/check/work/a/much/longer/clone/directory/than/a/developer/uses/main")
    assert "<file>" in reason("/w") and "/w" not in reason("/w")
