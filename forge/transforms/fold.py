"""Constant folding and algebraic identities on the `aten` dialect.

**What is constant.** `aten.constant`; `aten.weight` when the module has a WeightStore attached
(weights are fixed at compile time; without a store, as with plain `forge-opt` on text, a weight is
an opaque input); every side-effect-free schema op whose operands are all constant, which includes
the factories with no operands (`arange`, `full`, `zeros`, `ones`, `scalar_tensor`, ...); and the
`*_like`/`new_*` factories whatever their operand, since only its type matters. With static shapes
this covers the position-id and causal-mask subgraphs that `transformers` builds (arange,
comparisons, cumsum, diff, index, bitwise and, where, ...) and Llama's rotary cos/sin tables.

**How it is folded.** One forward sweep marks the constant ops (nothing is computed yet). The
*frontier* is the set of constant values used by a non-constant op; only the constant ops that
feed it are evaluated, in program order, with the op's own semantics (`op.call`, eager torch on
CPU). Each frontier value then becomes:

- an inline `aten.constant` when it has at most `max_inline_elements` elements;
- an `aten.full` when every element is the same (a large mask of zeros costs no storage; a large
  `full`/`zeros`/`ones` stays as it is);
- otherwise a new WeightStore entry (`store.add_constant`) referenced by a new `aten.weight`,

and the folded ops are erased (with the weights and constants only they used).

**Policy: never materialize a re-layout.** If a large frontier value is produced by a pure data
movement op (view/reshape, transpose/permute/t, expand/repeat, (un)squeeze, flatten, cat/stack,
clone/contiguous/alias), that op is kept and its operands are materialized instead. Folding it
would duplicate weight memory (`transpose(weight)` feeding a matmul: the layout pass decides how
weights are laid out) or multiply it (`expand` of a mask over heads), for no compute saved: these
ops are free or cheap at run time. Ops that compute or select (`embedding` of a weight by constant
ids, `index`, `slice`, arithmetic, `cos`/`sin`...) are folded even when their result is large.
Without a WeightStore, a large value cannot be stored, so its op is kept the same way. An op that
fails to evaluate, or whose result does not match its IR type, is kept too.

**Identities** (`ForgePattern`s, one forward sweep after folding; each checks the result type
equals the type of the value it forwards, so a broadcast or a dtype promotion is never dropped):
`x+0`, `x-0`, `x*1`, `x/1`, `x**1` (scalar forms, or tensor forms whose 0/1 is an `aten.constant`
or `full`/`zeros`/`ones`; never a stored weight: a norm weight initialized to ones must not change
the graph, or the model would compile differently once trained),
`-(-x)`, a constant pad by zeros, a symmetric zero pad into the convolution reading it
(`conv_padding`), view/reshape to the same shape, a view of a view (one view), transposes/permutes that
compose to the identity, `expand`/`slice` to the same shape, `to` the same dtype. `x+0 -> x`
ignores the sign of zero (`-0.0 + 0.0` is `+0.0`).

**Batch norm into convolution** (with a WeightStore only, after folding, before the identities):
an inference batch norm of a convolution used by nothing else becomes that convolution with a
rescaled weight and a new bias, both new store entries (`forge.transforms.batch_norm_folding`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import MemoryEffect, NoMemoryEffect

from dialects import aten
from dialects import aten_schema as schema
from dialects.aten_schema import ArgKind
from dialects.torch_types import dtype_of, shape_of, tensor_type
from forge.patterns import ForgePattern, apply_patterns, count_fired
from forge.transforms.batch_norm_folding import FoldBatchNormIntoConv
from forge.transforms.conv_padding import FoldPadIntoConv
from forge.transforms.dce import ForwardSameTypeConversion, erase_dead_operands
from forge.transforms.ir_queries import is_identity_permutation, permutation
from forge.transforms.traced_patterns import TracedPattern
from forge.weights import WeightStore, weights_of

if TYPE_CHECKING:
    import torch

# --- what folds -------------------------------------------------------------------------------------

LIKE_FACTORIES: frozenset[type[Operation]] = frozenset(
    {aten.NewOnesOp, aten.NewZerosOp, aten.FullLikeOp, aten.OnesLikeOp, aten.ZerosLikeOp}
)
"""Factories whose tensor operand only contributes its type: constant whatever the operand."""

RELAYOUT_OPS: frozenset[type[Operation]] = frozenset(
    {
        aten.ViewOp, aten.ReshapeOp, aten.UnsafeViewOp, aten.PermuteOp, aten.TransposeIntOp,
        aten.TOp, aten.ExpandOp, aten.RepeatOp, aten.UnsqueezeOp, aten.SqueezeOp, aten.SqueezeDimOp,
        aten.SqueezeDimsOp, aten.FlattenUsingIntsOp, aten.CatOp, aten.StackOp, aten.ContiguousOp,
        aten.CloneOp, aten.AliasOp, aten.DetachOp, aten.LiftFreshCopyOp,
    }
)
"""Pure data movement: a large result of these is never materialized (see the module docstring)."""

_NOT_FOLDABLE, _FOLDABLE, _CONSTANT, _WEIGHT = range(4)
_KIND: dict[type[Operation], int] = {aten.ConstantOp: _CONSTANT, aten.WeightOp: _WEIGHT}


def _kind(cls: type[Operation]) -> int:
    """How the folder treats ops of `cls`: a constant source, foldable, or not foldable."""
    kind = _KIND.get(cls)
    if kind is None:
        effects = cls.get_traits_of_type(MemoryEffect)
        foldable = (
            issubclass(cls, aten.AtenOp)
            and bool(effects)
            and all(isinstance(t, NoMemoryEffect) for t in effects)
        )
        kind = _KIND[cls] = _FOLDABLE if foldable else _NOT_FOLDABLE
    return kind


def _random(op: Operation) -> bool:
    """Ops that are `Pure` in the dialect but draw random numbers with these arguments."""
    return isinstance(op, aten.ScaledDotProductAttentionOp) and bool(op.arg("dropout_p"))


class _FoldFailed(Exception):
    pass


def _outputs(out: Any) -> list[torch.Tensor]:
    import torch

    if isinstance(out, torch.Tensor):
        return [out]
    if out is None:
        return []
    return list(out)


def _evaluate(op: aten.AtenOp, args: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    import torch

    try:
        with torch.no_grad():
            outs = _outputs(op.call(args))
    except Exception as err:  # torch reports bad arguments as assorted exception types
        raise _FoldFailed(f"evaluation failed: {type(err).__name__}: {err}") from None
    if len(outs) != len(op.results):
        raise _FoldFailed(f"{len(outs)} values for {len(op.results)} results")
    for t, r in zip(outs, op.results, strict=True):
        if not isinstance(t, torch.Tensor) or tensor_type(tuple(t.shape), t.dtype) != r.type:
            raise _FoldFailed(f"evaluated to {type(t).__name__} not matching {r.type}")
    return outs


# --- the folding sweep ------------------------------------------------------------------------------


@dataclass
class FoldStats:
    folded_ops: int = 0
    inlined: int = 0
    splats: int = 0
    new_weights: int = 0
    kept: int = 0


class ConstantFolder:
    """Fold the constant subgraphs of one module (see the module docstring for the policy)."""

    def __init__(self, store: WeightStore | None, max_inline_elements: int):
        self.store = store
        self.max_inline = max_inline_elements
        self.stats = FoldStats()
        self.sources: dict[SSAValue, Operation] = {}  # results of aten.constant / aten.weight
        self.constant: set[SSAValue] = set()  # sources and results of the ops to fold
        self.folding: dict[Operation, None] = {}  # constant ops, in program order
        self.values: dict[SSAValue, torch.Tensor] = {}

    # 1. mark
    def mark(self, root: Operation) -> None:
        store = self.store
        constant = self.constant
        folding = self.folding
        for op in root.walk():
            kind = _KIND.get(type(op))
            if kind is None:
                kind = _kind(type(op))
            if kind == _FOLDABLE:
                if not op.results or _random(op):
                    continue
                if type(op) not in LIKE_FACTORIES and not constant.issuperset(op.operands):
                    continue
                folding[op] = None
                constant.update(op.results)
            elif kind == _CONSTANT or (
                kind == _WEIGHT and store is not None and op.weight_name.data in store
                and store.has_data(op.weight_name.data)  # an external (meta) weight is not a constant
            ):
                self.sources[op.results[0]] = op
                constant.add(op.results[0])

    # 2. evaluate what the frontier needs
    def _frontier(self) -> list[SSAValue]:
        folding = self.folding
        frontier = []
        for op in folding:
            for r in op.results:
                if any(use.operation not in folding for use in r.uses):
                    frontier.append(r)
        return frontier

    def _source_value(self, value: SSAValue) -> torch.Tensor:
        op = self.sources[value]
        if isinstance(op, aten.ConstantOp):
            return op.to_tensor()
        assert self.store is not None
        return self.store[op.weight_name.data]

    def evaluate(self, frontier: list[SSAValue]) -> dict[Operation, str]:
        """Compute the values the frontier needs; returns the ops that failed, with the reason."""
        import torch

        needed: set[Operation] = set()
        stack = [v.owner for v in frontier]
        while stack:
            op = stack.pop()
            if op in needed or op not in self.folding:
                continue
            needed.add(op)
            if type(op) not in LIKE_FACTORIES:
                stack.extend(v.owner for v in op.operands)
        failed: dict[Operation, str] = {}
        values = self.values
        for op in self.folding:
            if op not in needed:
                continue
            if type(op) in LIKE_FACTORIES:
                args = [torch.empty(shape_of(v.type), dtype=dtype_of(v.type)) for v in op.operands]
            else:
                args = []
                for v in op.operands:
                    if v in values:
                        args.append(values[v])
                    elif v in self.sources:
                        args.append(values.setdefault(v, self._source_value(v)))
                    else:
                        break
                if len(args) != len(op.operands):
                    failed[op] = "an operand could not be folded"
                    continue
            try:
                outs = _evaluate(op, args)
            except _FoldFailed as err:
                failed[op] = str(err)
                continue
            values.update(zip(op.results, outs, strict=True))
        return failed

    # 3. materialize the frontier
    def materialize(self, frontier: list[SSAValue], failed: dict[Operation, str]) -> None:
        kept: set[Operation] = set()
        done: set[SSAValue] = set()
        work = list(reversed(frontier))
        while work:
            value = work.pop()
            op = value.owner
            if value in done or op in kept or op not in self.folding:
                continue
            done.add(value)
            tensor = self.values.get(value)
            if tensor is not None and tensor.numel() <= self.max_inline:
                self._replace(value, aten.ConstantOp.from_tensor(tensor))
                self.stats.inlined += 1
            elif tensor is not None and type(op) in SPLAT_FACTORIES:
                kept.add(op)  # already the cheapest form of a large splat
            elif tensor is not None and (fill := _splat(tensor)) is not None:
                self._replace(value, _full(value, fill))
                self.stats.splats += 1
            elif tensor is None or type(op) in RELAYOUT_OPS or self.store is None:
                # Keep the op; its constant operands become frontier values.
                kept.add(op)
                work.extend(v for v in reversed(op.operands) if v.owner in self.folding)
            else:
                name = self.store.add_constant(tensor.detach().contiguous(), _weight_prefix(value))
                self._replace(value, aten.WeightOp(name, value.type))
                self.stats.new_weights += 1
        for op in kept:
            del self.folding[op]
        self.stats.kept = len(kept)

    def _replace(self, value: SSAValue, new_op: Operation) -> None:
        owner = value.owner
        assert isinstance(owner, Operation)
        new_op.location = owner.location
        Rewriter.insert_op(new_op, InsertPoint.before(owner))
        new_value = new_op.results[0]
        new_value.name_hint = value.name_hint
        value.replace_all_uses_with(new_value)

    # 4. erase what was folded
    def erase_folded(self) -> None:
        sources_used: dict[Operation, None] = {}
        for op in reversed(self.folding):
            if any(r.first_use is not None for r in op.results):
                continue  # defensive: something still reads it, so it stays
            for v in op.operands:
                if v in self.sources:
                    sources_used[self.sources[v]] = None
            Rewriter.erase_op(op)
            self.stats.folded_ops += 1
        for source in sources_used:
            if source.results[0].first_use is None:
                Rewriter.erase_op(source)

    def run(self, root: Operation) -> FoldStats:
        self.mark(root)
        if not self.folding:
            return self.stats
        frontier = self._frontier()
        with _single_threaded():
            failed = self.evaluate(frontier)
            self.materialize(frontier, failed)
        self.erase_folded()
        return self.stats


@contextmanager
def _single_threaded() -> Iterator[None]:
    """Run torch on one thread: folded tensors are small, and waking torch's intra-op thread pool
    costs milliseconds per op on a busy machine (measured: a 128-row embedding took 8-15 ms on two
    threads, 13 us on one)."""
    import torch

    threads = torch.get_num_threads()
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


SPLAT_FACTORIES: frozenset[type[Operation]] = frozenset({aten.FullOp, aten.ZerosOp, aten.OnesOp})
"""Factories of one repeated value: a large one stays as it is (it costs no storage)."""


def _splat(tensor: torch.Tensor) -> bool | int | float | None:
    """The value every element of `tensor` has (None if they differ)."""
    flat = tensor.reshape(-1)
    first = flat[0]
    return first.item() if bool((flat == first).all()) else None


def _full(value: SSAValue, fill: bool | int | float) -> Operation:
    """`aten.full` producing `value`'s type filled with `fill`: a large splat needs no storage."""
    properties = {
        "size": schema.to_attribute(ArgKind.INT_LIST, shape_of(value.type)),
        "fill_value": schema.to_attribute(ArgKind.SCALAR, fill),
        "dtype": schema.to_attribute(ArgKind.DTYPE, dtype_of(value.type)),
    }
    return aten.FullOp.build_op([], properties, [value.type])


