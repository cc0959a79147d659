"""Running passes, with one instrumentation hook for every pass run.

`PipelineRunner` (or `run_pipeline`) runs `ModulePass` instances on a module and records a
`PassRecord` per pass: wall time, op counts before and after, how often each `ForgePattern`
fired (through `forge.patterns`, the one mechanism for pattern statistics) and whether the IR
changed. `forge-opt` and the model compiler both run their pipelines through it; their
reporting (`--timing`, `--print-ir-after-change`, ...) is a `PipelineObserver`.

What it costs per pass when nothing is being debugged: one walk that counts the ops (about
0.4 µs per op) and the pattern counters. Knowing for sure whether a pass changed the IR
(`changes="fingerprint"`, about 3 µs per op, or `changes="text"`, a print per pass),
verification after each pass (`verify_each`) and a copy of the module before each pass
(`snapshot_before`, for crash reproducers) are opt-in.

If a pass raises (or, with `verify_each`, leaves IR that does not verify), the runner raises
`PassFailure`, which names the pass and carries the IR as it was before the pass when
`snapshot_before` is set.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import MISSING, Field, dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from forge.analysis.dominance import verify_module
from forge.patterns import PatternStats, collect_pattern_stats
from forge.weights import WeightStore, attach_weights


@dataclass
class PassRecord:
    """What one pass run did."""

    name: str
    """The pass as written in the pipeline, e.g. `canonicalize` or `fold{max-size=64}`."""
    index: int
    """Position in the pipeline, from 0."""
    wall_ms: float
    ops_before: int
    ops_after: int
    changed: bool | None
    """Whether the pass changed the IR; None when unknown. How it is decided depends on the
    runner's `changes` mode: "cheap" says True when the op count changed or a pattern fired
    and None otherwise; "fingerprint" compares op identities, operands, attributes and result
    types (a pass that rebuilds identical ops counts as a change); "text" compares the
    printed IR."""
    fired: Counter[str] = field(default_factory=Counter[str])
    """Rewrites per `ForgePattern` class name."""
    events: list[str] = field(default_factory=list[str])
    """`--debug-patterns` / `--explain-pattern` lines recorded during the pass."""
    verified: bool = False
    """Whether the IR was verified after this pass."""
    explain_attempts: int = 0
    """How many ops the explained pattern (`explain_pattern`) was tried on in this pass."""

    @property
    def pass_name(self) -> str:
        """The registered name, without options."""
        return self.name.split("{", 1)[0]

    def top_patterns(self, n: int = 3) -> list[tuple[str, int]]:
        return self.fired.most_common(n)


@dataclass(eq=False, repr=False, kw_only=True)
class PassFailure(Exception):
    """A pass raised, or left IR that does not verify (`kind` is "raised" or "verify"; forge-opt
    adds "semantics" for --verify-semantics)."""

    name: str
    index: int
    pass_: ModulePass
    error: BaseException
    kind: str
    before: ModuleOp | None
    """A copy of the module as it was before the failing pass (with `snapshot_before`)."""
    records: list[PassRecord]
    """Records of the passes that completed before this one."""
    remaining: Sequence[str]
    """The failing pass and the passes after it, as written in the pipeline."""
    events: list[str]
    """Pattern events recorded in the failing pass before it failed."""

    def __post_init__(self) -> None:
        super().__init__(f"pass '{self.name}' failed: {self.error}")
        self.remaining = list(self.remaining)


class PipelineObserver:
    """Hooks around each pass; override what you need (all default to doing nothing)."""

    def before_pass(self, index: int, name: str, module: ModuleOp) -> None:
        """Called before pass `index` (spelled `name`) runs."""

    def after_pass(self, record: PassRecord, module: ModuleOp) -> None:
        """Called after a pass ran (and, with `verify_each`, verified)."""


def count_ops(root: Operation) -> int:
    """Number of ops under `root`, including `root`. An explicit stack, not `root.walk()`: the runner
    counts before and after every pass (14 counts per compile) and xDSL's walk nests three generators
    per op (2x slower on GPT-2's module)."""
    count = 0
    stack = [root]
    while stack:
        op = stack.pop()
        count += 1
        for region in op.regions:
            for block in region.blocks:
                stack.extend(block.ops)
    return count


def _fingerprint(root: Operation) -> list[tuple[Any, ...]]:
    """The structure of `root`, cheap to build and compare (identities, not text).

    Holding the ops and attributes keeps them alive, so identities cannot be reused by
    new objects between two fingerprints.
    """
    return [
        (
            op,
            op.parent,
            *op.operands,
            *op.properties.values(),
            *op.attributes.values(),
            *(r.type for r in op.results),
            len(op.operands),
            len(op.properties),
            len(op.attributes),
        )
        for op in root.walk()
    ]


def _print(module: ModuleOp) -> str:
    return str(module)


CHANGE_MODES = ("cheap", "fingerprint", "text")


class PipelineRunner:
    """Runs passes on a module; `records` holds a `PassRecord` for each pass that ran.

    Args:
        ctx: the context passes run in.
        passes: pass instances, in order.
        names: how each pass is written (defaults to `str(p.spec())`).
        verify_each: verify the module after every pass.
        snapshot_before: copy the module before each pass so that a `PassFailure` can
            carry the IR the failing pass received (for crash reproducers).
        changes: how `PassRecord.changed` is decided: "cheap" (op count and pattern fires;
            None when they show no change), "fingerprint" (structural, ~3 µs/op) or "text"
            (the printed IR; for debugging flags such as --print-ir-after-change).
        debug_patterns: record every pattern rewrite as an event.
        explain_pattern: record the match failures (`ForgePattern.fail`) of this pattern.
        observers: `PipelineObserver`s called around each pass.
    """

    def __init__(
        self,
        ctx: Context,
        passes: Sequence[ModulePass],
        *,
        names: Sequence[str] | None = None,
        verify_each: bool = False,
        snapshot_before: bool = False,
        changes: str = "cheap",
        debug_patterns: bool = False,
        explain_pattern: str | None = None,
        observers: Sequence[PipelineObserver] = (),
    ):
        if changes not in CHANGE_MODES:
            raise ValueError(f"changes must be one of {CHANGE_MODES}, not {changes!r}")
        self.ctx = ctx
        self.passes = tuple(passes)
        self.names = (
            tuple(names) if names is not None else tuple(str(p.spec()) for p in passes)
        )
        if len(self.names) != len(self.passes):
            raise ValueError("one name per pass expected")
        self.verify_each = verify_each
        self.snapshot_before = snapshot_before
        self.changes = changes
        self.debug_patterns = debug_patterns
        self.explain_pattern = explain_pattern
        self.observers = tuple(observers)
        self.records: list[PassRecord] = []

    @property
    def total_ms(self) -> float:
        return sum(r.wall_ms for r in self.records)

    def run(self, module: ModuleOp, weights: WeightStore | None = None) -> list[PassRecord]:
        """Run every pass on `module` (in place); returns the records of this run. `weights`: the store the
        passes read (`weights_of(module)`), when the module does not carry one from its import already."""
        if weights is not None:
            attach_weights(module, weights)
        self.records = []
        mode = self.changes
        fingerprint = _fingerprint(module) if mode == "fingerprint" else None
        ops = len(fingerprint) if fingerprint is not None else count_ops(module)
        text = _print(module) if mode == "text" else None
        for index, (p, name) in enumerate(zip(self.passes, self.names, strict=True)):
            for observer in self.observers:
                observer.before_pass(index, name, module)
            before = module.clone() if self.snapshot_before else None
            stats = PatternStats(debug=self.debug_patterns, explain=self.explain_pattern)
            start = time.perf_counter()
            try:
                with collect_pattern_stats(stats):
                    p.apply(self.ctx, module)
            except Exception as e:
                raise self._failure(index, p, e, "raised", before, stats) from e
            wall_ms = (time.perf_counter() - start) * 1e3

            changed: bool | None
            if mode == "fingerprint":
                new_fingerprint = _fingerprint(module)
                ops_after = len(new_fingerprint)
                changed = new_fingerprint != fingerprint
                fingerprint = new_fingerprint
            else:
                ops_after = count_ops(module)
                if mode == "text":
                    new_text = _print(module)
                    changed = new_text != text
                    text = new_text
                else:
                    changed = True if ops_after != ops or stats.fired else None
            record = PassRecord(
                name=name,
                index=index,
                wall_ms=wall_ms,
                ops_before=ops,
                ops_after=ops_after,
                changed=changed,
                fired=stats.fired,
                events=stats.events,
                explain_attempts=stats.explain_attempts,
            )
            ops = ops_after
            if self.verify_each:
                try:
                    verify_module(module)
                except Exception as e:
                    raise self._failure(index, p, e, "verify", before, stats) from e
                record.verified = True
            self.records.append(record)
            for observer in self.observers:
                observer.after_pass(record, module)
        return self.records

    def _failure(
        self,
        index: int,
        p: ModulePass,
        error: BaseException,
        kind: str,
        before: ModuleOp | None,
        stats: PatternStats,
    ) -> PassFailure:
        return PassFailure(
            name=self.names[index],
            index=index,
            pass_=p,
            error=error,
            kind=kind,
            before=before,
            records=list(self.records),
            remaining=self.names[index:],
            events=stats.events,
        )


def run_pipeline(module: ModuleOp, ctx: Context, passes: Sequence[ModulePass], **options: Any) -> list[PassRecord]:
    """Run `passes` on `module` in place and return one `PassRecord` per pass.

    `options` are `PipelineRunner`'s keyword arguments (`names`, `verify_each`, `changes`, ...).
    Raises `PassFailure` naming the pass if one raises (or, with `verify_each`, breaks the IR).
    """
    return PipelineRunner(ctx, passes, **options).run(module)


def format_timing(
    records: Sequence[PassRecord],
    extra: Sequence[tuple[str, float]] = (),
    *,
    after: Sequence[tuple[str, float]] = (),
    top: int = 3,
) -> str:
    """A timing table like mlir-opt's `-mlir-timing` report.

    `extra` adds non-pass phases (e.g. `("parse", ms)`), listed before the passes except for
    names starting with "output"/"verify", which follow them; `after` rows follow the passes.
    """
    before = [(n, ms) for n, ms in extra if not n.startswith(("output", "verify"))]
    after = [*(row for row in extra if row[0].startswith(("output", "verify"))), *after]
    total = sum(ms for _, ms in before) + sum(ms for _, ms in after) + sum(r.wall_ms for r in records)
    rule = "===" + "-" * 73 + "==="
    lines = [
        rule,
        "Forge pass timing report".center(len(rule)).rstrip(),
        rule,
        f"  Total Execution Time: {total:.3f} ms",
        "",
        f"  {'Wall ms':>10} {'%':>7}  {'Ops before -> after':>20}  Name  [patterns fired]",
    ]

    def pct(ms: float) -> str:
        return f"{(100.0 * ms / total) if total > 0 else 0.0:6.1f}%"

    def row(ms: float, ops: str, name: str) -> str:
        return f"  {ms:10.3f} {pct(ms)}  {ops:>20}  {name}".rstrip()

    for name, ms in before:
        lines.append(row(ms, "", f"({name})"))
    for r in records:
        patterns = ", ".join(f"{p}: {n}" for p, n in r.top_patterns(top))
        more = len(r.fired) - min(top, len(r.fired))
        if more > 0:
            patterns += f", +{more} more"
        ops = f"{r.ops_before} -> {r.ops_after}"
        name = r.name + (f"  [{patterns}]" if patterns else "")
        lines.append(row(r.wall_ms, ops, name))
    for name, ms in after:
        lines.append(row(ms, "", f"({name})"))
    lines.append(row(total, "", "Total"))
    return "\n".join(lines)


def option_default_text(f: Field) -> str:
    """A pass option's default as `-p name{option=...}` spells it ("required" when it has none);
    what `forge-opt --help` and the IR reference both print."""
    if f.default is not MISSING:
        value = f.default
    elif f.default_factory is not MISSING:
        value = f.default_factory()
    else:
        return "required"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f'"{value}"' if isinstance(value, str) else repr(value)
