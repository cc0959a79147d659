"""Linear layers, whatever op computes them, and building `aten.fused_linear` (not a pass).

`as_linear(op)` reads `linear`, `addmm`, `mm`, `matmul`, `matmul_transposed` and `fused_linear` as
one `Linear` -- activation(input · Wᵀ + bias) -- or says why `op` is not a linear layer.
`fused_linear` builds the fused op from one, passing an [in, out] weight through an `aten.t` that
`layout` folds into the WeightStore; `fuse_activation` folds an activation into the linear layer
that produces its input. Used by the `fuse-ops` patterns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from dialects import aten
from dialects.shapes import static_shape
from forge.transforms.ir_queries import element_of, erase_dead, is_one, producer, uses_within, value_name

RESHAPES = (aten.ViewOp, aten.ReshapeOp, aten.UnsafeViewOp)
"""Ops that only reinterpret the shape: elementwise ops commute with them."""

_TRANSPOSES_2D = (aten.TOp, aten.TransposeIntOp, aten.PermuteOp)

_ACTIVATION_OPS = {aten.ReluOp: "relu", aten.SiluOp: "silu", aten.SigmoidOp: "sigmoid"}
_GELU_ACTIVATION = {"none": "gelu", "tanh": "gelu_tanh"}

_TYPES: dict[tuple[Attribute, tuple[int, ...]], TensorType] = {}


def _tensor_type(element: Attribute, shape: Sequence[int]) -> TensorType:
    key = (element, tuple(shape))
    ty = _TYPES.get(key)
    if ty is None:
        ty = _TYPES[key] = TensorType(element, list(shape))
    return ty


def activation_of(op: Operation | None) -> str | None:
    """The `fused_linear` activation name an activation op computes, or None."""
    if op is None:
        return None
    if isinstance(op, aten.GeluOp):
        return _GELU_ACTIVATION.get(op.arg("approximate"))
    return _ACTIVATION_OPS.get(type(op))


def swaps_2d(op: Operation) -> bool:
    """Whether `op` transposes a 2-D tensor."""
    if not isinstance(op, _TRANSPOSES_2D) or len(static_shape(op.operands[0])) != 2:
        return False
    if isinstance(op, aten.TOp):
        return True
    if isinstance(op, aten.TransposeIntOp):
        return {op.arg("dim0") % 2, op.arg("dim1") % 2} == {0, 1}
    return [d % 2 for d in op.arg("dims")] == [1, 0]


def is_constant(value: SSAValue) -> bool:
    """Whether `value` is a weight or a constant (or the transpose of one)."""
    op = producer(value)
    if isinstance(op, _TRANSPOSES_2D) and swaps_2d(op):
        op = producer(op.operands[0])
    return isinstance(op, (aten.WeightOp, aten.ConstantOp))


@dataclass
class Linear:
    """A linear-like op read as activation(input · Wᵀ + bias)."""

    op: Operation
    input: SSAValue
    weight: SSAValue
    weight_is_kn: bool
    """True when `weight` is [in, out] (matmul's right operand), not torch's [out, in]."""
    bias: SSAValue | None
    activation: str

    def out_features(self) -> int:
        return static_shape(self.weight)[1 if self.weight_is_kn else 0]

    def replaced_transpose(self) -> list[Operation]:
        """The transpose `weight_nk` looks through (to erase once it is dead), if any."""
        transpose = producer(self.weight) if self.weight_is_kn else None
        return [transpose] if transpose is not None and swaps_2d(transpose) else []

    def weight_nk(self) -> tuple[list[Operation], SSAValue]:
        """New ops and the [out, in] weight value: a transpose in the IR is looked through,
        otherwise an `aten.t` is created (`layout` folds it into the WeightStore)."""
        if not self.weight_is_kn:
            return [], self.weight
        transpose = producer(self.weight)
        if transpose is not None and swaps_2d(transpose):
            return [], transpose.operands[0]
        k, n = static_shape(self.weight)
        t = aten.TOp.build_op([[self.weight]], {}, [_tensor_type(element_of(self.weight), (n, k))],
                              location=self.op.location)
        if self.weight.name_hint:
            t.results[0].name_hint = f"{self.weight.name_hint}_t"
        return [t], t.results[0]


def as_linear(op: Operation | None) -> Linear | str:
    """Read `op` as a linear layer, or say why it is not one."""
    if isinstance(op, aten.FusedLinearOp):
        return Linear(op, op.input, op.weight, False, op.bias, op.arg("activation"))
    if isinstance(op, aten.LinearOp):
        if len(static_shape(op.weight)) != 2:
            return "linear weight is not 2-D"
        return Linear(op, op.input, op.weight, False, op.bias, "none")
    if isinstance(op, aten.AddmmOp):
        if not (is_one(op.arg("beta")) and is_one(op.arg("alpha"))):
            return "addmm with alpha or beta != 1"
        n = static_shape(op.mat2)[1]
        if static_shape(op.input) != (n,):
            return f"addmm bias of shape {list(static_shape(op.input))} is not [{n}]"
        if element_of(op.input) != element_of(op.mat1):
            return "addmm bias has another element type"
        return Linear(op, op.mat1, op.mat2, True, op.input, "none")
    if isinstance(op, aten.MmOp):
        return Linear(op, op.input, op.mat2, True, None, "none")
    if isinstance(op, aten.MatmulOp):
        if len(static_shape(op.other)) != 2 or not static_shape(op.input):
            return "matmul whose right operand is not a matrix"
        return Linear(op, op.input, op.other, True, None, "none")
    if isinstance(op, aten.MatmulTransposedOp):
        if len(static_shape(op.other)) != 2 or op.arg("transpose_input") or not static_shape(op.input):
            return "matmul_transposed that is not a linear layer"
        return Linear(op, op.input, op.other, not op.arg("transpose_other"), None, "none")
    return f"{op.name if op is not None else 'a block argument'} is not a linear layer"


def fused_linear(lin: Linear, input: SSAValue, bias: SSAValue | None, activation: str,
                 result_type: Attribute, location) -> list[Operation]:
    """The ops computing `lin` on `input` as one `aten.fused_linear` (an `aten.t` first if needed)."""
    ops, weight = lin.weight_nk()
    fused = aten.FusedLinearOp.build_op(
        [[input], [weight], [bias] if bias is not None else []],
        {"activation": StringAttr(activation)}, [result_type], location=location)
    fused.results[0].name_hint = lin.op.results[0].name_hint  # named after the linear layer
    ops.append(fused)
    return ops


def producer_through_reshapes(value: SSAValue, allowed: Sequence[Operation], user: str, *,
                              keep_last_dim: bool = False) -> tuple[Operation | None, SSAValue] | str:
    """Walk up from `value`, used only by the ops `allowed`, through reshapes used only by the step
    below them (with `keep_last_dim`, only reshapes that keep the last dim): (the op reached, the
    value it produces), or why a value on the way has users besides the `user` of the motif."""
    while True:
        if not uses_within(value, allowed):
            return f"{value_name(value)} has users besides the {user}"
        op = producer(value)
        if isinstance(op, RESHAPES) and (
                not keep_last_dim or static_shape(op.operands[0])[-1:] == static_shape(value)[-1:]):
            allowed, value = (op,), op.operands[0]
            continue
        return op, value


def fuse_activation(rewriter: PatternRewriter, root: Operation, x: SSAValue, activation: str,
                    internal: Sequence[Operation]) -> str | None:
    """Fold `activation`, computed from `x` by the ops `internal` (ending with `root`), into the
    linear layer producing `x` (through single-use reshapes). Returns why not, or None if done."""
    if element_of(root.results[0]) != element_of(x):
        return "the activation changes the dtype (sigmoid of an integer linear gives float)"
    found = producer_through_reshapes(x, internal, "activation")
    if isinstance(found, str):
        return found
    linear_op = found[0]
    lin = as_linear(linear_op)
    if isinstance(lin, str):
        return lin
    if lin.activation != "none":
        return f"the linear already applies {lin.activation}"
    # The root goes first: `x` may be the linear's own result, which the last step replaces.
    rewriter.replace(root, [], [x])
    erase_dead(rewriter, internal)
    rewriter.replace(linear_op, fused_linear(lin, lin.input, lin.bias, activation,
                                             linear_op.results[0].type, linear_op.location))
    erase_dead(rewriter, lin.replaced_transpose())
    return None
