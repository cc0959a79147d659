"""Wrong values (and crashes) the OpInfo harness found on the nnfactory runtime only, against torch.

A batched Gather (``batch_dims``) over a batch of one element crashes OpenVINO's CPU plugin or reads garbage:
``gather_elements`` is a batched Gather over the rows off its axis, so one row (a 1-d tensor, a quantile of a
0-d tensor, a multi_margin_loss of one sample) gave wrong values or a segfault. The builder drops the batch
axes of a one-element batch (`GraphBuilder.gather`)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import forge
from tests.conftest import require_runtime


def _check(module: torch.nn.Module, *args: torch.Tensor) -> None:
    require_runtime("nnfactory")
    want = module(*args)
    got = forge.compile(module, args, runtime="nnfactory")(*args)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, (tuple, list)) else (got,)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, equal_nan=True)


class TwoQuantiles(torch.nn.Module):
    def forward(self, a, x, q):
        return torch.quantile(a, 0.5, dim=2, keepdim=True, interpolation="midpoint"), torch.quantile(x, q)


def test_a_quantile_of_a_0d_tensor_next_to_another_quantile():
    _check(TwoQuantiles(), torch.ones(3, 2, 1, 2), torch.tensor(-5.83), torch.tensor([0.5, 0.75]))


class MultiMargin(torch.nn.Module):
    def forward(self, x, t):
        return F.multi_margin_loss(x, t, p=1)


def test_multi_margin_loss_of_one_sample_does_not_crash():
    _check(MultiMargin(), torch.tensor([8.64, -6.94, -3.30, 3.54, 7.46]), torch.tensor(4))


@pytest.mark.parametrize(
    ("data", "indices", "axis", "batch_dims"),
    [((1,), (2,), 0, 0), ((1, 1), (1, 2), 1, 1), ((1, 2), (1, 3), 1, 1), ((1, 1, 2), (1, 1, 3), 2, 2),
     ((3, 1), (3, 2), 1, 1)],
)
def test_a_batched_gather_over_one_batch_element(data, indices, axis, batch_dims):
    require_runtime("nnfactory")
    from backends.nnfactory.runtime import get_runtime

    g = get_runtime("nnfactory").builder()
    d, i = g.parameter(data, np.float32), g.parameter(indices, np.int64)
    g.result(g.gather(d, i, axis, batch_dims))
    values = np.arange(np.prod(data), dtype=np.float32).reshape(data) - 5.5
    rng = np.random.default_rng(0)
    idx = rng.integers(0, data[axis], size=indices).astype(np.int64)
    (got,) = g.compile().run([values, idx])
    # batch_dims == axis == the last axis: the batched Gather is torch.gather
    np.testing.assert_array_equal(got, torch.gather(torch.from_numpy(values), axis, torch.from_numpy(idx)).numpy())


NAN, INF = float("nan"), float("inf")


class ArgExtremes(torch.nn.Module):
    def forward(self, x):
        smallest = torch.topk(x, 4, dim=1, largest=False).indices
        return x.argmax(), x.argmin(), x.argmax(1), x.argmin(0, keepdim=True), smallest


def test_argmax_argmin_and_topk_order_nan_as_torch_does():
    """NaN is the extreme of argmax and argmin (and the last of a smallest-first topk): the topk
    composition ignored it (masked.argmax/argmin's OpInfo samples with NaN)."""
    x = torch.tensor([[NAN, 1.0, -2.0, NAN, 3.0], [2.0, NAN, -INF, 0.5, 7.0], [1.5, 1.0, NAN, 0.25, -1.0]])
    _check(ArgExtremes(), x)


class Extremes(torch.nn.Module):
    def forward(self, x):
        return x.amax(1), x.amin(1), x.amax(), torch.linalg.vector_norm(x, ord=INF, dim=1)


def test_amax_amin_propagate_nan_and_keep_infinities():
    """The library's CPU ReduceMax/ReduceMin skip NaN and give the lowest (highest) finite float for a
    row of -inf (+inf): masked.norm's ord=inf samples came back finite."""
    x = torch.tensor([[INF, 1, 2], [-INF, -INF, -INF], [NAN, 1, 2], [INF, -INF, 0], [INF, INF, INF]])
    _check(Extremes(), x)


class MaxDim(torch.nn.Module):
    def forward(self, x):
        return tuple(torch.max(x, 1)) + tuple(torch.min(x, 0, keepdim=True))


def test_max_and_min_over_a_dim():
    """Values (the fixed-up ReduceMax/ReduceMin) next to indices (topk) of a 3-d tensor."""
    _check(MaxDim(), torch.randn(5, 5, 5, generator=torch.Generator().manual_seed(0)))
