"""Greedy buffer assignment: the second and third planners of `lower-npuir-to-buffer`.

`greedy_by_size(intervals)` places the same live intervals as `npuir_to_buffer.linear_scan`
into the same buffer model (a buffer is one device's block of fixed size; values whose
intervals do not overlap may share it when they fit), visiting the values largest first instead
of in schedule order:

- per device, values in decreasing size (ties: earlier `start` first);
- a value goes into the smallest existing buffer of its device none of whose values overlaps it
  (every existing buffer is at least as large: they were created for larger or equal values),
  else into a new buffer of exactly its size;
- a returned value (live to the end) is placed like any other: nothing writes its buffer after
  it, since it stays live; the executor copies outputs out of their buffers.

Large values are the ones whose placement decides the total, so they choose first; small ones
fill the gaps in time. Buffer ids are then renumbered in the order of their first write in the
schedule (the order `linear_scan` creates them in). The overlap test keeps each buffer's
intervals sorted by `start` (a bisection per probe), so the cost is O(values × buffers × log).

`grow_in_order(intervals)` visits the values in schedule order instead, and when every free buffer
is too small grows the largest free one rather than adding a buffer (ResNet's 3-wide peaks of
mixed sizes: greedy by size adds a fourth, small buffer; this reaches the bound). O(values ×
buffers). The pass keeps, per function, whichever plan needs the fewest bytes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from lowering.liveness import Interval


def greedy_by_size(intervals: Sequence[Interval]) -> tuple[list[tuple[str, int]], list[int]]:
    """`(buffers, assignment)`: (device, bytes) of buffer i, and the buffer of each interval (in
    the order given). The intervals are not modified."""
    order = sorted(range(len(intervals)), key=lambda i: (-intervals[i].size, intervals[i].start, i))
    sizes: list[int] = []
    devices: list[str] = []
    spans: list[list[tuple[int, int]]] = []  # per buffer: sorted (start, end)
    by_device: dict[str, list[int]] = {}  # device -> buffer ids, decreasing size
    assignment = [-1] * len(intervals)
    for i in order:
        iv = intervals[i]
        pool = by_device.setdefault(iv.device, [])
        chosen = next((b for b in reversed(pool) if _fits(spans[b], iv.start, iv.end)), None)
        if chosen is None:
            chosen = len(sizes)
            sizes.append(iv.size)
            devices.append(iv.device)
            spans.append([])
            pool.append(chosen)
        _insert(spans[chosen], iv.start, iv.end)
        assignment[i] = chosen
    return _renumber(sizes, devices, spans, assignment)


def _fits(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """No interval of `spans` (disjoint, sorted by start) overlaps [start, end]."""
    k = bisect_left(spans, (start, -1))
    if k < len(spans) and spans[k][0] <= end:
        return False
    return not (k > 0 and spans[k - 1][1] >= start)


def _insert(spans: list[tuple[int, int]], start: int, end: int) -> None:
    spans.insert(bisect_left(spans, (start, end)), (start, end))


def _renumber(
    sizes: list[int], devices: list[str], spans: list[list[tuple[int, int]]], assignment: list[int]
) -> tuple[list[tuple[str, int]], list[int]]:
    """Buffer ids in the order of each buffer's first write."""
    order = sorted(range(len(sizes)), key=lambda b: spans[b][0][0])
    new_id = {old: new for new, old in enumerate(order)}
    return [(devices[b], sizes[b]) for b in order], [new_id[b] for b in assignment]


def grow_in_order(intervals: Sequence[Interval]) -> tuple[list[tuple[str, int]], list[int]]:
    """`(buffers, assignment)` like `greedy_by_size`, visiting values in schedule order (`start`):
    a value takes the smallest free buffer of its device that is large enough; if every free
    buffer is too small, it grows the largest free one to its size (cheaper than a new buffer);
    with no free buffer, a new one of its size. A buffer is free once its last value's `end` is
    before the value's `start` (values arrive in start order, so that is the only check)."""
    order = sorted(range(len(intervals)), key=lambda i: (intervals[i].start, i))
    sizes: list[int] = []
    devices: list[str] = []
    busy: list[int] = []  # per buffer: the end of its last value
    assignment = [-1] * len(intervals)
    for i in order:
        iv = intervals[i]
        free = [b for b in range(len(sizes)) if devices[b] == iv.device and busy[b] < iv.start]
        fitting = [b for b in free if sizes[b] >= iv.size]
        if fitting:
            chosen = min(fitting, key=lambda b: sizes[b])
        elif free:
            chosen = max(free, key=lambda b: sizes[b])
            sizes[chosen] = iv.size
        else:
            chosen = len(sizes)
            sizes.append(iv.size)
            devices.append(iv.device)
            busy.append(iv.end)
        busy[chosen] = iv.end
        assignment[i] = chosen
    return [(devices[b], sizes[b]) for b in range(len(sizes))], assignment
