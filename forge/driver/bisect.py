"""`forge bisect`: the first op whose value diverges from PyTorch, and the stage that made it diverge.

A wrong result is only useful to a compiler researcher with a name on it. The bisector runs the exported
FX graph node by node in eager PyTorch (the reference: every node's value) beside Forge's stages and
compares, stage by stage, in the order the compile runs them:

    frontend   the normalized FX graph (functionalized, decomposed) against the exported one: outputs
    import     the imported `aten` IR in the reference interpreter: every op against its FX node
    pass P     the IR after each optimization pass P, interpreted the same way
    lowering   `npuir` -> `buffer`, interpreted: every value of the optimized IR, made an output
    runtime    the emitted program on the runtime: every value of the optimized IR, made an output

IR values are matched to FX nodes by the importer's record of which node each result computes
(`ImportedProgram.value_nodes`): a value a pass keeps is compared after the pass too, a value a rewrite
creates is not (its op's inputs and users are); weights and constants are not compared (a layout pass may
store them transposed). A value diverges by the rules of --verify-semantics
(`forge.driver.semantics.compare_output`): its dtype or shape differs, an integer or boolean differs at
all, NaNs fall elsewhere, or a float is outside the dtype's tolerance. The first stage with a divergent
value names it: the first such op in program order, its source location in the model, the max |diff| and
the reference's scale.

Everything runs in f32 whatever precision the model would be compiled for: a reduced-precision
difference is not a bug to bisect.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation, SSAValue

from forge.diagnostics import op_location
from forge.driver.compilation import Compilation
from forge.driver.options import CompileOptions
from forge.driver.parity import finite_scale
from forge.driver.semantics import compare_output
from forge.driver.stages import EMIT, LOWER, PLAN, passes_stage
from forge.interpreter import interpret

NOT_COMPARED = frozenset({"aten.weight", "aten.constant"})
"""Ops whose value is data, not a computation: a pass may store it in another layout under the same name."""


@dataclass(frozen=True)
class Divergence:
    """Where a value first differs from PyTorch."""

    stage: str
    op: str
    """The IR op (or the FX target at the frontend stage) whose value diverges."""
    value: str
    """Its name: the FX node's (the IR value's name hint)."""
    location: str
    max_abs: float
    scale: float
    detail: str = ""

    def __str__(self) -> str:
        text = f"{self.op} at {self.location}, {self.stage}: max |diff| {self.max_abs:.3g} (scale {self.scale:.3g})"
        return f"{text}; {self.detail}" if self.detail else text

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "op": self.op, "value": self.value, "location": self.location,
                "max_abs": self.max_abs, "scale": self.scale, "detail": self.detail}


@dataclass
class Bisection:
    """What each stage showed, in order, and the first divergence (None: every stage matches PyTorch)."""

    stages: list[tuple[str, str]] = field(default_factory=list)
    """(stage, "ok" | "diverges" | "not run: why")."""
    first: Divergence | None = None

    def summary(self) -> str:
        lines = [f"  {stage:<28} {status}" for stage, status in self.stages]
        head = f"first divergent op: {self.first}" if self.first else "no divergence from PyTorch at any stage"
        return "\n".join([head, *lines])

    def to_json(self) -> dict[str, Any]:
        return {"first": self.first.to_json() if self.first else None, "stages": [list(s) for s in self.stages]}


# --- comparing values ----------------------------------------------------------------------------------


def compare(expected: Any, got: Any) -> tuple[bool, float, float]:
    """(diverges, max |diff|, scale = max |finite expected|): the rules of `--verify-semantics`
    (`compare_output`: type, shape and dtype equal, integers exact, NaN where NaN, floats within the dtype's
    tolerance) plus the figures a divergence is reported with."""
    diverges = compare_output(expected, got) is not None
    if not isinstance(expected, torch.Tensor) or not isinstance(got, torch.Tensor):
        return diverges, math.inf if diverges else 0.0, 0.0
    scale = finite_scale(expected)
    if expected.shape != got.shape or expected.dtype != got.dtype:
        return diverges, math.inf, scale
    diff = (expected.double() - got.double()).abs()
    both_nan = torch.isnan(expected.double()) & torch.isnan(got.double())
    diff = diff[~both_nan]
    return diverges, (diff.nan_to_num(nan=math.inf).max().item() if diff.numel() else 0.0), scale


# --- the reference: every FX node's value ----------------------------------------------------------------


class _NodeRecorder(torch.fx.Interpreter):
    """Runs a graph module and keeps a copy of every node's tensor value (copies: an in-place op later in
    the graph must not change what an earlier node computed)."""

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        super().__init__(gm)
        self.values: dict[str, torch.Tensor] = {}
        self.nodes: dict[str, torch.fx.Node] = {}

    def run_node(self, n: torch.fx.Node) -> Any:
        out = super().run_node(n)
        if isinstance(out, torch.Tensor):
            self.values[n.name] = out.detach().clone()
            self.nodes[n.name] = n
        return out


def lifted_inputs(program: ExportedProgram, user_inputs: Sequence[torch.Tensor]) -> list[Any]:
    """The graph module's placeholders in order: parameters, buffers and constants from the program, the
    user inputs (flattened as the call signature flattens them) where the signature says."""
    users = iter(user_inputs)
    values = []
    for spec in program.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            values.append(next(users))
        elif spec.target in program.state_dict:
            values.append(program.state_dict[spec.target])
        elif spec.target in program.constants:
            values.append(program.constants[spec.target])
        else:
            raise ValueError(f"input {spec.arg.name} ({spec.kind.name} {spec.target}): not in the program")
    return values


def reference_values(program: ExportedProgram, user_inputs: Sequence[torch.Tensor]) -> _NodeRecorder:
    """Eager PyTorch over `program`'s graph, node by node."""
    recorder = _NodeRecorder(program.graph_module)
    with torch.no_grad():
        outputs = recorder.run(*lifted_inputs(program, user_inputs))
    specs = program.graph_signature.output_specs
    recorder.outputs = [o for o, s in zip(pytree.tree_leaves(outputs), specs, strict=False)
                        if s.kind == OutputKind.USER_OUTPUT]
    return recorder


