"""Device-affinity scheduling: place and order npuir ops so that ops of one device run back to back.

Pass `schedule-device-affinity`. Every device change along the schedule is a transition (a
segment boundary: the NPU subgraph ends, data moves, the CPU runs, data moves back), so fewer
transitions mean fewer, larger compiled NPU subgraphs.

First, islands go home: a connected group of NPU ops that only move data (`KindSpec.moves_data`:
a convert, a reshape, a gather, ...) whose every producer and consumer outside the group runs on
the CPU (graph inputs and the function's results count as CPU) moves to the CPU. The CPU moves
the same bytes the two transfers around the island would, and the island's transitions vanish
whatever the order (e.g. a boolean mask converted to integers between two host integer ops).
Weights and constants then sit on the device of their users (the npu if any reads them).

Then list scheduling over the data-dependence DAG of each function body, O(n log n):
- a ready queue per device (a heap keyed by original position, so independent work keeps its
  program order and its locality);
- keep taking ready ops of the current device; switch device only when its queue is empty;
- run it twice, starting on the cpu and on the npu, and keep the schedule with fewer
  transitions (ties: the one starting on the device of the first op).

Sources (`npuir.input`, `npuir.weight`, `npuir.constant`) have no device cost: they move to the
top of the block, in their original order. Transitions are counted over the other ops only
(`count_transitions`), before the pass changes anything and after. The pass records
`npuir.schedule = {transitions_before, transitions_after, moved_to_cpu}` on the module, which the
model compiler's report reads (`forge.analysis.metrics`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from dialects import npuir as N
from forge.diagnostics import pass_failure
from forge.kinds import KINDS
from lowering.npuir_to_buffer import state_values
from lowering.stats import PassStats


def _device(op: Operation) -> str | None:
    """The device an op runs on, or None for sources and ops without one."""
    if isinstance(op, N.SourceOp):
        return None
    attr = op.properties.get("device")
    return None if attr is None else attr.data.value


def count_transitions(devices: Iterable[str | None]) -> int:
    """Device changes along a sequence of devices (None entries are skipped)."""
    count, last = 0, None
    for d in devices:
        if d is None:
            continue
        if last is not None and d != last:
            count += 1
        last = d
    return count


def _list_schedule(
    ops: Sequence[Operation], devices: Sequence[str], preds: list[int], succs: list[list[int]], start: str
) -> list[int]:
    remaining = preds[:]
    ready: dict[str, list[int]] = {"npu": [], "cpu": []}
    for i, n in enumerate(remaining):
        if n == 0:
            ready[devices[i]].append(i)  # ascending: already a heap
    order: list[int] = []
    current = start
    while len(order) < len(ops):
        queue = ready[current]
        if not queue:
            current = "cpu" if current == "npu" else "npu"
            queue = ready[current]
        i = heapq.heappop(queue)
        order.append(i)
        for s in succs[i]:
            remaining[s] -= 1
            if remaining[s] == 0:
                heapq.heappush(ready[devices[s]], s)
    return order


@dataclass
class ScheduleStats(PassStats):
    transitions_before: int = 0
    transitions_after: int = 0
    moved_to_cpu: int = 0


def _islands(ops: Sequence[Operation], index: dict[Operation, int]) -> list[list[int]]:
    """Connected groups of NPU ops (data edges between NPU ops), as op indices."""
    parent = list(range(len(ops)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, op in enumerate(ops):
        if _device(op) != "npu":
            continue
        for operand in op.operands:
            j = index.get(operand.owner)
            if j is not None and _device(ops[j]) == "npu":
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i, op in enumerate(ops):
        if _device(op) == "npu":
            groups.setdefault(root(i), []).append(i)
    return list(groups.values())


def _lone_data_movement(group: list[int], ops: Sequence[Operation], index: dict[Operation, int]) -> bool:
    """A group of data-movement ops whose outside producers and consumers all run on the CPU."""
    members = {ops[i] for i in group}
    for op in members:
        spec = KINDS.get(op.name.removeprefix("npuir."))
        if spec is None or not spec.moves_data:
            return False
        for operand in op.operands:
            producer = operand.owner
            # sources are not in `index`: inputs live on the cpu, weights and constants wherever read
            if producer not in members and producer in index and _device(producer) != "cpu":
                return False
        for use in op.results[0].uses:
            user = use.operation
            if user not in members and user.name != "func.return" and _device(user) != "cpu":
                return False
    return True


def move_islands_to_cpu(ops: Sequence[Operation]) -> int:
    """Move every lone data-movement island to the CPU (see the module docstring); the count moved."""
    index = {op: i for i, op in enumerate(ops)}
    moved = 0
    for group in _islands(ops, index):
        if _lone_data_movement(group, ops, index):
            for i in group:
                ops[i].properties["device"] = N.CPU
            moved += len(group)
    return moved


def _place_sources(sources: Sequence[Operation]) -> None:
    """A weight or constant lives on the npu when an npu op reads it, else on the cpu."""
    for op in sources:
        if isinstance(op, N.InputOp):
            continue
        npu = any(_device(use.operation) == "npu" for use in op.results[0].uses)
        op.properties["device"] = N.NPU if npu else N.CPU


def schedule_block(block: Block) -> ScheduleStats:
    """Reorder `block` (sources first, then the list schedule, the terminator last)."""
    sources: list[Operation] = []
    ops: list[Operation] = []
    terminator: Operation | None = None
    for op in block.ops:
        if isinstance(op, N.SourceOp):
            sources.append(op)
        elif op.name == "func.return":
            terminator = op
        else:
            if _device(op) is None:
                raise pass_failure(op, f"schedule-device-affinity: {op.name} has no device (lower to npuir first)")
            ops.append(op)
    before = count_transitions(_device(op) for op in ops)
    moved = move_islands_to_cpu(ops)
    if moved:
        _place_sources(sources)
    devices = [_device(op) for op in ops]
    placed = count_transitions(devices)
    index = {op: i for i, op in enumerate(ops)}
    preds = [0] * len(ops)
    succs: list[list[int]] = [[] for _ in ops]
    for i, op in enumerate(ops):
        seen: set[int] = set()
        for operand in op.operands:
            j = index.get(operand.owner)
            if j is not None and j not in seen:
                seen.add(j)
                preds[i] += 1
                succs[j].append(i)
    for i, j in _state_write_orders(block, index):
        preds[j] += 1
        succs[i].append(j)
    best: list[int] | None = None
    best_count = 0
    first = devices[0] if devices else "cpu"
    for start in (first, "npu" if first == "cpu" else "cpu"):
        order = _list_schedule(ops, devices, preds, succs, start)
        n = count_transitions(devices[i] for i in order)
        if best is None or n < best_count:
            best, best_count = order, n
    assert best is not None
    if best_count >= placed:  # no gain: keep the program order (and its memory profile)
        best, best_count = list(range(len(ops))), placed
    tail = [terminator] if terminator is not None else []
    _reorder(block, [*sources, *(ops[i] for i in best), *tail])
    return ScheduleStats(before, best_count, moved)


def _state_write_orders(block: Block, index: dict[Operation, int]) -> list[tuple[int, int]]:
    """(reader, write) pairs: a state's write (the op defining its new value, `forge.state`) updates the
    state's buffer in place, so it runs after every other op reading the state's entry value."""
    pairs: list[tuple[int, int]] = []
    for value in state_values(block)[1]:
        j = index.get(value.owner)
        if j is None or not value.owner.operands:
            continue
        readers = {index[u.operation] for u in value.owner.operands[0].uses if u.operation in index}
        pairs += [(i, j) for i in sorted(readers - {j})]
    return pairs


def _reorder(block: Block, order: list[Operation]) -> None:
    current = list(block.ops)
    if current == order:
        return
    for op in order:
        op.detach()
    block.add_ops(order)


def schedule_module(module: ModuleOp) -> ScheduleStats:
    return ScheduleStats.over(module, schedule_block)


@dataclass(frozen=True)
class ScheduleDeviceAffinityPass(ModulePass):
    """Move lone data-movement islands to the CPU, then group ops of one device together (data
    dependences respected); records `npuir.schedule = {transitions_before, transitions_after,
    moved_to_cpu}` on the module."""

    name: ClassVar[str] = "schedule-device-affinity"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes["npuir.schedule"] = schedule_module(op).as_attribute()
