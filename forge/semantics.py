"""Semantic checking of a pipeline: which pass changed what the IR computes?

`forge-opt --verify-semantics` attaches a `SemanticChecker` to its pipeline (forge/cli/verify_semantics.py
builds it from the flags). Before the first pass it runs every function of the module in the
reference interpreter on seeded random inputs (`random_inputs`, which tests use too) and keeps the
outputs; after each pass it runs them again and compares every output with a dtype-aware tolerance.
The first pass whose results differ (or whose output the interpreter cannot run) stops the pipeline
with a `SemanticMismatch` that names the pass, the function, the output, the largest difference and
where it is.

Weights come from the WeightStore attached to the module (forge-opt attaches the companion
`model.safetensors`); without one they are generated, seeded, from the `*.weight` result types
and kept aside: the module does not get a store, so passes see what plain forge-opt shows them.

The interpreter runs `aten`, `npuir` and `buffer` IR (`forge.interpreter`), so a pipeline can be
checked through the lowering. IR it cannot run is a `SemanticsError` when it is the input, and a
`SemanticMismatch` blaming the pass when a pass produced it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.interpreter import Interpreter
from xdsl.ir import Operation

from forge.diagnostics import Diagnostic, one_line, op_location
from forge.pipeline import PassRecord, PipelineObserver

if TYPE_CHECKING:  # torch is imported when a check runs (start-up cost): forge-opt imports this module always
    import torch

    from forge.weights import WeightStore

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (5e-2, 5e-2),
}
"""(atol, rtol) per float dtype: loose enough for fusions that reorder float arithmetic over a
whole model, tight enough for any real change of meaning. Integers and booleans compare exactly."""


def tolerance_for(
    dtype: torch.dtype, atol: float | None = None, rtol: float | None = None
) -> tuple[float, float]:
    """(atol, rtol) for outputs of `dtype`; `atol`/`rtol` override the float defaults."""
    if not dtype.is_floating_point:
        return 0.0, 0.0
    name = str(dtype).removeprefix("torch.")
    default_atol, default_rtol = DEFAULT_TOLERANCES.get(name, DEFAULT_TOLERANCES["float32"])
    return (default_atol if atol is None else atol), (default_rtol if rtol is None else rtol)


class SemanticsError(Exception):
    """The input itself cannot be checked (no tensor arguments, or the interpreter cannot run it)."""

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.message = message
        self.op = op


@dataclass
class OutputDifference:
    """How one output of one function changed."""

    function: str
    index: int
    type: str
    what: str
    """e.g. `max |diff| 0.64 at [1, 5] (before 0.12, after 0.76)`, or `shape (2,) before, (3,) after`."""
    tolerance: str

    def describe(self) -> str:
        return f"output #{self.index} ({self.type}) of @{self.function}: {self.what}; {self.tolerance}"


@dataclass(eq=False, repr=False, kw_only=True)
class SemanticMismatch(Exception):
    """Pass `name` (#`index`+1) changed what the module computes, or left IR that cannot be run."""

    name: str
    index: int
    before: ModuleOp
    """A copy of the IR the pass was given (for the reproducer)."""
    difference: OutputDifference | None = None
    interpreter_error: str | None = None
    op: Operation | None = None
    """Where to point: the op the interpreter failed on, else the differing output's producer."""
    inputs_note: str = ""
    rewritten: list[RewriteSite] = field(default_factory=list)
    """Where the pass changed the IR (`rewritten_sites`): on a whole model the differing output is far
    from the rewrite that broke it."""

    def __post_init__(self) -> None:
        super().__init__(self.summary())

    def summary(self) -> str:
        """One line, for the reproducer's header."""
        if self.difference is not None:
            return f"changed {self.difference.describe()}"
        return f"left IR the reference interpreter cannot run: {self.interpreter_error}"

    def rewritten_notes(self) -> list[str]:
        """Where the pass rewrote the IR, those in the differing function first (`REWRITTEN_SHOWN` places)."""
        if not self.rewritten:
            return []
        count = len(self.rewritten)
        first = f" (in @{self.difference.function} first)" if self.difference is not None else ""
        head = f"the pass rewrote {count} place{'s' if count != 1 else ''}{first}:"
        lines = [head, *(f"  {site.describe()}" for site in self.rewritten[:REWRITTEN_SHOWN])]
        if count > REWRITTEN_SHOWN:
            lines.append(f"  ... and {count - REWRITTEN_SHOWN} more")
        return lines

    def diagnostic(self, n_passes: int, fallback: str) -> Diagnostic:
        """The error forge-opt prints (the caller adds the reproducer notes)."""
        position = f"#{self.index + 1} of {n_passes}"
        if self.difference is not None:
            d = self.difference
            message = f"pass '{self.name}' ({position}) changed the results of @{d.function}"
            notes = [f"first differing output: #{d.index} ({d.type}): {d.what}", f"tolerance: {d.tolerance}"]
        else:
            message = (
                f"the reference interpreter cannot run the IR after pass '{self.name}' ({position}): "
                f"{self.interpreter_error}"
            )
            notes = [
                "--verify-semantics checks passes whose output the reference interpreter runs "
                "(aten, npuir and buffer IR)"
            ]
        notes += self.rewritten_notes()
        notes.append(self.inputs_note)
        loc = op_location(self.op) if self.op is not None else None
        return Diagnostic(message, loc, length=len(self.op.name) if self.op else 1, prefix=fallback, notes=notes)


REWRITTEN_SHOWN = 5
"""How many rewritten places a mismatch lists."""


@dataclass
class RewriteSite:
    """One place a pass changed: the ops that disappeared from it and those that appeared."""

    where: str
    """`file:line:col`, or `<unknown location>`."""
    function: str | None
    gone: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if not self.new:
            change = f"{', '.join(self.gone)} erased"
        elif not self.gone:
            change = f"{', '.join(self.new)} inserted"
        else:
            change = f"{', '.join(self.gone)} -> {', '.join(self.new)}"
        return f"{self.where}: {change}"


def _op_key(op: Operation) -> tuple[Any, ...]:
    """What an op is, for telling the ops a pass replaced: name, location, properties, result types (not
    its operands: a replaced op's users read the replacement, and are not rewritten themselves)."""
    return (op.name, str(op.location), tuple(op.properties.items()), tuple(op.result_types))


def _where(op: Operation) -> str:
    """An op's location; for one a pass created without a location, that of its first located user (or
    operand), where it was put."""
    if (loc := op_location(op)) is not None:
        return str(loc)
    neighbours = [use.operation for r in op.results for use in r.uses]
    neighbours += [o.owner for o in op.operands if isinstance(o.owner, Operation)]
    for other in neighbours:
        if (loc := op_location(other)) is not None:
            return str(loc)
    return "<unknown location>"


def _function_of(op: Operation) -> str | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent.sym_name.data if isinstance(parent, func.FuncOp) else None


def rewritten_sites(before: ModuleOp, after: ModuleOp, function: str | None = None) -> list[RewriteSite]:
    """The places where a pass replaced, erased or inserted ops (comparing the module `before` it with
    the module `after` it), in source order, those in `function` first."""
    old: dict[tuple[Any, ...], list[Operation]] = {}
    for op in before.walk():
        if op is not before:
            old.setdefault(_op_key(op), []).append(op)
    added: list[Operation] = []
    for op in after.walk():
        if op is not after:
            same = old.get(_op_key(op))
            if same:
                same.pop()
            else:
                added.append(op)
    sites: dict[str, RewriteSite] = {}
    removed = [op for same in old.values() for op in same]
    for changed, gone in ((removed, True), (added, False)):
        for op in changed:
            where = _where(op)
            site = sites.setdefault(where, RewriteSite(where, _function_of(op)))
            names = site.gone if gone else site.new
            if op.name not in names:
                names.append(op.name)

    def order(site: RewriteSite) -> tuple[Any, ...]:
        parts = site.where.rsplit(":", 2)
        position = (0, parts[0], int(parts[1]), int(parts[2])) if len(parts) == 3 and parts[1].isdigit() \
            and parts[2].isdigit() else (1, site.where, 0, 0)
        return (site.function != function, *position)

    return sorted(sites.values(), key=order)


# --- inputs and weights ---------------------------------------------------------------------------


def checked_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The functions to run: every `func.func` with a body."""
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]


def weight_ops(module: ModuleOp) -> list[tuple[str, TensorType]]:
    """(name, type) of every weight reference (`aten.weight`, `npuir.weight`, `buffer.weight`)."""
    found: list[tuple[str, TensorType]] = []
    for op in module.walk():
        name = op.properties.get("name")
        if op.name.endswith(".weight") and isinstance(name, StringAttr) and op.results:
            ty = op.results[0].type
            if isinstance(ty, TensorType):
                found.append((name.data, ty))
    return found


def generated_weights(module: ModuleOp, seed: int) -> WeightStore:
    """Seeded weights for every weight the module names, from their types: fan-in scaled normals
    for floats, fair coins for booleans, zeros for integers (integer weights are index buffers,
    such as BERT's token_type_ids, and 0 is a valid index into any table)."""
    import torch  # lazy, as the imports below: start-up cost (they load torch)

    from dialects.torch_types import dtype_of, shape_of
    from forge.weights import WeightStore

    gen = torch.Generator().manual_seed(seed)
    store = WeightStore()
    for name, ty in weight_ops(module):
        if name in store:
            continue
        shape, dtype = shape_of(ty), dtype_of(ty)
        if dtype == torch.bool:
            value = torch.rand(shape, generator=gen) > 0.5
        elif dtype.is_floating_point:
            scale = max(shape[-1], 1) ** -0.5 if shape else 1.0
            value = (torch.randn(shape, generator=gen) * scale).to(dtype)
        else:
            value = torch.zeros(shape, dtype=dtype)
        store.add(name, value)
    return store


def random_inputs(function: func.FuncOp, seed: int = 0) -> list[torch.Tensor]:
    """Seeded random tensors matching a function's argument types (floats normal, ints in [0, 5),
    bools fair coins): inputs for comparing a hand-written function before and after a rewrite."""
    import torch  # lazy, as the import below: start-up cost (they load torch)

    from dialects.torch_types import dtype_of, shape_of

    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for ty in function.function_type.inputs.data:
        shape, dtype = shape_of(ty), dtype_of(ty)
        if dtype == torch.bool:
            inputs.append(torch.rand(shape, generator=gen) > 0.5)
        elif dtype.is_floating_point:
            inputs.append(torch.randn(shape, generator=gen).to(dtype))
        else:
            inputs.append(torch.randint(0, 5, shape, generator=gen, dtype=dtype))
    return inputs


def function_inputs(function: func.FuncOp, seed: int) -> list[torch.Tensor]:
    """`random_inputs` for one function, or SemanticsError naming an argument that is not a tensor."""
    for i, ty in enumerate(function.function_type.inputs.data):
        if not isinstance(ty, TensorType) or not ty.has_static_shape():
            raise SemanticsError(
                f"cannot generate an input for argument #{i} of @{function.sym_name.data}: "
                f"{ty} is not a statically shaped tensor",
                function,
            )
    return random_inputs(function, seed)


# --- running and comparing ------------------------------------------------------------------------


class _CurrentOp(Interpreter.Listener):
    """Remembers the op being interpreted, to say where the interpreter failed."""

    def __init__(self) -> None:
        self.op: Operation | None = None

    def will_interpret_op(self, op: Operation, args: Any) -> None:
        self.op = op


class InterpreterFailure(Exception):
    def __init__(self, message: str, op: Operation | None):
        super().__init__(message)
        self.message = message
        self.op = op


def run_functions(
    module: ModuleOp, weights: WeightStore, inputs: dict[str, list[torch.Tensor]]
) -> dict[str, tuple[Any, ...]]:
    """Outputs of each function in `inputs`; InterpreterFailure (with the op) if one cannot run."""
    from forge.interpreter import functions_for  # lazy: start-up cost (loads torch)

    interpreter = Interpreter(module)
    for functions in functions_for(weights):
        interpreter.register_implementations(functions)
    current = _CurrentOp()
    interpreter.listeners = (*interpreter.listeners, current)
    outputs: dict[str, tuple[Any, ...]] = {}
    for name, args in inputs.items():
        current.op = None
        try:
            outputs[name] = tuple(interpreter.call_op(name, tuple(args)))
        except Exception as e:  # the interpreter reports unsupported ops and bad IR this way
            op = current.op
            where = f" at '{op.name}'" if op is not None else ""
            raise InterpreterFailure(f"@{name}{where}: {type(e).__name__}: {_first_line(e)}", op) from e
    return outputs


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return one_line(text.splitlines()[0]) if text else "(no message)"


def _format_number(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _unravel(flat: int, shape: tuple[int, ...]) -> list[int]:
    """The index of element `flat` of a row-major `shape` (torch.unravel_index imports sympy: ~1 s)."""
    where = []
    for size in reversed(shape):
        flat, i = divmod(flat, size)
        where.append(i)
    return where[::-1]


def compare_output(
    before: Any, after: Any, atol: float | None = None, rtol: float | None = None,
    largest: list[float] | None = None,
) -> tuple[str, str] | None:
    """(what differs, tolerance) between two values of one output, or None when they match
    (then the largest |diff| of matching float outputs is appended to `largest`, if given)."""
    import torch  # lazy: start-up cost

    if not isinstance(before, torch.Tensor) or not isinstance(after, torch.Tensor):
        if type(before) is type(after) and before == after:
            return None
        return f"{type(before).__name__} before, {type(after).__name__} after", "exact"
    if before.shape != after.shape:
        return f"shape {tuple(before.shape)} before, {tuple(after.shape)} after", "exact"
    if before.dtype != after.dtype:
        return f"dtype {before.dtype} before, {after.dtype} after", "exact"
    a_tol, r_tol = tolerance_for(before.dtype, atol, rtol)
    dtype_name = str(before.dtype).removeprefix("torch.")
    exact = not before.dtype.is_floating_point
    tolerance = f"exact ({dtype_name})" if exact else f"atol={a_tol:g}, rtol={r_tol:g} ({dtype_name})"
    b, a = before.detach().to(torch.float64), after.detach().to(torch.float64)
    close = torch.isclose(a, b, rtol=r_tol, atol=a_tol, equal_nan=True)
    if bool(close.all()):
        if largest is not None and a.numel():
            largest.append(float((a - b).abs().nan_to_num(nan=0.0).max()))
        return None
    diff = (a - b).abs().nan_to_num(nan=float("inf"))
    diff = torch.where(close, torch.zeros_like(diff), diff)
    flat = int(diff.reshape(-1).argmax())
    where = _unravel(flat, tuple(before.shape))
    at = "at [" + ", ".join(map(str, where)) + "]" if where else "(0-d)"
    b_val, a_val = before.reshape(-1)[flat].item(), after.reshape(-1)[flat].item()
    count = int((~close).sum())
    what = (
        f"max |diff| {_format_number(float(diff.reshape(-1)[flat]))} {at} (before {_format_number(b_val)}, "
        f"after {_format_number(a_val)}); {count} of {before.numel()} elements differ"
    )
    return what, tolerance


def _type_of(value: Any) -> str:
    import torch  # lazy, as the import below: start-up cost

    from dialects.torch_types import type_of

    return str(type_of(value)) if isinstance(value, torch.Tensor) else type(value).__name__


class SemanticChecker(PipelineObserver):
    """Interprets the module before the pipeline and after every pass (see the module docstring).

    Build it with the module as the pipeline will receive it; `SemanticsError` if it cannot run.
    """

    def __init__(
        self,
        module: ModuleOp,
        weights: WeightStore | None,
        *,
        seed: int = 0,
        atol: float | None = None,
        rtol: float | None = None,
    ):
        self.seed = seed
        self.atol = atol
        self.rtol = rtol
        self.generated = weights is None
        self.has_weights = bool(weight_ops(module))
        self.weights = generated_weights(module, seed) if weights is None else weights
        functions = checked_functions(module)
        if not functions:
            raise SemanticsError("the module has no function with a body to interpret")
        self.inputs = {f.sym_name.data: function_inputs(f, seed) for f in functions}
        start = time.perf_counter()
        try:
            self.reference = run_functions(module, self.weights, self.inputs)
        except InterpreterFailure as e:
            raise SemanticsError(f"cannot interpret the input: {e.message}", e.op) from e
        self.elapsed_ms = (time.perf_counter() - start) * 1e3
        self.before: ModuleOp | None = None
        self.checked = 0
        """How many passes were checked."""
        self.largest: tuple[float, str] = (0.0, "")
        """The largest |diff| within tolerance seen, and after which pass."""
        self.elapsed_ms = 0.0
        """Time spent interpreting and comparing (for --timing)."""

    def inputs_note(self) -> str:
        note = f"inputs: forge.semantics.random_inputs with seed {self.seed}"
        if not self.has_weights:
            return note
        if self.generated:
            return note + f"; weights: generated from their types (seed {self.seed})"
        return note + "; weights: the module's WeightStore (companion .safetensors)"

    def before_pass(self, index: int, name: str, module: ModuleOp) -> None:
        self.before = module.clone()

    def after_pass(self, record: PassRecord, module: ModuleOp) -> None:
        start = time.perf_counter()
        mismatch = self.check(record.name, record.index, module)
        self.elapsed_ms += (time.perf_counter() - start) * 1e3
        self.checked += 1
        if mismatch is not None:
            raise mismatch

    def check(self, name: str, index: int, module: ModuleOp) -> SemanticMismatch | None:
        """The mismatch pass `name` caused (comparing `module` with the reference), if any."""
        assert self.before is not None
        try:
            outputs = run_functions(module, self.weights, self.inputs)
        except InterpreterFailure as e:
            return SemanticMismatch(name=name, index=index, before=self.before, interpreter_error=e.message,
                                    op=e.op, inputs_note=self.inputs_note(),
                                    rewritten=rewritten_sites(self.before, module))
        for function, expected in self.reference.items():
            difference = self._first_difference(function, expected, outputs[function], name)
            if difference is not None:
                return SemanticMismatch(name=name, index=index, before=self.before, difference=difference,
                                        op=_output_producer(module, function, difference.index),
                                        inputs_note=self.inputs_note(),
                                        rewritten=rewritten_sites(self.before, module, function))
        return None

    def _first_difference(
        self, function: str, expected: Sequence[Any], got: Sequence[Any], name: str
    ) -> OutputDifference | None:
        if len(expected) != len(got):
            return OutputDifference(function, min(len(expected), len(got)), "results",
                                    f"{len(expected)} results before, {len(got)} after", "exact")
        largest: list[float] = []
        for i, (b, a) in enumerate(zip(expected, got, strict=True)):
            found = compare_output(b, a, self.atol, self.rtol, largest)
            if found is not None:
                return OutputDifference(function, i, _type_of(b), *found)
        if largest and max(largest) > self.largest[0]:
            self.largest = (max(largest), name)
        return None

    def summary(self) -> str:
        """One line for a pipeline that kept its results."""
        functions = ", ".join(f"@{f}" for f in self.reference)
        line = (
            f"--verify-semantics: the results of {functions} did not change in {self.checked} "
            f"pass{'es' if self.checked != 1 else ''} (seed {self.seed})"
        )
        if self.largest[0] > 0:
            line += f"; largest |diff| {self.largest[0]:.3g}, after '{self.largest[1]}'"
        return line


def _output_producer(module: ModuleOp, function: str, index: int) -> Operation | None:
    """The op defining output `index` of `function` (the return itself for an argument)."""
    for f in checked_functions(module):
        if f.sym_name.data == function:
            ret = f.body.blocks.last.last_op if f.body.blocks.last else None
            if ret is None or index >= len(ret.operands):
                return ret
            owner = ret.operands[index].owner
            return owner if isinstance(owner, Operation) else ret
    return None
