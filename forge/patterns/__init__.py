"""Rewrite patterns that report what they did, and the one driver that applies them.

Write a pattern as usual (`match_and_rewrite` with `@op_type_rewrite_pattern`), but derive from
`ForgePattern`. The op classes it can match are those of the annotation (`op: aten.MulTensorOp`, or
a union), or the `ROOTS` it names (for a method without the annotation). Every successful rewrite is counted
per pattern class into the statistics of the running pass (`collect_pattern_stats`), and
`return self.fail(op, "why")` records why a candidate op did not match, which
`forge-opt --explain-pattern NAME` prints. Nothing is formatted unless someone asked for it, so
reporting costs a counter increment per rewrite.

Every pass drives its patterns the same way: a `PatternTable` offers an op only to the patterns
rooted on its class (`pattern_roots`), in the order given, until one rewrites; `apply_patterns` does that
in one sweep (`sweep`) over every op nested in a module, forward or in reverse (users first). A
pass that is not made of patterns (dce's deadness, cse) visits the ops with the same `sweep`.
"""

from __future__ import annotations

import functools
import inspect
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import UnionType
from typing import ClassVar, Union, get_args, get_origin

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from forge.diagnostics import location_of, with_op


@dataclass
class PatternStats:
    """What the patterns of one pass run did."""

    fired: Counter[str] = field(default_factory=Counter)
    debug: bool = False
    """Record every rewrite (`--debug-patterns`)."""
    explain: str | None = None
    """Record match failures of the pattern with this class name (`--explain-pattern`)."""
    events: list[str] = field(default_factory=list)
    """Human-readable lines: fired rewrites (debug), and rewrites and failure reasons of the
    explained pattern (explain)."""
    explain_attempts: int = 0
    """How many ops the explained pattern was tried on (tells "never ran" from "never matched")."""


_CURRENT: ContextVar[PatternStats | None] = ContextVar("forge_pattern_stats", default=None)


@contextmanager
def collect_pattern_stats(stats: PatternStats | None = None) -> Iterator[PatternStats]:
    """Collect the fire counts (and, if asked, events) of the patterns run inside the block."""
    stats = stats if stats is not None else PatternStats()
    token = _CURRENT.set(stats)
    try:
        yield stats
    finally:
        _CURRENT.reset(token)


def count_fired(name: str, n: int = 1) -> None:
    """Add `n` to the `fired` counter `name` of the running pass (no-op when nobody collects).

    For what a pass does outside patterns (dead ops erased, duplicates merged, constants folded).
    """
    if n and (stats := _CURRENT.get()) is not None:
        stats.fired[name] += n


def describe_op(op: Operation) -> str:
    """`aten.mul.Tensor %mul_3 at model.py:42` — how diagnostics name an op."""
    result = f" %{op.results[0].name_hint}" if op.results and op.results[0].name_hint else ""
    location = getattr(op, "location", None)
    if (loc := location_of(location)) is not None:
        where = f" at {loc}"
    elif location is not None and "unknown" not in str(location):
        where = f" at {location}"
    else:
        where = ""
    return f"{op.name}{result}{where}"


def _counted(match_and_rewrite):
    if getattr(match_and_rewrite, "_forge_counted", False):  # e.g. dataclass(slots=True) copies
        return match_and_rewrite

    @functools.wraps(match_and_rewrite)
    def wrapper(self: ForgePattern, op: Operation, rewriter: PatternRewriter) -> None:
        try:
            stats = _CURRENT.get()
            if stats is None:
                return match_and_rewrite(self, op, rewriter)
            name = type(self).__name__
            explained = stats.explain == name
            before = rewriter.has_done_action
            description = describe_op(op) if stats.debug or explained else ""
            match_and_rewrite(self, op, rewriter)
            if explained:
                stats.explain_attempts += 1
            if rewriter.has_done_action and not before:
                stats.fired[name] += 1
                if stats.debug or explained:
                    stats.events.append(f"{name} fired on {description}")
        except Exception as e:
            # forge-opt reports the error at the op the pattern was looking at.
            with_op(e, op)
            raise

    wrapper._forge_counted = True
    return wrapper


