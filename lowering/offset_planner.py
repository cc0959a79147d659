"""Offset placement: every planned value gets a byte offset in its device's arena.

A `Placement` is the memory plan `lower-npuir-to-buffer` emits: per device one arena of
`arenas[device]` bytes, and per live interval (the values `lowering.liveness` computes) an offset
into its device's arena; the value occupies `[offset, offset + size)`. It is valid when every
offset is a multiple of `ALIGNMENT`, every value fits its arena, and two values whose intervals
overlap (`Interval.overlaps`: a step never writes memory it reads) have disjoint byte ranges
(`check_placement`). Its cost is `planned_bytes`, the sum of the arenas.

Two offset planners, the strategies of TFLite's arena planner (Pisarchyk & Lee, "Efficient
memory management for deep neural net inference", 2020), sharing one placement rule:

- `by_size`: values in decreasing size (ties: earlier start first);
- `by_breadth`: steps in decreasing breadth (the bytes live at the step), and at each step its
  not-yet-placed values in decreasing size;

and `place(intervals, order, conflicts)`: each value, in that order, takes the smallest gap
between the already-placed values whose intervals overlap its own (or that `conflicts` names:
pairs that must not share bytes whatever their intervals, an NPU segment's outputs and inputs)
that holds its (aligned) size, else the lowest offset above them all (best fit); `soft` pairs
(a returned value and an input of the segment writing it: the executor writes that value into
the caller's tensor, or else stages it) are kept apart too whenever that does not grow the arena
beyond the fit that ignores them (the staging is then avoided for free). Overlap queries
are answered from two per-step indexes (values live at step t; values starting at t), so a
value costs its interval's length plus the values it overlaps: about linear in the schedule for
transformer-style graphs, whose intervals are short.

`from_buffers(intervals, buffers, assignment)` lays the buffer plans of `npuir_to_buffer`
(linear scan, greedy by size, grow in order: a value per fixed-size buffer at a time) out in
arenas, buffer after buffer, so every plan is a `Placement` and the pass keeps the smallest.

`group_buffers(intervals, placement)` turns a placement into the IR's `buffer.alloc` views: the
values at one offset of one arena share one buffer (they overlap in address, so no two of them
are live at once), sized for the largest; ids in order of their first write.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from dialects.buffer import ALIGNMENT
from lowering.liveness import LIVE_OUT, Interval

__all__ = [
    "ALIGNMENT",
    "BufferViews",
    "Placement",
    "PlacementError",
    "align",
    "by_breadth",
    "by_size",
    "check_placement",
    "from_buffers",
    "group_buffers",
    "place",
]


def align(n: int) -> int:
    """`n` rounded up to a multiple of `ALIGNMENT`."""
    return -(-n // ALIGNMENT) * ALIGNMENT


@dataclass
class Placement:
    """An offset per interval (in the order given to the planner) and the arena size per device."""

    offsets: list[int]
    arenas: dict[str, int] = field(default_factory=dict)

    @property
    def planned_bytes(self) -> int:
        return sum(self.arenas.values())


class PlacementError(ValueError):
    """A placement breaks a rule (`check_placement`)."""


def _horizon(intervals: Sequence[Interval]) -> int:
    """The last step any interval reaches (live-out intervals end one step after it)."""
    last = 0
    for iv in intervals:
        last = max(last, iv.start, iv.end if iv.end != LIVE_OUT else 0)
    return last + 1


Conflicts = dict[int, list[int]]
"""Interval index -> the indices whose bytes it must not share, whatever the intervals."""


def place(
    intervals: Sequence[Interval],
    order: Sequence[int],
    conflicts: Conflicts | None = None,
    soft: Conflicts | None = None,
) -> Placement:
    """Place `intervals[i]` for i in `order` (every index once) by best fit (module docstring)."""
    horizon = _horizon(intervals)
    ends = [min(iv.end, horizon) for iv in intervals]
    offsets = [0] * len(intervals)
    live_at: dict[str, list[list[int]]] = {}
    starts_at: dict[str, list[list[int]]] = {}
    arenas: dict[str, int] = {}
    placed = [False] * len(intervals)
    for i in order:
        iv = intervals[i]
        live = live_at.get(iv.device)
        if live is None:
            live = live_at[iv.device] = [[] for _ in range(horizon + 1)]
            starts_at[iv.device] = [[] for _ in range(horizon + 1)]
        starts = starts_at[iv.device]
        start, end, need = iv.start, ends[i], align(iv.size)
        taken = [(offsets[j], offsets[j] + align(intervals[j].size)) for j in live[start]]
        for t in range(start + 1, end + 1):
            taken.extend((offsets[j], offsets[j] + align(intervals[j].size)) for j in starts[t])
        if conflicts:
            taken.extend((offsets[j], offsets[j] + align(intervals[j].size)) for j in conflicts.get(i, ()) if placed[j])
        offsets[i] = _best_fit(taken, need)
        avoid = [(offsets[j], offsets[j] + align(intervals[j].size)) for j in (soft or {}).get(i, ()) if placed[j]]
        if avoid:
            apart = _best_fit([*taken, *avoid], need)
            if apart + need <= max(arenas.get(iv.device, 0), offsets[i] + need):
                offsets[i] = apart
        placed[i] = True
        for t in range(start, end + 1):
            live[t].append(i)
        starts[start].append(i)
        arenas[iv.device] = max(arenas.get(iv.device, 0), offsets[i] + need)
    return Placement(offsets, arenas)


def _best_fit(taken: list[tuple[int, int]], need: int) -> int:
    """The start of the smallest gap between the `taken` ranges that holds `need` bytes, else the
    end of the highest range."""
    best, best_gap, top = -1, -1, 0
    for lo, hi in sorted(taken):
        gap = lo - top
        if gap >= need and (best < 0 or gap < best_gap):
            best, best_gap = top, gap
        top = max(top, hi)
    return best if best >= 0 else top


def by_size(
    intervals: Sequence[Interval], conflicts: Conflicts | None = None, soft: Conflicts | None = None
) -> Placement:
    """Greedy by size: the largest values choose first."""
    order = sorted(range(len(intervals)), key=lambda i: (-intervals[i].size, intervals[i].start, i))
    return place(intervals, order, conflicts, soft)


def by_breadth(
    intervals: Sequence[Interval], conflicts: Conflicts | None = None, soft: Conflicts | None = None
) -> Placement:
    """Greedy by breadth: the steps with the most bytes live place their values first."""
    horizon = _horizon(intervals)
    live: list[list[int]] = [[] for _ in range(horizon + 1)]
    breadth = [0] * (horizon + 1)
    for i, iv in enumerate(intervals):
        for t in range(iv.start, min(iv.end, horizon) + 1):
            live[t].append(i)
            breadth[t] += iv.size
    seen = [False] * len(intervals)
    order: list[int] = []
    for t in sorted(range(horizon + 1), key=lambda t: (-breadth[t], t)):
        for i in sorted(live[t], key=lambda i: (-intervals[i].size, intervals[i].start, i)):
            if not seen[i]:
                seen[i] = True
                order.append(i)
    return place(intervals, order, conflicts, soft)


def from_buffers(
    intervals: Sequence[Interval], buffers: Sequence[tuple[str, int]], assignment: Sequence[int]
) -> Placement:
    """A buffer plan (`buffers[b]` = (device, bytes); interval i in buffer `assignment[i]`) as a
    placement: each device's buffers one after another in its arena, in id order."""
    base: list[int] = []
    arenas: dict[str, int] = {}
    for device, size in buffers:
        base.append(arenas.get(device, 0))
        arenas[device] = base[-1] + align(size)
    return Placement([base[b] for b in assignment], arenas)


