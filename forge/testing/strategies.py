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

A motif is the shape of code a pass is written for (see `MOTIFS`): `dead_code`, `duplicates`,
`constant_subgraph`, `identities`, `attention`, `linear_act`, `swiglu`, `rmsnorm`, `layout`.
Variants that look like a motif but must NOT be rewritten like it are "negative" variants: the
description says so and `GraphCase.tags` holds ``"<motif>:negative"`` (plus the reason), so a pass
test can assert that, e.g., fuse-attention fired exactly on the positive cases.

The builder is public (`GraphBuilder`): tests that need one hand-written case can use its ``op``
helper, which binds Python arguments by schema name and computes result types by running the op.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

from dialects import aten
from dialects.aten_schema import ArgKind, equals_default, to_attribute
from dialects.torch_types import tensor_type
from forge.weights import WeightStore, attach_weights

F32 = torch.float32
I64 = torch.int64
BOOL = torch.bool
FMIN = torch.finfo(torch.float32).min
MAX_DIM = 8

__all__ = [
    "ALL_MOTIFS",
    "MOTIFS",
    "PASS_MOTIFS",
    "GraphBuilder",
    "GraphCase",
    "aten_graphs",
    "build_motif",
    "motif",
]


# --- the generated case ------------------------------------------------------------------------


@dataclass
class GraphCase:
    """One generated graph: run ``interpret(module, weights, *inputs)`` to get its outputs."""

    module: ModuleOp
    weights: WeightStore
    inputs: tuple[torch.Tensor, ...]
    description: str
    tags: frozenset[str] = frozenset()
    """Motifs and variants present: ``"attention"``, ``"attention:negative"``, ``"dead_code"``, ..."""
    expected: tuple[torch.Tensor, ...] = ()
    """The outputs computed eagerly while building (what the interpreter must reproduce)."""

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        shapes = ", ".join(f"{tuple(t.shape)}:{str(t.dtype).removeprefix('torch.')}" for t in self.inputs)
        return f"GraphCase({self.description}; inputs {shapes})\n{str(self.module)}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis' pretty printer
        printer.text(repr(self))

    def negative(self, motif_name: str) -> bool:
        """Whether the graph holds a negative variant of `motif_name` (must not be rewritten)."""
        return f"{motif_name}:negative" in self.tags


# --- building graphs ---------------------------------------------------------------------------


_PLACEHOLDER = tensor_type((), F32)


def _flatten(out: Any) -> list[torch.Tensor]:
    if out is None:
        return []
    if isinstance(out, torch.Tensor):
        return [out]
    return list(out)


