"""The OpInfo harness runs every sample of an entry, not the first (forge/coverage/opinfo.py), and
a sample's Python numbers reach the op as numbers: the div-by-number bug of issue 28 (a `div` whose
divisor is a tensor passed while `div` by a Python number was wrong) is caught.

The entries here are small stand-ins for OpInfo entries (the attributes the harness reads), run on
the interpreter (and OpenVINO once): seconds, not the op database's minutes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from forge.coverage.opinfo import PASS, REFUSED, WRONG, SampleCase, run_op
from forge.frontend import fx_importer
from forge.testing.fuzz.cases import BatchModule


@dataclass
class Sample:
    input: Any
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


def entry(op, samples: list[Sample], name: str = "div") -> SimpleNamespace:
    """An OpInfo stand-in: `op` and its samples (a fresh copy per call, as OpInfo makes them)."""

    def sample_inputs(info, device, dtype, requires_grad):
        return iter([Sample(s.input.clone(), s.args, s.kwargs) for s in samples])

    return SimpleNamespace(
        name=name, variant_test_name="", op=op, aten_name=name, decorators=(), sample_inputs_func=sample_inputs
    )


X = torch.tensor([[1.5, -2.0, 3.0], [4.0, -5.5, 6.0]])
DIV = entry(torch.div, [Sample(X, (torch.full((3,), 2.0),)), Sample(X, (2.5,)), Sample(X, (torch.tensor(-4.0),))])
"""Sample #1 divides by a Python number, #0 and #2 by tensors."""


@pytest.fixture
def div_by_number_is_mul(monkeypatch):
    """A planted import bug: a Python-number divisor makes `aten.mul.Scalar` (x * 2.5 for x / 2.5);
    a tensor divisor is imported as it should be."""
    real = fx_importer._scalar_overload

    def planted(node, target):
        cls = real(node, target)
        if cls is not None and target._schema.name == "aten::div":
            return fx_importer.op_class(torch.ops.aten.mul.Scalar)
        return cls

    monkeypatch.setattr(fx_importer, "_scalar_overload", planted)


def test_every_sample_runs_and_passes():
    result = run_op(DIV, runtimes=["openvino"])
    assert (result.status, result.counts, result.samples) == (PASS, {PASS: 3}, [])


def test_a_python_number_stays_a_number_in_the_call():
    seen = []
    case = SampleCase(entry(lambda x, d: seen.append(d) or x / d, []), Sample(X, (2.5,)), 1)
    module = BatchModule([case])
    program = torch.export.export(module, module.inputs())
    assert len(case.tensors()) == 1 and seen == [2.5] and all(type(d) is float for d in seen)
    divs = [n for n in program.graph.nodes if n.op == "call_function"]
    assert [n.args[1] for n in divs] == [2.5], "the number is baked into the graph, not an input"


def test_a_planted_div_by_number_bug_is_a_wrong_value_of_that_sample_only(div_by_number_is_mul):
    result = run_op(DIV, runtimes=[])
    assert result.status == WRONG and result.counts == {WRONG: 1, PASS: 2}
    [wrong] = result.samples
    assert (wrong.index, wrong.stage) == (1, "interpret") and wrong.reason.startswith("value differs")


def test_a_sample_that_fails_alone_is_split_from_the_batch():
    def fft_or_abs(x, kind):
        return torch.fft.rfft(x).abs() if kind == "fft" else x.abs()

    samples = [Sample(X, ("abs",)), Sample(X, ("abs",)), Sample(X, ("fft",)), Sample(X, ("abs",))]
    result = run_op(entry(fft_or_abs, samples, "mixed"), runtimes=[])
    assert result.counts == {REFUSED: 1, PASS: 3}
    assert [(s.index, s.status) for s in result.samples] == [(2, REFUSED)]
    assert "unsupported ATen op" in result.samples[0].reason and "<file>" in result.samples[0].reason