def _weight_prefix(value: SSAValue) -> str:
    return f"fold.{value.name_hint}" if value.name_hint else "fold"


# --- identities -------------------------------------------------------------------------------------

def splat_value(value: SSAValue) -> int | float | bool | None:
    """The single value every element of a constant has, or None (unknown or not a splat).

    Only IR constants count (`aten.constant`, `aten.full`/`zeros`/`ones`), never stored weights:
    a parameter that happens to hold ones (a freshly initialized norm) must not change the graph's
    structure, or a model would compile differently once trained.
    """
    owner = value.owner
    cls = type(owner)
    if cls is aten.ConstantOp:
        attr: DenseIntOrFPElementsAttr = owner.value
        if len(attr) == 0:
            return None
        values = attr.get_values()
        first = values[0]
        return first if all(v == first for v in values) else None
    if cls is aten.FullOp:
        return owner.arg("fill_value")
    if cls is aten.ZerosOp:
        return 0
    if cls is aten.OnesOp:
        return 1
    return None


class _IdentityPattern(ForgePattern):
    """An identity that needs to read a constant."""

    def _is(self, value: SSAValue, scalar: int) -> bool:
        """Whether `value` is a constant tensor whose elements all equal `scalar`."""
        v = splat_value(value)
        return v is not None and v == scalar