class GraphBuilder:
    """Builds one function op by op while evaluating it on concrete tensors.

    ``draw`` is hypothesis' draw function (every choice goes through it, so examples shrink);
    ``seed`` seeds the values of inputs and weights.  ``pool`` holds live finite float values
    that later ops may consume.
    """

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any], seed: int):
        self.draw = draw
        self.gen = torch.Generator().manual_seed(seed)
        self.block = Block()
        self.inputs: list[torch.Tensor] = []
        self.weights = WeightStore()
        self.val: dict[SSAValue, torch.Tensor] = {}
        self.pool: list[SSAValue] = []
        self.returns: list[SSAValue] = []
        self.dead: set[SSAValue] = set()
        self.notes: list[str] = []
        self.tags: set[str] = set()
        self.op_count = 0

    # -- drawing choices -------------------------------------------------------------------------

    def choice(self, options: Sequence[Any]) -> Any:
        """One of `options`; shrinks towards the first (put the simplest first)."""
        return self.draw(st.sampled_from(list(options)))

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def chance(self, percent: int) -> bool:
        """True with roughly `percent`% probability; shrinks towards False."""
        return self.draw(st.integers(0, 99)) >= 100 - percent

    def dim(self, lo: int = 1, hi: int = MAX_DIM) -> int:
        return self.integer(lo, hi)

    def shape(self, rank: int | None = None, *, min_rank: int = 1, max_rank: int = 4) -> tuple[int, ...]:
        rank = self.integer(min_rank, max_rank) if rank is None else rank
        return tuple(self.dim() for _ in range(rank))

    # -- values ------------------------------------------------------------------------------------

    def _random(self, shape: Sequence[int], dtype: torch.dtype, *, low: int = 0, high: int = 4) -> torch.Tensor:
        shape = tuple(shape)
        if dtype.is_floating_point:
            return torch.randn(shape, generator=self.gen, dtype=dtype)
        if dtype is BOOL:
            return torch.rand(shape, generator=self.gen) < 0.5
        return torch.randint(low, high, shape, generator=self.gen, dtype=dtype)

    def input(self, shape: Sequence[int], dtype: torch.dtype = F32, *, name: str | None = None,
              value: torch.Tensor | None = None, pool: bool = True) -> SSAValue:
        """A new function argument with a seeded random (or the given) value."""
        tensor = self._random(shape, dtype) if value is None else value
        arg = self.block.insert_arg(tensor_type(tuple(tensor.shape), tensor.dtype), len(self.block.args))
        arg.name_hint = name or f"arg{len(self.inputs)}"
        self.inputs.append(tensor)
        self.val[arg] = tensor
        if pool:
            self.to_pool(arg)
        return arg

    def weight(self, shape: Sequence[int], prefix: str = "w", *, kind: str = "fan_in",
               value: torch.Tensor | None = None) -> SSAValue:
        """An ``aten.weight`` naming a new WeightStore entry.

        kind: ``fan_in`` (randn / sqrt(last dim), like a linear weight), ``bias`` (0.1 randn),
        ``norm`` (1 + 0.1 randn), ``positive`` (in [0.5, 1.5]).
        """
        shape = tuple(shape)
        if value is None:
            r = torch.randn(shape, generator=self.gen)
            if kind == "fan_in":
                value = r / math.sqrt(shape[-1] if shape else 1)
            elif kind == "bias":
                value = 0.1 * r
            elif kind == "norm":
                value = 1.0 + 0.1 * r
            elif kind == "positive":
                value = 0.5 + torch.rand(shape, generator=self.gen)
            else:
                raise ValueError(f"unknown weight kind {kind!r}")
        name = self.weights.add_constant(value, prefix)
        return self.weight_ref(name)

    def weight_ref(self, name: str) -> SSAValue:
        """Another ``aten.weight`` op for an existing store entry."""
        tensor = self.weights[name]
        op = aten.WeightOp(name, tensor_type(tuple(tensor.shape), tensor.dtype))
        self.block.add_op(op)
        op.result.name_hint = name.replace(".", "_")
        self.val[op.result] = tensor
        return op.result

    def const(self, value: torch.Tensor | float | int | bool, dtype: torch.dtype | None = None,
              *, name: str | None = None) -> SSAValue:
        """An inline ``aten.constant`` (small tensors and 0-d scalars only)."""
        tensor = value if isinstance(value, torch.Tensor) else torch.tensor(value, dtype=dtype)
        if dtype is not None:
            tensor = tensor.to(dtype)
        op = aten.ConstantOp.from_tensor(tensor)
        self.block.add_op(op)
        if name:
            op.result.name_hint = name
        self.val[op.result] = op.to_tensor()
        return op.result

    def op(self, cls: type[aten.AtenOp], *args: Any, name: str | None = None, **kwargs: Any) -> Any:
        """Append ``cls`` applied to schema arguments given like a torch call; return its result(s).

        Tensor arguments are SSA values (None for an absent optional tensor, lists for tensor
        lists); other arguments are Python values stored as properties when not the default.
        The result types come from running the overload on the concrete values.
        """
        sig = cls.SIGNATURE
        positional = [s for s in sig.args if not s.kwarg_only]
        if len(args) > len(positional):
            raise TypeError(f"{cls.name}: too many positional arguments")
        bound = {s.name: a for s, a in zip(positional, args)}
        for key, value in kwargs.items():
            if key in bound:
                raise TypeError(f"{cls.name}: argument {key!r} given twice")
            sig.arg(key)  # KeyError for unknown names
            bound[key] = value
        groups: list[list[SSAValue]] = []
        properties: dict[str, Any] = {}
        concrete: list[torch.Tensor] = []
        for spec in sig.args:
            given = spec.name in bound
            value = bound.get(spec.name)
            kind = spec.kind
            if kind is ArgKind.TENSOR:
                if value is None:
                    raise TypeError(f"{cls.name}: missing tensor argument {spec.name!r}")
                groups.append([value])
            elif kind is ArgKind.OPT_TENSOR:
                groups.append([] if value is None else [value])
            elif kind is ArgKind.TENSOR_LIST:
                groups.append(list(value))
            elif kind is ArgKind.OPT_TENSOR_LIST:
                properties[aten.PRESENT_MASK] = to_attribute(ArgKind.INT_LIST, [int(v is not None) for v in value])
                groups.append([v for v in value if v is not None])
            elif kind is ArgKind.GENERATOR:
                continue
            elif given and value is not None and not equals_default(spec, value):
                properties[spec.name] = to_attribute(kind, value)
            elif not given and not spec.has_default:
                raise TypeError(f"{cls.name}: missing argument {spec.name!r}")
            if kind.is_tensor:
                concrete.extend(self.val[v] for v in groups[-1])
        n_results = 0 if sig.variadic_result else len(sig.result_fields)
        probe = cls.build_op(groups, properties, [_PLACEHOLDER] * n_results)
        try:
            outputs = _flatten(probe.call(concrete))
        finally:
            probe.drop_all_references()
        op = cls.build_op(groups, properties, [tensor_type(tuple(t.shape), t.dtype) for t in outputs])
        self.block.add_op(op)
        self.op_count += 1
        for result, tensor in zip(op.results, outputs):
            self.val[result] = tensor
            result.name_hint = name or cls.name.removeprefix("aten.").split(".")[0]
        if not op.results:
            return None
        return op.results[0] if len(op.results) == 1 else tuple(op.results)

    # -- the pool of live values ---------------------------------------------------------------

    def t(self, value: SSAValue) -> torch.Tensor:
        """The concrete tensor of a value."""
        return self.val[value]

    def shape_of(self, value: SSAValue) -> tuple[int, ...]:
        return tuple(self.val[value].shape)

    def finite(self, value: SSAValue) -> bool:
        t = self.val[value]
        return not t.dtype.is_floating_point or bool(torch.isfinite(t).all())

    def to_pool(self, value: SSAValue) -> SSAValue:
        """Make a float value available to later ops (non-finite or huge values are returned instead)."""
        t = self.val[value]
        if (t.dtype is F32 and t.dim() >= 1 and self.finite(value) and t.numel() <= 4096
                and (t.numel() == 0 or float(t.abs().max()) < 1e3)):
            self.pool.append(value)
        else:
            self.ret(value)
        return value

    def ret(self, value: SSAValue) -> SSAValue:
        """Make `value` a result of the function."""
        if value not in self.returns:
            self.returns.append(value)
        return value

    def mark_dead(self, value: SSAValue | None) -> None:
        """`value` is deliberately unused (dead code): never return it."""
        if value is not None:
            self.dead.add(value)

    def pick(self, pred: Callable[[torch.Tensor], bool] = lambda t: True,
             make: Callable[[], SSAValue] | None = None, *, fresh_percent: int = 25) -> SSAValue:
        """A pool value whose tensor satisfies `pred`, or (if none, or by chance) a new one from `make`."""
        candidates = [v for v in self.pool if pred(self.val[v])]
        if candidates and not self.chance(fresh_percent):
            return self.choice(candidates)
        if make is None:
            make = lambda: self.input(self.shape(min_rank=2, max_rank=3))  # noqa: E731
        value = make()
        if not pred(self.val[value]):
            raise AssertionError("GraphBuilder.pick: `make` built a value that fails the predicate")
        return value

    def pick_rank(self, min_rank: int, max_rank: int = 4, *, last: int | None = None) -> SSAValue:
        """A float value of rank in [min_rank, max_rank] (and last dim `last` if given)."""

        def ok(t: torch.Tensor) -> bool:
            return min_rank <= t.dim() <= max_rank and (last is None or t.shape[-1] == last)

        def make() -> SSAValue:
            shape = list(self.shape(min_rank=min_rank, max_rank=max_rank))
            if last is not None:
                shape[-1] = last
            return self.input(shape)

        return self.pick(ok, make)

    def note(self, text: str, *tags: str) -> None:
        self.notes.append(text)
        self.tags.update(tags)

    def reshape(self, x: SSAValue, shape: Sequence[int], *, name: str | None = None) -> SSAValue:
        """``view`` when legal on the concrete value (contiguous), else ``reshape``."""
        cls = aten.ViewOp if self.val[x].is_contiguous() else aten.ReshapeOp
        return self.op(cls, x, list(shape), name=name or "view")

    # -- finishing -----------------------------------------------------------------------------

    def finish(self, description: str | None = None) -> GraphCase:
        outputs = list(self.returns)
        for v in self.pool:
            if not v.uses and v not in outputs and v not in self.dead and not isinstance(v.owner, Block):
                outputs.append(v)
        if not outputs:
            outputs.append(self.pool[-1] if self.pool else self.input((2,)))
        self.block.add_op(func.ReturnOp(*outputs))
        function = func.FuncOp(
            "forward", ([a.type for a in self.block.args], [o.type for o in outputs]), Region(self.block)
        )
        module = ModuleOp([function])
        module.verify()
        attach_weights(module, self.weights)
        text = description or "; ".join(self.notes) or "random ops"
        return GraphCase(module, self.weights, tuple(self.inputs), f"{text} ({self.op_count} ops)",
                         frozenset(self.tags), tuple(self.val[o] for o in outputs))


# --- random ops over the pool ------------------------------------------------------------------


_UNARY = (aten.ReluOp, aten.NegOp, aten.SigmoidOp, aten.TanhOp, aten.GeluOp, aten.SiluOp, aten.AbsOp,
          aten.SinOp, aten.CosOp, aten.ErfOp)
_BINARY = (aten.AddTensorOp, aten.SubTensorOp, aten.MulTensorOp, aten.MaximumOp, aten.MinimumOp)
_SCALAR_BINARY = (aten.AddScalarOp, aten.SubScalarOp, aten.MulScalarOp, aten.DivScalarOp, aten.RsubScalarOp)
_COMPARE = (aten.GtTensorOp, aten.LtTensorOp, aten.GeTensorOp, aten.LeTensorOp, aten.EqTensorOp, aten.NeTensorOp)


def _broadcastable(a: Sequence[int], b: Sequence[int]) -> bool:
    try:
        torch.broadcast_shapes(tuple(a), tuple(b))
    except RuntimeError:
        return False
    return True


