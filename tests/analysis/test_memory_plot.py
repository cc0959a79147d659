"""forge.driver.memory_plot: the plan read off buffer IR is the plan, and it can be drawn."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path

import pytest
from xdsl.parser import Parser

from dialects import buffer as B
from forge.analysis import metrics
from forge.driver.memory_plot import MemoryPlan, PlotError, draw_memory_plan, memory_plan, plot_memory
from forge.driver.pass_stages import run_passes
from forge.driver.registry import make_context
from forge.pipelines import DEFAULT_PIPELINE, LOWERING_PIPELINE
from tests.conftest import imported_small_model

# An npu linear, a cpu cumsum (NNFactory has none), back to the npu: three device segments.
MIXED = """
func.func @mixed(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = aten.weight "fc.weight" : tensor<16x8xf32>
  %h = aten.linear %x, %w, none : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %c = aten.cumsum %h {dim = 1} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %e = aten.exp %c : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %e : tensor<4x16xf32>
}
"""


def _buffer_module(name: str, attn: str):
    imported, _, _ = imported_small_model(name, attn)
    module = imported.module.clone()
    run_passes(module, DEFAULT_PIPELINE, weights=imported.weights)
    run_passes(module, LOWERING_PIPELINE)
    return module


@pytest.fixture(scope="module")
def plans() -> dict[str, tuple[object, MemoryPlan]]:
    out = {}
    for name, attn in (("gpt2", "eager"), ("llama", "sdpa")):
        module = _buffer_module(name, attn)
        out[name] = (module, memory_plan(module))
    mixed = Parser(make_context(), MIXED).parse_module()
    run_passes(mixed, LOWERING_PIPELINE)
    out["mixed"] = (mixed, memory_plan(mixed))
    return out


@pytest.mark.parametrize("case", ["gpt2", "llama", "mixed"])
def test_live_ranges_in_one_buffer_never_overlap(plans, case) -> None:
    _, plan = plans[case]
    by_buffer: dict[int, list] = {}
    for bar in plan.bars:
        assert 0 <= bar.start <= bar.end < plan.steps
        by_buffer.setdefault(bar.buffer, []).append(bar)
    for bars in by_buffer.values():
        bars.sort(key=lambda b: b.start)
        for a, b in pairwise(bars):
            assert a.end < b.start, f"{a} and {b} share buffer {a.buffer} at the same time"


@pytest.mark.parametrize("case", ["gpt2", "llama", "mixed"])
def test_every_written_value_is_one_bar_in_its_buffer(plans, case) -> None:
    module, plan = plans[case]
    writes = [op for op in module.walk() if isinstance(op, B.WriteOp)]
    assert plan.steps == len(writes) == len(plan.bars)
    assert sorted(b.start for b in plan.bars) == list(range(plan.steps))  # one write per step
    sizes = {buf.id: buf.nbytes for buf in plan.buffers}
    for bar, op in zip(plan.bars, writes, strict=True):
        assert bar.buffer == op.out_buffer().buffer_id
        assert bar.nbytes <= sizes[bar.buffer]
    assert Counter(bar.live_out for bar in plan.bars)[True] >= 1  # the logits
    assert plan.peak_bytes_planned == metrics.peak_bytes_planned(module)
    assert plan.peak_bytes_naive == metrics.peak_bytes_naive(module)


@pytest.mark.parametrize("case", ["gpt2", "llama", "mixed"])
def test_device_segments_cover_the_schedule(plans, case) -> None:
    _, plan = plans[case]
    assert plan.spans[0].first == 0 and plan.spans[-1].last == plan.steps - 1
    for a, b in pairwise(plan.spans):
        assert b.first == a.last + 1 and a.device != b.device


def test_mixed_devices_give_three_segments(plans) -> None:
    module, plan = plans["mixed"]
    assert [s.device for s in plan.spans] == ["npu", "cpu", "npu"]
    assert len(metrics.segments(module, "npu")) == 2


def test_draws_a_png(plans, tmp_path: Path) -> None:
    from PIL import Image

    module, _ = plans["llama"]
    path = tmp_path / "plan.png"
    plan = plot_memory(module, path, title="llama-small")
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size[0] >= 800
    assert plan.steps > 0


def test_not_buffer_ir_is_a_plot_error() -> None:
    module = Parser(make_context(), MIXED).parse_module()
    with pytest.raises(PlotError, match="not a planned buffer IR"):
        memory_plan(module)


def test_unwritable_path_is_a_plot_error(plans, tmp_path: Path) -> None:
    _, plan = plans["mixed"]
    with pytest.raises(PlotError, match="cannot write memory plot"):
        draw_memory_plan(plan, tmp_path / "missing" / "plan.png")


def test_cli_error_is_one_line_exit_1(tmp_path: Path, capsys) -> None:
    from forge.cli.main import main

    code = main(
        ["compile", "gpt2", "--small", "--seq-len", "8", "--quiet", "--plot-memory", str(tmp_path / "no" / "x.png")]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines()[-1].startswith("forge: error: cannot write memory plot")
    assert "Traceback" not in err
