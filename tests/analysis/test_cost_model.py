"""The heuristic cost model: properties that a wrong model would break."""

from __future__ import annotations

import math

import pytest
from xdsl.parser import Parser

from forge.driver import cost_model as cm
from forge.driver.pass_stages import run_passes
from forge.driver.registry import make_context
from forge.pipelines import LOWER_TO_NPUIR
from tests.conftest import imported_small_model

PROGRAM = """
func.func @f(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<8x16xf32>
  %w = npuir.weight npu {name = "w", vreg = 1} : tensor<16x16xf32>
  %a = npuir.linear npu %x0, %w {vreg = 2} : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %h = npuir.unary cpu %a {kind = tanh, vreg = 3} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %b = npuir.unary npu %h {kind = neg, vreg = 4} : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %y = npuir.binary npu %b, %a {kind = add, vreg = 5} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %y : tensor<8x16xf32>
}
"""


def _parse(text: str):
    return Parser(make_context(), text).parse_module()


def _matmul(m: int, k: int, n: int):
    return _parse(f"""
func.func @f(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %a0 = npuir.input cpu {{index = 0, vreg = 0}} : tensor<{m}x{k}xf32>
  %b0 = npuir.input cpu {{index = 1, vreg = 1}} : tensor<{k}x{n}xf32>
  %c = npuir.matmul npu %a0, %b0 {{vreg = 2}} : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>
  func.return %c : tensor<{m}x{n}xf32>
}}
""")


def test_cost_is_the_sum_of_op_costs_and_transfers() -> None:
    module = _parse(PROGRAM)
    report = cm.estimate(module)
    ops = [op for op in module.walk() if op.name.startswith("npuir.") and not cm.is_source(op)]
    by_op = sum(cm.op_cost(op, op.properties["device"].data.value).total for op in ops)
    # transfers: the input to the npu linear, %a to the cpu tanh, %h back to the npu neg
    # (the result %y is produced on the npu and read by the host: a fourth)
    sizes = [8 * 16 * 4] * 4
    assert report.transfers == 4
    assert report.transfer_us == pytest.approx(sum(cm.transfer_cost(n) for n in sizes))
    assert report.total_us == pytest.approx(by_op + report.transfer_us)
    assert report.dispatches == {"npu": 3, "cpu": 1}
    parts = sum(sum(p.values()) for p in report.by_device.values())
    assert report.total_us == pytest.approx(parts + report.transfer_us)


def test_linear_flops_and_bytes() -> None:
    module = _parse(PROGRAM)
    linear = next(op for op in module.walk() if op.name == "npuir.linear")
    assert cm.op_flops(linear) == 2 * 8 * 16 * 16
    assert cm.op_bytes(linear) == (8 * 16 + 16 * 16 + 8 * 16) * 4  # x, weight, result


@pytest.mark.parametrize("bigger", [(64, 32, 32), (32, 64, 32), (32, 32, 64)])
def test_a_bigger_matmul_costs_more(bigger) -> None:
    small = cm.estimate(_matmul(32, 32, 32))
    large = cm.estimate(_matmul(*bigger))
    assert large.total_us > small.total_us
    assert large.flops == 2 * math.prod(bigger)


def test_moving_an_op_to_the_cpu_costs_transfers_not_dispatches() -> None:
    module = _parse(PROGRAM)
    table = cm.CostTable(module)
    all_npu = table.score(["npu"] * len(table.rows))
    assert all_npu.transfers == 2  # the input in, the result out
    assert table.score().transfers == 4
    assert all_npu.total_dispatches == table.score().total_dispatches


def _lowered(name: str, spec: str):
    imported, _, _ = imported_small_model(name, "eager")
    module = imported.module.clone()
    run_passes(module, spec, weights=imported.weights)
    run_passes(module, LOWER_TO_NPUIR)
    return module


UNFUSED = "dce,cse,fold,layout,dce,cse"
FUSED = "dce,cse,fold,fuse-attention,fuse-ops,layout,dce,cse"
FAMILIES = ["canonicalize-linear", "epilogues", "gelu", "gated-mlp", "rms-norm", "residual-norm"]


@pytest.mark.parametrize("name", ["gpt2", "llama", "bert"])
def test_fusion_scores_lower_than_no_fusion(name: str) -> None:
    unfused = cm.estimate(_lowered(name, UNFUSED))
    fused = cm.estimate(_lowered(name, FUSED))
    assert fused.total_dispatches < unfused.total_dispatches
    assert fused.total_us < unfused.total_us
    assert fused.bytes_moved < unfused.bytes_moved


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize("family", FAMILIES + ["attention"])
def test_a_fusion_never_increases_dispatches(name: str, family: str) -> None:
    """Switching one fusion family on (everything else on) never adds a kernel launch."""
    if family == "attention":
        without = FUSED.replace("fuse-attention,", "")
    else:
        without = FUSED.replace("fuse-ops", f"fuse-ops{{{family}=false}}")
    off = cm.dispatch_count(_lowered(name, without))
    on = cm.dispatch_count(_lowered(name, FUSED))
    assert on <= off
