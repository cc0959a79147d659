"""A checker for buffer allocations: proves a `buffer` program reads what it means to read.

Pass `check-buffer-allocation` (fails with a diagnostic at the offending op); `check_allocation`
for tests and the model compiler. In one pass over each function, tracking which value each
buffer holds:

- ids are unique (`buffer_table`) and every buffer operand is a `buffer.alloc` of this function;
- a write (`buffer.exec` / `buffer.transfer` into B) must not clobber a value that is still to be
  read: every value whose bytes the new value's bytes overlap must have had its last read
  strictly before the write (a read by the writing op itself is in-place execution, also
  rejected). A value occupies `[offset, offset + its bytes)` of its region: the arena of its
  buffer (`buffer.alloc %arena[offset]`, so buffers of one arena may overlap) or its buffer of
  its own (offset 0). So no two simultaneously-live values overlap in memory, whichever
  buffers they are in;
- every buffer.alloc in an arena views a `buffer.arena` of this function (the op verifier checks
  that it lies inside it and is aligned);
- no read sees a value another write has overwritten, and no value is read before the op
  writing it ran (the schedule respects data dependences).

A state's buffer (`buffer.state "name" in %b`) is the one exception to "no in-place execution":
an exec may write it while reading the value it holds, if that value is its first input and this
is its last read (the state's in-place update); the state's entry value must be the first value
written to its buffer. Values outside the plan (inputs, weights, constants) are not checked. Ops are named in messages
by their result name and kind: `buffer.exec npu linear %h`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from dialects import buffer as B
from forge.diagnostics import pass_failure
from lowering.stats import functions


class AllocationError(Exception):
    """An allocation that breaks a rule; `op` is where, `buffer` the buffer id."""

    def __init__(self, op: Operation, buffer: int | None, message: str):
        super().__init__(message)
        self.op = op
        self.buffer = buffer


def _name(v: SSAValue) -> str:
    return f"%{v.name_hint}" if v.name_hint else "a value"


def describe(op: Operation) -> str:
    """`buffer.exec npu linear %h`, `buffer.transfer %x_npu`, `func.return`."""
    if isinstance(op, B.ExecOp):
        what = f"{op.name} {op.device.data.value} {op.kind.data}"
    else:
        what = op.name
    if op.results and op.results[0].name_hint:
        what += f" {_name(op.results[0])}"
    return what


@dataclass
class _Resident:
    """A value in memory: it occupies bytes [lo, hi) of its region (an arena, or a buffer of its own)."""

    value: SSAValue
    buffer: int
    lo: int
    hi: int


def _regions(block: Block) -> dict[SSAValue, tuple[tuple[str, int], int]]:
    """Buffer value -> (region, offset): ("arena", id) and the alloc's offset, or ("buffer", id), 0."""
    out: dict[SSAValue, tuple[tuple[str, int], int]] = {}
    for op in block.ops:
        if isinstance(op, B.AllocOp):
            arena, offset = B.buffer_placement(op)
            if arena is not None and not isinstance(op.arena.owner, B.ArenaOp):  # type: ignore[union-attr]
                raise AllocationError(op, None, f"buffer.alloc %{op.buffer.name_hint or '?'}: its arena is not a "
                                      "buffer.arena of this function")
            buf = op.buffer.type
            assert isinstance(buf, B.BufType)
            out[op.buffer] = (("arena", arena), offset) if arena is not None else (("buffer", buf.buffer_id), 0)
    return out


