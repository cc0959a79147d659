"""One OpInfo entry through every stage: its first float32 CPU sample as a module, exported,
imported, interpreted, compiled and run, each output compared with eager (package docstring).

`run_op(info)` never raises: whatever happens is an `OpResult` with a classified reason.
"""

from __future__ import annotations

import itertools
import re
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils import _pytree as pytree

from dialects.torch_types import UnsupportedTypeError
from forge.frontend.decompose import TREESPEC_DEPRECATION
from forge.frontend.fx_importer import ImportedProgram, UnsupportedOpsError, import_program
from forge.frontend.node_locations import recorded_model_frames
from forge.interpreter import interpret

PASS, FAIL, NOT_EXPORTABLE, RANDOM, SKIPPED = "pass", "fail", "not_exportable", "random", "skipped"
STATUSES = (PASS, FAIL, NOT_EXPORTABLE, RANDOM, SKIPPED)
STAGES = ("sample", "export", "import", "interpret", "compile", "run")
DEFAULT_ATOL = DEFAULT_RTOL = 1e-5

DEBUG = False
"""Print the traceback of unexpected errors (`python -m forge.coverage --in-process --debug`)."""


@dataclass
class OpResult:
    """What happened to one OpInfo entry's first float32 CPU sample."""

    op: str
    """The OpInfo name, `name.variant` when the entry has a variant_test_name."""
    status: str
    stage: str = ""
    """The stage that failed (`run` for a pass: the last one)."""
    reason: str = ""
    seconds: float = 0.0
    max_abs: float | None = None

    def line(self) -> str:
        return f"{self.op}\t{self.status}\t{self.stage}\t{self.reason}"


class StageFailure(Exception):
    """A classified failure of one stage."""

    def __init__(self, stage: str, reason: str):
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason


# --- the OpInfo database --------------------------------------------------------------------------


def op_database() -> list[Any]:
    """PyTorch's OpInfo entries that support float32 on the CPU, in op_db order."""
    with quiet_torch():
        from torch.testing._internal.common_methods_invocations import op_db  # ~4 s: the harness only

    return [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]


def op_id(info: Any) -> str:
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


def tolerance(info: Any) -> tuple[float, float]:
    """(atol, rtol): 1e-5 each, or the OpInfo's own float32 CPU override where it is looser."""
    from torch.testing._internal.common_device_type import toleranceOverride  # the harness only

    atol, rtol = DEFAULT_ATOL, DEFAULT_RTOL
    for decorate in getattr(info, "decorators", ()) or ():
        if getattr(decorate, "device_type", None) not in (None, "cpu"):
            continue
        for dec in getattr(decorate, "decorators", ()) or ():
            if isinstance(dec, toleranceOverride) and torch.float32 in dec.d:
                tol = dec.d[torch.float32]
                atol, rtol = max(atol, tol.atol), max(rtol, tol.rtol)
    return atol, rtol


# --- one sample as a module -----------------------------------------------------------------------


class SampleModule(torch.nn.Module):
    """`forward(*tensors)` calls the op on the sample, its tensors replaced by the arguments and
    every other argument (numbers, shapes, dtypes, ...) baked in."""

    def __init__(self, fn: Callable[..., Any], sample: Any):
        super().__init__()
        self.fn = fn
        flat, self.spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
        self.slots = [i for i, x in enumerate(flat) if isinstance(x, torch.Tensor)]
        self.constants = [None if isinstance(x, torch.Tensor) else x for x in flat]
        self.tensors = tuple(flat[i] for i in self.slots)

    def forward(self, *tensors: torch.Tensor) -> Any:
        flat = list(self.constants)
        for slot, tensor in zip(self.slots, tensors, strict=True):
            flat[slot] = tensor
        inp, args, kwargs = pytree.tree_unflatten(flat, self.spec)
        return self.fn(inp, *args, **kwargs)


SAMPLE_SEED = 0


