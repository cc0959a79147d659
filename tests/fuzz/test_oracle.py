"""The OpenVINO oracle (forge.testing.fuzz.oracle) tells a difference OpenVINO's own conversion shows (its
kernels') from one only Forge's graph shows."""

from __future__ import annotations

import math

import torch

from forge.testing.fuzz.cases import Case
from forge.testing.fuzz.compare import differs_where
from forge.testing.fuzz.oracle import FORGE, HALF_IN_FLOAT32, KERNEL, PASS, classify
from tests.conftest import require_runtime


def test_a_difference_openvino_shows_too_is_its_kernels():
    require_runtime("openvino")
    case = Case("aten::relu.default", (torch.tensor([-0.0, 1.0]),))
    verdict = classify(case, [torch.tensor([0.0, 1.0])])  # OpenVINO's Relu gives +0.0
    assert verdict.kind == KERNEL and (verdict.positions, verdict.reproduced) == (1, 1), verdict.openvino


def test_a_difference_only_forge_shows_is_forges():
    require_runtime("openvino")
    case = Case("aten::add.Tensor", (torch.tensor([1.0, math.nan]), torch.tensor([2.0, 1.0])))
    assert classify(case, [torch.tensor([3.0, math.nan])]).kind == PASS
    verdict = classify(case, [torch.tensor([4.0, math.nan])])
    assert verdict.kind == FORGE and verdict.positions == 1 and verdict.reproduced == 0, verdict


def test_differs_is_elementwise_by_compares_rules():
    want = torch.tensor([math.nan, -0.0, math.inf, 1.0])
    got = torch.tensor([math.nan, 0.0, math.inf, 1.0 + 1e-9])
    assert differs_where("aten::add.Tensor", want, got).tolist() == [False, True, False, False]


def test_a_difference_torchs_float32_kernel_shows_is_forges_half_in_float32_policy():
    """torch's float16 convolution gives +0.0 for -2.5 * 0.0, its float32 one (what Forge computes) -0.0."""
    require_runtime("openvino")
    x, w = torch.tensor([[[-2.5, 0.0]]], dtype=torch.float16), torch.zeros(2, 1, 1, 1, dtype=torch.float16)
    case = Case("aten::conv2d.padding", (x, w, None))
    got = torch.nn.functional.conv2d(x.float(), w.float()).half()
    assert classify(case, [got]).kind == HALF_IN_FLOAT32
