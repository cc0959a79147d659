"""Floor and trunc division by Python numbers and tensors (issue 28): the imported IR, the reference
interpreter and the compiled program on both runtimes give torch's values exactly, signed zeros
included, for float (f32, f16, bf16) and integer (i64, i32, i8, u8) dtypes. Each division once in one
module per dtype, so each runtime compiles once per dtype."""

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
    """Negative dividends and divisors (unsigned: wrap-free values), the dtype's extremes, and for floats
    zero divisors (inf, nan), -0.0, NaN, infinities and a subnormal."""
    if dtype == torch.uint8:
        t, d = torch.tensor([7, 5, 1, 0, 1, 5, 7, 9, 200, 255]), torch.tensor([2, 3, 2, 3, 3, 3, 2, 4, 7, 1])
    else:
        t = torch.tensor([-7, -5, -1, 0, 1, 5, 7, 9, -128, 127])
        d = torch.tensor([2, -3, 2, -3, -3, 3, -2, 4, -3, 5])
    if dtype.is_floating_point:
        nan, inf = float("nan"), float("inf")
        t = torch.cat([t.to(dtype), torch.tensor([-1.5, 0.5, -0.0, 2.5, 1.0, -1.0, 0.0, nan, inf, -inf, -0.0, 1e-40],
                                                 dtype=dtype)])
        d = torch.cat([d.to(dtype), torch.tensor([2.0, -2.0, 3.0, 0.5, 0.0, 0.0, 0.0, 1.0, 3.0, 2.0, -2.0, 3.0],
                                                 dtype=dtype)])
    return t.to(dtype), d.to(dtype)


def _assert_exact(got, expected) -> None:
    """Same dtype and shape; the same values (compared in float64, which holds every value here exactly),
    NaN at the same places, and the same sign of every zero."""
    for name, g, e in zip(DIVISIONS, got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape, (name, g.dtype, e.dtype)
        g64, e64 = g.double(), e.double()
        assert torch.equal(g64.isnan(), e64.isnan()), f"{name}: NaN differs: {g.tolist()} != {e.tolist()}"
        assert torch.equal(g64.nan_to_num(0.0), e64.nan_to_num(0.0)), f"{name}: {g.tolist()} != {e.tolist()}"
        if e.dtype.is_floating_point:
            zeros = e64 == 0  # a NaN's sign bit means nothing (bf16's NaN comes back negative)
            assert torch.equal(torch.signbit(g64[zeros]), torch.signbit(e64[zeros])), f"{name}: signed zeros differ"


ALL_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8, torch.uint8]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_the_interpreter_divides_as_torch(dtype):
    t, d = _inputs(dtype)
    expected = Divisions()(t, d)
    imported = import_module(Divisions(), (t, d))
    imported.module.verify()
    _assert_exact(interpret(imported.module, imported.weights, t, d), expected)
    assert [-4, -2] == [(-7) // 2, 5 // -3] == [int(torch.tensor(-7) // 2), int(torch.tensor(5) // -3)]


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_the_compiled_program_divides_as_torch(runtime, dtype):
    require_runtime(runtime)
    t, d = _inputs(dtype)
    compiled = forge.compile(Divisions(), (t, d), runtime=runtime)
    _assert_exact(compiled(t, d), Divisions()(t, d))
