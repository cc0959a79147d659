"""The memory plan of buffer IR as a picture (what `forge compile --plot-memory out.png` draws).

Two steps, kept apart so the first can be tested without drawing:

- `memory_plan(module)` reads the plan off the buffer IR: the schedule steps (every
  `buffer.exec` / `buffer.transfer` in op order), the physical buffers (`buffer.alloc`), each
  planned value's live range as a bar in its buffer's row (from the step that writes it to the
  last step that reads it; to the end for values the function returns), and the device
  segments (maximal runs of steps on one device; a transfer counts for the device it copies to).
- `draw_memory_plan(plan, path, title)` draws it with matplotlib's Agg backend (no display, no
  pyplot global state): x = schedule step, y = buffer (id, device, size), bars labelled when the
  name fits, device segments shaded behind, peak bytes in the title.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from dialects import buffer as B
from lowering.liveness import buffer_liveness

DEVICE_COLOURS = {"npu": "#3182bd", "cpu": "#e6550d"}
SEGMENT_COLOURS = {"npu": "#c6dbef", "cpu": "#fdd0a2"}


class PlotError(Exception):
    """The plot cannot be made (no buffer IR, matplotlib missing, file not writable)."""


@dataclass(frozen=True)
class LiveBar:
    """One planned value: written at step `start`, last read at step `end` (inclusive)."""

    name: str
    buffer: int
    start: int
    end: int
    nbytes: int
    live_out: bool


@dataclass(frozen=True)
class PhysicalBuffer:
    id: int
    device: str
    nbytes: int


@dataclass(frozen=True)
class DeviceSpan:
    """Steps `first..last` (inclusive) run on `device`."""

    device: str
    first: int
    last: int


@dataclass(frozen=True)
class MemoryPlan:
    steps: int
    buffers: list[PhysicalBuffer]
    bars: list[LiveBar]
    spans: list[DeviceSpan]
    planned_bytes: int = 0
    """What the plan allocates: its arenas and buffers of their own (buffers of an arena overlap)."""

    @property
    def peak_bytes_planned(self) -> int:
        return self.planned_bytes

    @property
    def peak_bytes_naive(self) -> int:
        return sum(b.nbytes for b in self.bars)


# ============================================================================ extraction


def memory_plan(module: ModuleOp) -> MemoryPlan:
    """The plan of the (single) function of buffer-level `module`; PlotError if there is none."""
    fns = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    if len(fns) != 1:
        raise PlotError(f"expected one function in the buffer IR, found {len(fns)}")
    block = fns[0].body.block
    ops = list(block.ops)
    step_of = {pos: step for step, pos in enumerate(i for i, op in enumerate(ops) if isinstance(op, B.WriteOp))}
    steps = len(step_of)
    if steps == 0:
        raise PlotError("the module has no buffer.exec or buffer.transfer: not a planned buffer IR")
    buffers = [
        PhysicalBuffer(buf.buffer_id, buf.on.value, buf.nbytes) for buf in B.buffer_table(fns[0]).values()
    ]
    bars = []
    for iv in buffer_liveness(block):
        value = iv.key
        assert iv.buffer is not None
        start = step_of[iv.start]
        end = steps - 1 if iv.live_out else step_of[iv.end]
        name = value.name_hint or f"v{start}"
        bars.append(LiveBar(name, iv.buffer, start, end, iv.size, iv.live_out))
    bars.sort(key=lambda b: b.start)
    return MemoryPlan(steps, buffers, bars, _device_spans(ops), B.planned_bytes(fns[0]))


def _step_device(op: B.WriteOp) -> str:
    if isinstance(op, B.ExecOp):
        return op.device.data.value
    return op.out_buffer().on.value  # a transfer: the device it copies to


def _device_spans(ops: list) -> list[DeviceSpan]:
    spans: list[DeviceSpan] = []
    for step, op in enumerate(op for op in ops if isinstance(op, B.WriteOp)):
        device = _step_device(op)
        if spans and spans[-1].device == device:
            spans[-1] = DeviceSpan(device, spans[-1].first, step)
        else:
            spans.append(DeviceSpan(device, step, step))
    return spans


# ============================================================================ drawing


def format_bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.patches import Patch
    except ImportError as err:
        raise PlotError(
            f"--plot-memory needs matplotlib ({err}); install it with `pip install matplotlib` "
            "(it is in Forge's dev extras)"
        ) from None
    return Figure, FigureCanvasAgg, Patch


def draw_memory_plan(plan: MemoryPlan, path: str | Path, title: str = "memory plan") -> Path:
    """Draw `plan` into the PNG (or any format matplotlib knows from the suffix) at `path`."""
    Figure, FigureCanvasAgg, Patch = _matplotlib()
    rows = {buf.id: i for i, buf in enumerate(plan.buffers)}
    width = min(40.0, max(8.0, plan.steps / 8))
    height = min(30.0, max(3.0, 0.45 * len(plan.buffers) + 1.8))
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for span in plan.spans:
        ax.axvspan(span.first - 0.5, span.last + 0.5, color=SEGMENT_COLOURS[span.device], alpha=0.6, lw=0)
    points_per_step = width * 72 * 0.8 / max(plan.steps, 1)
    devices = {buf.id: buf.device for buf in plan.buffers}
    for bar in plan.bars:
        row, length = rows[bar.buffer], bar.end - bar.start + 1
        ax.barh(row, length - 0.2, left=bar.start - 0.4, height=0.7, color=DEVICE_COLOURS[devices[bar.buffer]],
                edgecolor="black", linewidth=0.4, hatch="//" if bar.live_out else None)
        if length * points_per_step >= 0.6 * 7 * len(bar.name) + 4:
            ax.text(bar.start + (length - 1) / 2, row, bar.name, ha="center", va="center", fontsize=7, color="white")
    ax.set_yticks(range(len(plan.buffers)))
    ax.set_yticklabels([f"b{b.id} {b.device} {format_bytes(b.nbytes)}" for b in plan.buffers])
    ax.invert_yaxis()
    ax.set_xlim(-0.5, plan.steps - 0.5)
    ax.set_xlabel("schedule step (buffer.exec / buffer.transfer in op order)")
    ax.set_ylabel(f"physical buffer ({len(plan.buffers)}, {format_bytes(plan.peak_bytes_planned)} in all)")
    ax.set_title(
        f"{title}: {len(plan.bars)} values in {len(plan.buffers)} buffers, peak "
        f"{plan.peak_bytes_planned:,} B planned vs {plan.peak_bytes_naive:,} B naive",
        fontsize=10,
    )
    ax.legend(
        handles=[Patch(color=SEGMENT_COLOURS[d], label=f"{d} segment") for d in sorted({s.device for s in plan.spans})]
        + [Patch(facecolor="white", edgecolor="black", hatch="//", label="returned (live to the end)")],
        loc="upper right", fontsize=7,
    )
    fig.tight_layout()
    path = Path(path)
    try:
        fig.savefig(path)
    except (OSError, ValueError) as err:
        raise PlotError(f"cannot write memory plot {path}: {err}") from None
    return path


def plot_memory(module: ModuleOp, path: str | Path, title: str = "memory plan") -> MemoryPlan:
    """Extract and draw the plan of buffer-level `module`; returns what was drawn."""
    plan = memory_plan(module)
    draw_memory_plan(plan, path, title)
    return plan
