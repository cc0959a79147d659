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

A pattern must not change what a program computes: `from_torch` runs both functions (eager torch) on
the example inputs and on a few random inputs of the same shapes, dtypes and value ranges, and
refuses (`PatternMismatchError`, naming the output, the inputs and the largest difference) a
replacement that computes something else than the search. `check=False` skips this, for a
replacement that is only right under the pattern's `predicate`.

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


class PatternMismatchError(ValueError):
    """The replacement of a `from_torch` pattern computes something else than its search."""


RANDOM_TRIALS = 3
"""Random inputs `from_torch` checks the pair on, besides the example inputs."""


def _random_like(value: Any, generator: torch.Generator) -> Any:
    """A random tensor like `value` (shape, dtype, and the range of its values); other values as given."""
    if not isinstance(value, torch.Tensor) or value.numel() == 0:
        return value
    if value.dtype == torch.bool:
        return torch.rand(value.shape, generator=generator) < 0.5
    finite = value[torch.isfinite(value)] if value.is_floating_point() else value
    if finite.numel() == 0:
        return value.clone()
    lo, hi = finite.min().item(), finite.max().item()
    if value.is_floating_point() or value.is_complex():
        sample = torch.rand(value.shape, generator=generator, dtype=torch.float64)
        return (lo + (hi - lo) * sample).to(value.dtype)
    return torch.randint(int(lo), int(hi) + 1, value.shape, generator=generator, dtype=value.dtype)


def _leaves(value: Any) -> list[Any]:
    """The tensors and numbers of a function's result, in order."""
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _difference(want: Any, got: Any, rtol: float, atol: float) -> str | None:
    """Why `got` is not `want` (None when it is, within the tolerances for floats; NaN equals NaN)."""
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        return None if want == got or (want != want and got != got) else f"{got!r} instead of {want!r}"
    if want.shape != got.shape or want.dtype != got.dtype:
        return f"{got.dtype} {list(got.shape)} instead of {want.dtype} {list(want.shape)}"
    if want.is_floating_point() or want.is_complex():
        close = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
    else:
        close = got == want
    if bool(close.all()):
        return None
    bad = (~close).nonzero()[0].tolist()
    diff = (got.double() - want.double()).abs().nan_to_num(nan=float("inf")).max().item()
    return (f"max |diff| {diff:.6g}; at {bad} the search gives {want[tuple(bad)].item():.6g}, the replacement "
            f"{got[tuple(bad)].item():.6g}; {int((~close).sum())} of {close.numel()} elements differ")


def check_equivalent(search: Callable[..., Any], replacement: Callable[..., Any], example_inputs: Sequence[Any],
                     *, name: str, trials: int = RANDOM_TRIALS, seed: int = 0, rtol: float = 1e-4,
                     atol: float = 1e-5) -> None:
    """Raise `PatternMismatchError` unless `replacement` computes what `search` computes (eager torch) on
    the example inputs and on `trials` random inputs like them."""
    generator = torch.Generator().manual_seed(seed)
    for trial in range(trials + 1):
        inputs = list(example_inputs) if trial == 0 else [_random_like(v, generator) for v in example_inputs]
        copy = [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs]
        with torch.no_grad():
            want, got = _leaves(search(*inputs)), _leaves(replacement(*copy))
        which = "the example inputs" if trial == 0 else f"random inputs #{trial} (seed {seed})"
        if len(want) != len(got):
            raise PatternMismatchError(f"pattern {name}: the search returns {len(want)} values, the replacement "
                                       f"{len(got)}")
        for index, (w, g) in enumerate(zip(want, got, strict=True)):
            if (why := _difference(w, g, rtol, atol)) is not None:
                raise PatternMismatchError(
                    f"pattern {name}: the replacement does not compute what the search computes: on {which}, "
                    f"output #{index} differs ({why}); a pattern must not change results (check=False skips "
                    "this check, for a replacement that is only right under the pattern's predicate)")


def from_torch(
    search: Callable[..., Any],
    replacement: Callable[..., Any],
    example_inputs: Sequence[Any],
    *,
    name: str | None = None,
    wildcards: Collection[str] = (),
    predicate: Callable[[Match], bool] | None = None,
    shared: str = "fail",
    check: bool = True,
) -> GraphPattern:
    """A `GraphPattern` rewriting what `search` computes into what `replacement` computes.

    `name` is the pattern's class name (for `--explain-pattern`; default: the search function's
    name); `wildcards` names properties that may have any value (plus those holding an example
    scalar); `predicate(match)` vetoes matches; `shared="keep"` rewrites even when an intermediate
    value has other users (it stays for them). With `check` (the default), the two functions must
    compute the same results on the example inputs and on `RANDOM_TRIALS` random ones
    (`check_equivalent`), else `PatternMismatchError`.
    """
    pattern_name = name or getattr(search, "__name__", "TorchPattern")
    if check:
        check_equivalent(search, replacement, example_inputs, name=pattern_name)
    search_fn, replacement_fn = traced_pair(search, replacement, example_inputs)
    scalars = [v for v in example_inputs if isinstance(v, (int, float)) and not isinstance(v, bool)]
    open_properties = set(wildcards) | _scalar_properties(search_fn, scalars)
    pattern = GraphPattern.named(pattern_name, search_fn, replacement_fn, wildcards=open_properties,
                                 predicate=predicate, shared=shared, doc=getattr(search, "__doc__", None))
    pattern._module = ModuleOp([])
    pattern._module.body.block.add_ops([search_fn, replacement_fn])
    return pattern
