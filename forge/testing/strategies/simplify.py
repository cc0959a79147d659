"""Motifs for the simplifying passes: dead code (dce), duplicates (cse) and identities (fold)."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st
from xdsl.ir import SSAValue

from dialects import aten
from forge.testing.strategies.builder import F32, I64, GraphBuilder
from forge.testing.strategies.random_ops import UNARY_OPS


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
            u = b.op(b.choice(UNARY_OPS), y)
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
        cls = b.choice(UNARY_OPS)
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
        name = w.owner.weight_name.data
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
    """Algebraic and shape identities fold removes: x+(-0.0), x-0, x*1, x/1, x**1, neg(neg x), view or
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
            y = b.op(aten.AddScalarOp, y, -0.0)  # x + 0.0 is no identity on floats: -0.0 + 0.0 is +0.0
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
            zeros = b.op(aten.FullOp, shape, -0.0) if b.chance(50) else b.const(-0.0, F32)
            y = b.op(aten.AddTensorOp, y, zeros)
        elif kind == "mul_one_tensor":
            ones = b.op(aten.OnesLikeOp, y) if b.chance(50) else b.const(1.0, F32)
            y = b.op(aten.MulTensorOp, y, ones)
        else:
            y = b.op(aten.ToDtypeOp, y, F32)
    b.to_pool(y)
    b.note(f"identities[{','.join(kinds)}]", "identities")
