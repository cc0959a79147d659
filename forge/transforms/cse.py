"""Common subexpression elimination: merge side-effect-free ops that compute the same thing.

Two ops are the same computation when they have the same name, operands, properties, discardable
attributes and result types, have no regions, and are side-effect free (every `MemoryEffect`
trait of the class is `NoMemoryEffect`, e.g. `Pure`; `aten.dropout` and
`aten._assert_tensor_metadata` are not). The later op's results are replaced by the earlier op's.

One forward sweep (`forge.patterns.sweep`) with a dict keyed on that tuple. xDSL's own `cse`
re-hashes an `OperationInfo` on every lookup (most of its time); building the key once per op is
about 10x cheaper. Scoping: a block sees the ops of the blocks that enclose it (defined before its
parent op, so they dominate it); sibling blocks do not see each other; an `IsolatedFromAbove` op
(`func.func`) starts afresh. Properties are compared as a set of (name, value) pairs, so the order in which a
parser or builder inserted them does not matter.

The pass is xDSL's `cse` under the same name: the sweep also erases the ops it finds trivially dead
(xDSL's CSE does), and a module that is not plain dataflow (`forge.transforms.generic_ir`: graph
or multi-block regions, read-only ops) is handed to xDSL's CSE, so both always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import IsolatedFromAbove, IsTerminator, MemoryEffect, NoMemoryEffect
from xdsl.transforms.common_subexpression_elimination import cse as xdsl_cse
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from forge.patterns import count_fired, sweep
from forge.transforms.generic_ir import is_plain_dataflow

_MERGEABLE: dict[type[Operation], bool] = {}


def _mergeable_class(cls: type[Operation]) -> bool:
    """Whether ops of `cls` are CSE candidates: effect-free by their traits, not terminators."""
    cached = _MERGEABLE.get(cls)
    if cached is None:
        effects = cls.get_traits_of_type(MemoryEffect)
        cached = _MERGEABLE[cls] = (
            bool(effects)
            and all(isinstance(t, NoMemoryEffect) for t in effects)
            and not cls.has_trait(IsTerminator)
        )
    return cached


_BUCKET_LIMIT = 8
"""Ops sharing (name, operands) but not properties kept in a list before switching to full keys."""


def _same(a: Operation, b: Operation) -> bool:
    return (
        a.properties == b.properties
        and a.attributes == b.attributes
        and a.result_types == b.result_types
    )


def _full_key(op: Operation) -> tuple[Any, ...]:
    return (
        op.name,
        tuple(op.operands),
        frozenset(op.properties.items()),
        frozenset(op.attributes.items()),
        tuple(op.result_types),
    )


class _Scope:
    """The ops seen so far, found by (name, operands) first; properties are compared only on a hit.

    Hashing attributes is what makes CSE slow (they hash recursively, on every lookup). Most ops
    have a (name, operands) pair nobody else has, so the cheap key settles them; ops without
    operands (weights, constants, factories) and crowded buckets use the full key instead.
    """

    __slots__ = ("buckets", "full")

    def __init__(self, parent: _Scope | None = None):
        self.buckets: dict[tuple[Any, ...], list[Operation]] = (
            {k: list(v) for k, v in parent.buckets.items()} if parent else {}
        )
        self.full: dict[tuple[Any, ...], Operation] = dict(parent.full) if parent else {}

    def find_or_add(self, op: Operation) -> Operation | None:
        """The earlier op `op` duplicates, or None (then `op` is remembered)."""
        operands = op.operands
        if not operands:
            return self._find_or_add_by_full_key(op)
        key = (op.name, *operands)
        bucket = self.buckets.get(key)
        if bucket is None:
            self.buckets[key] = [op]
            return None
        for candidate in bucket:
            if _same(candidate, op):
                return candidate
        if len(bucket) < _BUCKET_LIMIT:
            bucket.append(op)
            return None
        return self._find_or_add_by_full_key(op)

    def _find_or_add_by_full_key(self, op: Operation) -> Operation | None:
        key = _full_key(op)
        existing = self.full.get(key)
        if existing is None:
            self.full[key] = op
        return existing


class _Scopes:
    """The `_Scope` of each block, made when the sweep first meets one of its ops.

    The sweep visits a nested block's ops right where its parent op stands (regions before their
    op), so the enclosing scope then holds exactly the ops defined before the parent op.
    """

    def __init__(self, root: Operation):
        self.root = root
        self.scopes: dict[Block, _Scope] = {}
        self._block: Block | None = None  # the block of the last merge candidate, and its scope
        self._scope: _Scope | None = None

    def of(self, block: Block) -> _Scope:
        scope = self.scopes.get(block)
        if scope is None:
            owner = block.parent_op()
            enclosing = owner.parent if owner is not None and owner is not self.root else None
            if enclosing is None or owner.has_trait(IsolatedFromAbove):
                scope = self.scopes[block] = _Scope()
            else:
                scope = self.scopes[block] = _Scope(self.of(enclosing))
        return scope

    def merge(self, op: Operation) -> bool:
        """Replace `op` by an earlier op computing the same (or erase it when trivially dead, as
        xDSL's CSE does); returns whether it did."""
        if op.regions or not op.results or not _mergeable_class(type(op)):
            return False
        if is_trivially_dead(op):
            Rewriter.erase_op(op)
            return True
        block = op.parent
        if block is not self._block:
            self._block, self._scope = block, self.of(block)
        existing = self._scope.find_or_add(op)
        if existing is None:
            return False
        for old, new in zip(op.results, existing.results, strict=True):
            old.replace_all_uses_with(new)
        Rewriter.erase_op(op)
        return True


def eliminate_common_subexpressions(module: Operation) -> int:
    """Merge duplicate ops nested in `module` (xDSL's CSE where it is not plain dataflow);
    returns how many ops were merged or erased."""
    if not is_plain_dataflow(module):
        before = sum(1 for _ in module.walk())
        xdsl_cse(module)
        return before - sum(1 for _ in module.walk())
    return sweep(module, _Scopes(module).merge)


@dataclass(frozen=True)
class CsePass(ModulePass):
    """Merge side-effect-free ops with the same name, operands, properties and result types.

    One forward sweep keyed on (name, operands, properties, attributes, result types); ops with
    regions or effects (`aten.dropout`, asserts) are never merged.
    """

    name = "cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        count_fired("MergeDuplicateOp", eliminate_common_subexpressions(op))