def _forward(op: Operation, value: SSAValue, rewriter: PatternRewriter) -> None:
    """Replace `op` by `value`; erase what only `op` used (a 0/1 constant, say)."""
    operands = tuple(op.operands)
    rewriter.replace(op, [], [value])
    erase_dead_operands(operands)


def _scalar(op: Operation, name: str, default: Any = None) -> Any:
    """A scalar property's Python value, read directly (`op.arg` is general but slower)."""
    attr = op.properties.get(name)
    return default if attr is None else attr.value.data  # IntegerAttr or FloatAttr


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and abs(x) != float("inf") and x == x


_ADD_SCALAR = (aten.AddScalarOp, aten.SubScalarOp)


def _zero_of(value: SSAValue) -> float:
    """-0.0 when every element of the zero constant `value` is -0.0, else 0.0 (`splat_value` counts -0.0 and
    0.0 as one value)."""
    owner = value.owner
    if isinstance(owner, aten.ConstantOp):
        values = owner.value.get_values()
        return -0.0 if all(math.copysign(1.0, v) < 0 for v in values) else 0.0
    fill = splat_value(value)
    return 0.0 if fill is None else float(fill)  # not `fill or 0.0`: -0.0 is falsy and would lose its sign


def _adds_minus_zero(alpha: Any, zero: Any, subtracts: bool) -> bool:
    """Whether `x + alpha * zero` (`x - alpha * zero` when `subtracts`) adds a -0.0: the only zero whose
    addition leaves every float as it is (IEEE: -0.0 + 0.0 is +0.0, so `x + 0.0` is not `x`, while
    `x - 0.0` is). Python floats carry the sign of a product; an integer zero is +0.0."""
    term = float(alpha) * float(zero)
    return math.copysign(1.0, -term if subtracts else term) < 0


