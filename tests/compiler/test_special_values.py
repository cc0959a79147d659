"""Special values on the runtimes (issue 28): a max-reduction over a row of -inf gives -inf, as torch,
though OpenVINO's ReduceMax starts from the lowest finite value (forge.kinds.elementwise corrects it
in the graph). Rows mixing -inf with finite values, the lowest finite value itself, a -0.0 maximum, keepdim and the
half dtypes are checked beside it, so the correction cannot change any other row."""

from __future__ import annotations

import pytest
import torch

import forge
from tests.conftest import require_runtime

NINF = float("-inf")


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