def _partner_shape(b: GraphBuilder, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts with `shape`: equal, a suffix, or with some dims set to 1."""
    how = b.choice(["same", "suffix", "ones", "scalar_dim"])
    if how == "same" or not shape:
        return shape
    if how == "suffix":
        return shape[b.integer(0, len(shape) - 1):]
    if how == "ones":
        return tuple(1 if b.chance(50) else d for d in shape)
    return (1,) * b.integer(1, len(shape))


def step_binary(b: GraphBuilder) -> None:
    """An elementwise binary op (with broadcasting) on a pool value and a partner."""
    x = b.pick()
    sx = b.shape_of(x)
    others = [v for v in b.pool if v is not x and _broadcastable(sx, b.shape_of(v))
              and len(torch.broadcast_shapes(sx, b.shape_of(v))) <= 4]
    if others and b.chance(60):
        y = b.choice(others)
    else:
        pshape = _partner_shape(b, sx)
        y = b.weight(pshape, "bias", kind="bias") if b.chance(40) else b.input(pshape)
    if b.chance(50):
        x, y = y, x
    cls = b.choice(_BINARY + (aten.DivTensorOp,))
    if cls is aten.DivTensorOp:  # divide by something safely away from zero
        y = b.op(aten.AddScalarOp, b.op(aten.AbsOp, y), 1.0)
    kwargs = {"alpha": b.choice([2, 0.5])} if cls in (aten.AddTensorOp, aten.SubTensorOp) and b.chance(15) else {}
    b.to_pool(b.op(cls, x, y, **kwargs))


def step_scalar(b: GraphBuilder) -> None:
    """``x <op> number`` (the Scalar overloads torch.export produces for Python numbers)."""
    x = b.pick()
    cls = b.choice(_SCALAR_BINARY + (aten.PowTensorScalarOp,))
    if cls is aten.PowTensorScalarOp:
        b.to_pool(b.op(cls, x, b.choice([2, 3, 2.0, 0.5]) if b.t(x).min() > 0 else b.choice([2, 3])))
    elif cls is aten.DivScalarOp:
        b.to_pool(b.op(cls, x, b.choice([2.0, 8.0, 0.125, 3])))
    else:
        b.to_pool(b.op(cls, x, b.choice([1.0, 2, 0.5, -3.0])))


def step_unary(b: GraphBuilder) -> None:
    """An activation or elementwise math op (rsqrt/exp/log only where defined and tame)."""
    x = b.pick()
    t = b.t(x)
    options: list[Any] = list(_UNARY)
    if t.numel() and t.abs().max() < 20:
        options.append(aten.ExpOp)
    if t.numel() and t.min() > 1e-2:
        options += [aten.RsqrtOp, aten.SqrtOp, aten.LogOp, aten.ReciprocalOp]
    cls = b.choice(options)
    if cls is aten.GeluOp and b.chance(40):
        b.to_pool(b.op(cls, x, approximate="tanh"))
    else:
        b.to_pool(b.op(cls, x))


def step_reduce(b: GraphBuilder) -> None:
    """mean / sum / amax over one or two dims, usually keepdim (as norms write them)."""
    x = b.pick(lambda t: t.dim() >= 2)
    rank = len(b.shape_of(x))
    dims = [b.choice([-1, *range(rank)])]
    if b.chance(20):
        other = b.integer(0, rank - 1)
        if other % rank != dims[0] % rank:
            dims.append(other)
    keepdim = not b.chance(30)
    cls = b.choice([aten.MeanDimOp, aten.SumDimIntListOp, aten.AmaxOp])
    b.to_pool(b.op(cls, x, dims, keepdim))


def _factor_splits(n: int) -> list[tuple[int, int]]:
    return [(a, n // a) for a in range(2, n) if n % a == 0]


def step_reshape(b: GraphBuilder) -> None:
    """view/reshape merging two adjacent dims, splitting one, flattening, or (un)squeezing."""
    x = b.pick(lambda t: t.dim() >= 1)
    shape = list(b.shape_of(x))
    how = b.choice(["merge", "split", "flatten", "unsqueeze", "squeeze", "minus_one"])
    if how == "merge" and len(shape) >= 2:
        i = b.integer(0, len(shape) - 2)
        new = shape[:i] + [shape[i] * shape[i + 1]] + shape[i + 2:]
        if new[i] > 64:
            new = shape
    elif how == "split" and any(_factor_splits(d) for d in shape):
        i = b.choice([i for i, d in enumerate(shape) if _factor_splits(d)])
        f = b.choice(_factor_splits(shape[i]))
        new = shape[:i] + list(f) + shape[i + 1:]
        if len(new) > 4:
            new = shape
    elif how == "flatten" and len(shape) >= 2:
        start = b.integer(0, len(shape) - 2)
        b.to_pool(b.op(aten.FlattenUsingIntsOp, x, start, -1))
        return
    elif how == "unsqueeze" and len(shape) < 4:
        b.to_pool(b.op(aten.UnsqueezeOp, x, b.integer(-len(shape) - 1, len(shape))))
        return
    elif how == "squeeze" and 1 in shape and len(shape) >= 2:
        b.to_pool(b.op(aten.SqueezeDimOp, x, shape.index(1)))
        return
    elif how == "minus_one" and len(shape) >= 2:
        new = [-1] + shape[1:]
    else:
        new = shape[::-1] if len(shape) > 1 else shape
    b.to_pool(b.reshape(x, new))


def step_transpose(b: GraphBuilder) -> None:
    """transpose.int / permute / t on a pool value."""
    x = b.pick(lambda t: t.dim() >= 2)
    rank = len(b.shape_of(x))
    how = b.choice(["transpose", "permute", "t"] if rank == 2 else ["transpose", "permute"])
    if how == "transpose":
        d0 = b.integer(-rank, rank - 1)
        d1 = b.integer(-rank, rank - 1)
        b.to_pool(b.op(aten.TransposeIntOp, x, d0, d1))
    elif how == "t":
        b.to_pool(b.op(aten.TOp, x))
    else:
        perm = b.draw(st.permutations(list(range(rank))))
        b.to_pool(b.op(aten.PermuteOp, x, list(perm)))


def step_matmul(b: GraphBuilder) -> None:
    """matmul with a weight or another value, linear, mm or bmm."""
    x = b.pick(lambda t: t.dim() >= 1)
    sx = b.shape_of(x)
    k = sx[-1]
    n = b.dim()
    how = b.choice(["linear", "matmul_weight", "matmul_value", "mm", "bmm"])
    if how == "linear":
        bias = b.weight((n,), "bias", kind="bias") if b.chance(60) else None
        b.to_pool(b.op(aten.LinearOp, x, b.weight((n, k), "linear.weight"), bias))
    elif how == "mm" and len(sx) == 2:
        b.to_pool(b.op(aten.MmOp, x, b.weight((k, n), "mm.weight")))
    elif how == "bmm" and len(sx) == 3:
        y = b.pick(lambda t: t.dim() == 3 and t.shape[0] == sx[0] and t.shape[1] == k,
                   lambda: b.input((sx[0], k, n)))
        b.to_pool(b.op(aten.BmmOp, x, y))
    elif how == "matmul_value" and len(sx) >= 2:
        batch = sx[:-2]
        y = b.pick(lambda t: t.dim() >= 2 and t.shape[-2] == k and _broadcastable(batch, t.shape[:-2])
                   and t.dim() <= 4, lambda: b.input((*batch[len(batch) - b.integer(0, len(batch)):], k, n)))
        b.to_pool(b.op(aten.MatmulOp, x, y))
    else:
        b.to_pool(b.op(aten.MatmulOp, x, b.weight((k, n), "matmul.weight")))


def step_softmax(b: GraphBuilder) -> None:
    x = b.pick()
    rank = len(b.shape_of(x))
    dim = b.choice([-1, *range(rank)])
    cls = b.choice([aten.SoftmaxIntOp, aten.LogSoftmaxIntOp])
    b.to_pool(b.op(cls, x, dim))


def step_layer_norm(b: GraphBuilder) -> None:
    x = b.pick()
    d = b.shape_of(x)[-1]
    affine = b.chance(70)
    w = b.weight((d,), "ln.weight", kind="norm") if affine else None
    bias = b.weight((d,), "ln.bias", kind="bias") if affine and b.chance(70) else None
    b.to_pool(b.op(aten.LayerNormOp, x, [d], w, bias, b.choice([1e-5, 1e-6, 1e-12])))


def step_where(b: GraphBuilder) -> None:
    """An i1 side graph: compare two values, then select with where / masked_fill."""
    x = b.pick()
    sx = b.shape_of(x)
    if b.chance(50):
        mask = b.op(b.choice([aten.GtScalarOp, aten.LtScalarOp, aten.GeScalarOp]), x, b.choice([0.0, 0.5, -1]))
    else:
        y = b.input(_partner_shape(b, sx))
        mask = b.op(b.choice(_COMPARE), x, y)
    if b.chance(30):
        mask = b.op(b.choice([aten.LogicalNotOp, aten.BitwiseNotOp]), mask)
    how = b.choice(["where", "masked_fill", "where_scalar"])
    if how == "where":
        other = b.pick(lambda t: _broadcastable(t.shape, sx) and t.dim() <= len(sx), lambda: b.input(sx))
        b.to_pool(b.op(aten.WhereSelfOp, mask, x, other))
    elif how == "masked_fill":
        b.to_pool(b.op(aten.MaskedFillScalarOp, x, mask, b.choice([0.0, -1.0, 100.0])))
    else:
        b.to_pool(b.op(aten.WhereScalarOtherOp, mask, x, 0.0))


def step_cat_slice(b: GraphBuilder) -> None:
    x = b.pick(lambda t: t.dim() >= 1)
    shape = b.shape_of(x)
    dim = b.integer(0, len(shape) - 1)
    if b.chance(50) and shape[dim] * 2 <= 2 * MAX_DIM:
        others = [v for v in b.pool if b.shape_of(v)[:dim] + b.shape_of(v)[dim + 1:] == shape[:dim] + shape[dim + 1:]
                  and len(b.shape_of(v)) == len(shape) and shape[dim] + b.shape_of(v)[dim] <= 2 * MAX_DIM]
        y = b.choice(others) if others else x
        b.to_pool(b.op(aten.CatOp, [x, y], dim))
    elif shape[dim] >= 2:
        start = b.integer(0, shape[dim] - 1)
        b.to_pool(b.op(aten.SliceTensorOp, x, dim, start, b.integer(start + 1, shape[dim])))
    else:
        b.to_pool(b.op(aten.SelectIntOp, x, dim, 0)) if len(shape) > 1 else b.to_pool(b.op(aten.CloneOp, x))


def step_embedding(b: GraphBuilder) -> None:
    """An i64 side graph: token ids (an input) looking up an embedding table weight."""
    vocab, d = b.dim(2), b.dim()
    ids = b.input(b.shape(min_rank=1, max_rank=2), I64, name="input_ids",
                  value=torch.randint(0, vocab, b.shape(min_rank=1, max_rank=2), generator=b.gen), pool=False)
    b.to_pool(b.op(aten.EmbeddingOp, b.weight((vocab, d), "embed.weight", kind="bias"), ids))


RANDOM_STEPS: dict[str, Callable[[GraphBuilder], None]] = {
    "binary": step_binary,
    "unary": step_unary,
    "scalar": step_scalar,
    "reduce": step_reduce,
    "reshape": step_reshape,
    "transpose": step_transpose,
    "matmul": step_matmul,
    "softmax": step_softmax,
    "layer_norm": step_layer_norm,
    "where": step_where,
    "cat_slice": step_cat_slice,
    "embedding": step_embedding,
}
"""One random op (or a tiny side graph) each; `aten_graphs` draws `max_ops` of them at most."""


# --- motifs ------------------------------------------------------------------------------------


def _copy_like(b: GraphBuilder, x: SSAValue, kind: str) -> SSAValue:
    """A value-preserving op of the given kind (what DCE/fold should see through)."""
    if kind == "dropout_eval":
        return b.op(aten.DropoutOp, x, b.choice([0.0, 0.1, 0.5]), False)
    if kind == "dropout_p0":
        return b.op(aten.DropoutOp, x, 0.0, True)
    if kind == "alias":
        return b.op(aten.AliasOp, x)
    if kind == "clone":
        return b.op(aten.CloneOp, x)
    if kind == "contiguous":
        return b.op(aten.ContiguousOp, x)
    if kind == "detach":
        return b.op(aten.DetachOp, x)
    if kind == "to_same":
        return b.op(aten.ToDtypeOp, x, b.t(x).dtype)
    if kind == "to_copy_same":
        return b.op(aten.ToCopyOp, x, dtype=b.t(x).dtype)
    raise ValueError(kind)


_COPY_KINDS = ("contiguous", "clone", "alias", "dropout_eval", "dropout_p0", "detach", "to_same", "to_copy_same")


def dead_code(b: GraphBuilder) -> None:
    """Code DCE removes: unused pure ops (chains of them), ``_assert_tensor_metadata``, and
    value-preserving ops (dropout p=0 or train=False, alias, clone, contiguous, detach,
    ``to.dtype``/``_to_copy`` to the same dtype) between live ops."""
    x = b.pick()
    kinds = []
    y = x
    for _ in range(b.integer(1, 3)):
        kind = b.choice(["unused", "assert", "unused_weight", *_COPY_KINDS])
        kinds.append(kind)
        if kind == "unused":
            u = b.op(b.choice(_UNARY), y)
            if b.chance(50):  # a dead chain: DCE must iterate
                b.mark_dead(u)
                u = b.op(aten.MulTensorOp, u, y)
            b.mark_dead(u)
        elif kind == "assert":
            b.op(aten.AssertTensorMetadataOp, y, list(b.shape_of(y)), dtype=b.t(y).dtype)
        elif kind == "unused_weight":
            b.mark_dead(b.weight((b.dim(), b.dim()), "unused.weight"))
        else:
            y = _copy_like(b, y, kind)
    y = b.op(b.choice([aten.ReluOp, aten.TanhOp]), y) if y is not x and b.chance(50) else y
    b.to_pool(y)
    b.note(f"dead_code[{','.join(kinds)}]", "dead_code")


def duplicates(b: GraphBuilder) -> None:
    """Identical ops on identical operands (CSE merges them), duplicated weight/constant ops, and
    near-duplicates that differ in one property (must stay separate: tag ``duplicates:near``)."""
    x = b.pick()
    rank = len(b.shape_of(x))
    kind = b.choice(["unary", "binary", "softmax", "transpose", "linear", "weight", "constant", "reduce"])
    near: Callable[[], SSAValue] | None = None
    if kind == "unary":
        cls = b.choice(_UNARY)
        make = lambda: b.op(cls, x)  # noqa: E731
        if cls is aten.GeluOp:
            near = lambda: b.op(cls, x, approximate="tanh")  # noqa: E731
    elif kind == "binary":
        y = b.pick(lambda t: t.shape == b.t(x).shape, lambda: b.input(b.shape_of(x)))
        cls = b.choice([aten.AddTensorOp, aten.MulTensorOp, aten.SubTensorOp])
        make = lambda: b.op(cls, x, y)  # noqa: E731
        near = (lambda: b.op(cls, y, x)) if cls is aten.SubTensorOp else (lambda: b.op(cls, x, y, alpha=2)) \
            if cls is aten.AddTensorOp else None
    elif kind == "softmax":
        make = lambda: b.op(aten.SoftmaxIntOp, x, -1)  # noqa: E731
        near = (lambda: b.op(aten.SoftmaxIntOp, x, 0)) if rank > 1 and b.shape_of(x)[0] > 1 else None
    elif kind == "transpose" and rank >= 2:
        make = lambda: b.op(aten.TransposeIntOp, x, 0, 1)  # noqa: E731
        near = (lambda: b.op(aten.TransposeIntOp, x, -2, -1)) if rank > 2 else None
    elif kind == "linear":
        w = b.weight((b.dim(), b.shape_of(x)[-1]), "linear.weight")
        make = lambda: b.op(aten.LinearOp, x, w)  # noqa: E731
    elif kind == "weight":
        w = b.weight((b.shape_of(x)[-1],), "scale", kind="norm")
        name = w.owner.weight_name.data  # type: ignore[union-attr]
        b.mark_dead(w)
        make = lambda: b.op(aten.MulTensorOp, x, b.weight_ref(name))  # noqa: E731
    elif kind == "constant":
        value = b.choice([0.5, 2.0, 3])
        make = lambda: b.op(aten.MulTensorOp, x, b.const(value, F32))  # noqa: E731
    else:
        make = lambda: b.op(aten.SumDimIntListOp, x, [-1], True)  # noqa: E731
        near = lambda: b.op(aten.SumDimIntListOp, x, [-1], False)  # noqa: E731
    copies = [make() for _ in range(b.integer(2, 3))]
    if b.chance(50) and all(b.shape_of(c) == b.shape_of(copies[0]) for c in copies):
        out = copies[0]
        for c in copies[1:]:
            out = b.op(aten.AddTensorOp, out, c)
        b.to_pool(out)
    else:
        for c in copies:
            b.to_pool(c)
    tags = ["duplicates"]
    if near is not None and b.chance(40):
        b.to_pool(near())
        tags.append("duplicates:near")
    b.note(f"duplicates[{kind} x{len(copies)}{', near' if len(tags) > 1 else ''}]", *tags)


def identities(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """Algebraic and shape identities fold removes: x+0, x-0, x*1, x/1, x**1, neg(neg x), view or
    reshape to the same shape, view of view, transpose of transpose, inverse permutes, expand to
    the same shape, to the same dtype.  Negative variants look alike but change the shape or dtype
    (``x * ones`` of a bigger shape, ``int + 0.0``, ``int / 1``): tag ``identities:negative``."""
    negative = b.chance(20) if negative is None else negative
    if negative:
        kind = b.choice(["broadcast_ones", "int_plus_float_zero", "int_div_one", "transpose_not_inverse"])
        if kind in ("int_plus_float_zero", "int_div_one"):
            xi = b.input(b.shape(min_rank=1, max_rank=3), I64, name="ints", pool=False)
            cls = aten.AddScalarOp if kind == "int_plus_float_zero" else aten.DivScalarOp
            b.to_pool(b.op(cls, xi, 0.0 if cls is aten.AddScalarOp else 1))
        elif kind == "broadcast_ones":
            x = b.pick(lambda t: t.dim() <= 3)
            ones = b.op(aten.OnesOp, [b.dim(2), *b.shape_of(x)])
            b.to_pool(b.op(aten.MulTensorOp, x, ones))
        else:
            x = b.pick(lambda t: t.dim() == 3 and len(set(t.shape)) == 1,
                       lambda: b.input((b.dim(2),) * 3))
            b.to_pool(b.op(aten.TransposeIntOp, b.op(aten.TransposeIntOp, x, 0, 1), 1, 2))
        b.note(f"identities[NEGATIVE {kind}]", "identities", "identities:negative", f"identities:negative:{kind}")
        return
    x = b.pick()
    kinds = []
    y = x
    for _ in range(b.integer(1, 3)):
        shape = list(b.shape_of(y))
        rank = len(shape)
        kind = b.choice(["add0", "sub0", "mul1", "div1", "pow1", "neg_neg", "view_same", "reshape_same",
                         "view_view", "transpose_transpose", "permute_inverse", "expand_same", "to_same",
                         "add_zero_tensor", "mul_one_tensor"])
        kinds.append(kind)
        if kind == "add0":
            y = b.op(aten.AddScalarOp, y, b.choice([0, 0.0]))
        elif kind == "sub0":
            y = b.op(aten.SubScalarOp, y, b.choice([0, 0.0])) if b.chance(50) else \
                b.op(aten.SubTensorOp, y, b.const(0.0, F32))
        elif kind == "mul1":
            y = b.op(aten.MulScalarOp, y, b.choice([1, 1.0]))
        elif kind == "div1":
            y = b.op(aten.DivScalarOp, y, b.choice([1, 1.0])) if b.chance(50) else \
                b.op(aten.DivTensorOp, y, b.const(1.0, F32))
        elif kind == "pow1":
            y = b.op(aten.PowTensorScalarOp, y, b.choice([1, 1.0]))
        elif kind == "neg_neg":
            y = b.op(aten.NegOp, b.op(aten.NegOp, y))
        elif kind == "view_same":
            y = b.reshape(y, shape)
        elif kind == "reshape_same":
            y = b.op(aten.ReshapeOp, y, shape)
        elif kind == "view_view":
            y = b.reshape(b.reshape(y, [-1]), shape)
        elif kind == "transpose_transpose" and rank >= 2:
            d0, d1 = b.integer(0, rank - 1), b.integer(0, rank - 1)
            swap = b.chance(50)
            y = b.op(aten.TransposeIntOp, b.op(aten.TransposeIntOp, y, d0, d1), d1 if swap else d0, d0 if swap else d1)
        elif kind == "permute_inverse" and rank >= 2:
            perm = list(b.draw(st.permutations(list(range(rank)))))
            inverse = [perm.index(i) for i in range(rank)]
            y = b.op(aten.PermuteOp, b.op(aten.PermuteOp, y, perm), inverse)
        elif kind == "expand_same":
            y = b.op(aten.ExpandOp, y, shape if b.chance(50) else [-1] * rank)
        elif kind == "add_zero_tensor":
            zeros = b.op(aten.ZerosOp, shape) if b.chance(50) else b.const(0.0, F32)
            y = b.op(aten.AddTensorOp, y, zeros)
        elif kind == "mul_one_tensor":
            ones = b.op(aten.OnesLikeOp, y) if b.chance(50) else b.const(1.0, F32)
            y = b.op(aten.MulTensorOp, y, ones)
        else:
            y = b.op(aten.ToDtypeOp, y, F32)
    b.to_pool(y)
    b.note(f"identities[{','.join(kinds)}]", "identities")


_ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "gelu_tanh_poly", "gelu_erf_poly", "silu", "sigmoid")


def activation(b: GraphBuilder, x: SSAValue, kind: str) -> SSAValue:
    """Apply an activation the way models write it (poly forms are GPT-2's and BERT's own code)."""
    if kind == "none":
        return x
    if kind == "relu":
        return b.op(aten.ReluOp, x)
    if kind == "gelu":
        return b.op(aten.GeluOp, x)
    if kind == "gelu_tanh":
        return b.op(aten.GeluOp, x, approximate="tanh")
    if kind == "silu":
        return b.op(aten.SiluOp, x)
    if kind == "sigmoid":
        return b.op(aten.SigmoidOp, x)
    if kind == "gelu_tanh_poly":  # 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))
        half = b.op(aten.MulScalarOp, x, 0.5)
        cube = b.op(aten.PowTensorScalarOp, x, 3.0)
        inner = b.op(aten.AddTensorOp, x, b.op(aten.MulScalarOp, cube, 0.044715))
        t = b.op(aten.TanhOp, b.op(aten.MulScalarOp, inner, math.sqrt(2.0 / math.pi)))
        return b.op(aten.MulTensorOp, half, b.op(aten.AddScalarOp, t, 1.0))
    if kind == "gelu_erf_poly":  # x*0.5*(1+erf(x/sqrt(2)))
        half = b.op(aten.MulScalarOp, x, 0.5)
        e = b.op(aten.ErfOp, b.op(aten.DivScalarOp, x, math.sqrt(2.0)))
        return b.op(aten.MulTensorOp, half, b.op(aten.AddScalarOp, e, 1.0))
    raise ValueError(kind)


def _transpose_2d(b: GraphBuilder, w: SSAValue) -> SSAValue:
    how = b.choice(["t", "transpose", "permute"])
    if how == "t":
        return b.op(aten.TOp, w)
    if how == "transpose":
        return b.op(aten.TransposeIntOp, w, 0, 1)
    return b.op(aten.PermuteOp, w, [1, 0])


def _as_2d(b: GraphBuilder, x: SSAValue) -> SSAValue:
    shape = b.shape_of(x)
    return x if len(shape) == 2 else b.reshape(x, [-1, shape[-1]])


def linear_act(b: GraphBuilder, *, form: str | None = None, act: str | None = None) -> None:
    """A linear layer and its activation: ``linear``, ``addmm`` (bias, x, Wᵀ) with the 2-d views
    export adds, ``mm`` + add, ``matmul`` + bias; then relu / gelu / gelu(tanh) / GPT-2's
    written-out tanh polynomial / BERT's erf form / silu / sigmoid (or none)."""
    x = b.pick_rank(1, 4)
    shape = b.shape_of(x)
    k, n = shape[-1], b.dim()
    form = form or b.choice(["linear", "addmm", "mm_add", "matmul_bias", "addmm_conv1d"])
    act = act or b.choice(_ACTIVATIONS)
    bias = b.weight((n,), "fc.bias", kind="bias")
    if form == "linear":
        y = b.op(aten.LinearOp, x, b.weight((n, k), "fc.weight"), bias if b.chance(75) else None)
    elif form == "matmul_bias":
        h = b.op(aten.MatmulOp, x, b.weight((k, n), "fc.weight"))
        y = b.op(aten.AddTensorOp, *((h, bias) if b.chance(70) else (bias, h)))
    else:
        x2 = _as_2d(b, x)
        if form == "addmm_conv1d":  # GPT-2's Conv1D stores the weight as [in, out]
            wt = b.weight((k, n), "c_fc.weight")
        else:
            wt = _transpose_2d(b, b.weight((n, k), "fc.weight"))
        if form == "mm_add":
            y = b.op(aten.AddTensorOp, b.op(aten.MmOp, x2, wt), bias)
        else:
            y = b.op(aten.AddmmOp, bias, x2, wt)
        if len(shape) != 2:
            y = b.reshape(y, [*shape[:-1], n])
    b.to_pool(activation(b, y, act))
    b.note(f"linear_act[{form}+{act}]", "linear_act", f"linear_act:{form}", f"linear_act:{act}")


def swiglu(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """Llama's MLP: ``down(silu(x·Wg) * (x·Wu))`` with linear (or matmul) projections.
    Negative variant: the silu is applied to the input, not to a projection (tag ``swiglu:negative``)."""
    x = b.pick_rank(1, 4)
    e, f = b.shape_of(x)[-1], b.dim()
    negative = b.chance(15) if negative is None else negative
    use_matmul = b.chance(25)

    def proj(v: SSAValue, out: int, inp: int, prefix: str) -> SSAValue:
        if use_matmul:
            return b.op(aten.MatmulOp, v, b.weight((inp, out), prefix))
        return b.op(aten.LinearOp, v, b.weight((out, inp), prefix))

    gate = proj(x, f, e, "mlp.gate_proj.weight")
    up = proj(x, f, e, "mlp.up_proj.weight")
    if negative:
        gate = b.op(aten.SumDimIntListOp, b.op(aten.SiluOp, x), [-1], True)
        act = gate
    else:
        act = b.op(aten.SiluOp, gate)
    h = b.op(aten.MulTensorOp, *((act, up) if b.chance(70) else (up, act)))
    if b.chance(70):
        h = proj(h, e, f, "mlp.down_proj.weight")
    b.to_pool(h)
    tags = ["swiglu"] + (["swiglu:negative"] if negative else [])
    b.note(f"swiglu[{'matmul' if use_matmul else 'linear'}{', NEGATIVE silu(x)' if negative else ''}]", *tags)


def rmsnorm(b: GraphBuilder, *, negative: bool | None = None) -> None:
    """Llama's RMSNorm: ``w * (x * rsqrt(mean(x**2, -1, keepdim) + eps))`` with the ``to.dtype``
    float32 casts it adds; variants use x*x, 1/sqrt, eps as a tensor.  Negative variant: the mean
    runs over another dim (tag ``rmsnorm:negative``)."""
    x = b.pick_rank(1, 4)
    rank = len(b.shape_of(x))
    e = b.shape_of(x)[-1]
    negative = (b.chance(15) if negative is None else negative) and rank >= 2
    casts = b.chance(60)
    h = b.op(aten.ToDtypeOp, x, F32) if casts else x
    sq = b.op(aten.PowTensorScalarOp, h, 2) if b.chance(70) else b.op(aten.MulTensorOp, h, h)
    var = b.op(aten.MeanDimOp, sq, [-2 if negative else -1], True)
    eps = b.choice([1e-6, 1e-5])
    var = b.op(aten.AddScalarOp, var, eps) if b.chance(75) else b.op(aten.AddTensorOp, var, b.const(eps, F32))
    r = b.op(aten.RsqrtOp, var) if b.chance(75) else b.op(aten.ReciprocalOp, b.op(aten.SqrtOp, var))
    h = b.op(aten.MulTensorOp, h, r)
    if casts:
        h = b.op(aten.ToDtypeOp, h, F32)
    if b.chance(90):
        w = b.weight((e,), "norm.weight", kind="norm")
        h = b.op(aten.MulTensorOp, *((w, h) if b.chance(70) else (h, w)))
    b.to_pool(h)
    tags = ["rmsnorm"] + (["rmsnorm:negative"] if negative else [])
    b.note(f"rmsnorm[eps={eps}{', casts' if casts else ''}{', NEGATIVE mean(-2)' if negative else ''}]", *tags)


def layout(b: GraphBuilder) -> None:
    """What the layout pass targets: transposes/permutes feeding matmul on either side, a
    transposed weight feeding matmul, inverse permute pairs around elementwise ops, chains of
    views/reshapes, and transpose → contiguous → view (GPT-2's merge-heads)."""
    kinds = []
    for _ in range(b.integer(1, 2)):
        kind = b.choice(["weight_t", "transpose_rhs", "transpose_lhs", "inverse_permute", "view_chain",
                         "merge_heads", "transpose_both"])
        kinds.append(kind)
        if kind == "weight_t":
            x = b.pick_rank(1, 4)
            k, n = b.shape_of(x)[-1], b.dim()
            wt = _transpose_2d(b, b.weight((n, k), "proj.weight"))
            b.to_pool(b.op(aten.MatmulOp, x, wt) if len(b.shape_of(x)) > 2 or b.chance(50)
                      else b.op(aten.MmOp, _as_2d(b, x), wt))
        elif kind in ("transpose_rhs", "transpose_lhs", "transpose_both"):
            batch = b.shape(min_rank=0, max_rank=2)
            m, k, n = b.dim(), b.dim(), b.dim()
            lhs = b.input((*batch, k, m) if kind != "transpose_rhs" else (*batch, m, k))
            rhs = b.input((*batch, n, k) if kind != "transpose_lhs" else (*batch, k, n))
            if kind != "transpose_rhs":
                lhs = b.op(aten.TransposeIntOp, lhs, -2, -1)
            if kind != "transpose_lhs":
                rank = len(batch) + 2
                rhs = b.op(aten.TransposeIntOp, rhs, -2, -1) if b.chance(60) else \
                    b.op(aten.PermuteOp, rhs, [*range(rank - 2), rank - 1, rank - 2])
            b.to_pool(b.op(aten.MatmulOp, lhs, rhs))
        elif kind == "inverse_permute":
            x = b.pick_rank(2, 4)
            rank = len(b.shape_of(x))
            perm = list(b.draw(st.permutations(list(range(rank)))))
            y = b.op(aten.PermuteOp, x, perm)
            if b.chance(60):
                y = b.op(b.choice(_UNARY), y)
            b.to_pool(b.op(aten.PermuteOp, y, [perm.index(i) for i in range(rank)]))
        elif kind == "view_chain":
            x = b.pick_rank(1, 4)
            shape = list(b.shape_of(x))
            numel = math.prod(shape)
            y = b.reshape(x, [numel])
            splits = _factor_splits(numel)
            if splits and b.chance(70):
                y = b.reshape(y, list(b.choice(splits)))
            if b.chance(50):
                y = b.op(aten.ReshapeOp, y, [1, numel])
            b.to_pool(b.reshape(y, shape))
        elif kind == "merge_heads":
            bsz, heads, s, d = b.dim(1, 2), b.dim(1, 4), b.dim(), b.dim()
            x = b.input((bsz, heads, s, d))
            y = b.op(aten.TransposeIntOp, x, 1, 2)
            if b.chance(70):
                y = b.op(aten.ContiguousOp, y)
            b.to_pool(b.reshape(y, [bsz, s, heads * d]))
    b.note(f"layout[{','.join(kinds)}]", "layout")


# -- constant subgraphs (mask and position-id code) ----------------------------------------------


def _causal_bool(b: GraphBuilder, q: int, k: int) -> tuple[SSAValue, str]:
    """A [q, k] bool mask, True where key j may be seen by query i (j <= i + k - q), from constants."""
    how = b.choice(["arange_le", "tril_ones", "arange_diff_index"])
    offset = k - q
    if how == "tril_ones":
        return b.op(aten.TrilOp, b.op(aten.OnesOp, [q, k], dtype=BOOL), offset), how
    keys = b.op(aten.ArangeOp, k, name="kv_arange")
    if how == "arange_diff_index":  # positions from cumsum(ones) - 1, reordered by an identity index
        ones = b.op(aten.OnesOp, [k], dtype=I64)
        keys = b.op(aten.SubScalarOp, b.op(aten.CumsumOp, ones, 0), 1, name="position_ids")
        steps = b.op(aten.DiffOp, keys, prepend=b.const(torch.tensor([-1])))  # all ones
        keys = b.op(aten.MulTensorOp, keys, steps)
        keys = b.op(aten.IndexTensorOp, keys, [b.op(aten.ArangeOp, k)])
    queries = b.op(aten.ArangeStartOp, offset, offset + q, name="cache_position")
    mask = b.op(aten.LeTensorOp, b.op(aten.UnsqueezeOp, keys, 0), b.op(aten.UnsqueezeOp, queries, 1))
    return mask, how


def _padding_bool(b: GraphBuilder, k: int) -> SSAValue:
    """A [1, k] bool padding mask: an inline attention_mask constant (last key padded, first key
    always kept), or ``new_ones`` on some live value (a constant although it has an operand)."""
    if b.pool and b.chance(40):
        am = b.op(aten.NewOnesOp, b.choice(b.pool), [1, k], dtype=I64, name="attention_mask")
    else:
        value = torch.ones(1, k, dtype=I64)
        if k > 1:
            value[0, k - 1] = 0
        am = b.const(value, name="attention_mask")
    return b.op(aten.EqScalarOp, am, 1)


def mask_from_constants(b: GraphBuilder, q: int, k: int) -> tuple[SSAValue, bool, str]:
    """A causal and/or padding mask built only from constants; returns (mask, is_bool, recipe).

    A float mask is additive (0 or a large negative); a bool mask is True where allowed.
    """
    how = b.choice(["causal", "causal_and_padding", "padding_float", "triu_float", "causal_float"])
    if how == "triu_float":
        fill = b.choice([FMIN, float("-inf")])
        return b.op(aten.TriuOp, b.op(aten.FullOp, [q, k], fill), k - q + 1), False, f"triu(full({fill}))"
    if how == "padding_float":  # (1 - attention_mask) * finfo.min, as [1, 1, k]
        am = b.const(torch.ones(1, k, dtype=I64), name="attention_mask")
        inv = b.op(aten.RsubScalarOp, b.op(aten.ToDtypeOp, am, F32), 1.0)
        return b.op(aten.MulScalarOp, b.op(aten.UnsqueezeOp, inv, 1), FMIN), False, "padding_float"
    mask, recipe = _causal_bool(b, q, k)
    if how == "causal_and_padding":
        pad = _padding_bool(b, k)
        mask = b.op(b.choice([aten.BitwiseAndTensorOp, aten.LogicalAndOp, aten.AndTensorOp]), mask, pad)
        recipe += "&padding"
    if how == "causal_float":
        zero = b.const(0.0, F32)
        return b.op(aten.WhereScalarOtherOp, mask, zero, FMIN), False, recipe + "->where(0,min)"
    return mask, True, recipe


def apply_mask(b: GraphBuilder, scores: SSAValue, mask: SSAValue, is_bool: bool) -> tuple[SSAValue, str]:
    """Apply a mask the ways models do: add a float mask; where / masked_fill with a bool mask."""
    if not is_bool:
        return b.op(aten.AddTensorOp, scores, mask), "add"
    how = b.choice(["where", "masked_fill"])
    if how == "where":
        fill = b.const(b.choice([FMIN, float("-inf")]), F32, name="mask_value")
        return b.op(aten.WhereSelfOp, mask, scores, fill), "where"
    inverted = b.op(b.choice([aten.LogicalNotOp, aten.BitwiseNotOp]), mask)
    return b.op(aten.MaskedFillScalarOp, scores, inverted, b.choice([FMIN, float("-inf")])), "masked_fill"


def constant_subgraph(b: GraphBuilder) -> None:
    """Mask and position-id code computed from constants only (arange, full, ones, comparisons,
    cumsum, diff, index, bitwise_and, where, triu/tril), as transformers writes it, then used by
    the main graph: a masked softmax, or learned position embeddings indexed by position ids."""
    if b.chance(30):
        x = b.pick_rank(2, 4)
        s, d = b.shape_of(x)[-2:]
        if b.chance(50):
            pos = b.op(aten.ArangeOp, s, name="position_ids")
        else:
            pos = b.op(aten.SubScalarOp, b.op(aten.CumsumOp, b.op(aten.OnesOp, [1, s], dtype=I64), 1), 1)
        emb = b.op(aten.EmbeddingOp, b.weight((s + b.integer(0, 3), d), "wpe.weight", kind="bias"), pos)
        b.to_pool(b.op(aten.AddTensorOp, x, emb))
        b.note("constant_subgraph[position_ids->embedding]", "constant_subgraph")
        return
    x = b.pick_rank(2, 4)
    q, k = b.shape_of(x)[-2:]
    if k < q:  # a causal mask needs a key for every query
        x = b.input((*b.shape_of(x)[:-2], q, q + b.integer(0, 2)))
        q, k = b.shape_of(x)[-2:]
    mask, is_bool, recipe = mask_from_constants(b, q, k)
    masked, how = apply_mask(b, x, mask, is_bool)
    b.to_pool(b.op(aten.SoftmaxIntOp, masked, -1))
    b.note(f"constant_subgraph[{recipe}, {how}]", "constant_subgraph")


# -- attention ------------------------------------------------------------------------------------

_ATTN_NEGATIVES = ("k_not_transposed", "k_batch_permuted", "softmax_dim", "mask_after_softmax",
                   "scale_after_softmax")


def attention(b: GraphBuilder, *, negative: bool | str | None = None, gqa: bool | None = None) -> None:
    """Decomposed eager attention: ``softmax(Q·Kᵀ * scale + mask, -1) · V`` in the forms models
    export: Kᵀ via ``transpose(-2,-1)``/``transpose(2,3)``/``permute``; matmul or bmm on 3-d views;
    scale as div, mul, or √scale on both Q and Kᵀ (or none); an additive float mask, a causal
    ``where``/``masked_fill`` with a bool mask (from constants or an input); softmax with or without
    dtype; dropout(p=0); Q/K/V from inputs or from linear projections split into heads; GQA
    ``repeat_kv`` (unsqueeze + expand + reshape); output heads merged back.

    Negative variants (tag ``attention:negative``, never fused): K used without transpose (Sk == D),
    K permuted with its batch dims swapped (B == H), softmax over dim -2, a mask added after the
    softmax, a scale applied after the softmax.  ``negative`` may name one of them.
    """
    if negative is None:
        negative = b.chance(25)
    neg = (negative if isinstance(negative, str) else b.choice(_ATTN_NEGATIVES)) if negative else None
    bsz, heads, sq, sk, d = b.dim(1, 2), b.dim(1, 4), b.dim(), b.dim(), b.dim()
    if neg == "k_not_transposed":
        sk = d
    if neg == "k_batch_permuted":
        heads = bsz = b.dim(2, 3)
    kv_heads = heads
    if (gqa if gqa is not None else b.chance(30)) and neg != "k_batch_permuted":
        kv_heads = b.choice([h for h in range(1, heads + 1) if heads % h == 0])
    source = b.choice(["inputs", "projected", "bshd_inputs"])
    details = [source]

    def split_heads(v: SSAValue, n: int, s: int) -> SSAValue:
        return b.op(aten.TransposeIntOp, b.reshape(v, [bsz, s, n, d]), 1, 2)

    if source == "projected":
        sk = sq if neg != "k_not_transposed" else d
        sq = sk
        hidden = b.pick(lambda t: t.dim() == 3 and t.shape[0] == bsz and t.shape[1] == sq,
                        lambda: b.input((bsz, sq, b.dim())))
        e = b.shape_of(hidden)[-1]
        with_bias = b.chance(50)

        def project(n: int, tag: str) -> SSAValue:
            bias = b.weight((n * d,), f"attn.{tag}_proj.bias", kind="bias") if with_bias else None
            return b.op(aten.LinearOp, hidden, b.weight((n * d, e), f"attn.{tag}_proj.weight"), bias, name=tag)

        q = split_heads(project(heads, "q"), heads, sq)
        k = split_heads(project(kv_heads, "k"), kv_heads, sk)
        v = split_heads(project(kv_heads, "v"), kv_heads, sk)
    elif source == "bshd_inputs":
        q = split_heads(b.input((bsz, sq, heads * d), name="query", pool=False), heads, sq)
        k = split_heads(b.input((bsz, sk, kv_heads * d), name="key", pool=False), kv_heads, sk)
        v = split_heads(b.input((bsz, sk, kv_heads * d), name="value", pool=False), kv_heads, sk)
    else:
        q = b.input((bsz, heads, sq, d), name="query", pool=False)
        k = b.input((bsz, kv_heads, sk, d), name="key", pool=False)
        v = b.input((bsz, kv_heads, sk, d), name="value", pool=False)
    if kv_heads != heads:  # repeat_kv
        rep = heads // kv_heads

        def repeat_kv(t: SSAValue) -> SSAValue:
            e5 = b.op(aten.ExpandOp, b.op(aten.UnsqueezeOp, t, 2), [bsz, kv_heads, rep, sk, d])
            return b.op(aten.ReshapeOp, e5, [bsz, heads, sk, d])

        k, v = repeat_kv(k), repeat_kv(v)
        details.append(f"gqa {heads}/{kv_heads}")

    # Kᵀ
    if neg == "k_not_transposed":
        kt = k
    elif neg == "k_batch_permuted":
        kt = b.op(aten.PermuteOp, k, [1, 0, 3, 2])
    else:
        how = b.choice(["transpose-2-1", "transpose23", "permute"])
        kt = (b.op(aten.TransposeIntOp, k, -2, -1) if how == "transpose-2-1" else
              b.op(aten.TransposeIntOp, k, 2, 3) if how == "transpose23" else
              b.op(aten.PermuteOp, k, [0, 1, 3, 2]))
        details.append(how)
    scale_how = b.choice(["div", "mul", "split", "none", "div_tensor"])
    scale = 1.0 / math.sqrt(d)
    if scale_how == "split":
        root = math.sqrt(scale)
        q = b.op(aten.MulScalarOp, q, root)
        kt = b.op(aten.MulScalarOp, kt, root)
    use_bmm = b.chance(25) and neg != "k_batch_permuted"
    if use_bmm:
        q3 = b.reshape(q, [bsz * heads, sq, d])
        k3 = b.op(aten.ReshapeOp, kt, [bsz * heads, d, sk])
        scores = b.reshape(b.op(aten.BmmOp, q3, k3), [bsz, heads, sq, sk], name="attn_weights")
        details.append("bmm")
    else:
        scores = b.op(aten.MatmulOp, q, kt, name="attn_weights")
    if scale_how == "div":
        scores = b.op(aten.DivScalarOp, scores, math.sqrt(d))
    elif scale_how == "div_tensor":
        scores = b.op(aten.DivTensorOp, scores, b.const(math.sqrt(d), F32))
    elif scale_how == "mul":
        scores = b.op(aten.MulScalarOp, scores, scale)
    details.append(f"scale={scale_how}")

    mask_how = b.choice(["none", "float_input", "constants", "bool_input"])
    mask = None
    if mask_how == "float_input":
        shape = b.choice([(bsz, 1, sq, sk), (sq, sk), (1, 1, 1, sk)])
        value = torch.where(torch.rand(shape, generator=b.gen) < 0.3, FMIN, 0.0)
        value[..., 0] = 0.0  # every query sees at least one key
        mask, is_bool = b.input(shape, name="attention_mask", value=value, pool=False), False
    elif mask_how == "bool_input":
        value = torch.rand((bsz, 1, sq, sk), generator=b.gen) < 0.7
        value[..., 0] = True
        mask, is_bool = b.input(value.shape, BOOL, name="attention_mask", value=value, pool=False), True
    elif mask_how == "constants":
        mask, is_bool, recipe = mask_from_constants(b, sq, sk)
        details.append(recipe)
    if mask is not None and neg != "mask_after_softmax":
        scores, applied = apply_mask(b, scores, mask, is_bool)
        details.append(f"mask={mask_how}:{applied}")
    softmax_dim = -2 if neg == "softmax_dim" else b.choice([-1, 3])
    if b.chance(20):
        probs = b.op(aten.ToDtypeOp, b.op(aten.SoftmaxIntOp, scores, softmax_dim, F32), F32)
    elif b.chance(15):
        probs = b.op(aten.SoftmaxOp, scores, softmax_dim, False)
    else:
        probs = b.op(aten.SoftmaxIntOp, scores, softmax_dim, name="attn_probs")
    if neg == "mask_after_softmax":
        if mask is None or is_bool:
            mask = b.input((sq, sk), name="attention_mask", pool=False)
        probs = b.op(aten.AddTensorOp, probs, mask)
    elif neg == "scale_after_softmax":
        probs = b.op(aten.MulScalarOp, probs, 0.5)
    if b.chance(30):
        probs = b.op(aten.DropoutOp, probs, 0.0, b.chance(50))
        details.append("dropout")
    if use_bmm:
        out = b.reshape(b.op(aten.BmmOp, b.reshape(probs, [bsz * heads, sq, sk]),
                             b.op(aten.ReshapeOp, v, [bsz * heads, sk, d])), [bsz, heads, sq, d])
    else:
        out = b.op(aten.MatmulOp, probs, v, name="attn_output")
    if source != "inputs" or b.chance(40):  # merge heads
        out = b.op(aten.TransposeIntOp, out, 1, 2)
        if b.chance(60):
            out = b.op(aten.ContiguousOp, out)
        out = b.reshape(out, [bsz, sq, heads * d])
    b.to_pool(out)
    tags = ["attention"]
    if neg:
        tags += ["attention:negative", f"attention:negative:{neg}"]
        details.insert(0, f"NEGATIVE {neg}")
    b.note(f"attention[{', '.join(details)}]", *tags)


# --- the public strategies ---------------------------------------------------------------------

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