class ForgePattern(RewritePattern):
    """Base of Forge's patterns: rewrites are counted, failures can be explained."""

    ROOTS: ClassVar[tuple[type[Operation], ...]] = ()
    """The op classes the pattern can match, when its `match_and_rewrite` does not say so with
    `@op_type_rewrite_pattern` (`pattern_roots`): `PatternTable` offers it only ops of these classes."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "match_and_rewrite" in cls.__dict__:
            cls.match_and_rewrite = _counted(cls.__dict__["match_and_rewrite"])

    def fail(self, op: Operation, reason: str, *args: object) -> None:
        """Record why `op` did not match (only when this pattern is being explained); returns None.

        `reason % args` is only formatted when someone asked, so pass values as `args`:
        `return self.fail(op, "rank %d, expected 4", rank)`.
        """
        stats = _CURRENT.get()
        if stats is not None and stats.explain == type(self).__name__:
            text = reason % args if args else reason
            stats.events.append(f"{type(self).__name__} did not match {describe_op(op)}: {text}")


# --- roots ---------------------------------------------------------------------------------------------


class PatternDefinitionError(DiagnosticException, TypeError):
    """A pattern the driver cannot run (no op class to offer it): the pattern author's mistake, which
    forge-opt reports as a diagnostic."""


def pattern_roots(pattern: RewritePattern) -> tuple[type[Operation], ...]:
    """The op classes `pattern` matches: its `ROOTS`, else the op type (or union) its
    `match_and_rewrite` is annotated with under `@op_type_rewrite_pattern`."""
    roots = tuple(getattr(pattern, "ROOTS", ()))
    if roots:
        return roots
    roots = _annotated_roots(type(pattern))
    if not roots:
        name = type(pattern).__name__
        raise PatternDefinitionError(
            f"{name} names no ROOTS and its match_and_rewrite names no op class: annotate its op parameter "
            f"(`@op_type_rewrite_pattern` + `op: aten.MulTensorOp`, or a union) or set `ROOTS = (OpClass, ...)`")
    return roots


@functools.cache
def _annotated_roots(cls: type) -> tuple[type[Operation], ...]:
    """The op classes in the annotation of `cls.match_and_rewrite`'s op parameter (() if there is none,
    or it is `Operation` itself). Under `@op_type_rewrite_pattern` the method is xDSL's wrapper, whose
    closure holds the function it wraps."""
    method = cls.match_and_rewrite
    method = getattr(method, "__wrapped__", method)  # ForgePattern's counting wrapper
    candidates = [method]
    for cell in getattr(method, "__closure__", None) or ():
        content = cell.cell_contents
        if inspect.isfunction(content):
            candidates.insert(0, content)
    for function in candidates:
        try:
            params = list(inspect.signature(function, eval_str=True).parameters.values())
        except (NameError, TypeError, ValueError, AttributeError):
            continue
        if len(params) != 3:
            continue
        annotation = params[1].annotation
        types = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,)
        if types and all(isinstance(t, type) and issubclass(t, Operation) and t is not Operation for t in types):
            return types
    return ()


# --- the driver --------------------------------------------------------------------------------------


class PatternTable:
    """Patterns indexed by the op classes they match (`pattern_roots`), tried in the given order.

    `apply(op)` offers `op` to the patterns rooted on `type(op)` until one rewrites, and says whether
    one did: an op no pattern roots on costs one dict lookup (a greedy applier would call every
    pattern on every op). With `admit`, only the ops it accepts are offered. The patterns keep
    `@op_type_rewrite_pattern`, so they also run in xDSL's walkers.
    """

    def __init__(self, patterns: Iterable[RewritePattern], admit: Callable[[Operation], bool] | None = None):
        self.patterns = tuple(patterns)
        self.admit = admit
        self.by_root: dict[type[Operation], list[RewritePattern]] = {}
        for pattern in self.patterns:
            for root in pattern_roots(pattern):
                self.by_root.setdefault(root, []).append(pattern)
        self._rewriter: PatternRewriter | None = None

    def apply(self, op: Operation) -> bool:
        patterns = self.by_root.get(type(op))
        if not patterns or (self.admit is not None and not self.admit(op)):
            return False
        rewriter = self._rewriter_at(op)
        for pattern in patterns:
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return True
        return False

    def _rewriter_at(self, op: Operation) -> PatternRewriter:
        """One rewriter, reset on `op` as xDSL's walker resets its own (cheaper than one per op)."""
        rewriter = self._rewriter
        if rewriter is None:
            rewriter = self._rewriter = PatternRewriter(op)
            return rewriter
        rewriter.has_done_action = False
        rewriter.current_operation = op
        rewriter.insertion_point = InsertPoint.before(op)
        if rewriter.name_hint is not None:
            rewriter.name_hint = None
        return rewriter


def sweep(root: Operation, visit: Callable[[Operation], bool], *, reverse: bool = False,
          only: Collection[type[Operation]] | None = None) -> int:
    """Offer every op nested in `root` to `visit` once; returns how many visits returned true.

    Program order, or with `reverse` from the last op up, so that users come before the ops that
    define what they use; an op's regions come before the op. The ops are listed before the first
    visit: an op a visit creates is not visited, one it erases is skipped (one pass, as xDSL's
    walker with `apply_recursively=False`, without its per-op listener and worklist). With `only`,
    just the ops of those classes are listed.
    """
    done = 0
    for op in _nested_ops(root, reverse, only):
        if op.parent is not None and visit(op):
            done += 1
    return done


def apply_patterns(root: Operation, patterns: PatternTable | Iterable[RewritePattern], *,
                   reverse: bool = False) -> int:
    """One `sweep` offering each op nested in `root` to its patterns; returns how many rewrote."""
    table = patterns if isinstance(patterns, PatternTable) else PatternTable(patterns)
    return sweep(root, table.apply, reverse=reverse, only=table.by_root)


def _nested_ops(root: Operation, reverse: bool, only: Collection[type[Operation]] | None) -> list[Operation]:
    found: list[Operation] = []
    for region in reversed(root.regions) if reverse else root.regions:
        for block in reversed(region.blocks) if reverse else region.blocks:
            op = block.last_op if reverse else block.first_op
            while op is not None:
                if op.regions:
                    found += _nested_ops(op, reverse, only)
                if only is None or type(op) in only:
                    found.append(op)
                op = op.prev_op if reverse else op.next_op
    return found
