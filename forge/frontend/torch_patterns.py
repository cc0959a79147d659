"""Patterns written in PyTorch: `from_torch(search, replacement, example_inputs)`.

Like Inductor's `register_replacement` (torch/_inductor/pattern_matcher.py), two Python functions
say what to find and what to put instead:

    def search(a, b):
        return a - (-b)

    def replacement(a, b):
        return a + b

    pattern = from_torch(search, replacement, [torch.randn(4), torch.randn(4)], name="SubNeg")

Each function is traced once, on the example inputs, through Forge's own importer (torch.export,
then `forge.frontend.fx_importer.import_module`) into `aten` IR, and the two functions become a
`forge.patterns.graph.GraphPattern` (see there for the matching rules: commutative add/mul,
properties as constraints or `wildcards`, several outputs, `predicate`, `shared`).

Python numbers among the example inputs are scalars the pattern leaves open: each property of the
traced search graph that holds such a number becomes a wildcard (pick distinctive example values,
e.g. `eps=1.2345e-05`, so that no other property holds the same number by chance).

Tracing costs torch.export's time (around a second): build patterns once, e.g. when a pass is
constructed. This module is in the frontend layer because it imports the importer; the core
`forge.patterns` package cannot import it (the layer contracts in pyproject.toml), so the name to
import is `forge.frontend.torch_patterns.from_torch`. `traced_mlir` gives the traced pair as MLIR
text, for `GraphPattern.from_mlir` in code that must not trace at start-up (Forge's own passes).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Sequence
from io import StringIO
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp
from xdsl.printer import Printer

from forge.frontend.fx_importer import import_module
from forge.patterns.graph import GraphPattern, Match


class _Wrapper(torch.nn.Module):
    """The function as an nn.Module taking the tensor inputs; scalars are bound in."""

    def __init__(self, fn: Callable[..., Any], example_inputs: Sequence[Any]):
        super().__init__()
        self.fn = fn
        self.example_inputs = list(example_inputs)

    def forward(self, *tensors: torch.Tensor) -> Any:
        it = iter(tensors)
        args = [next(it) if isinstance(v, torch.Tensor) else v for v in self.example_inputs]
        return self.fn(*args)


def trace(fn: Callable[..., Any], example_inputs: Sequence[Any], name: str) -> func.FuncOp:
    """`fn` traced into an `aten` func.func called `name` (its arguments: the tensor inputs)."""
    tensors = [v for v in example_inputs if isinstance(v, torch.Tensor)]
    imported = import_module(_Wrapper(fn, example_inputs), tensors, func_name=name)
    function = next(op for op in imported.module.ops if isinstance(op, func.FuncOp))
    function.detach()
    names = [n for n, v in zip(_parameter_names(fn, len(example_inputs)), example_inputs, strict=True)
             if isinstance(v, torch.Tensor)]
    for arg, arg_name in zip(function.args, names, strict=False):
        arg.name_hint = arg_name
    return function


def _parameter_names(fn: Callable[..., Any], n: int) -> list[str]:
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = names[:n]
    return names + [f"arg{i}" for i in range(len(names), n)]


def _scalar_properties(function: func.FuncOp, scalars: Collection[Any]) -> set[str]:
    """The names of properties whose value is one of the example scalars."""
    found: set[str] = set()
    for op in function.walk():
        for name, attr in op.properties.items():
            if isinstance(attr, (IntegerAttr, FloatAttr)) and attr.value.data in scalars:
                found.add(name)
    return found


def traced_pair(search: Callable[..., Any], replacement: Callable[..., Any],
                example_inputs: Sequence[Any]) -> tuple[func.FuncOp, func.FuncOp]:
    """Both functions traced: `@search` and `@replacement`."""
    return trace(search, example_inputs, "search"), trace(replacement, example_inputs, "replacement")


def traced_mlir(search: Callable[..., Any], replacement: Callable[..., Any], example_inputs: Sequence[Any]) -> str:
    """The traced pair as MLIR text (custom syntax), for `GraphPattern.from_mlir`."""
    module = ModuleOp(list(traced_pair(search, replacement, example_inputs)))
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def from_torch(
    search: Callable[..., Any],
    replacement: Callable[..., Any],
    example_inputs: Sequence[Any],
    *,
    name: str | None = None,
    wildcards: Collection[str] = (),
    predicate: Callable[[Match], bool] | None = None,
    shared: str = "fail",
) -> GraphPattern:
    """A `GraphPattern` rewriting what `search` computes into what `replacement` computes.

    `name` is the pattern's class name (for `--explain-pattern`; default: the search function's
    name); `wildcards` names properties that may have any value (plus those holding an example
    scalar); `predicate(match)` vetoes matches; `shared="keep"` rewrites even when an intermediate
    value has other users (it stays for them).
    """
    search_fn, replacement_fn = traced_pair(search, replacement, example_inputs)
    scalars = [v for v in example_inputs if isinstance(v, (int, float)) and not isinstance(v, bool)]
    open_properties = set(wildcards) | _scalar_properties(search_fn, scalars)
    pattern_name = name or getattr(search, "__name__", "TorchPattern")
    pattern = GraphPattern.named(pattern_name, search_fn, replacement_fn, wildcards=open_properties,
                                 predicate=predicate, shared=shared, doc=getattr(search, "__doc__", None))
    pattern._module = ModuleOp([])
    pattern._module.body.block.add_ops([search_fn, replacement_fn])
    return pattern
