"""Hypothesis strategies that generate well-typed `aten` graphs for property tests of passes.

A generated graph is a `GraphCase`: a module with one ``func.func @forward``, its WeightStore
(attached with `attach_weights`, so passes find it with `weights_of`), seeded random inputs and a
one-line description of what was built.  Graphs are built op by op *and evaluated eagerly* at the
same time (each op runs its own overload on the concrete tensors), so every generated graph is
well typed by construction, views are only taken of contiguous values, and domain-sensitive ops
(rsqrt, exp, ...) only see values they are defined on.  Shapes are small (dims 1-8), so
interpreting a graph takes milliseconds.

Two entry points:

* `aten_graphs(motifs, max_ops=12)`: a random DAG over a pool of live values (elementwise and
  broadcasting binary ops, unary ops, reductions, views, transposes, matmul/linear, softmax,
  layer_norm, bool/int side graphs), with one or more of the requested motifs spliced in.
* `motif(name, **options)`: a graph holding just one motif (options pin its variants, e.g.
  ``motif("attention", negative=True)``).

A motif is the shape of code a pass is written for (see `MOTIFS`; `register_motif(name, build)` adds
one for a new pattern's tests): `dead_code`, `duplicates`,
`constant_subgraph`, `identities`, `attention`, `linear_act`, `swiglu`, `rmsnorm`, `layout`.
Variants that look like a motif but must NOT be rewritten like it are "negative" variants: the
description says so and `GraphCase.tags` holds ``"<motif>:negative"`` (plus the reason), so a pass
test can assert that, e.g., fuse-attention fired exactly on the positive cases.

The builder is public (`GraphBuilder`): tests that need one hand-written case can use its ``op``
helper, which binds Python arguments by schema name and computes result types by running the op.

Modules: `builder` (GraphCase, GraphBuilder), `random_ops` (the random steps), the motifs by op
family (`simplify`: dead code, duplicates, identities; `fusion`: linear + activation, SwiGLU,
RMSNorm, layout; `attention`: masks, constant subgraphs, attention), and `graphs` (the motif
table and the strategies).
"""

from forge.testing.strategies.builder import GraphBuilder, GraphCase
from forge.testing.strategies.graphs import (
    ALL_MOTIFS,
    MOTIFS,
    PASS_MOTIFS,
    aten_graphs,
    build_motif,
    motif,
    register_motif,
)

__all__ = [
    "ALL_MOTIFS",
    "MOTIFS",
    "PASS_MOTIFS",
    "GraphBuilder",
    "GraphCase",
    "aten_graphs",
    "build_motif",
    "motif",
    "register_motif",
]
