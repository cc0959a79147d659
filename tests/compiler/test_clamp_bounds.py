"""clamp / hardtanh with a NaN bound or min > max compile on OpenVINO (which fuses the max/min pair
into a Clamp that refuses those bounds) and give torch's values: they take the aten fallback."""

from __future__ import annotations

import pytest
import torch

import forge
from tests.conftest import require_runtime

NAN = float("nan")


class Model(torch.nn.Module):
    def forward(self, x):
        return (
            torch.clamp(x, -4, NAN),
            torch.ops.aten.hardtanh(x, NAN, 1.0),
            torch.clamp(x, 2.0, 1.0),
            torch.ops.aten.hardtanh(x, 2.0, 1.0),
            torch.clamp(x, -0.5, 0.5),
        )


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
def test_clamp_bounds_openvino_would_refuse_compile_and_match_torch(runtime):
    require_runtime(runtime)
    x = torch.randn(2, 3)
    compiled = forge.compile(Model(), (x,), runtime=runtime)
    for got, want in zip(compiled(x), Model()(x), strict=True):
        torch.testing.assert_close(got, want, equal_nan=True)
