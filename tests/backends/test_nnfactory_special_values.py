"""The nnfactory runtime's compositions on special values, against torch: comparisons (built from the sign
of a - b, with NaN and equal infinities told apart), logical ops on floats, where/masked_fill of -0.0
(a 0-d result is a one-element product, not a sum), and a dilated max pool's ties (the first of equal
elements stays) and NaN. Every pair of NaN, +-inf, +-0.0, finite, huge and tiny values; ints and bools."""

from __future__ import annotations

import math

import pytest
import torch

import forge
from tests.conftest import require_runtime

VALUES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, -1.0, 3.0e38, -3.0e38, 1e-30, 65504.0]


def _pairs(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    v = torch.tensor(VALUES).to(dtype)
    return v.repeat_interleave(len(v)), v.repeat(len(v))


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal values, NaN where torch has NaN, zeros of the same sign."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if not want.is_floating_point():
        return torch.equal(got, want)
    nan = want.isnan()
    return (
        torch.equal(got.isnan(), nan)
        and torch.equal(got[~nan], want[~nan])
        and torch.equal(got[~nan].signbit(), want[~nan].signbit())
    )


def _check(module: torch.nn.Module, *args: torch.Tensor) -> None:
    require_runtime("nnfactory")
    want = module(*args)
    got = forge.compile(module, args, runtime="nnfactory")(*args)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert _same(g, w), (i, [(a, b) for a, b in zip(g.tolist(), w.tolist(), strict=True) if a != b][:8])


class Compare(torch.nn.Module):
    def forward(self, a, b):
        return (a == b, a != b, a < b, a <= b, a > b, a >= b)


class Logical(torch.nn.Module):
    def forward(self, a, b):
        return (torch.logical_not(a), torch.logical_and(a, b), torch.logical_or(a, b), a.bool())


class WithScalar(torch.nn.Module):
    def forward(self, a):
        nan = float("nan")
        return (a == nan, a != nan, a <= nan, a >= 1.0, a == math.inf, a != -math.inf, a <= -0.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_comparisons_of_special_values_match_torch(dtype):
    _check(Compare(), *_pairs(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_logical_ops_of_special_values_match_torch(dtype):
    _check(Logical(), *_pairs(dtype))


def test_comparisons_with_scalars_match_torch():
    _check(WithScalar(), torch.tensor(VALUES))


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32])
def test_integer_comparisons_match_torch(dtype):
    info = torch.iinfo(dtype)
    v = torch.tensor([0, 1, -1, 5, info.max // 2, info.min // 2], dtype=dtype)
    _check(Compare(), v.repeat_interleave(len(v)), v.repeat(len(v)))


def test_an_integer_compared_with_nan_is_unordered():
    class M(torch.nn.Module):
        def forward(self, x):
            return (torch.eq(x, math.nan), torch.ne(x, math.nan), torch.le(x, math.nan), torch.logical_not(x))

    _check(M(), torch.tensor(1, dtype=torch.int8))


def test_bool_comparisons_match_torch():
    a = torch.tensor([True, True, False, False])
    b = torch.tensor([True, False, True, False])
    _check(Compare(), a, b)


@pytest.mark.parametrize("shape", [(), (3,)])
def test_where_and_masked_fill_keep_negative_zero(shape):
    class M(torch.nn.Module):
        def forward(self, c, x, z):
            return (torch.where(c, x, -0.0), torch.where(~c, -0.0, x), z.masked_fill(c, 1.0), torch.where(c, z, x))

    c = torch.zeros(shape, dtype=torch.bool)
    _check(M(), c, torch.ones(shape), torch.full(shape, -0.0))


def test_dilated_max_pool_keeps_the_first_of_equal_elements_and_nan():
    class M(torch.nn.Module):
        def forward(self, x):
            return (torch.nn.functional.max_pool2d(x, (2, 2), (1, 1), (0, 1), (2, 1)),)

    x = torch.tensor([0.0, -0.0, 0.0, 0.0, -0.0, -0.0, math.nan, 1.0, -0.0, 2.0]).reshape(1, 1, 10, 1)
    _check(M(), x)


def test_a_transposed_convolution_multiplies_only_the_inputs_by_the_weights():
    """An infinite weight meets only real inputs, as in torch (no 0 * inf = nan from interleaved or padding
    zeros), with strides, dilation, groups, pads and output padding."""

    class M(torch.nn.Module):
        def forward(self, x, w, w2):
            return (
                torch.nn.functional.conv_transpose1d(x, w),
                torch.nn.functional.conv_transpose1d(x, w, None, 2, 1, 1, 1, 2),
                torch.nn.functional.conv_transpose2d(x.reshape(1, 2, 1, 3), w2, None, (2, 1), 0, (1, 0), 2),
            )

    x = torch.tensor([[[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]]])
    w = torch.tensor([[[0.5, -math.inf, 2.0]], [[2.5, 1.0, math.inf]]])
    w2 = torch.tensor([[[[0.5, -math.inf]]], [[[math.nan, 1.0]]]])
    _check(M(), x, w, w2)
