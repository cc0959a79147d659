"""The latency benchmarks interleave systems in one process: a system whose threads keep a core busy after
its call returns (a spin-waiting thread pool) slows whichever system is timed next. Forge, OpenVINO f32 and
ONNX Runtime (`bench.peers.ORT_SESSION_CONFIG`: `force_spinning_stop`) must leave the process idle.

What is measured is the process's CPU time while it sleeps after a few calls, not a latency: ONNX Runtime
with its default (`force_spinning_stop` 0) burns ~40 ms of CPU in these 200 ms, the quiet systems ~0.1 ms.
The torch systems (eager, torch.compile) are not checked: OpenMP's workers spin a few ms after each
parallel region, and that is torch's own default.
"""

from __future__ import annotations

import time

import pytest
import torch

from bench import peers

IDLE_S = 0.2
BUSY_MS = 10.0
"""More CPU than this while the process sleeps `IDLE_S` means a thread kept spinning (~40 ms seen)."""


@pytest.fixture(scope="module")
def mlp() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.GELU(), torch.nn.Linear(512, 512)).eval()
    return model, (torch.randn(64, 512),)


def _idle_cpu_ms(run, x: torch.Tensor) -> float:
    for _ in range(3):
        run(x)
    start = time.process_time()
    time.sleep(IDLE_S)
    return (time.process_time() - start) * 1e3


@pytest.mark.parametrize("system", ["forge", "openvino", "onnxruntime"])
def test_no_thread_keeps_spinning_after_a_call(system, mlp):
    model, inputs = mlp
    built = peers.build(system, model, inputs)
    burnt = min(_idle_cpu_ms(built.run, inputs[0]) for _ in range(2))
    assert burnt < BUSY_MS, f"{system}: {burnt:.1f} ms of CPU while the process slept {IDLE_S * 1e3:.0f} ms"
