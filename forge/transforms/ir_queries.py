"""What the rewrite patterns ask of the IR, and erasing what a rewrite left dead (not a pass).

Which op produces a value, its element type, whether a scalar is close to a constant, which
permutation a transpose applies; and who uses a value. A pattern that fuses a motif must know that
the motif's intermediates are used only inside it. torch.export leaves `_assert_tensor_metadata`
checks on intermediates (Llama's RMSNorm casts); a check that the static type already satisfies
checks nothing new, so it does not count as a user (`users`) and goes away with the value
(`erase_dead`). Used by `fold`, `fuse-ops`, `fuse-attention` and `layout`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from dialects import aten
from dialects.shapes import static_shape


def producer(value: SSAValue) -> Operation | None:
    """The op defining `value`, or None for a block argument."""
    owner = value.owner
    return owner if isinstance(owner, Operation) else None


def element_of(value: SSAValue) -> Attribute | None:
    """The element type of a tensor-typed value (None for anything else)."""
    ty = value.type
    return ty.element_type if isinstance(ty, TensorType) else None


def value_name(value: SSAValue) -> str:
    """`%x` in a failure reason, or "the value" for a value without a name."""
    return f"%{value.name_hint}" if value.name_hint else "the value"


def close(value: object, target: float, rel: float = 1e-5) -> bool:
    """Whether `value` is a number (not a bool) within relative `rel` of `target`."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isclose(float(value), target, rel_tol=rel, abs_tol=0.0))


def is_one(value: object) -> bool:
    return close(value, 1.0, 0.0)


def permutation(op: Operation) -> list[int]:
    """The permutation a permute/transpose/t op applies: result dim i is input dim perm[i]."""
    rank = len(static_shape(op.operands[0]))
    if isinstance(op, aten.PermuteOp):
        return [d % rank for d in op.arg("dims")] if rank else []
    perm = list(range(rank))
    if isinstance(op, aten.TransposeIntOp):
        if rank:
            a, b = op.arg("dim0") % rank, op.arg("dim1") % rank
            perm[a], perm[b] = perm[b], perm[a]
    elif rank == 2:  # aten.t; identity on 0-D and 1-D tensors
        perm = [1, 0]
    return perm


def is_identity_permutation(perm: list[int]) -> bool:
    return all(i == p for i, p in enumerate(perm))


# --- uses ------------------------------------------------------------------------------------------


def _is_satisfied_assert(op: Operation, value: SSAValue) -> bool:
    """Whether `op` is an `_assert_tensor_metadata` that the static type of `value` satisfies."""
    if not isinstance(op, aten.AssertTensorMetadataOp):
        return False
    dtype, size = op.properties.get("dtype"), op.arg("size")  # dtype: the element type (no torch)
    if dtype is not None and dtype != element_of(value):
        return False
    return size is None or tuple(size) == static_shape(value)


def users(value: SSAValue) -> list[Operation]:
    """The ops using `value`, not counting satisfied metadata assertions."""
    return [use.operation for use in value.uses if not _is_satisfied_assert(use.operation, value)]


def single_use(value: SSAValue) -> bool:
    return len(users(value)) == 1


def uses_within(value: SSAValue, ops: Iterable[Operation]) -> bool:
    allowed = ops if isinstance(ops, (set, frozenset)) else set(ops)
    return all(user in allowed for user in users(value))


def unique_user(value: SSAValue) -> Operation | None:
    found = users(value)
    return found[0] if len(found) == 1 else None


def erase_dead(rewriter: PatternRewriter, ops: Sequence[Operation]) -> None:
    """Erase those of `ops` that are (or become) unused, users before producers."""
    pending = [op for op in ops if op.parent is not None]
    progress = True
    while pending and progress:
        progress = False
        rest = []
        for op in pending:
            if all(not users(r) for r in op.results):
                for r in op.results:
                    for use in list(r.uses):
                        rewriter.erase(use.operation)
                rewriter.erase(op)
                progress = True
            else:
                rest.append(op)
        pending = rest