_AddOrSub = aten.AddTensorOp | aten.SubTensorOp | aten.AddScalarOp | aten.SubScalarOp


class AddZero(_IdentityPattern):
    """`x + 0`, `0 + x` (alpha 1), `x - 0` with tensor or scalar zero: `x` (if the type is `x`'s)."""

    ROOTS = get_args(_AddOrSub)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _AddOrSub, rewriter: PatternRewriter) -> None:
        x = op.operands[0]
        alpha = _scalar(op, "alpha", 1)
        floating = dtype_of(op.results[0].type).is_floating_point
        subtracts = type(op) in (aten.SubTensorOp, aten.SubScalarOp)
        if type(op) in _ADD_SCALAR:
            other = _scalar(op, "other")
            if other != 0 or not _finite(alpha):
                return self.fail(op, "the scalar is not 0")
            if floating and not _adds_minus_zero(alpha, other, subtracts):
                return self.fail(op, "adding +0.0 turns a -0.0 into +0.0")
            candidates = [x]
        else:
            y = op.operands[1]
            zero = _zero_of(y)
            candidates = [x] if self._is(y, 0) and _finite(alpha) else []
            if candidates and floating and not _adds_minus_zero(alpha, zero, subtracts):
                candidates = []
            if alpha == 1 and type(op) is aten.AddTensorOp and self._is(x, 0):
                if not floating or _adds_minus_zero(1, _zero_of(x), False):
                    candidates.append(y)
            if not candidates:
                return self.fail(op, "no operand is a constant 0 whose addition leaves every float as it is")
        return self._forward_first(op, candidates, rewriter)

    def _forward_first(self, op: Operation, candidates: list[SSAValue], rewriter: PatternRewriter) -> None:
        result = op.results[0]
        for x in candidates:
            if _same_type(x, result):
                return _forward(op, x, rewriter)
        return self.fail(op, "broadcasting or type promotion changes the result type")


