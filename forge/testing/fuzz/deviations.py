"""The documented differences from torch: where a runtime's kernels give other values than torch's
and Forge does not emit a correction (it would cost more than 1% of latency on the zoo), the
difference is listed here, with the special values that trigger it. docs/coverage.md shows the
table; tests/fuzz pins each entry with a case that still shows it (an entry whose difference is
gone fails its test, so the list cannot go stale).

A fuzz case that differs from torch at a stage is a documented deviation, not a failure, when an
entry names its overload's packet and that stage, and the case's arguments hold one of the entry's
trigger values (`Case.special_values`: nan, inf, -0.0, subnormal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forge.testing.fuzz.cases import Case


@dataclass(frozen=True)
class Deviation:
    id: str
    packets: frozenset[str]
    """The overloads' packets (`aten::amax`) that show it."""
    stages: frozenset[str]
    """The runtimes (stages) that show it."""
    triggers: frozenset[str]
    """Special values of the arguments that trigger it (any of them)."""
    what: str
    """What the runtime gives instead of torch's value, for the docs."""


DEVIATIONS: tuple[Deviation, ...] = ()


def documented(case: Case, stage: str, problem: str) -> Deviation | None:
    """The entry explaining the case's difference at `stage`, if any."""
    packet = case.op.rpartition(".")[0]
    specials = case.special_values()
    for dev in DEVIATIONS:
        if packet in dev.packets and stage in dev.stages and dev.triggers & specials:
            return dev
    return None
