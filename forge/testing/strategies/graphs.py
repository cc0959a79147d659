"""The motif table and the public strategies: `aten_graphs` (random ops with motifs spliced in)
and `motif` (one motif alone)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hypothesis import strategies as st

from forge.testing.strategies.attention import attention, constant_subgraph
from forge.testing.strategies.builder import GraphBuilder, GraphCase
from forge.testing.strategies.fusion import layout, linear_act, rmsnorm, swiglu
from forge.testing.strategies.random_ops import RANDOM_STEPS
from forge.testing.strategies.simplify import dead_code, duplicates, identities

MOTIFS: dict[str, Callable[..., None]] = {
    "dead_code": dead_code,
    "duplicates": duplicates,
    "constant_subgraph": constant_subgraph,
    "identities": identities,
    "attention": attention,
    "linear_act": linear_act,
    "swiglu": swiglu,
    "rmsnorm": rmsnorm,
    "layout": layout,
}
"""Motif name -> builder ``f(builder, **options)`` that splices the motif into a graph."""

ALL_MOTIFS: tuple[str, ...] = tuple(MOTIFS)

PASS_MOTIFS: dict[str, tuple[str, ...]] = {
    "dce": ("dead_code", "duplicates"),
    "cse": ("duplicates", "dead_code"),
    "fold": ("constant_subgraph", "identities"),
    "fuse-attention": ("attention", "constant_subgraph"),
    "fuse-ops": ("linear_act", "swiglu", "rmsnorm"),
    "layout": ("layout", "attention", "linear_act"),
}
"""The motifs aimed at each pass (a pass should also be checked on ALL_MOTIFS: it must leave
the other motifs' code intact)."""


class register_motif:
    """Register motif `name`: `build(builder, **options)` splices it into a generated graph.

    A pattern's tests register the motif the pattern is for (with a negative variant that looks
    like it but must not be rewritten), then `check_pattern(pattern, motifs=[name])`. Registering
    lasts until `unregister()`, or the end of a `with register_motif(...):` block; a name that is
    taken (by another builder) is a ValueError.
    """

    def __init__(self, name: str, build: Callable[..., None]):
        if MOTIFS.get(name, build) is not build:
            raise ValueError(f"a motif named {name!r} is already registered")
        self.name = name
        MOTIFS[name] = build

    def unregister(self) -> None:
        MOTIFS.pop(self.name, None)

    def __enter__(self) -> register_motif:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unregister()


def build_motif(b: GraphBuilder, name: str, **options: Any) -> None:
    """Splice motif `name` into the graph `b` is building."""
    try:
        builder = MOTIFS[name]
    except KeyError:
        raise ValueError(f"unknown motif {name!r}; known: {', '.join(MOTIFS)}") from None
    builder(b, **options)


def _check_motifs(motifs: Iterable[str]) -> tuple[str, ...]:
    motifs = tuple(motifs)
    unknown = [m for m in motifs if m not in MOTIFS]
    if unknown:
        raise ValueError(f"unknown motif(s) {unknown}; known: {', '.join(MOTIFS)}")
    return motifs


def _seed_inputs(b: GraphBuilder) -> None:
    for _ in range(b.integer(1, 2)):
        b.input(b.shape(min_rank=1, max_rank=4))


@st.composite
def _graphs(draw: Any, motifs: tuple[str, ...], max_ops: int, max_motifs: int) -> GraphCase:
    b = GraphBuilder(draw, draw(st.integers(0, 2**31 - 1)))
    _seed_inputs(b)
    chosen = draw(st.lists(st.sampled_from(motifs), min_size=1, max_size=max_motifs)) if motifs else []
    plan = [f"motif:{m}" for m in chosen] + ["op"] * draw(st.integers(0, max_ops))
    plan = draw(st.permutations(plan)) if plan else plan
    steps = list(RANDOM_STEPS)
    random_steps = []
    for item in plan:
        if item == "op":
            random_steps.append(draw(st.sampled_from(steps)))
            RANDOM_STEPS[random_steps[-1]](b)
        else:
            build_motif(b, item.removeprefix("motif:"))
    if random_steps:
        b.note(f"random[{','.join(random_steps)}]")
    return b.finish()


def aten_graphs(motifs: Sequence[str] = ALL_MOTIFS, *, max_ops: int = 12,
                max_motifs: int = 3) -> st.SearchStrategy[GraphCase]:
    """Random well-typed `aten` graphs: up to `max_ops` random ops over a pool of live values, with
    1 to `max_motifs` motifs drawn from `motifs` spliced in (an empty `motifs` gives random ops
    only).  Every module verifies; its WeightStore is attached."""
    return _graphs(_check_motifs(motifs), max_ops, max(1, max_motifs))


@st.composite
def _one_motif(draw: Any, name: str, options: dict[str, Any]) -> GraphCase:
    b = GraphBuilder(draw, draw(st.integers(0, 2**31 - 1)))
    _seed_inputs(b)
    build_motif(b, name, **options)
    return b.finish()


def motif(name: str, **options: Any) -> st.SearchStrategy[GraphCase]:
    """Graphs holding just motif `name` (on fresh inputs); `options` go to its builder
    (e.g. ``motif("attention", negative=True)``, ``motif("linear_act", act="gelu_tanh_poly")``)."""
    _check_motifs([name])
    return _one_motif(name, options)