# --- Forge's values --------------------------------------------------------------------------------------


class _OpRecorder(Interpreter.Listener):
    """Each op's tensor results as the reference interpreter computes them (copies: an implementation may
    reuse a dead input's storage for a later result)."""

    def __init__(self) -> None:
        self.values: list[tuple[Operation, SSAValue, torch.Tensor]] = []

    def did_interpret_op(self, op: Operation, results: tuple[Any, ...]) -> None:
        for result, value in zip(op.results, results, strict=False):
            if isinstance(value, torch.Tensor):
                self.values.append((op, result, value.detach().clone()))


def interpreted_values(module: ModuleOp, weights: Any, inputs: Sequence[torch.Tensor]) -> tuple[_OpRecorder, list]:
    recorder = _OpRecorder()
    with torch.no_grad():
        outputs = interpret(module, weights, *inputs, func_name=_function(module).sym_name.data,
                            listeners=(recorder,))
    return recorder, list(outputs)


def _function(module: ModuleOp) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(functions) != 1:
        raise ValueError(f"forge bisect wants a module of one function, got {len(functions)}")
    return functions[0]


def _location(op: Operation) -> str:
    loc = op_location(op)
    return str(loc) if loc is not None else "an unknown location (an op a pass created)"


def first_ir_divergence(stage: str, recorder: _OpRecorder, reference: dict[str, torch.Tensor],
                        value_nodes: dict[Any, str]) -> Divergence | None:
    """The first op (program order) whose value differs from the FX node it computes."""
    for op, result, value in recorder.values:
        name = value_nodes.get(result)
        if op.name in NOT_COMPARED or name is None or name not in reference:
            continue
        bad, max_abs, scale = compare(reference[name], value)
        if bad:
            return Divergence(stage, op.name, name, _location(op), max_abs, scale)
    return None


def output_divergence(stage: str, module: ModuleOp, expected: Sequence[Any], got: Sequence[Any]) -> Divergence | None:
    """A divergent function output no named value explains: the op that returns it."""
    ret = _function(module).body.block.last_op
    for i, (e, g) in enumerate(zip(expected, got, strict=False)):
        bad, max_abs, scale = compare(e, g)
        if bad:
            owner = ret.operands[i].owner if ret is not None and i < len(ret.operands) else None
            op = owner if isinstance(owner, Operation) else None
            return Divergence(stage, op.name if op else f"output {i}", f"output {i}",
                              _location(op) if op else "the function's arguments", max_abs, scale,
                              detail=f"output {i} of the function")
    return None


# --- every value an output: what lowering and the runtime compute ------------------------------------------


def expose_values(module: ModuleOp) -> tuple[ModuleOp, list[tuple[Operation, SSAValue]]]:
    """A copy of `module` whose function also returns every computed tensor value (weights and constants
    aside), in program order, and the (op, value) each extra output is, in the original module."""
    original = _function(module)
    exposed = [(op, r) for op in original.body.block.ops if op.name not in NOT_COMPARED and op is not
               original.body.block.last_op for r in op.results if isinstance(r.type, TensorType)]
    copy = module.clone()
    function = _function(copy)
    ops = list(function.body.block.ops)
    index = {id(op): i for i, op in enumerate(original.body.block.ops)}
    values = [ops[index[id(op)]].results[list(op.results).index(r)] for op, r in exposed]
    ret = function.body.block.last_op
    new_ret = func.ReturnOp(*ret.operands, *values)
    function.body.block.insert_op_before(new_ret, ret)
    function.body.block.erase_op(ret)
    inputs = function.function_type.inputs.data
    function.function_type = FunctionType.from_lists(list(inputs), [v.type for v in new_ret.operands])
    return copy, exposed


