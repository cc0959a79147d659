"""The garbage-collection policy of the compiler's timed stages (`gc_paused`, `gc_frozen`): a collection
falling inside a stage would charge it for walking objects it never made. The stage clock itself is
forge/stage_clock.py."""

from __future__ import annotations

import gc
from contextlib import contextmanager


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
