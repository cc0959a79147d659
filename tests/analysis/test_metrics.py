"""The report metrics, read off npuir and buffer IR."""

from __future__ import annotations

from xdsl.parser import Parser

from forge.analysis import metrics
from forge.driver.registry import make_context
from lowering.npuir_to_buffer import LowerNpuirToBufferPass
from lowering.schedule_device_affinity import ScheduleDeviceAffinityPass

PROGRAM = """
func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<8xf32>
  %a = npuir.unary npu %x0 {kind = exp, vreg = 1} : (tensor<8xf32>) -> tensor<8xf32>
  %h = npuir.unary cpu %x0 {kind = tanh, vreg = 2} : (tensor<8xf32>) -> tensor<8xf32>
  %b = npuir.unary npu %a {kind = neg, vreg = 3} : (tensor<8xf32>) -> tensor<8xf32>
  %g = npuir.unary cpu %h {kind = exp, vreg = 4} : (tensor<8xf32>) -> tensor<8xf32>
  %y = npuir.binary npu %b, %g {kind = add, vreg = 5} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
"""


def test_metrics_before_and_after_scheduling_and_allocation() -> None:
    ctx = make_context()
    module = Parser(ctx, PROGRAM).parse_module()
    assert metrics.count_ops(module) == 6
    assert metrics.count_vregs(module) == 6
    assert metrics.device_transitions(module) == 4
    assert [len(s) for s in metrics.segments(module)] == [1, 1, 1]
    assert metrics.peak_bytes_naive(module) == 5 * 32
    assert metrics.op_histogram(module)["npuir.unary"] == 4

    ScheduleDeviceAffinityPass().apply(ctx, module)
    assert metrics.device_transitions(module) == 1
    assert [len(s) for s in metrics.segments(module)] == [3]
    assert [len(s) for s in metrics.segments(module, "cpu")] == [2]

    LowerNpuirToBufferPass().apply(ctx, module)
    report = metrics.report(module)
    assert report["schedule"] == {"transitions_before": 4, "transitions_after": 1, "moved_to_cpu": 0}
    assert report["transitions"] == 1 and report["npu_segments"] == 1
    plan = report["plan"]
    assert plan["transfers"] == 2  # the input and %g move to the npu
    assert report["vregs"] == plan["values"] == 7
    assert report["buffers"] == plan["buffers"] == metrics.count_buffers(module)
    assert report["peak_bytes_naive"] == plan["peak_bytes_naive"] == 7 * 32
    assert report["peak_bytes_planned"] == plan["peak_bytes_planned"] == 64 * plan["buffers"]  # 64-byte aligned slots
    assert (
        metrics.peak_bytes_planned(module, "cpu") + metrics.peak_bytes_planned(module, "npu")
        == plan["peak_bytes_planned"]
    )