def check_placement(
    intervals: Sequence[Interval], placement: Placement, conflicts: Conflicts | None = None
) -> None:
    """PlacementError unless `placement` is valid for `intervals` and `conflicts` (module docstring)."""
    if len(placement.offsets) != len(intervals):
        raise PlacementError(f"{len(placement.offsets)} offsets for {len(intervals)} intervals")
    for iv, off in zip(intervals, placement.offsets, strict=True):
        if off % ALIGNMENT or off < 0:
            raise PlacementError(f"{iv.key}: offset {off} is not a non-negative multiple of {ALIGNMENT}")
        if off + iv.size > placement.arenas.get(iv.device, 0):
            raise PlacementError(f"{iv.key}: [{off}, {off + iv.size}) is past the {iv.device} arena")
    for i, others in (conflicts or {}).items():
        a, lo = intervals[i], placement.offsets[i]
        for j in others:
            b, other = intervals[j], placement.offsets[j]
            if a.size and b.size and lo < other + b.size and other < lo + a.size:
                raise PlacementError(f"{a.key} and {b.key} must not share bytes and overlap")
    order = sorted(range(len(intervals)), key=lambda i: intervals[i].start)
    for n, i in enumerate(order):
        a, lo = intervals[i], placement.offsets[i]
        for j in order[n + 1:]:
            b = intervals[j]
            if b.start > a.end:
                break
            other = placement.offsets[j]
            if a.device == b.device and a.size and b.size and lo < other + b.size and other < lo + a.size:
                raise PlacementError(
                    f"{a.key} and {b.key} are live at once and overlap: [{lo}, {lo + a.size}) and "
                    f"[{other}, {other + b.size})"
                )


@dataclass
class BufferViews:
    """The `buffer.alloc` views of a placement: buffer b is `(device, offset, bytes)`; interval i
    lives in buffer `assignment[i]`."""

    buffers: list[tuple[str, int, int]]
    assignment: list[int]


def group_buffers(intervals: Sequence[Interval], placement: Placement) -> BufferViews:
    """One buffer per (device, offset) holding values, sized for its largest value; a value of no
    bytes gets a buffer of its own (it overlaps nothing, so sharing could put two live values in
    one buffer). Ids in the order of each buffer's first write."""
    first: dict[tuple, int] = {}
    size: dict[tuple, int] = {}
    keys: list[tuple] = []
    for i, (iv, off) in enumerate(zip(intervals, placement.offsets, strict=True)):
        key = (iv.device, off) if iv.size else (iv.device, off, i)
        keys.append(key)
        first[key] = min(first.get(key, iv.start), iv.start)
        size[key] = max(size.get(key, 0), iv.size)
    ordered = sorted(first, key=lambda k: (first[k], k[1]))
    number = {k: n for n, k in enumerate(ordered)}
    return BufferViews([(k[0], k[1], size[k]) for k in ordered], [number[k] for k in keys])
