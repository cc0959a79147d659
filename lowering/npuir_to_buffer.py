"""npuir -> buffer: explicit device transitions, liveness, and the memory plan (offsets in one arena per device).

Pass `lower-npuir-to-buffer`. The op order of the npuir function is the schedule (run
`schedule-device-affinity` first to group devices). For each function:

1. Transitions. The schedule splits into segments (maximal runs of ops on one device). A value
   read on the other device than the one it lives on (graph inputs live on the cpu; weights and
   constants are device-neutral and never move) is copied by a `buffer.transfer`, placed at the
   start of the first segment that reads it and reused by later segments of that device.
2. Liveness (`lowering.liveness.live_ranges`) over the resulting steps (transfers and
   execs): a value is live from the step that writes it to its last reader; returned values are
   live to the end. An NPU segment (a run of npu execs: one compiled graph) may write its outputs
   while it still reads its inputs, so no output may take an input's bytes (the executor would
   stage and copy it): the offset planners get those pairs as conflicts
   (`lowering.liveness.segment_conflicts`), the buffer planners intervals in which a segment's
   inputs stay live to its end (`hold_segment_inputs`). A returned value's pairs are soft: the
   executor writes it straight into the caller's tensor (direct outputs), never into its planned
   bytes (were it not bound directly, it would be staged: correct, one copy per call), so it may
   take an input's bytes, and does only where that gives a smaller plan (`plan`; phi3's and
   whisper-decoder's logits). The bound is op by op.
3. Placement (`plan`): every planned value gets a byte offset in its device's arena, values
   live at the same step never share a byte (`lowering.offset_planner`). The planners:
   `offset-by-size` and `offset-by-breadth` place values directly at offsets (greedy by size /
   by breadth, best-fit gaps); `linear-scan`, `greedy-by-size` and `grow-in-order` plan fixed-size
   buffers holding one value at a time (`linear_scan` here, `lowering.greedy_by_size`), laid out
   one after another in the arena. The linear scan walks values in definition order, releases the
   buffers whose value's last reader ran before this step, and gives the value the smallest free
   buffer of its device that is large enough, or a new one; returned values get a buffer of their
   own. `best` (the default) keeps, per function, the plan with the smallest arenas (the earlier
   of `PLANNERS` on a tie). A step never writes memory it reads (no in-place execution), except a
   state's update (below). Offsets are multiples of `dialects.buffer.ALIGNMENT` (64 bytes).
4. Emission: a `buffer.arena` per device (in order of first use), a `buffer.alloc %arena[offset]`
   view per (device, offset) holding values (sized for the largest; ids in order of first
   write), then the state buffers, the sources, the steps in destination-passing style
   (`buffer.exec ... into %bN`, `buffer.transfer ... into %bN`) and the return.

States (a function with `forge.state = ["name", ...]`, from the importer's `state=True`: its
last arguments are the states' values on entry, its last results their values on exit, in that
order). Each state gets a buffer of its own (`buffer.alloc` with no arena), after the planned
ones, on the device of the op that computes its new value (the cpu when the function leaves it
unchanged); the planners never see it. Its entry value is `buffer.state "name" in %bS` and the
op computing its new value writes `into %bS` in place, so no copy is made per call. That is
legal only when the op reads the entry value as its first operand and nothing reads the entry
value later (the KV-cache pattern: `index_put(cache, [pos], new_rows)`); anything else is
refused with an error naming the state. An op on either device reads the entry value in place (no
transfer: the runtime binds the state's memory), so an attention that reads the cache before its
update (`cached-attention`) moves none of it.
The lowered function takes and returns the user's values only; `buffer.states = {states,
state_bytes}` is recorded on the module when there are states.

The pass records `buffer.plan = {vregs, values, transfers, buffers, peak_bytes_naive,
peak_bytes_planned, peak_bytes_lower_bound}` on the module (`vregs`: npuir ops; `values`: values
needing a buffer; `peak_bytes_naive`: their total size, what a plan without reuse needs;
`peak_bytes_planned`: the total size of the arenas; `peak_bytes_lower_bound`: what no plan can
beat, `lowering.liveness.peak_live_bytes` of the planned values: per device the largest sum of
the sizes live at one step, summed over the devices. All three count the same values, the exec
and transfer results the plan places: not inputs, weights, constants, nor states, whose buffers
are their own).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass

from dialects import buffer as B
from dialects import npuir as N
from forge.diagnostics import pass_failure
from lowering import offset_planner
from lowering.greedy_by_size import greedy_by_size, grow_in_order
from lowering.liveness import (
    LIVE_OUT,
    Interval,
    hold_segment_inputs,
    live_ranges,
    peak_live_bytes,
    segment_conflicts,
    segment_runs,
)
from lowering.offset_planner import Placement
from lowering.stats import PassStats, functions

# ============================================================================ linear scan


@dataclass
class Allocation:
    """The result of `linear_scan`: a buffer per interval and the buffers themselves."""

    buffers: list[tuple[str, int]] = field(default_factory=list)
    """(device, bytes) of buffer i."""

    @property
    def planned_bytes(self) -> int:
        return sum(size for _, size in self.buffers)


def linear_scan(intervals: Sequence[Interval]) -> Allocation:
    """Assign `interval.buffer` for every interval (given in increasing `start` order)."""
    alloc = Allocation()
    free: dict[str, list[tuple[int, int]]] = {}  # device -> sorted (size, buffer id)
    active: list[tuple[int, int]] = []  # heap of (end, buffer id)
    for iv in intervals:
        while active and active[0][0] < iv.start:
            _, bid = heapq.heappop(active)
            device, size = alloc.buffers[bid]
            insort(free.setdefault(device, []), (size, bid))
        if iv.end == LIVE_OUT:
            iv.buffer = _new(alloc, iv)
            continue
        pool = free.get(iv.device)
        k = bisect_left(pool, (iv.size, -1)) if pool else 0
        if pool and k < len(pool):
            iv.buffer = pool.pop(k)[1]
        else:
            iv.buffer = _new(alloc, iv)
        heapq.heappush(active, (iv.end, iv.buffer))
    return alloc


def _new(alloc: Allocation, iv: Interval) -> int:
    alloc.buffers.append((iv.device, iv.size))
    return len(alloc.buffers) - 1


PLANNERS = ("best", "offset-by-size", "offset-by-breadth", "linear-scan", "greedy-by-size", "grow-in-order")
"""The `planner` option: `best` (default) keeps the smallest of the other plans per function."""

_OFFSET = {"offset-by-size": offset_planner.by_size, "offset-by-breadth": offset_planner.by_breadth}
_BUFFER = {"greedy-by-size": greedy_by_size, "grow-in-order": grow_in_order}


def _linear_scan_plan(intervals: Sequence[Interval]) -> tuple[list[tuple[str, int]], list[int]]:
    scan = linear_scan(intervals)
    return scan.buffers, [iv.buffer for iv in intervals]  # type: ignore[misc]


def plan(
    intervals: Sequence[Interval],
    planner: str = "best",
    conflicts: offset_planner.Conflicts | None = None,
    held: Sequence[Interval] | None = None,
    soft: offset_planner.Conflicts | None = None,
) -> Placement:
    """The `planner` plan of `intervals` (see `PLANNERS`) as a `Placement`. `best`: the smallest
    of all plans, the earlier one of `PLANNERS` on a tie (the offset planners first); it stops at
    the first plan that meets `aligned_floor` (no aligned plan is smaller). The offset planners
    honour `conflicts` (pairs that must not share bytes: an NPU segment's outputs and inputs); the
    buffer planners, which cannot, plan `held` instead (the same values, each segment's inputs live
    to its end; `intervals` if None), their buffers laid out one after another
    (`offset_planner.from_buffers`). `soft` pairs (a returned value and its segment's inputs) are
    first honoured like `conflicts`; only if no plan then meets the floor, the offset planners
    run again with them soft (`offset_planner.place`), and such a plan is kept only when it is
    strictly smaller: a returned value shares an input's bytes only where that saves bytes."""
    floor = aligned_floor(intervals) if planner == "best" else -1
    strict = _merged(conflicts, soft)
    names = [name for name in PLANNERS[1:] if planner in ("best", name)]
    best: Placement | None = None
    for name in names:
        candidate = _placement(name, intervals, strict, held if held is not None else intervals)
        if best is None or candidate.planned_bytes < best.planned_bytes:  # the first on a tie
            best = candidate
        if best.planned_bytes <= floor:
            return best
    assert best is not None
    for name in names if soft else ():
        if name in _OFFSET:
            candidate = _OFFSET[name](intervals, conflicts, soft)
            if candidate.planned_bytes < best.planned_bytes:
                best = candidate
            if best.planned_bytes <= floor:
                break
    return best


def _merged(
    conflicts: offset_planner.Conflicts | None, soft: offset_planner.Conflicts | None
) -> offset_planner.Conflicts | None:
    if not soft:
        return conflicts
    merged = {i: list(js) for i, js in (conflicts or {}).items()}
    for i, js in soft.items():
        merged.setdefault(i, []).extend(js)
    return merged


def _placement(
    name: str, intervals: Sequence[Interval], conflicts: offset_planner.Conflicts | None, held: Sequence[Interval]
) -> Placement:
    if name in _OFFSET:
        return _OFFSET[name](intervals, conflicts)
    buffers, assignment = _linear_scan_plan(held) if name == "linear-scan" else _BUFFER[name](held)
    return offset_planner.from_buffers(held, buffers, assignment)


def aligned_floor(intervals: Sequence[Interval]) -> int:
    """`peak_live_bytes` of the sizes rounded up to `ALIGNMENT`: no placement with aligned offsets
    (and arenas ending on an aligned value end) needs less, since each value then blocks the whole
    aligned slot from the next one's offset."""
    return peak_live_bytes(
        Interval(iv.key, iv.start, iv.end, offset_planner.align(iv.size), iv.device) for iv in intervals
    )


# ============================================================================== lowering


@dataclass
class PlanStats(PassStats):
    vregs: int = 0
    values: int = 0
    transfers: int = 0
    buffers: int = 0
    peak_bytes_naive: int = 0
    peak_bytes_planned: int = 0
    peak_bytes_lower_bound: int = 0


_DEVICE_ATTR = {"npu": N.DeviceAttr(N.Device.NPU), "cpu": N.DeviceAttr(N.Device.CPU)}
_SOURCES = frozenset(cls for cls in N.npuir_kinds().values() if issubclass(cls, N.SourceOp))
_COMPUTE = frozenset(cls for cls in N.npuir_kinds().values() if not issubclass(cls, N.SourceOp))
_KIND = {cls: StringAttr(kind) for kind, cls in N.npuir_kinds().items()}
_COMMON = frozenset(N.COMMON_PROPS)


@cache
def _bytes(t: Attribute) -> int:
    return N.tensor_bytes(t)


def _device_of(op: Operation) -> str:
    return op.properties["device"].data.value


def _exec(op: Operation, ins: list[SSAValue], out: SSAValue) -> Operation:
    """`ExecOp.of(op, ins, out)` without IRDL accessors (the lowering's hot path)."""
    props = op.properties
    params = {k: v for k, v in props.items() if k not in _COMMON}
    return B.ExecOp.create(
        operands=[*ins, out],
        result_types=[op.results[0].type],
        properties={"device": props["device"], "kind": _KIND[type(op)], "params": DictionaryAttr(params)},
        location=op.location,
    )


STATE_ATTR = "forge.state"
"""The function attribute naming its states (`forge.frontend.fx_importer.STATE_ATTR`)."""


def state_values(block: Block) -> tuple[list[SSAValue], list[SSAValue]]:
    """(entry values, exit values) of the function's states: the `npuir.input`s of its last `forge.state`
    arguments and its last results (none when it has no states)."""
    fn = block.parent_op()
    names = fn.attributes.get(STATE_ATTR) if fn is not None else None
    if names is None:
        return [], []
    n = len(names.data)
    first = len(block.args) - n
    entries = [op.results[0] for op in block.ops
               if isinstance(op, N.InputOp) and op.properties["index"].value.data >= first]
    ret = block.last_op
    exits = list(ret.operands)[len(ret.operands) - n:] if ret is not None and ret.name == "func.return" else []
    return entries, exits


@dataclass
class _States:
    """The states of one function: which input index is which state and which value updates it."""

    names: list[str]
    first_input: int
    first_result: int
    updates: dict[SSAValue, int] = field(default_factory=dict)  # new value -> state number
    entries: dict[SSAValue, int] = field(default_factory=dict)  # npuir.input result -> state number
    devices: list[str] = field(default_factory=list)

    @staticmethod
    def of(block: Block, names: Sequence[str], ret: Operation | None) -> _States:
        n = len(names)
        results = list(ret.operands) if ret is not None else []
        if n > len(block.args) or n > len(results):
            where = ret or block.parent_op()
            raise pass_failure(where, f"lower-npuir-to-buffer: {n} states but fewer arguments or results")
        states = _States(list(names), len(block.args) - n, len(results) - n)
        for i, value in enumerate(results[states.first_result:]):
            owner = value.owner
            device = _device_of(owner) if isinstance(owner, Operation) and type(owner) in _COMPUTE else "cpu"
            states.devices.append(device)
            if isinstance(owner, Operation) and type(owner) in _COMPUTE:
                if value in states.updates:
                    raise pass_failure(owner, f"lower-npuir-to-buffer: one value is the new value of two states "
                                       f"('{names[states.updates[value]]}', '{names[i]}')")
                states.updates[value] = i
        return states

    def entry_index(self, op: Operation) -> int | None:
        """The state number of an `npuir.input` reading a state, else None."""
        index = op.properties["index"].value.data
        return index - self.first_input if index >= self.first_input else None


def _check_in_place(states: _States, steps: Sequence, entry_of: dict[int, SSAValue]) -> None:
    """Each state's update reads the entry value first, and nothing reads the entry value later."""
    last_read: dict[SSAValue, int] = {}
    for pos, (_, _, _, reads) in enumerate(steps):
        for r in reads:
            last_read[r] = pos
    for pos, (kind, key, what, _) in enumerate(steps):
        number = states.updates.get(key) if kind == "exec" else None
        if number is None:
            continue
        name, entry = states.names[number], entry_of.get(number)
        if entry is None or what.operands[0] is not entry:
            raise pass_failure(what, f"lower-npuir-to-buffer: state '{name}': its new value must be computed from its "
                               "entry value as the first operand (an in-place update), e.g. index_put(state, ...)")
        if last_read.get(entry, -1) > pos:
            raise pass_failure(what, f"lower-npuir-to-buffer: state '{name}' is read after its update; it cannot be "
                               "updated in place")


def lower_block(block: Block, state_names: Sequence[str] = (), planner: str = "best") -> tuple[Block, PlanStats]:
    """The buffer-dialect block equivalent to npuir `block` (which is left untouched); `state_names`:
    the function's states (see the module docstring); `planner`: one of `PLANNERS`."""
    sources: list[Operation] = []
    compute: list[Operation] = []
    ret: Operation | None = None
    for op in block.ops:
        cls = type(op)
        if cls in _SOURCES:
            sources.append(op)
        elif cls in _COMPUTE:
            compute.append(op)
        elif op.name == "func.return":
            ret = op
        else:
            raise pass_failure(op, f"lower-npuir-to-buffer: cannot lower {op.name} (expected npuir ops)")

    states = _States.of(block, state_names, ret) if state_names else None
    entry_of: dict[int, SSAValue] = {}  # state number -> its entry value

    # Where each value lives: the device of its op; inputs on the cpu; weights, constants and a state's
    # entry value nowhere (read in place by any device).
    home: dict[SSAValue, str | None] = {}
    for op in sources:
        number = states.entry_index(op) if states is not None and type(op) is N.InputOp else None
        if number is not None:  # a state's buffer is read in place by either device (no transfer)
            entry_of[number] = op.results[0]
            home[op.results[0]] = None
        else:
            home[op.results[0]] = "cpu" if type(op) is N.InputOp else None

    # 1. steps: (kind, key, op-or-source, reads) with transfers at segment starts.
    Step = tuple[str, Hashable, object, list[Hashable]]
    steps: list[Step] = []
    transferred: dict[tuple[SSAValue, str], Hashable] = {}
    i, n = 0, len(compute)
    while i < n:
        device = _device_of(compute[i])
        j = i
        while j < n and _device_of(compute[j]) == device:
            j += 1
        execs: list[Step] = []
        for op in compute[i:j]:
            reads: list[Hashable] = []
            for v in op.operands:
                where = home.get(v)
                if where is None or where == device:
                    reads.append(v)
                    continue
                key = transferred.get((v, device))
                if key is None:
                    key = transferred[(v, device)] = (v, device)
                    steps.append(("transfer", key, v, [v]))
                reads.append(key)
            result = op.results[0]
            execs.append(("exec", result, op, reads))
            home[result] = device
        steps.extend(execs)
        i = j

    # 2. liveness, 3. linear scan (a state's buffer is its own: the scan never sees it)
    updates = states.updates if states is not None else {}
    if states is not None:
        _check_in_place(states, steps, entry_of)
    live_out = list(ret.operands) if ret is not None else []
    if states is not None:
        live_out = live_out[: states.first_result]
    ranges = live_ranges(((key, reads) for _, key, _, reads in steps), live_out)
    kinds = ["npu" if kind == "exec" and _device_of(what) == "npu" else "end" for kind, _, what, _ in steps]
    reads_at = [reads for *_, reads in steps]
    runs = segment_runs(kinds)
    pairs = segment_conflicts(ranges, reads_at, runs, live_out=True)
    held = dict(ranges)
    hold_segment_inputs(held, reads_at, runs)
    intervals: list[Interval] = []
    held_intervals: list[Interval] = []
    for kind, key, what, _ in steps:
        if kind == "exec" and key in updates:
            continue
        if kind == "exec":
            size, device = _bytes(key.type), _device_of(what)
        else:
            v, device = key
            size = _bytes(v.type)
        intervals.append(Interval(key, *ranges[key], size, device))
        held_intervals.append(Interval(key, *held[key], size, device))
    index = {iv.key: i for i, iv in enumerate(intervals)}
    conflicts: offset_planner.Conflicts = {}
    soft: offset_planner.Conflicts = {}
    for out, inp in pairs:
        if out in index and inp in index:
            kind = soft if ranges[out][1] == LIVE_OUT else conflicts
            kind.setdefault(index[out], []).append(index[inp])
            kind.setdefault(index[inp], []).append(index[out])
    placement = plan(intervals, planner, conflicts, held_intervals, soft)
    views = offset_planner.group_buffers(intervals, placement)
    planned = len(views.buffers)
    state_types = [a.type for a in block.args[states.first_input:]] if states is not None else []
    where = {iv.key: b for iv, b in zip(intervals, views.assignment, strict=True)}
    for key, number in updates.items():
        where[key] = planned + number

    # 4. emission
    user_args = block.args[: states.first_input] if states is not None else block.args
    new = Block(arg_types=[a.type for a in user_args])
    for old_arg, new_arg in zip(user_args, new.args, strict=True):
        new_arg.name_hint = old_arg.name_hint
    ops: list[Operation] = []
    bufs = _allocs(placement, views, [(states.devices[n], _bytes(t)) for n, t in enumerate(state_types)], ops)
    vmap: dict[Hashable, SSAValue] = {}
    entries = {v: n for n, v in entry_of.items()}
    for op in sources:
        number = entries.get(op.results[0])
        if number is None:
            vmap[op.results[0]] = _source(op, ops)
        else:
            vmap[op.results[0]] = _state(op, states.names[number], bufs[planned + number], ops)
    for kind, key, what, reads in steps:
        buffer = where[key]
        assert buffer is not None
        ins = [vmap[r] for r in reads]
        if kind == "exec":
            new_op = _exec(what, ins, bufs[buffer])
            hint = key.name_hint
        else:
            new_op = B.TransferOp.create(operands=[ins[0], bufs[buffer]], result_types=[ins[0].type])
            hint = f"{ins[0].name_hint}_{key[1]}" if ins[0].name_hint else None
        if hint is not None:
            new_op.results[0].name_hint = hint
        ops.append(new_op)
        vmap[key] = new_op.results[0]
    new.add_ops(ops)
    if ret is not None:
        new.add_op(func.ReturnOp(*[vmap[v] for v in live_out]))

    stats = PlanStats(
        vregs=len(sources) + len(compute),
        values=len(steps),
        transfers=len(transferred),
        buffers=planned,
        peak_bytes_naive=sum(iv.size for iv in intervals),
        peak_bytes_planned=placement.planned_bytes,
        peak_bytes_lower_bound=peak_live_bytes(intervals),
    )
    return new, stats


def _allocs(
    placement: Placement, views: offset_planner.BufferViews, own: Sequence[tuple[str, int]], ops: list[Operation]
) -> list[SSAValue]:
    """`buffer.arena` per device (in order of first use), the planned buffers as views of them,
    then the buffers of their own `own` (states), appended to `ops`; the buffers' values by id."""
    arenas: dict[str, SSAValue] = {}
    for device, _, _ in views.buffers:
        if device not in arenas:
            a = B.ArenaOp(B.ArenaType(len(arenas), _DEVICE_ATTR[device], placement.arenas[device]))
            a.results[0].name_hint = f"arena{len(arenas)}"
            ops.append(a)
            arenas[device] = a.results[0]
    bufs: list[SSAValue] = []
    for bid, (device, offset, size) in enumerate(views.buffers):
        bufs.append(_alloc(B.AllocOp(B.BufType(bid, _DEVICE_ATTR[device], size), arenas[device], offset), ops))
    for bid, (device, size) in enumerate(own, start=len(views.buffers)):
        bufs.append(_alloc(B.AllocOp(B.BufType(bid, _DEVICE_ATTR[device], size)), ops))
    return bufs


def _alloc(op: B.AllocOp, ops: list[Operation]) -> SSAValue:
    buf = op.results[0]
    buf.name_hint = f"b{buf.type.buffer_id}"  # type: ignore[attr-defined]
    ops.append(op)
    return buf


def _state(op: Operation, name: str, buf: SSAValue, ops: list[Operation]) -> SSAValue:
    result = op.results[0]
    new = B.StateOp.create(operands=[buf], result_types=[result.type], properties={"name": StringAttr(name)})
    if result.name_hint is not None:
        new.results[0].name_hint = result.name_hint
    ops.append(new)
    return new.results[0]


_SOURCE_OPS = {N.InputOp: (B.InputOp, "index"), N.WeightOp: (B.WeightOp, "name"), N.ConstantOp: (B.ConstantOp, "value")}


def _source(op: Operation, ops: list[Operation]) -> SSAValue:
    cls, prop = _SOURCE_OPS[type(op)]
    result = op.results[0]
    new = cls.create(properties={prop: op.properties[prop]}, result_types=[result.type])
    if result.name_hint is not None:
        new.results[0].name_hint = result.name_hint
    ops.append(new)
    return new.results[0]


@dataclass
class StateStats(PassStats):
    states: int = 0
    state_bytes: int = 0


def lower_module(module: ModuleOp, planner: str = "best") -> PlanStats:
    total = PlanStats()
    state_total = StateStats()
    for fn in functions(module):
        old = fn.body.block
        names = _state_names(fn)
        new, stats = lower_block(old, names, planner)
        fn.body.insert_block_before(new, old)
        fn.body.detach_block(old)
        total.add(stats)
        if names:
            ret = new.last_op
            results = [v.type for v in ret.operands] if ret is not None else []
            fn.function_type = func.FunctionType.from_lists(list(new.arg_types), results)
            del fn.attributes[STATE_ATTR]
            state_bytes = sum(_bytes(a.type) for a in old.args[len(old.args) - len(names):])
            state_total.add(StateStats(len(names), state_bytes))
    if state_total.states:
        module.attributes["buffer.states"] = state_total.as_attribute()
    return total


def _state_names(fn: func.FuncOp) -> list[str]:
    attr = fn.attributes.get(STATE_ATTR)
    if attr is None:
        return []
    if not isinstance(attr, ArrayAttr) or not all(isinstance(a, StringAttr) for a in attr.data):
        raise pass_failure(fn, f'lower-npuir-to-buffer: {STATE_ATTR} must be an array of strings, e.g. ["key_cache_0"]')
    return [a.data for a in attr.data]


@dataclass(frozen=True)
class LowerNpuirToBufferPass(ModulePass):
    """npuir -> buffer with explicit transfers and an offset plan in one arena per device (`planner`:
    `best`, the smallest of every planner per function, or one of `PLANNERS`); records
    `buffer.plan = {vregs, values, transfers, buffers, peak_bytes_naive, peak_bytes_planned,
    peak_bytes_lower_bound}`."""

    name: ClassVar[str] = "lower-npuir-to-buffer"

    planner: str = "best"
    """`best` (the smallest plan per function), `offset-by-size`, `offset-by-breadth`, `linear-scan`,
    `greedy-by-size` or `grow-in-order`."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.planner not in PLANNERS:
            raise pass_failure(op, f"lower-npuir-to-buffer: unknown planner '{self.planner}'; expected one of "
                               f"{', '.join(PLANNERS)}")
        op.attributes["buffer.plan"] = lower_module(op, self.planner).as_attribute()


