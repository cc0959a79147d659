"""forge.testing.bisect names the first divergent op at the import stage, with the model's source line:
a planted import bug (floor division imported as plain division, issue 28's case) and a planted wrong
kernel are each found at the right node and line; a correct model has no divergence."""

from __future__ import annotations

import inspect

import torch

import forge.frontend.fx_importer as fx_importer
from forge.frontend.normalize import op_class
from forge.testing.bisect import first_divergence


class PositionalEncoding(torch.nn.Module):
    def forward(self, t):
        a = t * 2
        b = torch.div(a, 3, rounding_mode="floor")  # the line a planted import bug must name
        return torch.exp(b * 0.1) + 1


LINE = inspect.getsource(PositionalEncoding).splitlines().index(
    '        b = torch.div(a, 3, rounding_mode="floor")  # the line a planted import bug must name'
) + inspect.getsourcelines(PositionalEncoding)[1]
T = torch.linspace(-20, 20, 16)


def test_a_correct_model_has_no_divergence():
    assert first_divergence(PositionalEncoding(), (T,)) is None


def test_a_planted_import_bug_is_named_with_its_op_stage_and_line(monkeypatch):
    original = fx_importer._scalar_overload
    plain = op_class(torch.ops.aten.div.Scalar)  # the overload that drops rounding_mode

    def wrong(node, target):
        return plain if "div" in str(target) else original(node, target)

    monkeypatch.setattr(fx_importer, "_scalar_overload", wrong)
    found = first_divergence(PositionalEncoding(), (T,))
    assert found is not None and found.op == "aten.div.Scalar" and found.stage == "import", found
    assert found.location == (__file__, LINE), found
    assert 0 < found.max_diff <= 1 and found.scale > 1
    assert str(found).startswith(f"aten.div.Scalar (div) at {__file__}:{LINE}, import: max |diff|")


def test_a_planted_wrong_kernel_is_named_at_its_op(monkeypatch):
    exp = op_class(torch.ops.aten.exp.default)
    right = exp.call
    monkeypatch.setattr(exp, "call", lambda self, values: right(self, values) * 1.01)
    found = first_divergence(PositionalEncoding(), (T,))
    assert found is not None and found.op == "aten.exp" and found.node == "exp", found
    assert found.location is not None and found.location[1] == LINE + 1


def test_forge_bisect_prints_the_first_divergent_op_and_fails(monkeypatch, capsys):
    import forge.cli.main as cli

    original = fx_importer._scalar_overload
    plain = op_class(torch.ops.aten.div.Scalar)
    monkeypatch.setattr(fx_importer, "_scalar_overload",
                        lambda node, target: plain if "div" in str(target) else original(node, target))
    monkeypatch.setattr(cli, "_build", lambda args: (PositionalEncoding(), (T,)))
    assert cli.main(["bisect", "gpt2", "--small"]) == 1
    assert capsys.readouterr().out.startswith(f"aten.div.Scalar (div) at {__file__}:{LINE}, import:")
