"""Special values on the runtimes (issue 28): a max-reduction over a row of -inf gives -inf (and a
min-reduction over a row of +inf gives +inf), as torch, though OpenVINO's ReduceMax (ReduceMin) starts
from the lowest (highest) finite value (forge.kinds.elementwise corrects it in the graph). Rows mixing
the infinity with finite values, the extreme finite value itself, a -0.0 extreme, keepdim and the half
dtypes are checked beside it, so the correction cannot change any other row."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import forge
from tests.conftest import require_runtime

NINF = float("-inf")
INF = float("inf")


class Maxes(torch.nn.Module):
    def forward(self, x):
        return torch.amax(x, -1), torch.amax(x, (0, 1), keepdim=True), torch.amax(x, 0)


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_the_max_of_a_row_of_minus_infinity_is_minus_infinity(runtime, dtype):
    require_runtime(runtime)
    lowest = torch.finfo(dtype).min
    rows = [[NINF, NINF, NINF], [1.0, NINF, 2.0], [lowest, NINF, NINF], [-0.0, NINF, -1.0], [NINF, NINF, NINF]]
    x = torch.tensor(rows, dtype=dtype)
    expected = Maxes()(x)
    got = forge.compile(Maxes(), (x,), runtime=runtime)(x)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and torch.equal(g, e) and torch.equal(g.signbit(), e.signbit()), (g, e)
    assert got[0][0] == NINF and got[0][2] == lowest and got[0][3] == 0 and got[0][3].signbit()


class Mins(torch.nn.Module):
    def forward(self, x):
        return torch.amin(x, -1), torch.amin(x, (0, 1), keepdim=True), x.min(0).values


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
def test_the_min_of_a_row_of_plus_infinity_is_plus_infinity(runtime):
    """The mirror: ReduceMin starts from the highest finite value (a masked norm of order -inf over a row
    the mask fills with +inf gave 3.4e38)."""
    require_runtime(runtime)
    inf, highest = float("inf"), torch.finfo(torch.float32).max
    x = torch.tensor([[inf, inf, inf], [1.0, inf, 2.0], [highest, inf, inf], [0.0, inf, 1.0], [inf, inf, inf]])
    expected = Mins()(x)
    got = forge.compile(Mins(), (x,), runtime=runtime)(x)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and torch.equal(g, e) and torch.equal(g.signbit(), e.signbit()), (g, e)
    assert got[0][0] == inf and got[0][2] == highest


class Norm(torch.nn.Module):
    def __init__(self, order: float):
        super().__init__()
        self.order = order

    def forward(self, x):
        return torch.linalg.vector_norm(x, self.order, dim=-1)


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("order", [1e-40, -1e-40, 1e-50, 1e39, -1e39, 0.5])
def test_a_norm_whose_order_or_its_reciprocal_leaves_float32(runtime, dtype, order):
    """torch's kernel holds `ord` and `1 / ord` in its f32 accumulation type: an order of 1e-40 (an f32
    subnormal) has the reciprocal +inf, 1e-50 is 0 there, 1e39 is inf. The lowering packed the Python floats
    as f32 constants and failed ("float too large to pack with f format", a fuzz case of ord=1e-40)."""
    require_runtime(runtime)
    x = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 0.0], [0.5, 0.25, 1e-30], [-3.0, 0.0, 1.0]]).to(dtype)
    expected = Norm(order)(x)
    got = forge.compile(Norm(order), (x,), runtime=runtime)(x)
    torch.testing.assert_close(got, expected, equal_nan=True)


NUMBER_OPS = {
    "add": lambda x, s: x + s,
    "sub": lambda x, s: x - s,
    "rsub": lambda x, s: s - x,
    "mul": lambda x, s: x * s,
    "div": lambda x, s: x / s,
    "pow": lambda x, s: x**s,
    "add_alpha": lambda x, s: torch.add(x, s, alpha=1e-10),
    "eq": lambda x, s: x == s,
    "lt": lambda x, s: x < s,
    "ge": lambda x, s: x >= s,
}


class WithNumber(torch.nn.Module):
    def __init__(self, name: str, number: float):
        super().__init__()
        self.name, self.number = name, number

    def forward(self, x):
        return NUMBER_OPS[self.name](x, self.number)


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
@pytest.mark.parametrize("number", [1e40, -1e40, 3.5e38])
@pytest.mark.parametrize("name", sorted(NUMBER_OPS))
def test_a_python_number_beyond_float32_is_an_infinity(runtime, name, number):
    """torch casts the Python operand of arithmetic and comparisons to float32 unchecked: `x + 1e40` adds inf
    (`inf + -1e40` is nan, `x == 1e40` holds at inf), and `add(x, 1e40, alpha=1e-10)` scales the infinity, not
    1e40 (which Python's product made 1e30). The lowering packed 1e40 as a float32 constant and failed ("float too
    large to pack with f format"), or multiplied in double."""
    require_runtime(runtime)
    x = torch.tensor([[INF, -INF, 3.0e38, -1.5, 0.0, -0.0]])
    module = WithNumber(name, number)
    got = forge.compile(module, (x,), runtime=runtime)(x)
    torch.testing.assert_close(got, module(x), equal_nan=True)


CHECKED_SCALARS = {
    "masked_fill": (torch.float32, lambda x: x.masked_fill(x > 0, 1e40)),
    "clamp": (torch.float32, lambda x: x.clamp(max=-1e40)),
    "clamp_min": (torch.float32, lambda x: torch.clamp_min(x, 1e40)),
    "where": (torch.float32, lambda x: torch.where(x > 0, x, 1e40)),
    "hardtanh": (torch.float32, lambda x: F.hardtanh(x, -1e40, 1.0)),
    "int8_masked_fill": (torch.int8, lambda x: x.masked_fill(x > 0, 300)),
    "int8_clamp": (torch.int8, lambda x: x.clamp(max=300)),
    "int8_add_alpha": (torch.int8, lambda x: torch.add(x, x, alpha=300)),
}


class WithScalar(torch.nn.Module):
    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def forward(self, x):
        return CHECKED_SCALARS[self.name][1](x)


@pytest.mark.parametrize("name", sorted(CHECKED_SCALARS))
def test_a_scalar_argument_beyond_its_dtype_is_refused_as_torch_refuses_it(name):
    """A fill value, a clamp bound, an alpha: torch converts these checked and raises "value cannot be converted
    to type ... without overflow". The op runs torch's own kernel, which raises the same; before, int8
    `masked_fill(x, 300)` gave 44 (the constant wrapped) and the float32 ones failed to compile."""
    dtype = CHECKED_SCALARS[name][0]
    x = torch.tensor([[3, -5, 0, 7]], dtype=dtype)
    module = WithScalar(name)
    with pytest.raises(RuntimeError, match="without overflow"):
        module(x)
    compiled = forge.compile(module, (x,))
    with pytest.raises(RuntimeError, match="without overflow"):
        compiled(x)


class HugeCorrection(torch.nn.Module):
    def forward(self, x):
        return torch.var(x, correction=-1e40), torch.var_mean(x, dim=-1, correction=-1e39)


def test_a_variance_whose_divisor_leaves_float32():
    """torch divides by `n - correction` in double (2e-40 here, an f32 subnormal); the lowering packed the
    divisor as an f32 constant and failed. It now runs torch's kernel."""
    x = torch.tensor([[1.0, 2.0, 3.0], [0.5, -4.0, 8.0]])
    got = forge.compile(HugeCorrection(), (x,))(x)
    want = HugeCorrection()(x)
    torch.testing.assert_close(got[0], want[0])
    for g, w in zip(got[1], want[1], strict=True):
        torch.testing.assert_close(g, w)
