"""The stages a compile is made of, and the stage lists of `forge.compile` and its siblings.

Each stage is one `Stage` (forge/driver/compilation.py): a name (what the progress display shows), the
work on the `Compilation`, and the report clock it is charged to. The lists:

    COMPILE   inputs -> export+import -> optimize -> lower -> plan -> emit -> result (+ accuracy, check):
              forge/driver/static_compile.py (its check bisects a mismatch, forge/driver/bisect.py)
    META      inputs -> weight source -> export+import -> checkpoint check -> optimize -> lower -> plan -> save
    LOAD      emit (the saved, planned IR)
    IMPORTED  optimize -> lower -> plan -> emit -> result (a program already imported)

Generation's prefill and decode graphs, the autotuner's scoring, `forge compile --emit STAGE` and the
benchmarks take prefixes of these or add their own stage; see `compile_stages`.
"""

from __future__ import annotations

from typing import Any

from forge.driver.compilation import Compilation, Stage
from forge.driver.compile_errors import CompileError
from forge.driver.pass_stages import run_passes
from forge.driver.report import count_body_ops, count_ops_named
from forge.pipelines import PLAN_MEMORY

# --- the front half ------------------------------------------------------------------------------------


def _inputs(c: Compilation) -> None:
    """The example inputs in torch.export's forms, and the cast policy (a bf16/f16 model compiles in f32)."""
    from forge.driver.export_import import example_inputs
    from forge.frontend.export import cast_policy

    c.args, c.kwargs = example_inputs(c.args, c.kwargs)
    c.exported_model, c.cast = cast_policy(c.model, c.args, c.kwargs, c.options.dtype)
    if c.cast is not None:
        c.export_args, c.export_kwargs = c.cast.apply(c.args, c.kwargs)
    else:
        c.export_args, c.export_kwargs = c.args, c.kwargs


def _export_import(c: Compilation) -> None:
    """torch.export and the import into `aten` (each repeated block once with `reuse_blocks`); export,
    decomposition and import charge their own clocks, the rest (block planning) counts as export."""
    from forge.driver.export_import import export_and_import

    signature, c.imported, note = export_and_import(
        c.exported_model, c.export_args, c.export_kwargs, reuse_blocks=c.options.reuse_blocks
    )
    c.signature = signature.retyped(c.args, c.kwargs) if c.cast is not None else signature
    if note is not None:
        c.notes.append(note)
    c.counts["ops_imported"] = count_body_ops(c.module)


def _import_module(c: Compilation) -> None:
    """A module's plain export and import on positional inputs (`extras["state"]`: mutated buffers as states)."""
    from forge.frontend.fx_importer import import_module

    c.imported = import_module(c.model, c.args, state=c.extras.get("state", False))
    c.counts["ops_imported"] = count_body_ops(c.module)


INPUTS = Stage("inputs", _inputs)
EXPORT_IMPORT = Stage("torch.export and import (aten)", _export_import, clock="export_ms", gc="frozen")
IMPORT_MODULE = Stage("torch.export and import (aten)", _import_module, clock="export_ms", gc="frozen")


# --- passes --------------------------------------------------------------------------------------------


def _keep(c: Compilation, stage: str) -> None:
    if c.options.keep_stages:
        c.ir_after[stage] = str(c.module)


def _optimize(c: Compilation) -> None:
    c.records = run_passes(c.module, c.options.passes, c.options.disable, c.available, weights=c.weights)
    c.counts["ops_optimized"] = count_body_ops(c.module)
    c.counts["fused_attention"] = count_ops_named(c.module, "aten.scaled_dot_product_attention")
    _keep(c, "aten")


def _lower(c: Compilation) -> None:
    run_passes(c.module, c.options.lowering_passes, (), c.available, weights=c.weights)
    _keep(c, "npuir")


def _plan(c: Compilation) -> None:
    run_passes(c.module, PLAN_MEMORY, (), c.available, weights=c.weights)
    _keep(c, "buffer")


def passes_stage(name: str, spec: Any, clock: str | None = "passes_ms") -> Stage:
    """A stage running pipeline `spec` (a `-p` spelling) on the module, its records appended to the
    compilation's: the benchmarks' variants (one planner, one pipeline suffix) are such stages."""

    def run(c: Compilation) -> None:
        c.records += run_passes(c.module, spec, (), c.available, weights=c.weights)

    return Stage(name, run, clock=clock)


OPTIMIZE = Stage("optimization passes", _optimize, clock="passes_ms")
LOWER = Stage("lowering to npuir", _lower, clock="lower_ms")
PLAN = Stage("memory planning", _plan, clock="lower_ms")


# --- the back half -------------------------------------------------------------------------------------


def _emit(c: Compilation) -> None:
    """The program and its executor (the device compile inside charges `device_compile_ms` itself);
    `extras["states"]`: the StateStore a generator's graphs share; `extras["graph_group"]`: the GraphGroup
    its graphs join (a generator's, a dynamic model's), whose compile the caller runs."""
    from forge.driver.emit import emit_executor

    extras = c.extras
    c.executor = emit_executor(
        c.module, c.weights, c.options, states=extras.get("states"), group=extras.get("graph_group")
    )


def _result(c: Compilation) -> None:
    """The CompiledModel and its report (the stage times are filled in when the list has run)."""
    from forge.driver.artifact import CompiledModel
    from forge.driver.report import call_report, compile_report

    c.result = CompiledModel(
        c.executor,
        c.module,
        c.weights,
        c.imported.inputs,
        runtime=c.options.runtime,
        device=c.options.device,
        stages=c.ir_after,
        signature=c.signature,
        cast=c.cast,
    )
    c.report = c.result.report = {**compile_report(c), **call_report(c.signature, c.cast)}
    c.report["notes"] = [*c.notes, *c.report.get("notes", [])]
    if c.imported.blocks is not None:
        c.report["blocks"] = c.imported.blocks


def _accuracy(c: Compilation) -> None:
    from forge.driver.accuracy import accuracy_report

    runs_as = c.report["runtime_config"].get("runs_as", c.options.precision)  # the bounds of what ran
    c.report["accuracy"] = accuracy_report(
        c.model, c.result, c.args, runs_as, c.options.weights, sequences=c.options.accuracy, kwargs=c.kwargs,
        activations=c.options.activations,
    )


EMIT = Stage("emit NNFactory segments", _emit, clock="emit_ms")
RESULT = Stage("report", _result)
ACCURACY = Stage("accuracy vs eager f32", _accuracy)

IMPORTED = (OPTIMIZE, LOWER, PLAN, EMIT, RESULT)
"""A program already imported, to a CompiledModel."""


def stages_until(ir: str) -> tuple[Stage, ...]:
    """`forge compile --emit aten|npuir|buffer`: the stages of an imported module up to that IR."""
    until = {"aten": (OPTIMIZE,), "npuir": (OPTIMIZE, LOWER), "buffer": (OPTIMIZE, LOWER, PLAN)}
    if ir not in until:
        raise CompileError(f"no IR stage {ir!r} (one of {', '.join(until)})")
    return until[ir]
