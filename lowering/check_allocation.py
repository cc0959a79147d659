"""A checker for buffer allocations: proves a `buffer` program reads what it means to read.

Pass `check-buffer-allocation` (fails with a diagnostic at the offending op); `check_allocation`
for tests and the model compiler. In one pass over each function, tracking which value each
buffer holds:

- ids are unique (`buffer_table`) and every buffer operand is a `buffer.alloc` of this function;
- a write (`buffer.exec` / `buffer.transfer` into B) must not clobber a value that is still to be
  read: the value B holds must have had its last read strictly before the write (a read by the
  writing op itself is in-place execution, also rejected): no two simultaneously-live values
  share a buffer;
- every read of a value living in B must see that value as the last write to B (what the first
  rule guarantees; checked on its own so that hand-written IR gets a precise message too), and
  no value is read before the op writing it ran (the schedule respects data dependences).

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


def check_block(block: Block) -> None:
    """Raise AllocationError at the first violation in `block`."""
    ops = list(block.ops)
    try:
        table = B.buffer_table(block.parent_op() or ops[0]) if ops else {}
        states = B.state_buffers(block.parent_op() or ops[0]) if ops else {}
    except VerifyException as err:
        raise AllocationError(ops[0], None, str(err)) from None
    last_read: dict[SSAValue, int] = {}
    for pos, op in enumerate(ops):
        operands = op.operands[:-1] if isinstance(op, B.WriteOp) else op.operands
        for v in operands:
            last_read[v] = pos
    holds: dict[int, SSAValue] = {}
    written: dict[Operation, int] = {}
    for pos, op in enumerate(ops):
        is_write = isinstance(op, B.WriteOp)
        operands = op.operands[:-1] if is_write else op.operands
        for v in operands:
            buf = B.value_buffer(v)
            if buf is None:
                continue
            held = holds.get(buf.buffer_id)
            if held is not v:
                if written.get(v.owner) is None:
                    raise AllocationError(op, buf.buffer_id, f"{describe(op)} reads {_name(v)} before it is written")
                clobber = held.owner if held is not None else None
                by = f" by {describe(clobber)}" if isinstance(clobber, Operation) else ""
                raise AllocationError(
                    op,
                    buf.buffer_id,
                    f"{describe(op)} reads {_name(v)} from buffer {buf.buffer_id}, which was "
                    f"overwritten{by}",
                )
        if not is_write:
            continue
        out = op.operands[-1]
        buf = op.out_buffer()
        bid = buf.buffer_id
        if not isinstance(out.owner, B.AllocOp) or table.get(bid) != buf:
            raise AllocationError(
                op, bid, f"{describe(op)} writes buffer {bid}, which is not allocated in this function"
            )
        prev = holds.get(bid)
        if isinstance(op, B.StateOp) and prev is not None:
            raise AllocationError(op, bid, f"{describe(op)}: buffer {bid} was written before the state's entry value")
        if prev is not None and _updates_in_place(op, prev, bid, states, last_read, pos):
            pass
        elif prev is not None and last_read.get(prev, -1) >= pos:
            end = last_read[prev]
            when = "by this op (in place)" if end == pos else f"by {describe(ops[end])}"
            raise AllocationError(
                op,
                bid,
                f"{describe(op)} writes buffer {bid} while {_name(prev)} (written by "
                f"{describe(prev.owner)}) is still to be read {when}",
            )
        holds[bid] = op.results[0]
        written[op] = pos


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
    simultaneously-live values share a buffer."""

    name: ClassVar[str] = "check-buffer-allocation"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            check_allocation(op)
        except AllocationError as err:
            raise pass_failure(err.op, f"check-buffer-allocation: {err}") from None
