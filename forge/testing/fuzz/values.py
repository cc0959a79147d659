"""The values of fuzz cases: tensors of every fuzzed dtype and shape, with plain, integral, special
(NaN, ±inf, -0.0, subnormal, the largest magnitudes) and extreme values, and Python numbers.

Every choice goes through hypothesis' `draw`, so cases are reproducible from a seed.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from hypothesis import strategies as st

from forge.testing.fuzz.cases import DTYPES

MAX_NUMEL = 48
"""Elements per drawn tensor at most (cases stay small: a batch holds hundreds)."""

ALL_DTYPES = tuple(DTYPES.values())
FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

def special_floats(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    subnormal = info.tiny / 4
    return [math.nan, math.inf, -math.inf, -0.0, 0.0, subnormal, -subnormal, info.max, -info.max, info.tiny, 1e4]


def plain_floats() -> st.SearchStrategy[float]:
    return st.one_of(
        st.integers(-8, 8).map(float),
        st.floats(-8.0, 8.0, allow_nan=False, width=32),
        st.sampled_from([0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.25]),
    )


def float_values(dtype: torch.dtype, profile: str) -> st.SearchStrategy[float]:
    plain = plain_floats()
    if profile == "plain":
        return plain
    if profile == "integral":
        return st.integers(-9, 9).map(float)
    special = st.sampled_from(special_floats(dtype))
    if profile == "extreme":
        big = torch.finfo(dtype).max
        return st.one_of(st.floats(-big, big, allow_nan=False, allow_infinity=False, width=32), special)
    return st.one_of(plain, plain, special)


def int_values(dtype: torch.dtype, profile: str) -> st.SearchStrategy[int]:
    info = torch.iinfo(dtype)
    small = st.integers(max(info.min, -9), min(info.max, 9))
    if profile in ("plain", "integral"):
        return small
    return st.one_of(small, small, st.sampled_from([info.min, info.max, info.min + 1, info.max - 1, 0]))


def values_for(dtype: torch.dtype, profile: str) -> st.SearchStrategy[Any]:
    if dtype == torch.bool:
        return st.booleans()
    if dtype.is_floating_point:
        return float_values(dtype, profile)
    return int_values(dtype, profile)


PROFILES = ("plain", "plain", "integral", "special", "special", "extreme")


@st.composite
def tensors(draw, shape: tuple[int, ...], dtype: torch.dtype, profile: str | None = None) -> torch.Tensor:
    """A tensor of `shape` and `dtype` with values of `profile` (drawn when None)."""
    profile = profile or draw(st.sampled_from(PROFILES))
    numel = math.prod(shape)
    values = draw(st.lists(values_for(dtype, profile), min_size=numel, max_size=numel))
    return torch.tensor(values, dtype=torch.float64 if dtype.is_floating_point else dtype).to(dtype).reshape(shape)


@st.composite
def shapes(draw, max_rank: int = 4) -> tuple[int, ...]:
    """A shape of rank 0..max_rank with dims 1..5 (one in twelve: a size-0 dim), at most MAX_NUMEL
    elements."""
    rank = draw(st.integers(0, max_rank))
    dims = [draw(st.integers(1, 5)) for _ in range(rank)]
    if dims and draw(st.integers(0, 11)) == 0:
        dims[draw(st.integers(0, rank - 1))] = 0
    while math.prod(dims) > MAX_NUMEL:
        dims[dims.index(max(dims))] -= 1
    return tuple(dims)


@st.composite
def related_shape(draw, base: tuple[int, ...]) -> tuple[int, ...]:
    """A shape for a second operand: the same, one that broadcasts with `base`, 0-d, or any."""
    how = draw(st.sampled_from(["same", "same", "broadcast", "broadcast", "scalar", "any"]))
    if how == "same":
        return base
    if how == "scalar":
        return ()
    if how == "any":
        return draw(shapes())
    keep = draw(st.integers(0, len(base)))
    suffix = list(base[len(base) - keep :])
    return tuple(1 if draw(st.booleans()) else d for d in suffix)


def python_numbers() -> st.SearchStrategy[Any]:
    """Python numbers as arguments: negative, zero, non-integral, large, beyond a dtype's range (300 for the 8-bit
    integers, 1e40 for float32), NaN, ±inf, bools."""
    return st.one_of(
        st.integers(-4, 4),
        st.sampled_from([0, 1, -1, 2, -2, 3, 7, 300, 2**31, -(2**40)]),
        st.sampled_from([0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 1e-3, 1e10, -1e10, 3.0e38, 1e40, -1e40, 1e-40]),
        st.sampled_from([math.nan, math.inf, -math.inf]),
        st.booleans(),
    )



def any_dtype(draw) -> torch.dtype:
    return draw(st.sampled_from(ALL_DTYPES))


def float_dtype(draw) -> torch.dtype:
    """A floating dtype, float32 most often."""
    return draw(st.sampled_from([torch.float32, torch.float32, torch.float16, torch.bfloat16]))