def first_sample(info: Any, index: int = 0) -> Any | None:
    """The entry's first (or `index`-th) float32 CPU sample, made from a fixed seed.
    `sample_inputs_func` is called directly: `info.sample_inputs` wraps it in an iterator that
    inspects the call stack (~0.2 s)."""
    torch.manual_seed(SAMPLE_SEED)
    with quiet_torch():
        samples = iter(info.sample_inputs_func(info, "cpu", torch.float32, False))
        try:
            return next(itertools.islice(samples, index, None), None)
        finally:
            close = getattr(samples, "close", None)
            if close is not None:  # now, not when collected (inside a later export's tracer)
                close()


def _clones(tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    return tuple(t.clone() for t in tensors)


# --- classification -------------------------------------------------------------------------------

_LOCATION = re.compile(r"(?:/[^\s:]+)?\.py:\d+: ")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_DTYPE = re.compile(
    r"unsupported (?:torch )?dtype|dtype .* is not supported|cannot hold|has no numpy dtype", re.IGNORECASE
)


def classify(stage: str, err: BaseException) -> StageFailure:
    """A stage's exception as a classified one-line reason, stable from run to run (no paths or
    addresses), so the suite's expectations can name it."""
    if isinstance(err, StageFailure):
        return err
    if isinstance(err, UnsupportedOpsError):
        return StageFailure(stage, "unsupported aten op " + ", ".join(sorted(err.unsupported)))
    text = _ADDRESS.sub("0x?", _LOCATION.sub("", " ".join(str(err).split())))
    kind = type(err).__name__
    if isinstance(err, UnsupportedTypeError) or _DTYPE.search(text):
        return StageFailure(stage, f"dtype: {_clip(text)}")
    if "data-dependent" in text.lower() or "DataDependent" in kind or "depends on tensor values" in text:
        return StageFailure(stage, f"data-dependent shape: {_clip(text)}")
    return StageFailure(stage, f"{kind}: {_clip(text)}")


def _clip(text: str, n: int = 200) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def failure_class(result: OpResult) -> str:
    """The cause without op-specific details, for grouping: `unsupported aten op`, `run: wrong value`..."""
    reason = result.reason
    if result.status == RANDOM:
        return "random op"
    if reason.startswith("unsupported aten op"):
        return "unsupported aten op"
    head = re.split(r"[:(]", reason, maxsplit=1)[0].strip()
    return f"{result.stage}: {head}"


# --- comparison with eager ------------------------------------------------------------------------


def _leaves(value: Any) -> list[Any]:
    return pytree.tree_leaves(value)


def compare(stage: str, expected: Any, got: Any, atol: float, rtol: float) -> float:
    """Raise a classified StageFailure unless `got` matches `expected` (count, shapes, dtypes,
    values); returns the largest |difference| of the float outputs."""
    exp, out = _leaves(expected), _leaves(got)
    if len(exp) != len(out):
        raise StageFailure(stage, f"wrong output count: {len(out)}, expected {len(exp)}")
    worst = 0.0
    for i, (e, g) in enumerate(zip(exp, out, strict=True)):
        where = f"output #{i}" if len(exp) > 1 else "output"
        worst = max(worst, _compare_one(stage, where, torch.as_tensor(e), torch.as_tensor(g), atol, rtol))
    return worst


def _compare_one(stage: str, where: str, e: torch.Tensor, g: torch.Tensor, atol: float, rtol: float) -> float:
    if tuple(e.shape) != tuple(g.shape):
        raise StageFailure(stage, f"wrong shape: {where} {tuple(g.shape)}, expected {tuple(e.shape)}")
    if e.dtype != g.dtype:
        raise StageFailure(stage, f"wrong dtype: {where} {g.dtype}, expected {e.dtype}")
    if e.numel() == 0:
        return 0.0
    if not (e.dtype.is_floating_point or e.dtype.is_complex):
        if not torch.equal(g, e):
            raise StageFailure(stage, f"wrong value: {where} differs in {int((g != e).sum())} of {e.numel()} elements")
        return 0.0
    diff = (g.to(torch.complex128 if e.is_complex() else torch.float64) - e).abs()
    both_nan = torch.isnan(e) & torch.isnan(g)
    same_inf = torch.isinf(e) & (e == g)
    diff = torch.where(both_nan | same_inf, torch.zeros_like(diff), diff)
    err = float(diff.max())
    if not torch.allclose(g, e, atol=atol, rtol=rtol, equal_nan=True):
        raise StageFailure(stage, f"wrong value: {where} max |diff| {err:.3g} (atol={atol:g}, rtol={rtol:g})")
    return err


# --- the stages -----------------------------------------------------------------------------------


def run_op(info: Any, on_stage: Callable[[str], None] | None = None, sample_index: int = 0) -> OpResult:
    """Run one OpInfo entry's first sample (or its `sample_index`-th: the result's op is then
    `id#index`) through every stage. `on_stage(stage)` is called as each stage starts (the
    isolated runner blames a crash on it)."""
    start = time.perf_counter()
    name = op_id(info) + (f"#{sample_index}" if sample_index else "")
    stage = "sample"

    def enter(next_stage: str) -> str:
        if on_stage is not None:
            on_stage(next_stage)
        return next_stage

    def done(status: str, at: str, reason: str = "", max_abs: float | None = None) -> OpResult:
        return OpResult(name, status, at, reason, round(time.perf_counter() - start, 3), max_abs)

    try:
        enter(stage)
        sample = first_sample(info, sample_index)
        if sample is None:
            return done(SKIPPED, "sample", "no float32 CPU sample" + (f" #{sample_index}" if sample_index else ""))
        module = SampleModule(info.op, sample)
        inputs = module.tensors
        expected = _eager(module, inputs)
        if not all(_dense(x) or isinstance(x, (bool, int, float)) for x in _leaves(expected)):
            return done(SKIPPED, "sample", "the output is not dense tensors or numbers")
        stage = enter("export")
        try:
            with torch.no_grad(), quiet_torch(), recorded_model_frames():
                program = torch.export.export(module, _clones(inputs))
        except Exception as err:  # export's own assorted errors: counted apart, with the reason
            return done(NOT_EXPORTABLE, "export", classify("export", err).reason)
        uninitialized = _uninitialized_outputs(program)
        if uninitialized:
            return done(SKIPPED, "export", f"uninitialized output ({', '.join(uninitialized)}): not comparable")
        seeded = _random_ops(program, inputs)
        if seeded:
            return done(RANDOM, "export", f"random op {', '.join(seeded)}: values not comparable with eager")
        if _differs(expected, _eager(module, inputs)):
            return done(SKIPPED, "export", "eager itself differs from run to run: not comparable")
        atol, rtol = tolerance(info)
        stage = enter("import")
        _check_static(program)
        with quiet_torch():
            imported = import_program(program)
        stage = enter("interpret")
        got = interpret(imported.module, imported.weights, *_clones(inputs))
        compare("interpret", expected, list(got), atol, rtol)
        stage = enter("compile")
        compiled = _compile(module, inputs, imported)
        stage = enter("run")
        got = compiled.executor(*_clones(inputs))
        return done(PASS, "run", "", compare("run", expected, list(got), atol, rtol))
    except Exception as err:  # every failure is classified, never raised: the harness goes on
        failure = classify(stage, err)
        if DEBUG and not isinstance(err, (StageFailure, UnsupportedOpsError)):
            traceback.print_exc()
        return done(SKIPPED if failure.stage == "sample" else FAIL, failure.stage, failure.reason)


def _dense(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.layout == torch.strided


def _eager(module: torch.nn.Module, inputs: Sequence[torch.Tensor]) -> Any:
    with torch.no_grad(), quiet_torch():
        return module(*_clones(inputs))


def _differs(a: Any, b: Any) -> bool:
    try:
        compare("sample", a, b, 0.0, 0.0)
    except StageFailure:
        return True
    return False


_EMPTY = ("empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted")


def _uninitialized_outputs(program: torch.export.ExportedProgram) -> list[str]:
    """The ops of `empty` family whose result is a graph output as it is (its values are whatever
    memory held)."""
    output = next(n for n in program.graph.nodes if n.op == "output")
    found = set()
    for node in _leaves(output.args[0]):
        val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor) or not all(isinstance(d, int) for d in val.shape):
            continue  # not a tensor, or a data-dependent shape (classified at import)
        if val.numel() > 0 and node.op == "call_function":
            packet = getattr(node.target, "_schema", None)
            if packet is not None and packet.name.split("::")[-1] in _EMPTY:
                found.add(node.target.name())
    return sorted(found)


def _random_ops(program: torch.export.ExportedProgram, inputs: Sequence[torch.Tensor]) -> list[str]:
    """The graph's seeded random ops, when the graph's results do change with the seed (OpInfo
    seeds eager; the graph cannot replay that seed). An op that may draw random numbers but does
    not here (sdpa without dropout) does not count."""
    found = set()
    for node in program.graph.nodes:
        if node.op == "call_function" and torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
            found.add(str(node.target.name()))
    if not found:
        return []
    graph = program.module()
    runs = []
    for seed in range(5):  # a few draws can coincide for two seeds (multinomial of 3)
        torch.manual_seed(seed)
        with torch.no_grad(), quiet_torch():
            runs.append(graph(*_clones(inputs)))
    return sorted(found) if any(_differs(runs[0], other) for other in runs[1:]) else []


def _check_static(program: torch.export.ExportedProgram) -> None:
    """A graph whose shapes depend on the data (nonzero, masked_select, ...) is classified as such."""
    for node in program.graph.nodes:
        val = node.meta.get("val")
        for t in _leaves(val) if val is not None else ():
            if isinstance(t, torch.Tensor) and not all(isinstance(d, int) for d in t.shape):
                target = getattr(node.target, "__name__", str(node.target))
                raise StageFailure("import", f"data-dependent shape: {target} (Forge compiles static shapes)")


def _compile(model: torch.nn.Module, inputs: Sequence[torch.Tensor], imported: ImportedProgram):
    """forge.compile of the imported program, OpenVINO on the CPU (consumes `imported.module`)."""
    from forge.driver.compiler import compile_imported  # start-up: the compiler pulls in lowering and backends

    return compile_imported(model, tuple(inputs), imported, runtime="openvino", device="CPU")


@contextmanager
def quiet_torch():
    """torch's own warnings about its internals (the sample's user can do nothing about them),
    silenced by message; every other warning is shown."""
    with warnings.catch_warnings():
        for category, message in TORCH_WARNINGS:
            warnings.filterwarnings("ignore", message, category)
        yield


TORCH_WARNINGS: tuple[tuple[type[Warning], str], ...] = (
    # torch.export's own use of its deprecated pytree API
    (FutureWarning, TREESPEC_DEPRECATION),
    # OpInfo samples that call torch's deprecated, beta or experimental APIs on purpose
    (UserWarning, r"torch\.\w+ is deprecated in favor of"),
    (UserWarning, r"Using torch\.cross without specifying the dim arg is deprecated"),
    (UserWarning, r"`nn\.functional\.upsample_\w+` is deprecated"),
    (UserWarning, r"A window was not provided"),
    (UserWarning, r"Sparse CSR tensor support is in beta state"),
    (UserWarning, r"index_reduce\(\) is in beta"),
    (UserWarning, r"ComplexHalf support is experimental"),
    (UserWarning, r"dropout2d: Received a 3D input to dropout2d"),
)


# --- totals ---------------------------------------------------------------------------------------


def summary(results: Sequence[OpResult]) -> dict[str, Any]:
    """Counts by status; `exportable` = passed + failed, the pass rate's denominator."""
    counts = Counter(r.status for r in results)
    exportable = counts[PASS] + counts[FAIL]
    return {
        "entries": len(results),
        "exportable": exportable,
        "passed": counts[PASS],
        "failed": counts[FAIL],
        "not_exportable": counts[NOT_EXPORTABLE],
        "random": counts[RANDOM],
        "skipped": counts[SKIPPED],
        "pass_rate": round(counts[PASS] / exportable, 4) if exportable else 0.0,
    }
