"""One OpInfo entry through every stage: every one of its samples (float32, CPU), all of them as one
batch module, exported, imported, interpreted and compiled for each runtime, each sample's outputs
compared with eager on their own (package docstring).

The batch is the fuzzer's (forge.testing.fuzz.run): a sample is a `SampleCase`, a
forge.testing.fuzz.cases.Call whose `call` is the OpInfo's op on the sample, its tensors replaced by
the batch module's inputs and every other argument -- Python numbers, shapes, dtypes -- baked into
the call as it is (a number stays a number: `div(t, 2.5)` is not `div(t, tensor(2.5))`). A stage that
fails for the batch as a whole splits it until the failing samples stand alone.

`run_op(info)` never raises: whatever happens is an `OpResult`, with one `SampleResult` per sample
that did not pass.
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
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import torch
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from forge.frontend.decompose import TREESPEC_DEPRECATION
from forge.testing.fuzz import run as batch
from forge.testing.fuzz.cases import flat_results, special_values
from forge.testing.fuzz.compare import differs

PASS, WRONG, DEVIATION, REFUSED, ERROR = batch.PASS, batch.WRONG, batch.DEVIATION, batch.REFUSED, batch.ERROR
NOT_EXPORTABLE, RANDOM, SKIPPED = batch.NOT_EXPORTABLE, "random", "skipped"
STATUSES = (WRONG, ERROR, REFUSED, DEVIATION, PASS, NOT_EXPORTABLE, RANDOM, SKIPPED)
"""A sample's classes, worst first; an entry's status is the first of these any of its samples has."""
JUDGED = (WRONG, ERROR, REFUSED, DEVIATION, PASS)
"""The classes inside the pass rate (the others have nothing a compiler could match)."""
RUNTIMES = batch.RUNTIMES
DEFAULT_ATOL = DEFAULT_RTOL = 1e-5
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int64": torch.int64, "int32": torch.int32, "bool": torch.bool}  # fmt: skip
DEFAULT_TOLERANCE: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (DEFAULT_ATOL, DEFAULT_RTOL),
    torch.float16: (1e-5, 1e-3),  # torch.testing.assert_close's defaults
    torch.bfloat16: (1e-5, 1.6e-2),
}

DEBUG = False
"""Print the traceback of unexpected errors (`python -m forge.coverage --in-process --debug`)."""


@dataclass
class SampleResult:
    """What happened to one sample that did not pass."""

    index: int
    """The sample's position in the entry's sample list (dtype's, seed SAMPLE_SEED)."""
    status: str
    stage: str
    """`sample` (eager), `interpret`, `openvino`, `nnfactory` (the first stage with `status`)."""
    reason: str


@dataclass
class OpResult:
    """What happened to one OpInfo entry: its samples' counts by class and the samples that did not pass."""

    op: str
    """The OpInfo name, `name.variant` when the entry has a variant_test_name."""
    status: str
    """The worst class among its samples (`STATUSES`); `skipped` when it has none."""
    stage: str = ""
    reason: str = ""
    """The first sample of the worst class: its stage and reason."""
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    """class -> samples."""
    samples: list[SampleResult] = field(default_factory=list)
    """Every sample that did not pass, in index order."""

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def line(self) -> str:
        counts = ", ".join(f"{s} {self.counts[s]}" for s in STATUSES if self.counts.get(s))
        return f"{self.op}\t{self.status}\t{counts}\t{self.stage}\t{self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "samples": [s.__dict__ for s in self.samples]}

    @staticmethod
    def from_json(d: dict[str, Any]) -> OpResult:
        return OpResult(**{**d, "samples": [SampleResult(**s) for s in d.get("samples", ())]})


def entry_result(op: str, samples: Sequence[SampleResult], passed: int, seconds: float = 0.0) -> OpResult:
    """The entry's result from its non-passing samples and the number that passed."""
    counts = Counter(s.status for s in samples)
    if passed:
        counts[PASS] = passed
    status = next((s for s in STATUSES if counts.get(s)), SKIPPED)
    first = next((s for s in samples if s.status == status), None)
    stage, reason = (first.stage, first.reason) if first else ("", "" if counts else "no sample")
    ordered = {s: counts[s] for s in STATUSES if counts.get(s)}
    return OpResult(op, status, stage, reason, round(seconds, 3), ordered, sorted(samples, key=lambda s: s.index))


# --- the OpInfo database --------------------------------------------------------------------------


def op_database() -> list[Any]:
    """PyTorch's OpInfo entries that support float32 on the CPU, in op_db order."""
    with quiet_torch():
        from torch.testing._internal.common_methods_invocations import op_db  # ~4 s: the harness only

    return [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]


def op_id(info: Any) -> str:
    return f"{info.name}.{info.variant_test_name}" if info.variant_test_name else info.name


def tolerance(info: Any, dtype: torch.dtype = torch.float32) -> tuple[float, float]:
    """(atol, rtol) of `dtype`: DEFAULT_TOLERANCE, or the OpInfo's own CPU override where it is looser."""
    from torch.testing._internal.common_device_type import toleranceOverride  # the harness only

    atol, rtol = DEFAULT_TOLERANCE.get(dtype, (DEFAULT_ATOL, DEFAULT_RTOL))
    for decorate in getattr(info, "decorators", ()) or ():
        if getattr(decorate, "device_type", None) not in (None, "cpu"):
            continue
        for dec in getattr(decorate, "decorators", ()) or ():
            if isinstance(dec, toleranceOverride) and dtype in dec.d:
                tol = dec.d[dtype]
                atol, rtol = max(atol, tol.atol), max(rtol, tol.rtol)
    return atol, rtol


SAMPLE_SEED = 0
SUITE_SAMPLES = 4
"""The suite (tests/coverage/test_opinfo.py) and its expectations run each entry's first 4 samples;
the page, every sample."""


def samples(info: Any, dtype: torch.dtype = torch.float32, limit: int | None = None) -> list[Any]:
    """The entry's CPU samples of `dtype` (its first `limit`), made from a fixed seed.
    `sample_inputs_func` is called directly: `info.sample_inputs` wraps it in an iterator that
    inspects the call stack (~0.2 s)."""
    torch.manual_seed(SAMPLE_SEED)
    with quiet_torch():
        it = iter(info.sample_inputs_func(info, "cpu", dtype, False))
        try:
            return list(itertools.islice(it, limit))
        finally:
            close = getattr(it, "close", None)
            if close is not None:  # now, not when collected (inside a later export's tracer)
                close()


# --- one sample as a case of a batch --------------------------------------------------------------


class SampleCase:
    """One OpInfo sample as a batch case (forge.testing.fuzz.cases.Call): `call(tensors)` is
    `info.op(input, *args, **kwargs)` with the sample's tensors replaced by `tensors`, every other
    argument baked in as it is."""

    def __init__(self, info: Any, sample: Any, index: int, dtype: torch.dtype = torch.float32):
        self.fn: Callable[..., Any] = info.op
        self.op = op_id(info)
        self.packet = f"aten::{info.aten_name}"
        self.index = index
        self.tolerances = {d: tolerance(info, d) for d in DEFAULT_TOLERANCE}
        self.leaves, self.spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))

    def tensors(self) -> list[torch.Tensor]:
        return [x for x in self.leaves if isinstance(x, torch.Tensor)]

    def raw(self, tensors: Sequence[torch.Tensor] | None = None) -> Any:
        """The op's result as it is (not flattened)."""
        given = iter(tensors if tensors is not None else [t.clone() for t in self.tensors()])
        leaves = [next(given) if isinstance(x, torch.Tensor) else x for x in self.leaves]
        inp, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(inp, *args, **kwargs)

    def call(self, tensors: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]:
        return flat_results(self.raw(tensors))

    def mismatch(self, expected: Sequence[torch.Tensor], got: Sequence[Any]) -> str | None:
        return differs(expected, got, lambda dtype: self.tolerances.get(dtype, (DEFAULT_ATOL, DEFAULT_RTOL)))

    def special_values(self) -> frozenset[str]:
        return special_values(self.leaves)

    def describe(self) -> str:
        return f"{self.op}#{self.index}"


