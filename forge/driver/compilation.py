"""One compile as an object: `Compilation` carries the frozen `CompileOptions`, the model and its inputs,
the IR and its weight store, the stage clock and one report; the work is a list of `Stage`s run over it.

`forge.compile`, `forge.compile_meta`, `forge.load`, generation's prefill and decode graphs, the autotuner,
`forge compile --emit STAGE` and the benchmarks are stage lists over this one object (forge/driver/stages.py
names the stages and the lists), never hand-written copies of the sequence. Each stage times itself on
the compile's `StageClock` (forge/stage_clock.py: nested stages, such as the decomposition inside the
import or the device compile inside the emit, charge themselves), so the report's stage times add up to
the wall clock with nothing corrected afterwards.

Garbage collection is kept out of the timed stages (`gc_paused`, `gc_frozen`: forge/driver/stage_times.py):
a collection falling inside a stage would charge it for walking objects it never made.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from forge.stage_clock import STAGE_KEYS, StageClock

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from forge.driver.options import CompileOptions
    from forge.frontend.export import CallSignature, CastPolicy
    from forge.frontend.fx_importer import ImportedProgram
    from forge.pipeline import PassRecord
    from forge.weights import WeightStore


@dataclass(frozen=True)
class Stage:
    """A named step of a compile: `run(compilation)`, timed on the clock under `clock` (a report stage
    key; None: the rest of the wall clock, `other_ms`), with collection paused or the old objects frozen."""

    name: str
    run: Callable[[Compilation], None]
    clock: str | None = None
    gc: str = "paused"
    """`paused` (no collection) or `frozen` (collections scan only the new objects: export and import
    allocate millions and must be able to collect them)."""

    def __post_init__(self) -> None:
        if self.clock is not None and self.clock not in STAGE_KEYS:
            raise ValueError(f"stage {self.name!r}: unknown clock {self.clock!r} (one of {', '.join(STAGE_KEYS)})")
        if self.gc not in ("paused", "frozen"):
            raise ValueError(f"stage {self.name!r}: gc must be 'paused' or 'frozen', got {self.gc!r}")


@dataclass
class Compilation:
    """Everything one compile reads and produces (see the module docstring). The stages fill it in order:
    inputs -> (signature, imported IR and weights) -> pass records -> executor or saved artifact -> report."""

    options: CompileOptions
    model: Any = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    exported_model: Any = None
    """The model torch.export traces: `model`, or its f32 copy under the cast policy."""
    cast: CastPolicy | None = None
    export_args: tuple[Any, ...] = ()
    export_kwargs: dict[str, Any] = field(default_factory=dict)
    """The inputs the export sees (cast like the model)."""
    signature: CallSignature | None = None
    imported: ImportedProgram | None = None
    records: list[PassRecord] = field(default_factory=list)
    ir_after: dict[str, str] = field(default_factory=dict)
    """The printed IR after `aten`, `npuir` and `buffer` stages, with `options.keep_stages`."""
    executor: Any = None
    result: Any = None
    """What the stage list produced: a CompiledModel, or the saved artifact's directory."""
    report: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """Notes on how the call was compiled, put first in `report["notes"]` (the cache-free retry's)."""
    counts: dict[str, int] = field(default_factory=dict)
    clock: StageClock = field(default_factory=StageClock)
    started: float = field(default_factory=time.perf_counter)
    extras: dict[str, Any] = field(default_factory=dict)
    """What one stage list's own stages hand each other (compile_meta's weight source, ...)."""

    @classmethod
    def of_module(cls, module: ModuleOp, weights: WeightStore, options: CompileOptions | None = None) -> Compilation:
        """A compilation that starts from an `aten` module and its weights (the import already done)."""
        from forge.driver.options import CompileOptions
        from forge.frontend.fx_importer import ImportedProgram

        return cls(options or CompileOptions(), imported=ImportedProgram(module, weights, inputs=[]))

    @functools.cached_property
    def available(self) -> Any:
        """The pass registry, read once per compile (the plug-in entry points cost ~30 ms to read)."""
        from forge.context import get_all_passes

        return get_all_passes()

    @property
    def module(self) -> ModuleOp:
        return self.imported.module

    @property
    def weights(self) -> WeightStore:
        return self.imported.weights

    def run(self, stages: Sequence[Stage]) -> Compilation:
        """Run `stages` in order, each timed on the clock and told to the progress callback."""
        from forge.stage_times import gc_frozen, gc_paused  # the GC policy of the timed stages

        progress = self.options.progress
        for stage in stages:
            if progress is not None:
                progress(stage.name)
            with gc_frozen() if stage.gc == "frozen" else gc_paused(), self.clock.stage(stage.clock):
                stage.run(self)
        return self

    def account_wall_clock(self) -> None:
        """The stages' ms and `other_ms` (lazy imports, set-up, the report: the rest of the wall clock), which
        add up to `total_ms`. The wall clock includes the import of the compiler by the first `forge.compile`
        access, which happens before the compile starts (`lazy_import_ms`, in `other_ms`)."""
        import forge

        before = forge.take_import_ms()
        self.report["lazy_import_ms"] = round(before, 3)
        for key in STAGE_KEYS:
            self.report[key] = round(self.clock.ms[key], 3)
        total = (time.perf_counter() - self.started) * 1e3 + before
        self.report["total_ms"] = round(total, 3)
        self.report["other_ms"] = round(total - self.clock.total(), 3)
