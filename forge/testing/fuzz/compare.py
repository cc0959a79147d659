"""Comparing one case's results with torch's: the rules and the per-op tolerances.

- the number of results, each result's dtype and shape are equal;
- integer and boolean results are exact;
- floating-point results are within the op's stated tolerance (`tolerance`), element by element:
  |got - expected| <= atol + rtol * |expected|;
- NaN positions are the same, infinities are the same infinities, and where torch gives a zero
  the result is a zero of the same sign;
- a random op (torch.Tag.nondeterministic_seeded) or an uninitialized result (`empty` family) is
  compared by dtype and shape only: its values are not defined by its arguments.

The tolerance is stated per dtype (one rounding of the result's dtype, since Forge computes
reduced-precision floats in float32 and rounds once, where torch may round per step) and widened
per op where the op's own computation allows it (`OP_TOLERANCE`: transcendental functions, whose
results the runtimes approximate; sums and products, whose results depend on the order of
accumulation).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from dialects.aten_table import SIGNATURES

DTYPE_TOLERANCE: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-6, 1e-6),
    torch.float16: (1e-3, 2 * 2.0**-11),
    torch.bfloat16: (8e-3, 2 * 2.0**-8),
    torch.float64: (1e-12, 1e-12),
}
"""(atol, rtol) of an op without its own entry: about one rounding of the dtype."""

ACCUMULATING = 1e-5
"""The relative tolerance (float32) of ops whose result depends on the order of accumulation."""

OP_TOLERANCE: dict[str, float] = {}
"""float32 (atol = rtol) of the ops that need more than DTYPE_TOLERANCE, by packet name (`aten::exp`);
filled below with the reasons."""


def _widen(value: float, reason: str, *packets: str) -> None:
    del reason  # said where the table is built; kept in the call for the reader
    for packet in packets:
        OP_TOLERANCE[packet] = value


_widen(ACCUMULATING, "sums and products accumulate in an order of the runtime's choosing",
       "aten::sum", "aten::mean", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::matmul",
       "aten::linear", "aten::addmv", "aten::addbmm", "aten::convolution", "aten::conv1d", "aten::conv2d",
       "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::_convolution_mode", "aten::cumsum",
       "aten::var", "aten::var_mean", "aten::std", "aten::layer_norm", "aten::native_layer_norm",
       "aten::rms_norm", "aten::group_norm", "aten::native_group_norm", "aten::batch_norm",
       "aten::native_batch_norm", "aten::_native_batch_norm_legit", "aten::_native_batch_norm_legit_no_training",
       "aten::_native_batch_norm_legit_functional", "aten::scaled_dot_product_attention", "aten::softmax",
       "aten::_softmax", "aten::log_softmax", "aten::_log_softmax", "aten::_safe_softmax", "aten::logsumexp",
       "aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d", "aten::adaptive_avg_pool1d",
       "aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool3d",
       "aten::upsample_linear1d", "aten::upsample_bilinear2d", "aten::linalg_vector_norm", "aten::dist",
       "aten::_cdist_forward", "aten::_pdist_forward", "aten::cumprod", "aten::prod", "aten::logcumsumexp",
       "forge::fused_linear", "forge::gated_mlp", "forge::matmul_transposed", "forge::fused_conv",
       "forge::add_layer_norm")
_widen(1e-5, "transcendental functions: the runtimes' approximations are within a few ulps",
       "aten::exp", "aten::log", "aten::sin", "aten::cos", "aten::tanh", "aten::sigmoid", "aten::erf", "aten::gelu",
       "aten::silu", "aten::pow", "aten::rsqrt", "aten::sqrt", "aten::reciprocal", "aten::tan", "aten::atan",
       "aten::atan2", "aten::asin", "aten::acos", "aten::sinh", "aten::cosh", "aten::asinh", "aten::acosh",
       "aten::atanh", "aten::expm1", "aten::log1p", "aten::log2", "aten::log10", "aten::exp2", "aten::erfc",
       "aten::elu", "aten::hypot")

UNINITIALIZED = frozenset({
    "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty", "aten::new_empty_strided",
    "aten::empty_permuted",
})  # fmt: skip
"""Packets whose results hold whatever memory held: dtype and shape only."""


def packet(op: str) -> str:
    """`aten::div.Tensor_mode` -> `aten::div`."""
    return op.rpartition(".")[0]


def tolerance(op: str, dtype: torch.dtype) -> tuple[float, float]:
    """(atol, rtol) of the op's floating results of `dtype`."""
    atol, rtol = DTYPE_TOLERANCE.get(dtype, DTYPE_TOLERANCE[torch.float32])
    extra = OP_TOLERANCE.get(packet(op))
    if extra is not None:
        scale = 1.0 if dtype == torch.float32 else 4.0
        atol, rtol = max(atol, extra * scale), max(rtol, extra * scale)
    return atol, rtol


def is_random(op: str) -> bool:
    """Whether the overload draws random numbers (its values cannot be compared with eager's)."""
    return "nondeterministic_seeded" in SIGNATURES[op][3]


def values_defined(op: str) -> bool:
    """Whether the op's result values are defined by its arguments (not random, not uninitialized)."""
    return not is_random(op) and packet(op) not in UNINITIALIZED


