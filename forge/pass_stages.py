"""Pass pipelines run by their spelling, and the compile's pass stages.

`parse_pipeline` turns a `forge-opt -p` spelling into pass instances from the registry (`forge.context`);
`run_passes` runs one on a module in place through the instrumented runner (`forge.pipeline`). The
compile drivers run their stages with `optimize` (the aten pipeline) and `lower_and_plan` (aten → npuir,
then the memory plan: `forge.pipelines`), each timed into the compile's `StageTimes`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from forge.context import get_all_passes, make_context
from forge.errors import CompileError
from forge.pipeline import PassRecord, PipelineRunner
from forge.pipelines import DEFAULT_PIPELINE, LOWER_TO_NPUIR, PLAN_MEMORY
from forge.stage_times import Progress, StageTimes, timed


def parse_pipeline(
    spec: Sequence[str] | str, disable: Sequence[str] = (), available: Mapping[str, Any] | None = None
) -> tuple[list[ModulePass], list[str]]:
    """Pass instances and their spellings for a pipeline spec, without the disabled passes
    (`available`: the pass registry, `get_all_passes()` unless given)."""
    text = spec if isinstance(spec, str) else ",".join(spec)
    available = get_all_passes() if available is None else available
    unknown = sorted(name for name in set(disable) if name not in available)  # no iteration: the table is lazy
    if unknown:
        raise CompileError(f"--disable names unknown pass(es): {', '.join(unknown)}")
    try:
        passes = list(PassPipeline.parse_spec(available, text).passes)
    except Exception as err:  # xDSL reports unknown passes and bad options as assorted errors
        raise CompileError(f"invalid pass pipeline '{text}': {err}") from None
    kept = [p for p in passes if p.name not in set(disable)]
    return kept, [str(p.pipeline_pass_spec()) for p in kept]


def run_passes(
    module: ModuleOp, spec: Sequence[str] | str, disable: Sequence[str] = (), available: Mapping[str, Any] | None = None
) -> list[PassRecord]:
    """Run a pipeline on `module` in place through the instrumented runner."""
    passes, names = parse_pipeline(spec, disable, available)
    runner = PipelineRunner(make_context(), passes, names=names)
    return runner.run(module)


def optimize(
    module: ModuleOp, times: StageTimes, progress: Progress | None, *, pipeline: Sequence[str] | str | None,
    disable: Sequence[str], available: Mapping[str, Any], stages: dict[str, str] | None = None,
) -> list[PassRecord]:
    """The optimization stage: `pipeline` (DEFAULT_PIPELINE unless given) without `disable`, in `passes_ms`;
    `stages` (when given) receives the optimized IR as "aten"."""
    spec = pipeline if pipeline is not None else DEFAULT_PIPELINE
    records = timed(
        "optimization passes", times, "passes_ms", progress, lambda: run_passes(module, spec, disable, available)
    )
    if stages is not None:
        stages["aten"] = str(module)
    return records


def lower_and_plan(
    module: ModuleOp, times: StageTimes, progress: Progress | None, *, lowering: Sequence[str] | str | None,
    available: Mapping[str, Any], stages: dict[str, str] | None = None,
) -> None:
    """Lowering to npuir (`lowering`, LOWER_TO_NPUIR unless given: e.g. with affinity options), then
    memory planning, both in `lower_ms`; `stages` (when given) receives the IR after each."""
    lower_spec = lowering if lowering is not None else LOWER_TO_NPUIR
    timed("lowering to npuir", times, "lower_ms", progress, lambda: run_passes(module, lower_spec, (), available))
    if stages is not None:
        stages["npuir"] = str(module)
    timed("memory planning", times, "lower_ms", progress, lambda: run_passes(module, PLAN_MEMORY, (), available))
    if stages is not None:
        stages["buffer"] = str(module)