def check_block(block: Block) -> None:
    """Raise AllocationError at the first violation in `block`."""
    ops = list(block.ops)
    try:
        parent = (block.parent_op() or ops[0]) if ops else None
        table = B.buffer_table(parent) if parent is not None else {}
        if parent is not None:
            B.arena_table(parent)  # ids unique
        states = B.state_buffers(parent) if parent is not None else {}
    except VerifyException as err:
        raise AllocationError(ops[0], None, str(err)) from None
    regions = _regions(block)
    last_read: dict[SSAValue, int] = {}
    for pos, op in enumerate(ops):
        operands = op.operands[:-1] if isinstance(op, B.WriteOp) else op.operands
        for v in operands:
            last_read[v] = pos
    resident: dict[tuple[str, int], list[_Resident]] = {}  # region -> values in it, not yet overwritten
    clobbered: dict[SSAValue, Operation] = {}
    written_buffers: set[int] = set()
    written: set[Operation] = set()
    for pos, op in enumerate(ops):
        is_write = isinstance(op, B.WriteOp)
        operands = op.operands[:-1] if is_write else op.operands
        for v in operands:
            buf = B.value_buffer(v)
            if buf is None:
                continue
            if v.owner not in written:
                raise AllocationError(op, buf.buffer_id, f"{describe(op)} reads {_name(v)} before it is written")
            if v in clobbered:
                raise AllocationError(
                    op,
                    buf.buffer_id,
                    f"{describe(op)} reads {_name(v)} from buffer {buf.buffer_id}, which was "
                    f"overwritten by {describe(clobbered[v])}",
                )
        if not is_write:
            continue
        out = op.operands[-1]
        buf = op.out_buffer()
        bid = buf.buffer_id
        if not isinstance(out.owner, B.AllocOp) or table.get(bid) != buf or out not in regions:
            raise AllocationError(
                op, bid, f"{describe(op)} writes buffer {bid}, which is not allocated in this function"
            )
        if isinstance(op, B.StateOp) and bid in written_buffers:
            raise AllocationError(op, bid, f"{describe(op)}: buffer {bid} was written before the state's entry value")
        region, offset = regions[out]
        mine = _Resident(op.results[0], bid, offset, offset + B.tensor_bytes(op.results[0].type))
        kept: list[_Resident] = []
        for prev in resident.get(region, []):
            if not (prev.lo < mine.hi and mine.lo < prev.hi):
                kept.append(prev)
                continue
            in_place = _updates_in_place(op, prev.value, bid, states, last_read, pos)
            if not in_place and last_read.get(prev.value, -1) >= pos:
                raise AllocationError(op, bid, _clobber_message(op, mine, prev, last_read[prev.value], pos, ops))
            clobbered[prev.value] = op
        kept.append(mine)
        resident[region] = [r for r in kept if last_read.get(r.value, -1) >= pos or r is mine]
        written_buffers.add(bid)
        written.add(op)


def _clobber_message(op: Operation, mine: _Resident, prev: _Resident, end: int, pos: int, ops: list) -> str:
    when = "by this op (in place)" if end == pos else f"by {describe(ops[end])}"
    where = "" if prev.buffer == mine.buffer else (
        f" (bytes [{mine.lo}, {mine.hi}) of its arena overlap [{prev.lo}, {prev.hi}) of {_name(prev.value)} "
        f"in buffer {prev.buffer})"
    )
    return (
        f"{describe(op)} writes buffer {mine.buffer}{where} while {_name(prev.value)} (written by "
        f"{describe(prev.value.owner)}) is still to be read {when}"  # type: ignore[arg-type]
    )


def _updates_in_place(
    op: Operation, prev: SSAValue, bid: int, states: dict[int, str], last_read: dict[SSAValue, int], pos: int
) -> bool:
    """`op` is a state's in-place update: it writes the state's buffer reading the value it holds
    as its first input, for the last time."""
    return (
        bid in states
        and isinstance(op, B.ExecOp)
        and len(op.ins) > 0
        and op.ins[0] is prev
        and last_read.get(prev, -1) == pos
    )


def check_allocation(module: ModuleOp) -> None:
    """Raise AllocationError at the first violation in any function of `module`."""
    for fn in functions(module):
        check_block(fn.body.block)


@dataclass(frozen=True)
class CheckBufferAllocationPass(ModulePass):
    """Fail (at the offending op) unless every read sees the value written last and no two
    simultaneously-live values share a byte (buffers viewing one `buffer.arena` may overlap)."""

    name: ClassVar[str] = "check-buffer-allocation"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            check_allocation(op)
        except AllocationError as err:
            raise pass_failure(err.op, f"check-buffer-allocation: {err}") from None