def mismatch(op: str, expected: Sequence[torch.Tensor], got: Sequence[object]) -> str | None:
    """None when `got` matches torch's `expected` results of the overload `op` by the rules above, else
    what differs."""
    return differs(expected, got, lambda dtype: tolerance(op, dtype), values_defined(op))


def differs(
    expected: Sequence[torch.Tensor], got: Sequence[object],
    tolerance_of: Callable[[torch.dtype], tuple[float, float]], defined: bool = True,
) -> str | None:
    """The rules above with a given tolerance per floating dtype (`mismatch` states the fuzzer's per
    overload; the OpInfo harness its entries' own, forge.coverage.opinfo). `defined=False`: dtypes and
    shapes only (random or uninitialized results)."""
    if len(got) != len(expected):
        return f"{len(got)} results, torch gives {len(expected)}"
    for i, (e, g) in enumerate(zip(expected, got, strict=True)):
        where = f"result {i}: " if len(expected) > 1 else ""
        if not isinstance(g, torch.Tensor):
            return f"{where}a {type(g).__name__}, torch gives a tensor"
        problem = _mismatch_one(e, g, tolerance_of, defined)
        if problem is not None:
            return where + problem
    return None


def _mismatch_one(
    e: torch.Tensor, g: torch.Tensor, tolerance_of: Callable[[torch.dtype], tuple[float, float]], defined: bool
) -> str | None:
    if g.dtype != e.dtype:
        return f"dtype {_name(g.dtype)}, torch gives {_name(e.dtype)}"
    if tuple(g.shape) != tuple(e.shape):
        return f"shape {tuple(g.shape)}, torch gives {tuple(e.shape)}"
    if not defined or e.numel() == 0:
        return None
    e, g = e.detach(), g.detach()
    if not e.dtype.is_floating_point:
        wrong = g != e
        if wrong.any():
            return _first("value", wrong, e, g)
        return None
    atol, rtol = tolerance_of(e.dtype)
    diff, masks = _wrong_elements(e, g, atol, rtol)
    for what, wrong in masks:
        if wrong.any():
            worst = float(diff[wrong].max())
            tail = f"; max |diff| {worst:.3g} (atol {atol:g}, rtol {rtol:g})" if what == "value" else ""
            return _first(what, wrong, e, g) + tail
    return None


def _wrong_elements(
    e: torch.Tensor, g: torch.Tensor, atol: float, rtol: float
) -> tuple[torch.Tensor, list[tuple[str, torch.Tensor]]]:
    """(|g - e|, the float elements that break each rule, in the order a difference is reported): NaN
    where torch has none or none where it has one, another infinity, a value outside the tolerance, the
    other sign of a zero."""
    e64, g64 = e.detach().to(torch.float64), g.detach().to(torch.float64)
    nan_e, nan_g = e64.isnan(), g64.isnan()
    both = ~(nan_e | nan_g)
    inf = (e64.isinf() | g64.isinf()) & both
    finite = both & ~inf
    diff = (g64 - e64).abs()
    return diff, [
        ("NaN", nan_e != nan_g),
        ("infinity", inf & (e64 != g64)),
        ("value", finite & (diff > atol + rtol * e64.abs())),
        ("signed zero", finite & (e64 == 0) & (g64 == 0) & (e64.signbit() != g64.signbit())),
    ]


def _first(what: str, wrong: torch.Tensor, e: torch.Tensor, g: torch.Tensor) -> str:
    """`value differs at [1, 0] (3 of 12): -3.0, torch gives -4.0`."""
    index = tuple(int(i) for i in torch.nonzero(wrong)[0]) if wrong.dim() else ()
    count = int(wrong.sum())
    got, want = _scalar(g[index]), _scalar(e[index])
    return f"{what} differs at {list(index)} ({count} of {wrong.numel()}): {got}, torch gives {want}"


def _scalar(x: torch.Tensor) -> str:
    v = x.item()
    if isinstance(v, float) and v == 0 and torch.signbit(x):
        return "-0.0"
    return repr(v)


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def differs_where(op: str, want: torch.Tensor, got: torch.Tensor) -> torch.Tensor:
    """Elementwise: where `got` is not `want` by compare's rules (NaN, infinity, zero sign exact; values
    within the op's tolerance)."""
    if not want.dtype.is_floating_point:
        return got != want
    _, masks = _wrong_elements(want, got, *tolerance(op, want.dtype))
    out = masks[0][1]
    for _, wrong in masks[1:]:
        out = out | wrong
    return out


def computed_in_float32(case: Any, expected: Sequence[torch.Tensor], got: Sequence[Any]) -> bool:
    """Whether torch's own call with the half tensors upcast to float32 (results rounded back to the
    half type) gives `got` at every element: the difference is the half type's, not Forge's."""
    tensors = case.tensors()
    half = (torch.float16, torch.bfloat16)
    if not any(t.dtype in half for t in tensors):
        return False
    try:
        wide = case.call([t.to(torch.float32) if t.dtype in half else t.clone() for t in tensors])
    except Exception:  # the float32 call is not valid (a dtype check): no verdict
        return False
    if len(wide) != len(expected) or len(got) != len(expected):
        return False
    for want, g, w in zip(expected, got, wide, strict=True):
        if not isinstance(g, torch.Tensor) or g.dtype != want.dtype or g.shape != want.shape or w.shape != want.shape:
            return False
        if differs_where(case.op, w.to(want.dtype), g).any():
            return False
    return True
