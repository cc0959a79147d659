"""Floor and trunc division by Python numbers and tensors (issue 28): the imported IR, the reference
interpreter and the compiled program on both runtimes give torch's values exactly, signed zeros
included. Each division once in one module per dtype, so each runtime compiles twice in all."""

from __future__ import annotations

import pytest
import torch

import forge
from forge.frontend.fx_importer import import_module
from forge.interpreter import interpret
from tests.conftest import require_runtime

DIVISIONS = {
    "div(t, 2, floor)": lambda t, d: torch.div(t, 2, rounding_mode="floor"),
    "t // 2": lambda t, d: t // 2,
    "t // -2": lambda t, d: t // -2,
    "t // 2.5": lambda t, d: t // 2.5,
    "div(t, 3, trunc)": lambda t, d: torch.div(t, 3, rounding_mode="trunc"),
    "div(t, -3, trunc)": lambda t, d: torch.div(t, -3, rounding_mode="trunc"),
    "floor_divide(t, 2)": lambda t, d: torch.floor_divide(t, 2),
    "t // d": lambda t, d: t // d,
    "div(t, d, floor)": lambda t, d: torch.div(t, d, rounding_mode="floor"),
    "div(t, d, trunc)": lambda t, d: torch.div(t, d, rounding_mode="trunc"),
    "t / 2": lambda t, d: t / 2,
}


class Divisions(torch.nn.Module):
    def forward(self, t, d):
        return tuple(f(t, d) for f in DIVISIONS.values())


def _inputs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.tensor([-7, -5, -1, 0, 1, 5, 7, 9])
    d = torch.tensor([2, -3, 2, -3, -3, 3, -2, 4])
    if dtype.is_floating_point:
        t = torch.cat([t.to(dtype), torch.tensor([-1.5, 0.5, -0.0, 2.5], dtype=dtype)])
        d = torch.cat([d.to(dtype), torch.tensor([2.0, -2.0, 3.0, 0.5], dtype=dtype)])
    return t.to(dtype), d.to(dtype)


def _assert_exact(got, expected) -> None:
    for name, g, e in zip(DIVISIONS, got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape, (name, g.dtype, e.dtype)
        assert torch.equal(g, e), f"{name}: {g.tolist()} != {e.tolist()}"
        if e.dtype.is_floating_point:
            assert torch.equal(torch.signbit(g), torch.signbit(e)), f"{name}: signed zeros differ: {g.tolist()}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int32])
def test_the_interpreter_divides_as_torch(dtype):
    t, d = _inputs(dtype)
    expected = Divisions()(t, d)
    imported = import_module(Divisions(), (t, d))
    imported.module.verify()
    _assert_exact(interpret(imported.module, imported.weights, t, d), expected)
    assert [-4, -2] == [(-7) // 2, 5 // -3] == [int(torch.tensor(-7) // 2), int(torch.tensor(5) // -3)]


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_the_compiled_program_divides_as_torch(runtime, dtype):
    require_runtime(runtime)
    t, d = _inputs(dtype)
    compiled = forge.compile(Divisions(), (t, d), runtime=runtime)
    _assert_exact(compiled(t, d), Divisions()(t, d))
