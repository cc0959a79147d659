"""forge bisect names planted faults: a wrong import, a bad rewrite and a wrong runtime kernel, each at the
stage that made it and at the model's source line; a correct model diverges nowhere."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn
from xdsl.passes import ModulePass

from backends.nnfactory.runtime.openvino_runtime import OpenVINOGraphBuilder
from forge.driver import registry
from forge.driver.bisect import bisect, compare
from forge.driver.options import CompileOptions
from forge.frontend import fx_importer
from forge.pipelines import DEFAULT_PIPELINE


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        d = h - x  # SUB
        s = torch.sigmoid(d * 2)  # SIGMOID
        return s + h


def _line(marker: str) -> str:
    lines, start = inspect.getsourcelines(Model.forward)
    index = next(i for i, text in enumerate(lines) if f"# {marker}" in text)
    return f"{inspect.getsourcefile(Model)}:{start + index}"


@pytest.fixture
def example():
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(4, 8),)


def test_a_correct_model_diverges_nowhere(example):
    result = bisect(*example)
    assert result.first is None, result.summary()
    assert [status for _, status in result.stages] == ["ok"] * len(result.stages)
    assert [stage for stage, _ in result.stages][:2] == ["frontend normalization", "import"]
    assert result.stages[-1][0] == "runtime (openvino)"


def test_a_planted_import_bug_is_named_at_import(example, monkeypatch):
    real = fx_importer.op_class

    def sub_as_add(target):  # the importer builds aten.add.Tensor for a subtraction
        return real(torch.ops.aten.add.Tensor if target is torch.ops.aten.sub.Tensor else target)

    monkeypatch.setattr(fx_importer, "op_class", sub_as_add)
    first = bisect(*example).first
    assert (first.stage, first.op, first.location) == ("import", "aten.add.Tensor", _line("SUB")), first


class SwapSubOperands(ModulePass):
    """A bad rewrite: a - b becomes b - a."""

    name = "test-swap-sub"

    def apply(self, ctx, module) -> None:
        for op in module.walk():
            if op.name == "aten.sub.Tensor":
                op.operands = (op.operands[1], op.operands[0])


def test_a_planted_bad_rewrite_is_named_at_its_pass(example, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTERED_PASSES", dict(registry._REGISTERED_PASSES))
    registry.register_pass(SwapSubOperands)
    options = CompileOptions(pipeline=("dce", "test-swap-sub", *DEFAULT_PIPELINE))
    result = bisect(*example, options=options)
    first = result.first
    assert (first.stage, first.op, first.location) == ("pass test-swap-sub", "aten.sub.Tensor", _line("SUB")), first
    assert ("pass dce", "ok") in result.stages


def test_a_planted_wrong_kernel_is_named_at_the_runtime(example, monkeypatch):
    monkeypatch.setattr(OpenVINOGraphBuilder, "_op_sigmoid", OpenVINOGraphBuilder._op_tanh)
    result = bisect(*example)
    first = result.first
    assert first.stage == "runtime (openvino)", result.summary()
    assert (first.op, first.location) == ("aten.sigmoid", _line("SIGMOID")), first
    assert ("lowering (npuir, buffer)", "ok") in result.stages


@pytest.mark.parametrize(
    ("expected", "got", "diverges"),
    [
        (torch.tensor([1.0, float("nan")]), torch.tensor([1.0, float("nan")]), False),
        (torch.tensor([1.0, float("nan")]), torch.tensor([float("nan"), 1.0]), True),
        (torch.tensor([float("-inf")]), torch.tensor([-3.4e38]), True),
        (torch.tensor([-7 // 2]), torch.tensor([-3]), True),
        (torch.tensor([1.0]), torch.tensor([1.0 + 1e-6]), False),
        (torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64), True),
        (torch.tensor([True]), torch.tensor([False]), True),
    ],
)
def test_compare_follows_nans_infinities_integers_and_dtypes(expected, got, diverges):
    assert compare(expected, got)[0] is diverges


def test_a_failing_check_names_the_first_divergent_op(example, monkeypatch):
    import forge

    monkeypatch.setattr(OpenVINOGraphBuilder, "_op_sigmoid", OpenVINOGraphBuilder._op_tanh)
    parity = forge.compile(*example, check=True).report["parity"]
    assert parity["ok"] is False and parity["max_abs"] > parity["tolerance"]
    first = parity["first_divergence"]
    assert (first["stage"], first["op"], first["location"]) == ("runtime (openvino)", "aten.sigmoid", _line("SIGMOID"))


def test_a_passing_check_is_ok(example):
    import forge

    parity = forge.compile(*example, check=True).report["parity"]
    assert parity["ok"] is True and "first_divergence" not in parity


def build_example():
    """`forge bisect tests/compiler/test_bisect.py:build_example`'s callable."""
    torch.manual_seed(0)
    return Model().eval(), (torch.randn(4, 8),)


def test_forge_bisect_names_the_op_and_exits_1(monkeypatch, capsys, tmp_path):
    from forge.cli.main import main

    real = fx_importer.op_class
    monkeypatch.setattr(fx_importer, "op_class", lambda t: real(
        torch.ops.aten.add.Tensor if t is torch.ops.aten.sub.Tensor else t))
    out_json = tmp_path / "b.json"
    assert main(["bisect", f"{__file__}:build_example", "--json", str(out_json)]) == 1
    out = capsys.readouterr().out
    assert f"first divergent op: aten.add.Tensor at {_line('SUB')}, import: max |diff|" in out
    assert '"stage": "import"' in out_json.read_text()


def test_forge_bisect_of_a_correct_model_exits_0(capsys):
    from forge.cli.main import main

    assert main(["bisect", f"{__file__}:build_example"]) == 0
    assert "no divergence from PyTorch at any stage" in capsys.readouterr().out


def test_forge_bisect_says_what_is_wrong_with_its_target(capsys):
    from forge.cli.main import main

    assert main(["bisect", "no_such_model"]) == 1
    assert "neither a zoo model nor module:callable" in capsys.readouterr().err


class PositionalEncoding(nn.Module):
    """Issue 28's case: a floor division by a Python number in a positional encoding."""

    def forward(self, t):
        a = t * 2
        b = torch.div(a, 3, rounding_mode="floor")  # FLOOR
        return torch.exp(b * 0.1) + 1


def test_the_issues_floor_division_imported_as_plain_division_is_named_at_import(monkeypatch):
    """The bug the issue found by hand, planted again: `div.Tensor_mode(x, 3, rounding_mode="floor")` imported
    as `div.Scalar`, which drops the rounding mode. The bisector says so in one command."""
    real = fx_importer._scalar_overload
    plain = fx_importer.op_class(torch.ops.aten.div.Scalar)
    monkeypatch.setattr(fx_importer, "_scalar_overload",
                        lambda node, target: plain if "div" in str(target) else real(node, target))
    lines, start = inspect.getsourcelines(PositionalEncoding.forward)
    line = start + next(i for i, text in enumerate(lines) if "# FLOOR" in text)
    first = bisect(PositionalEncoding(), (torch.linspace(-20, 20, 16),)).first
    assert (first.stage, first.op, first.location) == ("import", "aten.div.Scalar", f"{__file__}:{line}"), first
    assert 0 < first.max_abs <= 1 and first.scale > 1
    assert str(first).startswith(f"aten.div.Scalar at {__file__}:{line}, import: max |diff|")


def test_the_fixed_floor_division_matches_at_every_stage():
    result = bisect(PositionalEncoding(), (torch.linspace(-20, 20, 16),))
    assert result.first is None, result.summary()
