"""Running cases through Forge and judging each one: `run_cases(cases)`.

Many cases run as one module (`BatchModule`): one torch.export, one import, one interpreter run and
one `forge.compile` per runtime serve them all, and each case's results are compared on their own.
A case is any `Call` (forge.testing.fuzz.cases): a fuzz `Case`, or an OpInfo sample of the coverage
harness (forge.coverage.opinfo.SampleCase). When a stage fails for the batch as a whole (an
exception, not a wrong value), the batch is split (by overload first, then in halves) until the
failing cases stand alone, so a refusal of one case costs a few more compiles, not the batch.

The stages of a case, each judged against torch's kernel (forge.testing.fuzz.compare):

    export (torch.export) -> import -> verify -> interpret (the reference interpreter)
    openvino, nnfactory: forge.compile(..., runtime=...) and a call of the compiled program

The runtimes go through `forge.compile` whole, as users call it (its own export, the float32 compute of
half models, the frontend's normalization), not from the interpreter's import: a faster shared import
once hid that path from the fuzzer.

A case's outcome per stage is one of `STATUSES`: `pass`; `wrong` (a wrong value, dtype or shape:
a silent wrong result, the worst bug); `error` (Forge raised something that is not a user-facing
error: a crash); `refused` (a clear CompileError/ImportError naming why: a coverage gap, not a
wrong result); `deviation` (a difference from torch listed in forge.testing.fuzz.deviations);
`not_exportable` (torch.export itself refused the call: not Forge's); `unstable` (torch's own
kernel gives other values on a second call, e.g. _upsample_bilinear2d_aa's signed zeros: there is
no reference to judge by, so the case is not judged). Its overall status is the worst of its stages.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dialects.torch_types import UnsupportedTypeError
from forge.driver.compile_errors import CompileError
from forge.frontend.import_errors import FrontendError
from forge.testing.fuzz.cases import BatchModule, Call
from forge.testing.fuzz.deviations import documented

PASS, WRONG, ERROR, REFUSED, DEVIATION, NOT_EXPORTABLE, UNSTABLE = (
    "pass", "wrong", "error", "refused", "deviation", "not_exportable", "unstable"
)  # fmt: skip
STATUSES = (WRONG, ERROR, REFUSED, DEVIATION, NOT_EXPORTABLE, UNSTABLE, PASS)
"""Worst first: a case's overall status is the first of these any of its stages has."""
RUNTIMES = ("openvino", "nnfactory")
STAGES = ("interpret", *RUNTIMES)
"""The stages a case is judged at (export and import failures are reported at `interpret`)."""


@dataclass
class Outcome:
    """What happened to one case: a status and a detail per stage."""

    case: Call
    stages: dict[str, tuple[str, str]] = field(default_factory=dict)
    """stage -> (status, detail)."""

    @property
    def status(self) -> str:
        found = {s for s, _ in self.stages.values()}
        return next((s for s in STATUSES if s in found), PASS)

    def failures(self) -> dict[str, tuple[str, str]]:
        """The stages that found a bug (wrong or error)."""
        return {k: v for k, v in self.stages.items() if v[0] in (WRONG, ERROR)}

    def summary(self) -> str:
        worst = [f"{stage}: {status}: {detail}" for stage, (status, detail) in self.stages.items() if status != PASS]
        return f"{self.case.describe()}\n  " + ("\n  ".join(worst) if worst else "pass")


class StageError(Exception):
    """A batch-wide failure of one stage, classified."""

    def __init__(self, stage: str, status: str, detail: str):
        super().__init__(f"{stage}: {status}: {detail}")
        self.stage, self.status, self.detail = stage, status, detail


def run_cases(
    cases: Sequence[Call],
    runtimes: Sequence[str] = RUNTIMES,
    expected: Sequence[Sequence[torch.Tensor]] | None = None,
    on_stage: Callable[[str], None] | None = None,
) -> list[Outcome]:
    """Every case through every stage (`runtimes`: the compiled ones), one outcome each, in order.
    `expected`: torch's results of each case (computed when None). `on_stage(name)` is told each
    stage as it starts (a worker process blames a crash on it)."""
    cases = list(cases)
    outcomes = [Outcome(c) for c in cases]
    if expected is None:
        expected = [eager(c) for c in cases]
        for outcome, first in zip(outcomes, expected, strict=True):
            again = outcome.case.mismatch(first, eager(outcome.case))
            if again is not None:
                for stage in ["interpret", *runtimes]:
                    outcome.stages[stage] = (UNSTABLE, f"torch gives other values on a second call: {again}")
    index = [i for i, o in enumerate(outcomes) if not o.stages]
    _run(index, cases, list(expected), outcomes, ["interpret", *runtimes], on_stage or (lambda _: None))
    return outcomes


def eager(case: Call) -> list[torch.Tensor]:
    """torch's results of the case, with a fixed seed (random ops draw the same numbers each time)."""
    torch.manual_seed(0)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return case.call()


def _run(index, cases, expected, outcomes, stages, on_stage) -> None:
    """Run `stages` for the cases at `index`; a batch-wide failure splits the batch and retries the
    failed stage and the ones after it on each part."""
    if not index:
        return
    batch = _Batch([cases[i] for i in index], [expected[i] for i in index])
    for n, stage in enumerate(stages):
        try:
            on_stage(stage)
            got = batch.run(stage)
        except StageError as err:
            if len(index) == 1:
                _record_failure(outcomes[index[0]], err, stages[n:])
                if err.status == NOT_EXPORTABLE or (err.status == REFUSED and err.detail.startswith("import")):
                    return
                continue
            for part in _split(index, cases):
                _run(part, cases, expected, outcomes, stages[n:], on_stage)
            return
        for i, result in zip(index, got, strict=True):
            outcomes[i].stages[stage] = _judge(stage, cases[i], expected[i], result)