def _exposed_divergence(stage: str, exposed: list[tuple[Operation, SSAValue]], values: dict[int, torch.Tensor],
                        got: Sequence[Any], n_outputs: int) -> Divergence | None:
    for (op, result), value in zip(exposed, got[n_outputs:], strict=False):
        expected = values.get(id(result))
        if expected is None:
            continue
        bad, max_abs, scale = compare(expected, value)
        if bad:
            return Divergence(stage, op.name, result.name_hint or "?", _location(op), max_abs, scale)
    return None


# --- the stages ---------------------------------------------------------------------------------------------


@dataclass
class _Run:
    """One bisection in progress."""

    options: CompileOptions
    inputs: list[torch.Tensor]
    result: Bisection = field(default_factory=Bisection)

    def stage(self, name: str, check: Callable[[], Divergence | None]) -> bool:
        """Run one stage's check; True when it found the first divergence (the bisection stops)."""
        if self.result.first is not None:
            self.result.stages.append((name, "not run: an earlier stage diverged"))
            return False
        try:
            found = check()
        except Exception as err:  # a stage that cannot run says so; the earlier stages' findings stand
            self.result.stages.append((name, f"not run: {type(err).__name__}: {str(err).splitlines()[0][:160]}"))
            return False
        self.result.stages.append((name, "diverges" if found else "ok"))
        self.result.first = found
        return found is not None


def bisect(model: torch.nn.Module, args: Sequence[Any], kwargs: dict[str, Any] | None = None, *,
           options: CompileOptions | None = None) -> Bisection:
    """Run `model` on (args, kwargs) through every stage and name the first op whose value differs from
    PyTorch (see the module docstring). `options`: the passes, lowering and runtime to check (f32)."""
    from forge.frontend.export import export_model
    from forge.frontend.fx_importer import import_program

    options = (options or CompileOptions()).but(precision="f32", weights=None, check=False, accuracy=None)
    args, kwargs = tuple(args), dict(kwargs or {})
    with torch.no_grad():
        expected = [t for t in pytree.tree_leaves(model(*args, **kwargs)) if isinstance(t, torch.Tensor)]
    program, signature, _ = export_model(model, args, kwargs)
    inputs = signature.flatten(args, kwargs)
    run = _Run(options, inputs)

    imported = import_program(program, keep_normalized=True)
    fx = reference_values(imported.normalized_program, inputs)

    def frontend() -> Divergence | None:
        for i, (e, g) in enumerate(zip(expected, fx.outputs, strict=False)):
            bad, max_abs, scale = compare(e, g)
            if bad:
                steps = ", ".join(r.name for r in imported.normalization if r.ran) or "none ran"
                return Divergence("frontend normalization", f"output {i}", f"output {i}", "the normalized graph",
                                  max_abs, scale, detail=f"steps: {steps}")
        return None

    compilation = Compilation(options, imported=imported)  # the compile's own stages, one pass at a time
    module, weights = imported.module, imported.weights
    state: dict[str, Any] = {}

    def in_ir(stage: str) -> Callable[[], Divergence | None]:
        def check() -> Divergence | None:
            recorder, outputs = interpreted_values(module, weights, inputs)
            state["recorder"] = recorder
            return (first_ir_divergence(stage, recorder, fx.values, imported.value_nodes)
                    or output_divergence(stage, module, fx.outputs, outputs))
        return check

    if run.stage("frontend normalization", frontend) or run.stage("import", in_ir("import")):
        return run.result
    for name in _pass_names(options.passes, options.disable):
        compilation.run((passes_stage(f"pass {name}", [name]),))
        if run.stage(f"pass {name}", in_ir(f"pass {name}")):
            return run.result
    _lowering_and_runtime(run, compilation, state.get("recorder"), len(fx.outputs))
    return run.result


def _pass_names(spec: Sequence[str] | str, disable: Sequence[str]) -> list[str]:
    from forge.driver.pass_stages import parse_pipeline

    _, names = parse_pipeline(spec, disable)
    return list(names)


def _lowering_and_runtime(run: _Run, optimized: Compilation, recorder: _OpRecorder | None, n_outputs: int) -> None:
    """Every value of the optimized IR made an output, lowered and interpreted (the LOWER and PLAN stages),
    then emitted and run (EMIT)."""
    if recorder is None:
        return
    exposed_module, exposed = expose_values(optimized.module)
    values = {id(result): value for _, result, value in recorder.values}
    remapped = {id(r): values[id(r)] for _, r in exposed if id(r) in values}
    c = Compilation.of_module(exposed_module, optimized.weights, run.options)

    def lowered() -> Divergence | None:
        c.run((LOWER, PLAN))
        with torch.no_grad():
            got = interpret(c.module, c.weights, *run.inputs, func_name=_function(c.module).sym_name.data)
        return _exposed_divergence("lowering", exposed, remapped, list(got), n_outputs)

    def runtime() -> Divergence | None:
        c.run((EMIT,))
        got = c.executor(*run.inputs)
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        return _exposed_divergence(f"runtime ({run.options.runtime})", exposed, remapped, got, n_outputs)

    if not run.stage("lowering (npuir, buffer)", lowered):
        run.stage(f"runtime ({run.options.runtime})", runtime)