# --- what eager alone tells: nothing to compare ---------------------------------------------------

_EMPTY = ("empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided", "empty_permuted")


class _Recorder(TorchDispatchMode):
    """The seeded random ops an eager call runs, and the storages of its `empty`-family results."""

    def __init__(self):
        super().__init__()
        self.seeded: set[str] = set()
        self.empty: dict[int, str] = {}
        self._alive: list[torch.Tensor] = []
        """The `empty` results held until the recorder goes: a freed one's memory could be reused by an
        output, whose storage would then look uninitialized (it made a sample `skipped` or not from run
        to run)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if torch.Tag.nondeterministic_seeded in func.tags:
            self.seeded.add(func._schema.name)
        if func._schema.name.split("::")[-1] in _EMPTY:
            for t in pytree.tree_leaves(out):
                if isinstance(t, torch.Tensor) and t.numel():
                    self.empty[t.untyped_storage().data_ptr()] = func._schema.name
                    self._alive.append(t)
        return out


def prejudge(case: SampleCase) -> SampleResult | None:
    """A sample eager alone rules out (skipped: no dense tensor output, an uninitialized output,
    eager fails; random: its values change with the seed), or None."""

    def skipped(why: str) -> SampleResult:
        return SampleResult(case.index, SKIPPED, "sample", why)

    recorder = _Recorder()
    try:
        torch.manual_seed(0)
        with torch.no_grad(), quiet_torch(), recorder:
            out = case.raw()
    except Exception as err:
        return skipped(f"eager fails: {type(err).__name__}: {batch._one_line(err, 200)}")
    leaves = pytree.tree_leaves(out)
    if not leaves or not all(isinstance(x, torch.Tensor) and x.layout == torch.strided for x in leaves):
        kinds = sorted({type(x).__name__ if not isinstance(x, torch.Tensor) else str(x.layout) for x in leaves})
        return skipped(f"the output is not dense tensors: {', '.join(kinds) or 'nothing'}")
    empty = {recorder.empty[p] for x in leaves if x.numel() and (p := x.untyped_storage().data_ptr()) in recorder.empty}
    if empty:
        return skipped(f"uninitialized output ({', '.join(sorted(empty))}): not comparable")
    if recorder.seeded and _changes_with_seed(case):
        return SampleResult(
            case.index,
            RANDOM,
            "sample",
            f"random op {', '.join(sorted(recorder.seeded))}: values not comparable with eager",
        )
    return None


def _changes_with_seed(case: SampleCase) -> bool:
    """Whether the results change with the seed, with the op's own re-seeding (OpInfo wraps random ops
    in `wrapper_set_seed`, which an exported graph cannot replay) turned off."""
    runs = []
    with mock.patch.object(torch, "manual_seed", lambda seed: None):
        for seed in range(5):  # a few draws can coincide for two seeds (multinomial of 3)
            torch.random.default_generator.manual_seed(seed)
            with torch.no_grad(), quiet_torch():
                runs.append(case.call())
    return any(differs(runs[0], other, lambda d: (0.0, 0.0)) is not None for other in runs[1:])


# --- the stages -----------------------------------------------------------------------------------


def run_op(
    info: Any,
    on_stage: Callable[[str], None] | None = None,
    *,
    dtype: torch.dtype = torch.float32,
    limit: int | None = None,
    runtimes: Sequence[str] = RUNTIMES,
    on_samples: Callable[[int], None] | None = None,
) -> OpResult:
    """Run every sample of one OpInfo entry (its first `limit`) through every stage, as one batch.
    `on_stage(stage)` is called as each stage starts and `on_samples(n)` once the samples are made
    (the isolated runner blames a crash on them)."""
    start = time.perf_counter()
    name = op_id(info) + ("" if dtype == torch.float32 else f"@{str(dtype).removeprefix('torch.')}")
    try:
        if on_stage is not None:
            on_stage("sample")
        made = samples(info, dtype, limit)
    except Exception as err:  # the sample function itself fails: nothing to run
        if DEBUG:
            traceback.print_exc()
        return entry_result(
            name,
            [SampleResult(0, SKIPPED, "sample", f"no samples: {batch._one_line(err, 200)}")],
            0,
            time.perf_counter() - start,
        )
    if on_samples is not None:
        on_samples(len(made))
    cases = [SampleCase(info, s, i, dtype) for i, s in enumerate(made)]
    out: list[SampleResult] = []
    todo = []
    for case in cases:
        ruled_out = prejudge(case)
        if ruled_out is None:
            todo.append(case)
        else:
            out.append(ruled_out)
    with quiet_torch():
        outcomes = batch.run_cases(todo, runtimes=runtimes, on_stage=on_stage)
    passed = 0
    for case, outcome in zip(todo, outcomes, strict=True):
        status = outcome.status
        if status == PASS:
            passed += 1
            continue
        stage, (_, reason) = next((k, v) for k, v in outcome.stages.items() if v[0] == status)
        if status == batch.UNSTABLE:
            status, stage, reason = SKIPPED, "sample", "eager itself differs from run to run: not comparable"
        out.append(SampleResult(case.index, status, stage, stable(reason)))
    return entry_result(name, out, passed, time.perf_counter() - start)


_LOCATION = re.compile(r"[^\s:()]*\.py:\d+")


def stable(reason: str, limit: int = 200) -> str:
    """A reason as the same text from run to run and tree to tree: no source locations, clipped."""
    text = _LOCATION.sub("<file>", reason)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    """Counts of samples and of entries by class; the pass rates are passed / judged (`JUDGED`)."""
    by_sample: Counter[str] = Counter()
    for r in results:
        by_sample.update(r.counts)
    by_entry = Counter(r.status for r in results)

    def rate(c: Counter[str]) -> float:
        judged = sum(c[s] for s in JUDGED)
        return round(c[PASS] / judged, 4) if judged else 0.0

    return {
        "entries": len(results),
        "samples": sum(by_sample.values()),
        "sample_counts": {s: by_sample[s] for s in STATUSES},
        "entry_counts": {s: by_entry[s] for s in STATUSES},
        "judged_samples": sum(by_sample[s] for s in JUDGED),
        "judged_entries": sum(by_entry[s] for s in JUDGED),
        "sample_pass_rate": rate(by_sample),
        "entry_pass_rate": rate(by_entry),
        "wrong_values": by_sample[WRONG],
    }
