"""Liveness over a straight-line schedule: when each value is written and last read.

The schedule is a sequence of steps; step `i` reads some values, then defines at most one. A
value's live interval is `[start, end]`: `start` the step that defines it, `end` the last step
that reads it (`start` when nothing reads it; `LIVE_OUT` when the function returns it). Two values
may share a buffer only if their intervals do not overlap: `a.end < b.start` (a step never writes
the buffer of a value it reads: there is no in-place execution).

- `live_ranges(steps, live_out)`: the generic computation, over any hashable keys.
- NPU segments: a run of npu steps is one compiled graph, which reads its inputs and writes its
  outputs at any time while it runs, so an output placed in an input's bytes must be staged and
  copied by the executor. `segment_conflicts(ranges, reads, runs)` lists, per segment, the
  (output, input) pairs that must not share bytes (the offset planners honour them), except for
  a program output (live out): the executor writes it straight into the caller's tensor
  (`backends.nnfactory.program.direct_outputs`), so its planned bytes are never written and may
  be an input's; should the executor not bind it directly, it stages that output (a copy), which
  is still correct;
  `hold_segment_inputs(ranges, reads, runs)` is the coarser form for the buffer planners: an
  input stays live to the segment's last step.
- `npuir_liveness(block)`: intervals of the npuir values that need a planned buffer (all but
  inputs, weights and constants), over the block's op order.
- `buffer_liveness(block)`: intervals of the logical values of `buffer` IR, each with its buffer.
- `peak_live_bytes(intervals)`: the lower bound of any plan of these intervals: per device, the
  largest sum of the sizes of the values live at one step, summed over the devices.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.ir import Block, SSAValue

from dialects import buffer as B
from dialects import npuir as N

LIVE_OUT = 1 << 62
"""`end` of a value the function returns: live past the last step."""


@dataclass(slots=True)
class Interval:
    """The live interval of one value that needs a buffer."""

    key: Hashable
    start: int
    end: int
    size: int
    device: str
    buffer: int | None = None
    """The physical buffer holding it (set by the allocator, or read from buffer IR)."""

    @property
    def live_out(self) -> bool:
        return self.end == LIVE_OUT

    def overlaps(self, other: Interval) -> bool:
        return not (self.end < other.start or other.end < self.start)


def live_ranges(
    steps: Iterable[tuple[Hashable | None, Sequence[Hashable]]], live_out: Iterable[Hashable] = ()
) -> dict[Hashable, tuple[int, int]]:
    """`{key: (start, end)}` for every key a step defines; reads of keys no step defines
    (inputs, weights, constants) are ignored. One pass, linear in the number of reads."""
    start: dict[Hashable, int] = {}
    end: dict[Hashable, int] = {}
    for pos, (defined, reads) in enumerate(steps):
        for key in reads:
            if key in start:
                end[key] = pos
        if defined is not None:
            start[defined] = pos
            end[defined] = pos
    for key in live_out:
        if key in start:
            end[key] = LIVE_OUT
    return {key: (s, end[key]) for key, s in start.items()}


def hold_segment_inputs(
    ranges: dict[Hashable, tuple[int, int]], reads: Sequence[Sequence[Hashable]], runs: Sequence[tuple[int, int]]
) -> None:
    """In place: for each run `(first, last)` of step positions (one NPU segment), every key read
    at a position of the run and defined before `first` ends no earlier than `last`."""
    for first, last in runs:
        for pos in range(first, last + 1):
            for key in reads[pos]:
                found = ranges.get(key)
                if found is not None and found[0] < first and found[1] < last:
                    ranges[key] = (found[0], last)


def segment_conflicts(
    ranges: dict[Hashable, tuple[int, int]],
    reads: Sequence[Sequence[Hashable]],
    runs: Sequence[tuple[int, int]],
    live_out: bool = False,
) -> list[tuple[Hashable, Hashable]]:
    """(output, input) pairs of each run `(first, last)`: an input is read in the run and defined
    before it; an output is defined in the run and live after it, but not live out unless
    `live_out` (a program output is written into the caller's tensor: module docstring). Only
    pairs whose intervals do not already overlap (those get disjoint bytes anyway)."""
    defined_at = {start: key for key, (start, _) in ranges.items()}
    pairs: list[tuple[Hashable, Hashable]] = []
    for first, last in runs:
        inputs = {key for pos in range(first, last + 1) for key in reads[pos]
                  if key in ranges and ranges[key][0] < first}
        for pos in range(first, last + 1):
            out = defined_at.get(pos)
            if out is None or ranges[out][1] <= last or (ranges[out][1] == LIVE_OUT and not live_out):
                continue
            pairs.extend((out, key) for key in inputs if ranges[key][1] < pos)
    return pairs


def segment_runs(kinds: Sequence[str]) -> list[tuple[int, int]]:
    """`(first, last)` positions of each maximal run of "npu" steps; "end" steps (cpu ops,
    transfers, the return) close a run, other kinds ("skip": declarations) neither join nor end it."""
    runs: list[tuple[int, int]] = []
    first = last = -1
    for pos, kind in enumerate(kinds):
        if kind == "npu":
            first, last = (pos if first < 0 else first), pos
        elif kind == "end" and first >= 0:
            runs.append((first, last))
            first = -1
    if first >= 0:
        runs.append((first, last))
    return runs


def npuir_liveness(block: Block) -> list[Interval]:
    """Intervals of the non-source npuir values of `block`, in definition order (positions are
    indices among the block's non-source ops; the terminator reads the live-out values)."""
    steps: list[tuple[Hashable | None, Sequence[Hashable]]] = []
    meta: dict[Hashable, tuple[int, str]] = {}
    live_out: list[Hashable] = []
    for op in block.ops:
        if isinstance(op, N.SourceOp):
            continue
        if isinstance(op, N.NpuirOp):
            steps.append((op.result, op.operands))
            meta[op.result] = (N.tensor_bytes(op.result.type), op.device.data.value)
        elif op.name == "func.return":
            live_out.extend(op.operands)
    ranges = live_ranges(steps, live_out)
    return [Interval(k, s, e, *meta[k]) for k, (s, e) in ranges.items()]


def buffer_liveness(block: Block, hold_segments: bool = False) -> list[Interval]:
    """Intervals of the values written by `buffer.exec` / `buffer.transfer` in `block`, with the
    id of the buffer each one lives in (`hold_segments`: NPU segment inputs held to the segment's
    end, `hold_segment_inputs`). Positions count every op of the block."""
    return buffer_segments(block, hold_segments)[0]


def buffer_segments(
    block: Block, hold_segments: bool = False, live_out: bool = False
) -> tuple[list[Interval], list[tuple]]:
    """`buffer_liveness(block, hold_segments)` and the NPU segments' (output, input) conflicts
    (`segment_conflicts`; `live_out`: the program outputs' too)."""
    steps: list[tuple[Hashable | None, Sequence[Hashable]]] = []
    kinds: list[str] = []
    meta: dict[Hashable, tuple[int, str, int]] = {}
    live_out: list[SSAValue] = []
    for op in block.ops:
        if isinstance(op, B.WriteOp):
            buf = op.out_buffer()
            steps.append((op.results[0], op.operands[:-1]))
            meta[op.results[0]] = (N.tensor_bytes(op.results[0].type), buf.on.value, buf.buffer_id)
            npu = isinstance(op, B.ExecOp) and op.device.data is N.Device.NPU
            kinds.append("npu" if npu else "end")
        else:
            steps.append((None, op.operands))
            kinds.append("end" if op.name == "func.return" else "skip")
            if op.name == "func.return":
                live_out.extend(op.operands)
    ranges = live_ranges(steps, live_out)
    reads, runs = [r for _, r in steps], segment_runs(kinds)
    pairs = segment_conflicts(ranges, reads, runs, live_out)
    if hold_segments:
        hold_segment_inputs(ranges, reads, runs)
    out = []
    for key, (s, e) in ranges.items():
        size, device, buf = meta[key]
        out.append(Interval(key, s, e, size, device, buf))
    return out, pairs


def segment_bound(intervals: Sequence[Interval], pairs: Iterable[tuple[Hashable, Hashable]]) -> int:
    """A lower bound for plans that keep each NPU segment's outputs out of its inputs' bytes (the
    `pairs`, (output, input), the input dead before the output's step): per device, the larger of
    its `peak_live_bytes` and, for each output o and step t at which one of its inputs dies, the
    clique of o, its inputs live at t (they overlap each other in time, and o by the pairs) and the
    values live both at t and at o's step (they overlap all of those in time); summed over the
    devices. Cost: per output, its inputs times the values."""
    ivs = list(intervals)
    by_key = {iv.key: iv for iv in ivs}
    devices = {iv.device for iv in ivs}
    need = {d: peak_live_bytes(iv for iv in ivs if iv.device == d) for d in devices}
    partners: dict[Hashable, list[Interval]] = {}
    for out, inp in pairs:
        o, i = by_key.get(out), by_key.get(inp)
        if o is not None and i is not None and o.device == i.device and i.end < o.start:
            partners.setdefault(out, []).append(i)
    for out, inputs in partners.items():
        o = by_key[out]
        for t in {i.end for i in inputs}:
            clique = o.size + sum(i.size for i in inputs if i.start <= t <= i.end) + sum(
                v.size for v in ivs if v is not o and v.device == o.device and v.start <= t and v.end >= o.start
            )
            need[o.device] = max(need[o.device], clique)
    return sum(need.values())


def peak_live_bytes(intervals: Iterable[Interval]) -> int:
    """The lower bound of the bytes any buffer plan of `intervals` needs.

    A value is live at every step `t` with `start <= t <= end` (a live-out value to the last
    step); values live at one step need disjoint memory, and buffers belong to one device, so
    each device needs at least the largest sum of the sizes live at one of its steps. The bound
    is the sum of those per-device peaks (at least the single largest sum over all devices).
    Counted: exactly the intervals given (the planner passes the values it plans: exec results
    and transfers; not inputs, weights, constants or states). One difference array per device
    over the step positions (+size at `start`, -size after `end`) and a prefix sum: linear in
    the intervals plus the steps.
    """
    events: dict[str, dict[int, int]] = {}
    last = 0
    ivs = list(intervals)
    for iv in ivs:
        if iv.end != LIVE_OUT:
            last = max(last, iv.end)
        last = max(last, iv.start)
    for iv in ivs:
        delta = events.setdefault(iv.device, {})
        end = last + 1 if iv.end == LIVE_OUT else iv.end + 1
        delta[iv.start] = delta.get(iv.start, 0) + iv.size
        delta[end] = delta.get(end, 0) - iv.size
    total = 0
    for delta in events.values():
        live = peak = 0
        for pos in range(last + 2):
            live += delta.get(pos, 0)
            peak = max(peak, live)
        total += peak
    return total
