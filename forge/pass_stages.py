"""Pass pipelines run by their spelling.

`parse_pipeline` turns a `forge-opt -p` spelling into pass instances from the registry (`forge.context`);
`run_passes` runs one on a module in place through the instrumented runner (`forge.pipeline`). The compile's
pass stages (forge/driver/stages.py) are its callers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from forge.context import get_all_passes, make_context
from forge.errors import CompileError
from forge.pipeline import PassRecord, PipelineRunner
from forge.weights import WeightStore


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
    module: ModuleOp, spec: Sequence[str] | str, disable: Sequence[str] = (),
    available: Mapping[str, Any] | None = None, *, weights: WeightStore | None = None,
) -> list[PassRecord]:
    """Run a pipeline on `module` in place through the instrumented runner (`weights`: the store the passes
    read, when the module does not carry one from its import)."""
    passes, names = parse_pipeline(spec, disable, available)
    runner = PipelineRunner(make_context(), passes, names=names)
    return runner.run(module, weights)