_MUL_SCALAR = (aten.MulScalarOp, aten.DivScalarOp, aten.PowTensorScalarOp)


_MulDivOrPow = (aten.MulTensorOp | aten.MulScalarOp | aten.DivTensorOp | aten.DivScalarOp
                | aten.PowTensorScalarOp | aten.PowTensorTensorOp)


class MulOne(AddZero):
    """`x * 1`, `1 * x`, `x / 1`, `x ** 1` (tensor or scalar one): `x` (if the type is `x`'s)."""

    ROOTS = get_args(_MulDivOrPow)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _MulDivOrPow, rewriter: PatternRewriter) -> None:
        x = op.operands[0]
        if type(op) in _MUL_SCALAR:
            name = "exponent" if type(op) is aten.PowTensorScalarOp else "other"
            if _scalar(op, name) != 1:
                return self.fail(op, "the scalar is not 1")
            candidates = [x]
        else:
            y = op.operands[1]
            candidates = [x] if self._is(y, 1) else []
            if type(op) is aten.MulTensorOp and self._is(x, 1):
                candidates.append(y)
            if not candidates:
                return self.fail(op, "no operand is a constant 1")
        return self._forward_first(op, candidates, rewriter)


class DoubleNegation(TracedPattern):
    """`-(-x)`: `x` (written in PyTorch: forge/transforms/traced_patterns.py)."""

    KEY = "double_negation"
    OPTIONS = {"shared": "keep"}  # the inner negation stays for its other users