def _record_failure(outcome: Outcome, err: StageError, stages: list[str]) -> None:
    """A single case's stage failed. What torch.export refuses or the importer refuses, every later
    stage (a compile exports and imports the same graph) refuses alike: recorded without running."""
    outcome.stages[stages[0]] = (err.status, err.detail)
    if err.status == NOT_EXPORTABLE or (err.status == REFUSED and err.detail.startswith("import")):
        for later in stages[1:]:
            outcome.stages[later] = (err.status, err.detail)


def _split(index: list[int], cases: list[Call]) -> list[list[int]]:
    """Parts of a failed batch: one per overload when it holds several, else two halves."""
    by_op: dict[str, list[int]] = {}
    for i in index:
        by_op.setdefault(cases[i].op, []).append(i)
    if len(by_op) > 1:
        return list(by_op.values())
    half = len(index) // 2
    return [index[:half], index[half:]]


def _judge(stage: str, case: Call, expected: Sequence[torch.Tensor], got: Sequence[Any]) -> tuple[str, str]:
    problem = case.mismatch(expected, got)
    if problem is None:
        return PASS, ""
    deviation = documented(case, stage, problem, expected, got)
    if deviation is not None:
        return DEVIATION, f"{deviation.id}: {problem}"
    return WRONG, problem


# --- the stages ------------------------------------------------------------------------------------------


class _Batch:
    """Cases as one `BatchModule`. The interpreter runs its program exported and imported once; each runtime
    compiles the module with `forge.compile` itself, the path users run (its frontend: the float32 compute
    of half models, the normalization steps, block reuse), so a bug there cannot hide from the fuzzer."""

    def __init__(self, cases: list[Call], expected: list[Sequence[torch.Tensor]]):
        self.module = BatchModule(cases)
        self.module.counts = [len(e) for e in expected]
        self.inputs = self.module.inputs()
        self.imported: Any = None
        self.failed: StageError | None = None
        self.unverified: StageError | None = None

    def run(self, stage: str) -> list[list[Any]]:
        """Each case's results at `stage` (a StageError when the stage fails for the batch)."""
        imported = self._import(stage)
        if stage == "interpret":
            if self.unverified is not None:  # the interpreter needs verified IR; a compile goes on as before
                raise self.unverified
            outputs = _interpret(imported, self.inputs)
        else:
            outputs = _compiled(self.module, self.inputs, stage)
        return self.module.split(list(outputs))

    def _import(self, stage: str) -> Any:
        if self.failed is not None:  # the export or the import failed at an earlier stage: the same here
            raise StageError(stage, self.failed.status, self.failed.detail)
        if self.imported is None:
            try:
                self.imported = _export_import(self.module, self.inputs, stage)
            except StageError as err:
                self.failed = err
                raise
            try:
                self.imported.module.verify()
            except Exception as err:
                self.unverified = StageError("interpret", ERROR, f"verify after import: {_one_line(err)}")
        return self.imported


def _export_import(module: BatchModule, inputs: tuple[torch.Tensor, ...], stage: str) -> Any:
    from forge.frontend.fx_importer import import_program

    try:
        with _quiet(), torch.no_grad():
            program = torch.export.export(module, tuple(t.clone() for t in inputs))
    except Exception as err:  # torch.export's own assorted refusals
        raise StageError(stage, NOT_EXPORTABLE, f"export: {_one_line(err)}") from None
    try:
        with _quiet():
            imported = import_program(program)
    except Exception as err:
        raise _classified(stage, "import", err) from None
    return imported


def _interpret(imported: Any, inputs: tuple[torch.Tensor, ...]) -> tuple[Any, ...]:
    from forge.interpreter import interpret

    try:
        torch.manual_seed(0)
        return interpret(imported.module, imported.weights, *inputs)
    except Exception as err:
        raise StageError("interpret", ERROR, f"interpreter: {_one_line(err)}") from None


def _compiled(module: BatchModule, inputs: tuple[torch.Tensor, ...], runtime: str) -> list[Any]:
    import forge

    try:
        with _quiet():
            compiled = forge.compile(module, tuple(t.clone() for t in inputs), runtime=runtime)
    except Exception as err:
        raise _classified(runtime, "compile", err) from None
    try:
        torch.manual_seed(0)
        out = compiled(*inputs)
    except Exception as err:
        raise StageError(runtime, ERROR, f"run: {_one_line(err)}") from None
    return list(out) if isinstance(out, (tuple, list)) else [out]


REFUSALS = (CompileError, FrontendError, UnsupportedTypeError)
"""Forge's user-facing errors: a refusal that names its reason, not a crash."""


def _classified(stage: str, step: str, err: BaseException) -> StageError:
    status = REFUSED if isinstance(err, REFUSALS) else ERROR
    kind = "" if status == REFUSED else f"{type(err).__name__}: "
    return StageError(stage, status, f"{step}: {kind}{_one_line(err)}")


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_DIRECTORIES = re.compile(r"/[^\s:()]*/(?=[^/\s:()]+\.py:\d+)")


def _one_line(err: BaseException, limit: int = 300) -> str:
    """The error on one line, clipped, without what differs between machines: object addresses and
    the directories of source locations (a clone at a longer path must not clip another text)."""
    text = " ".join(str(err).split())
    text = _DIRECTORIES.sub("", _ADDRESS.sub("0x?", text)) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _quiet(warnings.catch_warnings):
    """torch's and Forge's warnings while a generated case runs (they concern the case, not the run)."""

    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("ignore")
        return out
