"""What a lowering pass counts: one set of counters per function, summed over the module, recorded on it.

`lower-aten-to-npuir`, `schedule-device-affinity` and `lower-npuir-to-buffer` each lower the
functions of a module one by one (`functions`) and record what they did as a module attribute of
i64 counters (`npuir.lowering`, `npuir.schedule`, `buffer.plan`). `PassStats` is the one
definition of that sum and that record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Self

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Block


@dataclass
class PassStats:
    """Base of a pass's counters; a subclass is a dataclass of int fields (the record's keys, in order)."""

    def add(self, other: Self) -> None:
        """Add `other`'s counts to these (a function's counts to the module's)."""
        for field in fields(self):
            setattr(self, field.name, getattr(self, field.name) + getattr(other, field.name))

    @classmethod
    def over(cls, module: ModuleOp, per_block: Callable[[Block], Self]) -> Self:
        """`per_block` run on each function's body (`functions`), its counts summed: the module's record."""
        total = cls()
        for fn in functions(module):
            total.add(per_block(fn.body.block))
        return total

    def as_attribute(self) -> DictionaryAttr:
        """The counters as the module attribute the pass records, e.g. `{vregs = 12 : i64, ...}`."""
        return DictionaryAttr({field.name: IntegerAttr(getattr(self, field.name), i64) for field in fields(self)})


def functions(module: ModuleOp) -> list[func.FuncOp]:
    """The functions of `module` that have a body, in order (a declaration has nothing to lower)."""
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