_View = aten.ViewOp | aten.ReshapeOp | aten.UnsafeViewOp
_VIEW_OPS = get_args(_View)


class FoldViews(ForgePattern):
    """A view/reshape of a view reads the original tensor; one to the same shape is `x`.

    A reshape may copy where a view may not, so `view(reshape(x))` stays: eager torch (the reference
    interpreter) could reject `view(x)` on a non-contiguous `x`.
    """

    ROOTS = _VIEW_OPS

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _View, rewriter: PatternRewriter) -> None:
        inner = op.operands[0].owner
        reads_view = type(inner) in _VIEW_OPS
        skipped = False
        while type(inner) in _VIEW_OPS and (type(op) is aten.ReshapeOp or type(inner) is not aten.ReshapeOp):
            # the whole chain at once: skipping one view per visit left `reshape(reshape(x))` to a second fold
            # when the op was not visited again (a view chain over `x + -0.0`, folded after it)
            op.operands = [inner.operands[0]]
            erase_dead_operands(inner.results)
            inner, skipped = op.operands[0].owner, True
        if skipped:
            rewriter.notify_op_modified(op)
        if _same_type(op.operands[0], op.results[0]):
            return _forward(op, op.operands[0], rewriter)
        if not reads_view:
            return self.fail(op, "changes the shape and does not read a view")
        if not rewriter.has_done_action:
            return self.fail(op, "a view of a reshape")


def _same_type(a: SSAValue, b: SSAValue) -> bool:
    """`a.type == b.type`, short-circuiting on the (usual) shared type object."""
    ta, tb = a.type, b.type
    return ta is tb or ta == tb


_Permute = aten.TransposeIntOp | aten.PermuteOp | aten.TOp
_PERMUTE_OPS = get_args(_Permute)


class CancelTransposes(ForgePattern):
    """Transposes/permutes whose composition is the identity (or one that is itself): `x`."""

    ROOTS = _PERMUTE_OPS

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _Permute, rewriter: PatternRewriter) -> None:
        x = op.operands[0]
        outer: list[int] | None = None
        if _same_type(x, op.results[0]):  # necessary for op itself to be the identity
            outer = permutation(op)
            if is_identity_permutation(outer):
                return _forward(op, x, rewriter)
        inner_op = x.owner
        if type(inner_op) not in _PERMUTE_OPS:
            return self.fail(op, "the operand is not a transpose/permute")
        outer = outer if outer is not None else permutation(op)
        inner = permutation(inner_op)
        if not is_identity_permutation([inner[p] for p in outer]):
            return self.fail(op, "the two permutations do not cancel")
        _forward(op, inner_op.operands[0], rewriter)
        erase_dead_operands(inner_op.results)


