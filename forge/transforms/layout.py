"""layout: remove layout traffic (transposes, permutes, reshape chains, copies) before the device.

One forward sweep (`forge.patterns.apply_patterns`; no DCE: each pattern erases the ops it made dead).
Each pattern looks backwards from the *last* op of a chain; an op all of whose users are members
of the same kind of chain is left for them to absorb, so every chain is rewritten once, by its end.

* `FoldWeightPermute` -- a transpose/permute chain over an `aten.weight` is applied ONCE at
  compile time: the permuted tensor becomes a new WeightStore entry (`<name>.T` for a matrix,
  `<name>.permute_<dims>` otherwise), memoized per (weight, permutation) so each weight is
  transposed once whatever the number of uses. The original weight op stays only while it has
  other users (the store keeps its entry; nothing in the IR references it once it is dead). Needs
  a WeightStore attached to the module (`forge.weights.attach_weights`); text IR without weights
  skips this rewrite. This is what turns GPT-2's `[in, out]` Conv1D weights (behind the `aten.t`
  that `fuse-ops` puts in front of them) into plain `[out, in]` linear weights.
* `ComposePermutes` -- transpose/permute/t chains compose into one permute; a chain whose
  permutations are inverse cancels; an identity permute disappears. Single-use unary elementwise
  ops between two permutes move below them (`permute(relu(permute(x, p)), p⁻¹)` → `relu(x)`).
  A last-two-dims swap feeding a matmul is kept for `TransposeIntoMatmul` (a flag is free, a
  permute is not).
* `TransposeIntoMatmul` -- a permute that swaps exactly the last two dims, feeding `matmul`,
  `bmm`, `mm` or `matmul_transposed`, becomes that operand's transpose flag of
  `aten.matmul_transposed` (flags toggle; a matmul_transposed left without flags is a matmul).
* `CollapseReshapes` -- a chain of view/reshape/_unsafe_view/flatten/unsqueeze/squeeze (and the
  copies between them) becomes one reshape to the final shape (`aten.view` if the chain ends in
  one, else `aten.reshape`), or nothing when the shape does not change.
* `DropCopies` -- `contiguous`, `clone`, `alias`, `detach` are identities on values: their users
  read the input (or one reshape of the chain above them).

Forge's IR has value semantics (tensors carry no strides; `aten.view` evaluates like `reshape`),
so dropping a `contiguous` in front of a `view` is legal, and a lone view is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, get_args

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, TensorType, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from dialects import aten
from dialects.aten_schema import ArgKind, to_attribute
from dialects.shapes import static_shape
from forge.patterns import ForgePattern, apply_patterns
from forge.transforms.ir_queries import element_of, is_identity_permutation, permutation, producer
from forge.weights import WeightStore, weights_of

_PermuteRoot = aten.PermuteOp | aten.TransposeIntOp | aten.TOp
_MatmulRoot = aten.MatmulOp | aten.BmmOp | aten.MmOp | aten.MatmulTransposedOp
_ReshapeRoot = (aten.ViewOp | aten.ReshapeOp | aten.UnsafeViewOp | aten.FlattenUsingIntsOp | aten.UnsqueezeOp
                | aten.SqueezeOp | aten.SqueezeDimOp | aten.SqueezeDimsOp)
_CopyRoot = aten.ContiguousOp | aten.CloneOp | aten.AliasOp | aten.DetachOp

_PERMUTES = get_args(_PermuteRoot)
_MATMULS = get_args(_MatmulRoot)
_RESHAPES = get_args(_ReshapeRoot)
_COPIES = get_args(_CopyRoot)
_RESHAPE_CHAIN = _RESHAPES + _COPIES
_ELEMENTWISE_UNARY = (
    aten.ReluOp, aten.GeluOp, aten.SiluOp, aten.SigmoidOp, aten.TanhOp, aten.NegOp, aten.AbsOp,
    aten.ExpOp, aten.LogOp, aten.SqrtOp, aten.RsqrtOp, aten.ReciprocalOp, aten.SinOp, aten.CosOp,
    aten.ErfOp, aten.AddScalarOp, aten.SubScalarOp, aten.RsubScalarOp, aten.MulScalarOp,
    aten.DivScalarOp, aten.PowTensorScalarOp, aten.ClampOp, aten.ToDtypeOp,
)
"""Ops computing each output element from the same input element alone: they commute with permutes."""

_TRUE = to_attribute(ArgKind.BOOL, True)
_FALSE = to_attribute(ArgKind.BOOL, False)


def _swaps_last_two(perm: list[int]) -> bool:
    n = len(perm)
    return n >= 2 and perm[-2:] == [n - 1, n - 2] and is_identity_permutation(perm[:-2])


def _permute_chain(op: Operation) -> tuple[SSAValue, list[int], list[Operation]]:
    """Walk up from permute-family `op`: (source, composed permutation, chain ops from `op` up)."""
    perm = permutation(op)
    chain = [op]
    source = op.operands[0]
    while isinstance(defining := producer(source), _PERMUTES):
        inner = permutation(defining)
        perm = [inner[p] for p in perm]
        chain.append(defining)
        source = defining.operands[0]
    return source, perm, chain


def _erase_dead_chain(rewriter: PatternRewriter, chain: list[Operation]) -> None:
    """Erase the ops of a use-def chain (users first) that have become unused."""
    for op in chain:
        if op.parent is None:
            continue
        if any(r.uses for r in op.results):
            return
        rewriter.erase(op)


def _absorbed_by_users(op: Operation, kinds: tuple[type[Operation], ...]) -> bool:
    """Whether every user of `op` is a chain member that will walk through it (or `op` is dead)."""
    uses = op.results[0].uses
    return all(isinstance(use.operation, kinds) for use in uses)


class FoldWeightPermute(ForgePattern):
    """permute/transpose/t chain of an `aten.weight` → a pre-permuted weight (store attached)."""

    ROOTS = _PERMUTES

    def __init__(self, store: WeightStore | None, materialize: bool = False):
        self.store = store
        self.materialize = materialize
        self.memo: dict[tuple[Block | None, str, tuple[int, ...]], SSAValue] = {}

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _PermuteRoot, rewriter: PatternRewriter) -> None:
        if _absorbed_by_users(op, _PERMUTES):
            return self.fail(op, "its users are permutes that absorb it")
        source, perm, chain = _permute_chain(op)
        weight = producer(source)
        if not isinstance(weight, aten.WeightOp):
            return self.fail(op, "does not permute an aten.weight")
        if self.store is None:
            return self.fail(op, "no WeightStore attached to the module")
        name = weight.weight_name.data
        if name not in self.store:
            return self.fail(op, f"weight '{name}' is not in the WeightStore")
        if not self.store.has_data(name):  # external: bound at load time, so it is bound as stored
            return self.fail(op, f"weight '{name}' is external (no values at compile time)")
        if is_identity_permutation(perm):
            rewriter.replace(op, [], [source])
            _erase_dead_chain(rewriter, chain[1:] + [weight])
            return
        canonical = self.store.resolve(name)
        key = (weight.parent, canonical, tuple(perm))
        value = self.memo.get(key)
        if value is None or value.owner.parent is None:
            new_name = self._permuted_entry(canonical, perm)
            new_weight = aten.WeightOp.create(properties={"name": StringAttr(new_name)},
                                              result_types=[op.results[0].type])
            rewriter.insert(new_weight, InsertPoint.after(weight))
            value = self.memo[key] = new_weight.result
            value.name_hint = _hint(source, perm)
        rewriter.replace(op, [], [value])
        _erase_dead_chain(rewriter, chain[1:] + [weight])

    def _permuted_entry(self, name: str, perm: list[int]) -> str:
        import torch

        assert self.store is not None
        tensor = self.store[name].permute(perm)
        if self.materialize:
            tensor = tensor.contiguous()
        entry = f"{name}.T" if perm == [1, 0] else f"{name}.permute_{'_'.join(map(str, perm))}"
        if entry in self.store:
            existing = self.store[entry]
            if existing.shape == tensor.shape and existing.dtype == tensor.dtype and (
                    existing.data_ptr() == tensor.data_ptr() and existing.stride() == tensor.stride()
                    or torch.equal(existing, tensor)):
                return self.store.resolve(entry)
            return self.store.add_constant(tensor, prefix=entry)
        return self.store.add(entry, tensor)


def _hint(source: SSAValue, perm: list[int]) -> str | None:
    if not source.name_hint:
        return None
    return f"{source.name_hint}_T" if perm == [1, 0] else f"{source.name_hint}_permuted"


class ComposePermutes(ForgePattern):
    """permute(permute(x, p), q) → permute(x, p∘q); inverse permutes cancel; identity vanishes.

    Single-use unary elementwise ops between two permutes are moved below the composed permute
    (`permute(relu(permute(x, p)), p⁻¹)` → `relu(x)`): they commute with any permutation.
    """

    ROOTS = _PERMUTES

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _PermuteRoot, rewriter: PatternRewriter) -> None:
        if _absorbed_by_users(op, _PERMUTES):
            return self.fail(op, "its users are permutes that absorb it")
        source, perm, chain, unary = _permute_chain_through_unary(op)
        if len(chain) == 1 and not is_identity_permutation(perm):
            return self.fail(op, "a single permute that is not the identity")
        if not unary and not is_identity_permutation(perm):
            if _swaps_last_two(permutation(op)) and any(isinstance(u.operation, _MATMULS)
                                                        for u in op.results[0].uses):
                return self.fail(op, "last-two-dims swap left for the matmul's transpose flag")
        dead = [o for o in _chain_order(op, chain, unary) if o is not op]
        new_ops: list[Operation] = []
        value = source
        if not is_identity_permutation(perm):
            shape = [static_shape(source)[p] for p in perm]
            new_ops.append(aten.PermuteOp.build_op(
                [[source]], {"dims": DenseArrayBase.from_list(i64, perm)},
                [TensorType(element_of(source), shape)], location=op.location))
            value = new_ops[-1].results[0]
        for u in reversed(unary):  # top-down: the op nearest the source first
            new = type(u).build_op([[value]], dict(u.properties),
                                   [TensorType(element_of(u.results[0]), static_shape(value))], location=u.location)
            new.results[0].name_hint = u.results[0].name_hint
            new_ops.append(new)
            value = new.results[0]
        rewriter.replace(op, new_ops, [value])
        _erase_dead_chain(rewriter, dead)


def _permute_chain_through_unary(
    op: Operation,
) -> tuple[SSAValue, list[int], list[Operation], list[Operation]]:
    """Like `_permute_chain`, also passing single-use unary elementwise ops that sit between two
    permutes: (source, composed permutation, permutes from `op` up, unary ops from `op` up)."""
    perm = permutation(op)
    chain = [op]
    unary: list[Operation] = []
    source = op.operands[0]
    pending: list[Operation] = []  # unary ops passed since the last permute
    value = source
    while True:
        defining = producer(value)
        if isinstance(defining, _PERMUTES):
            inner = permutation(defining)
            perm = [inner[p] for p in perm]
            chain.append(defining)
            unary += pending
            pending = []
            value = source = defining.operands[0]
        elif isinstance(defining, _ELEMENTWISE_UNARY) and value.has_one_use() and defining.operands:
            pending.append(defining)
            value = defining.operands[0]
        else:
            return source, perm, chain, unary


def _chain_order(op: Operation, chain: list[Operation], unary: list[Operation]) -> list[Operation]:
    """The ops of a permute/unary chain from `op` upwards, in use-def order."""
    members = set(chain) | set(unary)
    order = []
    current: Operation | None = op
    while current is not None and current in members:
        order.append(current)
        current = producer(current.operands[0])
    return order


class TransposeIntoMatmul(ForgePattern):
    """matmul(transpose(a, -1, -2), b) → matmul_transposed(a, b, transpose_input=true, ...)."""

    ROOTS = _MATMULS

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _MatmulRoot, rewriter: PatternRewriter) -> None:
        operands = [op.operands[0], op.operands[1]]
        flags = [False, False]
        if isinstance(op, aten.MatmulTransposedOp):
            flags = [bool(op.arg("transpose_input")), bool(op.arg("transpose_other"))]
        folded: list[Operation] = []
        for i, value in enumerate(operands):
            defining = producer(value)
            if isinstance(defining, _PERMUTES) and _swaps_last_two(permutation(defining)):
                operands[i] = defining.operands[0]
                flags[i] = not flags[i]
                folded.append(defining)
        if not folded:
            return self.fail(op, "no operand is a transpose of its last two dims")
        result_type = op.results[0].type
        if flags == [False, False]:
            new = aten.MatmulOp.build_op([[operands[0]], [operands[1]]], {}, [result_type], location=op.location)
        else:
            new = aten.MatmulTransposedOp.build_op(
                [[operands[0]], [operands[1]]],
                {"transpose_input": _TRUE if flags[0] else _FALSE,
                 "transpose_other": _TRUE if flags[1] else _FALSE},
                [result_type], location=op.location)
        rewriter.replace(op, new)
        for defining in folded:
            _erase_dead_chain(rewriter, [defining])


def _collapse_chain(op: Operation, rewriter: PatternRewriter) -> bool:
    """Replace the reshape/copy chain ending at `op` by one reshape of its source (a `view` if `op`
    is one), or by the source itself when the shape does not change. A lone reshape stays."""
    chain = [op]
    source = op.operands[0]
    while isinstance(defining := producer(source), _RESHAPE_CHAIN):
        chain.append(defining)
        source = defining.operands[0]
    result = op.results[0]
    if source.type == result.type:
        rewriter.replace(op, [], [source])
    elif len(chain) > 1:
        assert isinstance(result.type, TensorType)
        shape = DenseArrayBase.from_list(i64, list(result.type.get_shape()))
        if isinstance(op, aten.ViewOp):
            new = aten.ViewOp.build_op([[source]], {"size": shape}, [result.type], location=op.location)
        else:
            new = aten.ReshapeOp.build_op([[source]], {"shape": shape}, [result.type], location=op.location)
        rewriter.replace(op, new)
    else:
        return False
    _erase_dead_chain(rewriter, chain[1:])
    return True


class CollapseReshapes(ForgePattern):
    """A chain of reshapes (views, (un)squeezes, flattens, copies) → one `aten.reshape`."""

    ROOTS = _RESHAPES

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _ReshapeRoot | _CopyRoot, rewriter: PatternRewriter) -> None:
        if _absorbed_by_users(op, _RESHAPE_CHAIN):
            return self.fail(op, "its users are reshapes that absorb it")
        if not _collapse_chain(op, rewriter):
            return self.fail(op, "a single reshape that changes the shape")


class DropCopies(CollapseReshapes):
    """contiguous / clone / alias / detach → their input (or the reshape chain above them).

    The end of a chain, as for reshapes; a copy keeps its input's type, so a lone one goes too.
    """

    ROOTS = _COPIES


@dataclass(frozen=True)
class LayoutPass(ModulePass):
    """Fold transposes into matmul flags and weights, cancel permutes, collapse reshapes, drop copies."""

    name: ClassVar[str] = "layout"

    fold_weights: bool = True
    """Transpose weights at compile time (only when a WeightStore is attached)."""

    materialize_weights: bool = False
    """Copy permuted weights into contiguous memory now. By default the new entry is a permuted
    *view* of the original's storage: no memory is duplicated (GPT-2-base has 340 MB of Conv1D
    weights; copying them costs ~0.6 s), and `WeightStore.save` writes every entry contiguous,
    so the weights file, and whatever loads it, sees the transposed layout."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        store = weights_of(op) if self.fold_weights else None
        patterns = [FoldWeightPermute(store, self.materialize_weights), ComposePermutes(), TransposeIntoMatmul(),
                    CollapseReshapes(), DropCopies()]
        apply_patterns(op, patterns)
