"""npuir.cached_sdpa against torch's own kernels: `index_put_` of the new rows, then `scaled_dot_product_attention`.

The kind computes attention over a KV cache with new rows written at some positions without building the
written cache (forge/kinds/linear_algebra.py `CachedSdpa`). Drawn here: grouped-query heads, several query
rows, negative and repeated positions (a repeated position keeps its last row, as torch's serial write does),
float masks holding -inf and the dtype's minimum, keep-masks with rows that keep nothing, NaN and infinities
in the new rows and in the cache rows that are read, and NaN / inf in the *keys* of the rows that are
overwritten (hidden by a select, not an add). Not in the queries: torch's CPU sdpa kernel gives 0 for a NaN
query row without a mask and NaN with one, and npuir.sdpa gives NaN either way (a difference of sdpa itself,
not of the cache form). Nor values near the float32 maximum: torch's kernel scales after the product and
overflows where npuir.sdpa (and the math definition) does not. Stale *values* stay finite: that is the kind's stated
precondition (a probability of 0 times inf is NaN), which a generator's zeroed cache meets.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from backends.nnfactory.emitter import emit
from forge.interpreter import interpret
from tests.backends.test_emitter import assert_same, runtime_or_skip, single_op_ir

RUNTIMES = ("openvino", "nnfactory")
SPECIAL = (math.nan, math.inf, -math.inf, -0.0)


def torch_cached_attention(q, k, v, index, k_new, v_new, mask, scale):
    """What the op stands for, in torch's own kernels: the in-place row writes, then sdpa."""
    k_written, v_written = k.clone(), v.clone()
    lead = (None,) * (k.dim() - 2)  # aten.index_put's indices: none for the leading dims, as the import has them
    torch.ops.aten.index_put_(k_written, [*lead, index], k_new)  # values [..., n, D]: the indexed dim in place
    torch.ops.aten.index_put_(v_written, [*lead, index], v_new)
    return F.scaled_dot_product_attention(
        q, k_written, v_written, attn_mask=mask, scale=scale, enable_gqa=q.shape[-3] != k.shape[-3]
    )


def _type(t: torch.Tensor) -> str:
    element = {torch.float32: "f32", torch.int64: "i64", torch.bool: "i1"}[t.dtype]
    return "x".join(map(str, t.shape)) + "x" + element


@st.composite
def cases(draw):
    b = draw(st.sampled_from([1, 2]))
    hkv = draw(st.sampled_from([1, 2]))
    hq = hkv * draw(st.sampled_from([1, 2]))
    length, size, d = draw(st.sampled_from([1, 3])), draw(st.sampled_from([4, 7])), 4
    n = draw(st.integers(1, 3))
    index = torch.tensor(draw(st.lists(st.integers(-size, size - 1), min_size=n, max_size=n)), dtype=torch.int64)
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    q = torch.randn(b, hq, length, d, generator=gen)
    k, v = torch.randn(b, hkv, size, d, generator=gen), torch.randn(b, hkv, size, d, generator=gen)
    k_new, v_new = torch.randn(b, hkv, n, d, generator=gen), torch.randn(b, hkv, n, d, generator=gen)
    written = set((index % size).tolist())
    kept = [t for t in range(size) if t not in written]
    for tensor, rows in ((k, kept), (v, kept), (k_new, range(n)), (v_new, range(n))):
        if rows and draw(st.booleans()):  # a special value at a row that is read
            row = draw(st.sampled_from(list(rows)))
            tensor[..., row, draw(st.integers(0, d - 1))] = draw(st.sampled_from(SPECIAL))
    if draw(st.booleans()):  # a non-finite key in a row that is overwritten: hidden
        k[..., draw(st.sampled_from(sorted(written))), 0] = draw(st.sampled_from([math.nan, math.inf]))
    mask_kind = draw(st.sampled_from(["none", "float", "keep"]))
    mask = None
    if mask_kind == "float":
        mask = torch.randn(1, 1, length, size, generator=gen)
        lowest = torch.finfo(torch.float32).min
        mask[..., 0, draw(st.integers(0, size - 1))] = draw(st.sampled_from([-math.inf, lowest]))
    elif mask_kind == "keep":
        mask = torch.rand(b, 1, length, size, generator=gen) > 0.4
        if draw(st.booleans()):
            mask[..., 0, :] = False  # a query row that keeps nothing: torch gives 0
    scale = draw(st.sampled_from([None, 0.3]))
    return q, k, v, index, k_new, v_new, mask, scale


def _program(case):
    q, k, v, index, k_new, v_new, mask, scale = case
    ins = [q, k, v, index, k_new, v_new] + ([mask] if mask is not None else [])
    params = "" if scale is None else f"{{scale = {scale}}}"
    return ins, single_op_ir("npu", "cached_sdpa", params, [_type(t) for t in ins], _type(q)).module()


@pytest.mark.parametrize("runtime", RUNTIMES)
@settings(max_examples=60, deadline=None, derandomize=True)
@given(case=cases())
def test_cached_sdpa_equals_torch_index_put_then_sdpa(runtime, case):
    rt = runtime_or_skip(runtime)
    want = torch_cached_attention(*case)
    ins, module = _program(case)
    (interpreted,) = interpret(module, None, *ins)
    assert_same([interpreted], [want])
    (got,) = emit(module, None, runtime=rt).executor()(*ins)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_a_repeated_position_keeps_its_last_row():
    """torch's serial write leaves the last of two rows written at one position; the kind's value is that."""
    q = torch.ones(1, 1, 1, 2)
    k = torch.zeros(1, 1, 3, 2)
    v = torch.zeros(1, 1, 3, 2)
    index = torch.tensor([1, -2])  # the same position twice
    k_new = torch.zeros(1, 1, 2, 2)
    v_new = torch.tensor([[[[5.0, 5.0], [7.0, 7.0]]]])
    want = torch_cached_attention(q, k, v, index, k_new, v_new, None, None)
    assert want[0, 0, 0, 0].item() == pytest.approx(7.0 / 3)  # keys all equal: the mean of 0, 7, 0
    ins, module = _program((q, k, v, index, k_new, v_new, None, None))
    for runtime in RUNTIMES:
        (got,) = emit(module, None, runtime=runtime_or_skip(runtime)).executor()(*ins)
        torch.testing.assert_close(got, want)