class SameShapeNoOp(ForgePattern):
    """`expand` or `slice` whose result has the input's type: `x`."""

    ROOTS = (aten.ExpandOp, aten.SliceTensorOp)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.ExpandOp | aten.SliceTensorOp, rewriter: PatternRewriter) -> None:
        if not _same_type(op.operands[0], op.results[0]):
            return self.fail(op, "changes the shape")
        _forward(op, op.operands[0], rewriter)


class ZeroPad(ForgePattern):
    """`constant_pad_nd` / constant `pad` whose pads are all 0: `x` (MobileNetV2 pads every
    convolution's input, 1x1 ones by nothing)."""

    ROOTS = (aten.ConstantPadNdOp, aten.PadOp)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.ConstantPadNdOp | aten.PadOp, rewriter: PatternRewriter) -> None:
        if isinstance(op, aten.PadOp) and op.arg("mode") != "constant":
            return self.fail(op, "not a constant pad")
        if any(op.arg("pad")) or not _same_type(op.operands[0], op.results[0]):
            return self.fail(op, "pads something")
        _forward(op, op.operands[0], rewriter)


class DropKeepAllMask(_IdentityPattern):
    """sdpa with a constant mask that changes nothing: all-true boolean, or a finite splat added to
    every score (softmax is shift-invariant). BERT without padding builds such a mask."""

    ROOTS = (aten.ScaledDotProductAttentionOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.ScaledDotProductAttentionOp, rewriter: PatternRewriter) -> None:
        import torch

        mask = op.attn_mask
        if mask is None:
            return self.fail(op, "no mask")
        value = splat_value(mask)
        is_bool = dtype_of(mask.type) == torch.bool
        # an i1 dense constant reads `true` back as -1 (a signed 1-bit integer): test truthiness
        if value is None or (is_bool and not value) or (not is_bool and not _finite(value)):
            return self.fail(op, "the mask is not a constant that keeps every score")
        properties = {k: v for k, v in op.properties.items() if k != "operandSegmentSizes"}
        new = aten.ScaledDotProductAttentionOp.build_op(
            [[op.query], [op.key], [op.value], []], properties, [op.result.type], location=op.location
        )
        new.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, [new])
        erase_dead_operands((mask,))


def identity_patterns() -> list[ForgePattern]:
    return [
        DropKeepAllMask(),
        AddZero(),
        MulOne(),
        DoubleNegation(),
        FoldViews(),
        CancelTransposes(),
        SameShapeNoOp(),
        ZeroPad(),
        FoldPadIntoConv(),
        ForwardSameTypeConversion(),
    ]


def apply_identities(root: Operation) -> int:
    """One forward sweep of the identity patterns; returns how many ops were rewritten."""
    return apply_patterns(root, identity_patterns())


# --- the pass ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FoldPass(ModulePass):
    """Fold constant subgraphs (weights too, when a WeightStore is attached) and algebraic identities.

    Small results become inline `aten.constant`s (at most `max-inline-elements` elements), large
    splats `aten.full`, other large ones new WeightStore entries; a large re-layout of a constant
    (transpose, expand, view...) is left to run (no duplicated weight memory). Then x+0, x*1, x/1,
    x**1, -(-x), same-shape views, view of view, cancelling transposes, same-shape expand/slice and
    same-type `to` are removed. With a WeightStore, an inference batch norm of a convolution used
    only by it is first folded into that convolution's weight and bias (`batch_norm_folding`).
    """

    name = "fold"

    max_inline_elements: int = 64
    """Folded values with at most this many elements are inlined; larger ones go to the store."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        store = weights_of(op)
        stats = ConstantFolder(store, self.max_inline_elements).run(op)
        count_fired("FoldConstantOp", stats.folded_ops)
        count_fired("InlineConstant", stats.inlined)
        count_fired("NewFoldedWeight", stats.new_weights)
        count_fired("SplatAsFull", stats.splats)
        if store is not None:
            apply_patterns(op, [FoldBatchNormIntoConv(store)])
        apply_identities(op)
