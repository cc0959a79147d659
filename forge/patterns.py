"""Rewrite patterns that report what they did: one mechanism for fire counts and match failures.

Write a pattern as usual (`match_and_rewrite` with `@op_type_rewrite_pattern`), but derive from
`ForgePattern`. Every successful rewrite is counted per pattern class into the statistics of the
running pass (`collect_pattern_stats`), and `return self.fail(op, "why")` records why a candidate
op did not match, which `forge-opt --explain-pattern NAME` prints. Nothing is formatted unless
someone asked for it, so reporting costs a counter increment per rewrite.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern


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


def current_pattern_stats() -> PatternStats | None:
    return _CURRENT.get()


def describe_op(op: Operation) -> str:
    """`aten.mul.Tensor %mul_3 at model.py:42` — how diagnostics name an op."""
    from forge.diagnostics import location_of

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
            from forge.diagnostics import with_op

            with_op(e, op)
            raise

    wrapper._forge_counted = True  # type: ignore[attr-defined]
    return wrapper


class ForgePattern(RewritePattern):
    """Base of Forge's patterns: rewrites are counted, failures can be explained."""

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
