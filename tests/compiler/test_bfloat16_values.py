"""A bfloat16 value inside a float32 model (a `dtype=torch.bfloat16` reduction, a `.to(bfloat16)`)
compiles and gives torch's values: the runtimes build graphs through numpy, which has no bfloat16,
so those ops run on the CPU (forge.kinds.NPU_ELEMENTS) instead of failing to emit."""

from __future__ import annotations

import pytest
import torch

import forge
from tests.conftest import require_runtime

BF16 = torch.bfloat16


class Model(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return (
            torch.sum(y, dtype=BF16),
            torch.mean(y, dim=1, dtype=BF16),
            torch.softmax(y, -1, dtype=BF16),
            torch.log_softmax(y.to(torch.int8), -1, dtype=BF16),
            y.to(BF16) * 3,
        )


@pytest.mark.parametrize("runtime", ["openvino", "nnfactory"])
def test_bfloat16_values_in_a_float32_model_compile_and_match_torch(runtime):
    require_runtime(runtime)
    x = torch.randn(3, 4)
    compiled = forge.compile(Model(), (x,), runtime=runtime)
    for got, want in zip(compiled(x), Model()(x), strict=True):
        assert got.dtype == want.dtype == BF16
        torch.testing.assert_close(got, want, atol=0.02, rtol=0.01)
