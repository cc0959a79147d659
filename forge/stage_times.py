"""The compiler's stage clock: each stage timed into `StageTimes`, the report's stage keys
(`STAGE_KEYS`), and the wall clock they add up to (`account_wall_clock`: `other_ms` is the rest).

Garbage collection is kept out of the timed stages (`gc_paused`, `gc_frozen`): a collection falling
inside a stage would charge it for walking objects it never made.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any

import forge

Progress = Callable[[str], None]


@dataclass
class StageTimes:
    """Wall ms of each stage of one compile; each field is a report key of the same name."""

    export_ms: float = 0.0
    decompose_ms: float = 0.0
    import_ms: float = 0.0
    passes_ms: float = 0.0
    lower_ms: float = 0.0
    emit_ms: float = 0.0
    device_compile_ms: float = 0.0
    check_ms: float = 0.0


STAGE_KEYS = tuple(f.name for f in fields(StageTimes))
"""The report's named stages; with `other_ms` (the rest of the wall clock) they add up to `total_ms`."""


def timed(stage: str, times: StageTimes, attr: str, progress: Progress | None, fn: Callable[[], Any]) -> Any:
    """`fn()`, its wall ms added to `times.<attr>` (`progress` told the stage's name first)."""
    if progress is not None:
        progress(stage)
    start = time.perf_counter()
    try:
        return fn()
    finally:
        setattr(times, attr, getattr(times, attr) + (time.perf_counter() - start) * 1e3)


def account_wall_clock(report: dict[str, Any], times: StageTimes, start: float) -> None:
    """The stages' ms and `other_ms` (lazy imports, set-up, the report: the rest of the wall clock),
    which add up to `total_ms`. The wall clock includes the import of the compiler by the first
    `forge.compile` access, which happens before `compile` starts (`lazy_import_ms`, in `other_ms`)."""
    before = forge.take_import_ms()
    report["lazy_import_ms"] = round(before, 3)
    for key in STAGE_KEYS:
        report[key] = round(getattr(times, key), 3)
    total = (time.perf_counter() - start) * 1e3 + before
    report["total_ms"] = round(total, 3)
    report["other_ms"] = round(total - sum(getattr(times, key) for key in STAGE_KEYS), 3)


@contextmanager
def gc_paused():
    """No garbage collection inside the compiler's stages.

    torch.export leaves millions of objects behind; a generation-2 collection that happens to
    fall inside a pass then adds ~1 s to that pass's time (seen: cse 33 ms -> 1,124 ms on
    GPT-2). Freeze what exists and pause collection while compiling. No collection up front:
    walking export's leftovers cost 470-790 ms per compile (bench/compile_time.py's profile);
    the garbage is collected after the compile, outside its timed stages.
    """
    was_enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()  # what the stages allocated joins the frozen objects: unfrozen, all go to the oldest
        gc.unfreeze()  # generation unscanned (left young, the first allocation after enable scanned them: ~50 ms)
        if was_enabled:
            gc.enable()


@contextmanager
def gc_frozen():
    """Collections during export and import scan only what they allocate: the objects that existed before
    (the model, torch, the imported libraries: ~0.4 M for GPT-2) are frozen, so a full collection falling
    in export or import (200-600 ms on GPT-2 12L) does not walk them again. Unfrozen afterwards."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
