"""SymInt plumbing in exported graphs: resolve what is static, refuse what depends on tensor values.

torch.export adds scalar nodes around ops whose result shape it cannot know (`nonzero`,
`masked_select`, `unique`, boolean-mask indexing): `sym_size.int`, `operator.ge`, `_assert_scalar`,
`sym_constrain_range_for_size`. `analyze(graph)` classifies them:

* a node whose value is a plain number (`sym_size.int` of a static dim, arithmetic on such sizes)
  is *static*: the importer substitutes the number wherever it is used, and builds no op;
* an assertion whose checked condition is statically true is *dropped*;
* a node whose result carries an unbacked SymInt (`u0`: a size known only at run time) raises one
  DataDependentShapeError naming the op that introduced it, where it is, and why.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from forge.frontend.import_errors import DataDependentShapeError

_aten = torch.ops.aten

ASSERTIONS = frozenset(
    {
        _aten._assert_scalar.default,
        _aten.sym_constrain_range_for_size.default,
        _aten.sym_constrain_range.default,
    }
)
"""Nodes that only check a fact about sizes; dropped when the fact is static."""

SCALAR_TARGETS = frozenset(
    {
        _aten.sym_size.int,
        _aten.sym_numel.default,
        _aten.sym_stride.int,
        _aten.sym_storage_offset.default,
        operator.add,
        operator.sub,
        operator.mul,
        operator.floordiv,
        operator.truediv,
        operator.mod,
        operator.neg,
        operator.eq,
        operator.ne,
        operator.ge,
        operator.gt,
        operator.le,
        operator.lt,
        operator.and_,
        operator.or_,
    }
)
"""Nodes computing a Python number from sizes (resolved when static)."""


@dataclass
class SymbolicFacts:
    """What the importer does with each scalar node: substitute a number, or skip it."""

    static: dict[torch.fx.Node, Any] = field(default_factory=dict)
    dropped: set[torch.fx.Node] = field(default_factory=set)

    def handled(self, node: torch.fx.Node) -> bool:
        return node in self.static or node in self.dropped

    def substitute(self, value: Any) -> Any:
        """`value` with every static scalar node replaced by its number (lists too)."""
        if isinstance(value, torch.fx.Node) and value in self.static:
            return self.static[value]
        if isinstance(value, (list, tuple)):
            return type(value)(self.substitute(v) for v in value)
        return value


def _static_number(val: Any) -> Any | None:
    """The Python number a node's value is, if it is one (a SymInt/SymBool with a known value too)."""
    if isinstance(val, bool | int | float):
        return val
    if isinstance(val, torch.SymInt | torch.SymBool | torch.SymFloat):
        if free_unbacked_symbols(val):
            return None
        hint = val.node.maybe_as_int() if isinstance(val, torch.SymInt) else None
        if hint is not None:
            return hint
        try:
            return val.node.require_hint()
        except Exception:  # a symbol with no hint: not static
            return None
    return None


def free_unbacked_symbols(val: Any) -> Any:
    """torch's `free_unbacked_symbols`, imported on first use: torch.fx.experimental.symbolic_shapes pulls
    in sympy (~0.3 s cold), which torch.export loads anyway before there is a graph to analyze."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols as free

    return free(val)


def _has_unbacked(val: Any) -> bool:
    if isinstance(val, torch.Tensor) and all(type(d) is int for d in val.shape):
        return False  # the common case, without sympy
    if isinstance(val, torch.Tensor | torch.SymInt | torch.SymBool | torch.SymFloat):
        return bool(free_unbacked_symbols(val))
    if isinstance(val, list | tuple):
        return any(_has_unbacked(v) for v in val)
    return False


def _unbacked_description(val: Any) -> str:
    if isinstance(val, list | tuple):
        val = next(v for v in val if _has_unbacked(v))
    if isinstance(val, torch.Tensor):
        shape = ", ".join(str(d) for d in val.shape)
        return f"its result has shape [{shape}], where u-symbols are sizes known only at run time"
    return f"it computes {val}, known only at run time"


def analyze(graph: torch.fx.Graph, where: Callable[[torch.fx.Node], str], name: Callable[[Any], str]) -> SymbolicFacts:
    """Classify the graph's scalar nodes (see the module docstring); raises DataDependentShapeError."""
    facts = SymbolicFacts()
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        val = node.meta.get("val")
        if _has_unbacked(val):
            if not any(_has_unbacked(a.meta.get("val")) for a in node.all_input_nodes):
                raise DataDependentShapeError(
                    name(node.target),
                    where(node),
                    node.name,
                    f"{_unbacked_description(val)}; Forge compiles static shapes only",
                )
            continue
        if node.target in SCALAR_TARGETS:
            number = _static_number(val)
            if number is not None:
                facts.static[node] = number
        elif node.target in ASSERTIONS and _statically_true(node, facts):
            facts.dropped.add(node)
    return facts


def _statically_true(node: torch.fx.Node, facts: SymbolicFacts) -> bool:
    condition = node.args[0] if node.args else None
    if node.target is not _aten._assert_scalar.default:
        return all(_static_number(a.meta.get("val")) is not None for a in node.all_input_nodes)
    value = facts.substitute(condition)
    return value is True or (isinstance(value, int | float) and bool(value))
