"""The compile's stage clock: wall ms per named stage, each stage charged only for its own time.

Stages nest: torch.export's decomposition runs inside the import, the device compile inside the
emit. A `StageClock` keeps a stack of running stages and charges the innermost one, so a nested
stage's time is never also counted in the stage around it and nothing is subtracted afterwards.
Code in lower layers (the frontend's decomposition, the backend's device compile) names its stage
with `charged(key)`; it charges the clock of the compile that is running, or nothing outside one.

The report's stage keys are `STAGE_KEYS`; with `other_ms` (the rest of the wall clock) they add up
to `total_ms`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

STAGE_KEYS: tuple[str, ...] = (
    "export_ms", "decompose_ms", "import_ms", "passes_ms", "lower_ms", "emit_ms", "device_compile_ms", "check_ms",
)
"""The report's named stages, in the order a compile runs them."""

_RUNNING: ContextVar[StageClock | None] = ContextVar("forge_stage_clock", default=None)


class StageClock:
    """Exclusive wall ms per stage key (`ms[key]`); `stage(key)` times a block, nested blocks charge themselves."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = dict.fromkeys(STAGE_KEYS, 0.0)
        self._stack: list[str] = []
        self._since = 0.0

    @contextmanager
    def stage(self, key: str | None) -> Iterator[None]:
        """Charge the block's wall time to `key` (None: to nothing, e.g. the report; it lands in `other_ms`),
        except the time of stages nested inside it; the clock is the running one while the block runs."""
        token = _RUNNING.set(self)
        self._switch(key)
        try:
            yield
        finally:
            self._switch(None, pop=True)
            _RUNNING.reset(token)

    def _switch(self, key: str | None, pop: bool = False) -> None:
        now = time.perf_counter()
        if self._stack and self._stack[-1] is not None:
            current = self._stack[-1]
            self.ms[current] = self.ms.get(current, 0.0) + (now - self._since) * 1e3
        if pop:
            self._stack.pop()
        else:
            self._stack.append(key)
        self._since = now

    def total(self) -> float:
        return sum(self.ms[k] for k in STAGE_KEYS)


@contextmanager
def charged(key: str) -> Iterator[None]:
    """Charge the block to stage `key` of the running compile's clock (a no-op outside a compile)."""
    clock = _RUNNING.get()
    if clock is None:
        yield
        return
    with clock.stage(key):
        yield
