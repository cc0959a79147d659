"""Property checks for rewrites: "this pass keeps the IR valid and the function unchanged".

    from forge.testing import check_pattern
    check_pattern(FoldPass())                                   # a ModulePass instance
    check_pattern(FoldPass, motifs=["identities", "constant_subgraph"])
    check_pattern(MyPattern(), OtherPattern())                  # RewritePatterns, applied greedily

`check_pattern` runs the rewrite on graphs from `forge.testing.strategies.aten_graphs` and, for each,
asserts that the module still verifies and that the reference interpreter gives the same outputs
(count, shapes, dtypes, values within atol/rtol) before and after.  A failure shows the pass name,
the graph's description, the inputs, and the IR before and after.

`assert_preserves_semantics` is the single-case check, for tests that build their own IR.

Importing this module does not need hypothesis (a dev extra): `check_pattern` imports it, and the
strategies built on it, when it runs a property.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker, RewritePattern

from forge.driver.registry import make_context
from forge.interpreter import interpret
from forge.weights import WeightStore, attach_weights, weights_of

if TYPE_CHECKING:
    from forge.testing.strategies import GraphCase

__all__ = ["apply_rewrite", "assert_preserves_semantics", "check_case", "check_pattern", "copy_weights",
           "rewrite_name"]

Rewrite = ModulePass | type[ModulePass] | RewritePattern | Sequence[RewritePattern]


def rewrite_name(rewrite: Any) -> str:
    """How failure messages name a pass or pattern(s)."""
    if isinstance(rewrite, type):
        return getattr(rewrite, "name", None) or rewrite.__name__
    if isinstance(rewrite, ModulePass):
        return f"{rewrite.name} ({type(rewrite).__name__})"
    if isinstance(rewrite, RewritePattern):
        return type(rewrite).__name__
    return "[" + ", ".join(rewrite_name(r) for r in rewrite) + "]"


def _as_applier(rewrite: Any) -> Callable[[ModuleOp], None]:
    """A function applying the pass / pattern(s) to a module in place."""
    if isinstance(rewrite, type) and issubclass(rewrite, ModulePass):
        rewrite = rewrite()
    if isinstance(rewrite, ModulePass):
        ctx = make_context()
        return lambda module: rewrite.apply(ctx, module)
    patterns = [rewrite] if isinstance(rewrite, RewritePattern) else list(rewrite)
    if not patterns or not all(isinstance(p, RewritePattern) for p in patterns):
        raise TypeError(f"expected a ModulePass (instance or class) or RewritePattern(s), got {rewrite!r}")
    return lambda module: PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(module)


def copy_weights(store: WeightStore) -> WeightStore:
    """A copy of `store` (tensors cloned, aliases kept) so a rewrite cannot disturb the reference."""
    copy = WeightStore()
    for name, tensor in store.items():
        copy.add(name, tensor.clone())
    for alias, canonical in store.aliases.items():
        copy.add(alias, copy[canonical])
    return copy


def working_copy(module: ModuleOp, weights: WeightStore) -> tuple[ModuleOp, WeightStore]:
    """A clone of `module` carrying a copy of `weights` (attached, so passes find them with `weights_of`):
    a rewrite of the copy disturbs neither the original IR nor the store a reference run reads."""
    clone, store = module.clone(), copy_weights(weights)
    attach_weights(clone, store)
    return clone, store


def apply_rewrite(rewrite: Rewrite, module: ModuleOp) -> None:
    """Apply a ModulePass (instance or class) or RewritePattern(s) to `module` in place."""
    _as_applier(rewrite)(module)


def _describe_inputs(inputs: Sequence[torch.Tensor]) -> str:
    return ", ".join(f"{tuple(t.shape)}:{str(t.dtype).removeprefix('torch.')}" for t in inputs) or "none"


def _failure(title: str, module_before: ModuleOp | str, module_after: ModuleOp | str | None, *, name: str = "",
             description: str = "", inputs: Sequence[torch.Tensor] = ()) -> AssertionError:
    head = f"{name}: {title}" if name else title
    lines = [head]
    if description:
        lines.append(f"graph: {description}")
    lines.append(f"inputs: {_describe_inputs(inputs)}")
    lines += ["--- IR before ---", str(module_before)]
    if module_after is not None:
        lines += ["--- IR after ---", str(module_after)]
    return AssertionError("\n".join(lines))


def _compare(before: Sequence[Any], after: Sequence[Any], atol: float, rtol: float) -> str | None:
    """Why two output tuples differ, or None when they match."""
    if len(before) != len(after):
        return f"{len(before)} outputs before, {len(after)} after"
    for i, (b, a) in enumerate(zip(before, after, strict=True)):
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            return f"output {i}: expected tensors, got {type(b).__name__} and {type(a).__name__}"
        if b.shape != a.shape:
            return f"output {i}: shape {tuple(b.shape)} before, {tuple(a.shape)} after"
        if b.dtype != a.dtype:
            return f"output {i}: dtype {b.dtype} before, {a.dtype} after"
        try:
            torch.testing.assert_close(a, b, atol=atol, rtol=rtol, equal_nan=True)
        except AssertionError as err:
            return f"output {i} changed: {err}"
    return None


def assert_preserves_semantics(
    module_before: ModuleOp,
    module_after: ModuleOp,
    weights: WeightStore | None,
    inputs: Sequence[torch.Tensor],
    atol: float = 1e-5,
    rtol: float = 1e-5,
    *,
    weights_after: WeightStore | None = None,
    name: str = "",
    description: str = "",
    expected: Sequence[torch.Tensor] | None = None,
) -> None:
    """Assert `module_after` verifies and computes what `module_before` does on `inputs`.

    `module_before` is the untouched original (keep one with ``module.clone()``); `weights` serve
    both unless `weights_after` is given (default: the store attached to `module_after`, if any).
    `expected`, when given, are the reference outputs (skips interpreting `module_before`).
    """
    before_ir = module_before  # printed only on failure
    try:
        module_after.verify()
    except Exception as err:
        raise _failure(f"IR does not verify after the rewrite: {err}", before_ir, module_after,
                       name=name, description=description, inputs=inputs) from None
    if expected is None:
        expected = interpret(module_before, weights, *inputs)
    if weights_after is None:
        weights_after = weights_of(module_after) or weights
    try:
        got = interpret(module_after, weights_after, *inputs)
    except Exception as err:
        raise _failure(f"interpreting the rewritten IR failed: {type(err).__name__}: {err}", before_ir,
                       module_after, name=name, description=description, inputs=inputs) from err
    why = _compare(expected, got, atol, rtol)
    if why is not None:
        raise _failure(f"outputs changed: {why}", before_ir, module_after, name=name,
                       description=description, inputs=inputs)


def check_case(rewrite: Rewrite, case: GraphCase, *, atol: float = 1e-5, rtol: float = 1e-5) -> ModuleOp:
    """Apply `rewrite` to a copy of `case.module` and assert it preserves semantics; return the copy.

    The reference outputs are computed first, on the original module and weights; the rewrite
    runs on a clone with its own copy of the WeightStore attached.
    """
    name = rewrite_name(rewrite)
    before_ir = case.module  # untouched: the rewrite runs on a clone
    expected = interpret(case.module, case.weights, *case.inputs)
    module, weights = working_copy(case.module, case.weights)
    try:
        apply_rewrite(rewrite, module)
    except Exception as err:
        raise _failure(f"the rewrite raised {type(err).__name__}: {err}", before_ir, module, name=name,
                       description=case.description, inputs=case.inputs) from err
    assert_preserves_semantics(case.module, module, case.weights, case.inputs, atol, rtol,
                               weights_after=weights_of(module) or weights, name=name,
                               description=case.description, expected=expected)
    return module


def check_pattern(
    pattern_or_pass: Rewrite,
    *more_patterns: RewritePattern,
    motifs: Sequence[str] | None = None,
    max_examples: int = 50,
    atol: float = 1e-5,
    rtol: float = 1e-5,
    seed: int | None = None,
    max_ops: int = 12,
    shrink: bool = True,
    on_case: Callable[[GraphCase, ModuleOp], None] | None = None,
) -> None:
    """Property-test a rewrite with hypothesis on generated graphs (see the module docstring).

    Accepts a ModulePass instance or class, or one or more RewritePatterns (positionally or as a
    list) applied with a greedy `PatternRewriteWalker`.  `motifs` defaults to every motif
    (`forge.testing.strategies.ALL_MOTIFS`).  `on_case(case, rewritten_module)` runs after
    each successful check, for extra assertions (e.g. "attention was fused unless negative").
    `shrink=False` reports the first failing graph as found (faster, less readable).
    Raises AssertionError (from the shrunk failing example) when the rewrite breaks a graph.
    """
    rewrite: Rewrite = [pattern_or_pass, *more_patterns] if more_patterns else pattern_or_pass
    _as_applier(rewrite)  # reject bad arguments before hypothesis runs
    hypothesis = _import_hypothesis()
    # lazy, as the import above: built on hypothesis (a dev extra)
    from forge.testing.examples_database import namespaced
    from forge.testing.strategies import ALL_MOTIFS, aten_graphs

    motifs = ALL_MOTIFS if motifs is None else tuple(motifs)
    Phase, HealthCheck = hypothesis.Phase, hypothesis.HealthCheck
    phases = tuple(Phase) if shrink else tuple(p for p in Phase if p is not Phase.shrink)
    # Failing graphs are kept per rewrite and motifs: they replay only in the check that found them.
    database = namespaced(hypothesis.settings().database, repr((rewrite_name(rewrite), motifs, max_ops)))

    @hypothesis.settings(max_examples=max_examples, deadline=None, report_multiple_bugs=False, phases=phases,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                         database=database)
    @hypothesis.given(aten_graphs(motifs, max_ops=max_ops))
    def property_holds(case: GraphCase) -> None:
        rewritten = check_case(rewrite, case, atol=atol, rtol=rtol)
        if on_case is not None:
            on_case(case, rewritten)

    if seed is not None:
        property_holds = hypothesis.seed(seed)(property_holds)
    property_holds()


def _import_hypothesis() -> ModuleType:
    """hypothesis (a dev extra), or an ImportError saying what needs it."""
    try:
        import hypothesis  # lazy: a dev extra, needed only to run a property
    except ImportError as e:
        raise ImportError(
            "check_pattern needs hypothesis, a dev extra: pip install 'forge-compiler[dev]'"
        ) from e
    return hypothesis
