"""Building one generated graph: `GraphBuilder` appends `aten` ops while evaluating them on concrete
tensors, and `finish` returns the `GraphCase` (module, weights, inputs, description, tags).

Every choice goes through hypothesis' ``draw``, so examples shrink; see the package docstring.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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
        # Fewer args than positional parameters is fine: the rest come as kwargs or defaults.
        bound = {s.name: a for s, a in zip(positional, args, strict=False)}
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
            types = [tensor_type(tuple(t.shape), t.dtype) for t in outputs]
            if sig.target in aten.AUX_RESULTS:  # CPU and meta disagree on these: the IR has meta's
                types = probe.infer_result_types()
        finally:
            probe.drop_all_references()
        op = cls.build_op(groups, properties, types)
        if sig.target in aten.AUX_RESULTS:
            outputs = list(op.with_declared_aux_shapes(outputs))
        self.block.add_op(op)
        self.op_count += 1
        for result, tensor in zip(op.results, outputs, strict=True):
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
