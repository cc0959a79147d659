"""Inference batch norm folded into the convolution before it (a `fold` pattern; not a pass).

    y = batch_norm(conv(x, W, b), gamma, beta, mean, var, eps)      (inference: running statistics)
      = conv(x, W * s, (b - mean) * s + beta)         with  s = gamma / sqrt(var + eps)  per channel

`FoldBatchNormIntoConv` rewrites `aten.batch_norm` with `training = false`, and the inference
overloads torch.export may produce instead (`_native_batch_norm_legit_no_training`, and
`native_batch_norm` with `training = false`, when their statistics results are unused), whose input
is a non-transposed convolution (`conv1d`, `conv2d`, their `.padding` forms, `convolution`, or a
`fused_conv` without an activation) used by nothing else. The convolution's weight and bias and
every batch-norm vector must be constants (`aten.weight` entries of the attached WeightStore, or
`aten.constant`): the folded weight and bias are computed here (in float64, stored in the weight's
dtype) and added to the store as new entries (`fold.<layer>.weight_<n>`, `fold.<layer>.bias_<n>`),
referenced by new `aten.weight` ops; the IR never holds their data. A convolution without a bias
gets one. The new convolution keeps the old one's op, arguments and name; the batch norm, the old
convolution and the weights only they used are erased.

Left alone (with the reason `--explain-pattern` prints): a training-mode batch norm (batch
statistics are not constants), a convolution with other users (they need the unnormalized value),
a transposed convolution, non-constant weights or statistics, channel counts that disagree, and
any module without a WeightStore (plain `forge-opt` on text with no companion weights file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from dialects import aten
from forge.patterns import ForgePattern
from forge.transforms.dce import erase_dead_operands
from forge.weights import WeightStore

if TYPE_CHECKING:
    import torch


def _ops_named(*names: str) -> tuple[type[Operation], ...]:
    """The aten op classes with these names that the dialect defines (the opset grows over time)."""
    return tuple(cls for n in names if (cls := aten.op_named(n)) is not None)  # one class each, not the dialect


BATCH_NORMS = _ops_named("aten.batch_norm", "aten._native_batch_norm_legit_no_training", "aten.native_batch_norm")
CONVOLUTIONS = _ops_named(
    "aten.conv1d", "aten.conv2d", "aten.conv1d.padding", "aten.conv2d.padding", "aten.convolution", "aten.fused_conv"
)


def _inference_mode(op: aten.AtenOp) -> str | None:
    """Why `op` is not an inference batch norm whose only used result is the normalized value."""
    if op.name != "aten._native_batch_norm_legit_no_training" and op.arg("training"):
        return "training-mode batch norm (batch statistics)"
    if any(r.first_use is not None for r in op.results[1:]):
        return "the batch norm's saved statistics are used"
    return None


def _conv_reason(conv: Operation | None, bn_input: SSAValue) -> str | None:
    """Why `conv` is not a convolution the batch norm can fold into."""
    if not isinstance(conv, CONVOLUTIONS):
        return "the input is not a convolution"
    assert isinstance(conv, aten.AtenOp)
    if conv.name == "aten.convolution" and conv.arg("transposed"):
        return "the convolution is transposed"
    if conv.name == "aten.fused_conv" and conv.arg("activation") != "none":
        return "the convolution has an activation"
    if bn_input.uses.get_length() != 1:
        return "the convolution's result has users besides the batch norm"
    return None


class FoldBatchNormIntoConv(ForgePattern):
    """batch_norm(conv(x, W, b)) in inference mode → conv(x, W·s, (b − mean)·s + beta)."""

    ROOTS = BATCH_NORMS

    def __init__(self, store: WeightStore):
        super().__init__()
        self.store = store

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.AtenOp, rewriter: PatternRewriter) -> None:
        if not isinstance(op, BATCH_NORMS):
            return None
        reason = _inference_mode(op)
        x = op.tensor_arg("input")
        conv = x.owner if isinstance(x.owner, Operation) else None
        reason = reason or _conv_reason(conv, x)
        if reason is not None:
            return self.fail(op, reason)
        assert isinstance(conv, aten.AtenOp)
        folded = self._folded(op, conv)
        if isinstance(folded, str):
            return self.fail(op, folded)
        weight, bias = folded
        new = self._new_conv(conv, weight, bias, rewriter)
        old_operands = (*conv.operands, *op.operands)
        rewriter.replace_all_uses_with(op.results[0], new.results[0])
        rewriter.erase(op)
        rewriter.erase(conv)
        erase_dead_operands(old_operands)

    # --- computing the folded weight and bias ---------------------------------------------------

    def _constant(self, value: SSAValue | None) -> torch.Tensor | None | str:
        """The tensor a constant operand holds (None for an absent optional operand)."""
        if value is None:
            return None
        owner = value.owner
        if isinstance(owner, aten.ConstantOp):
            return owner.to_tensor()
        if (isinstance(owner, aten.WeightOp) and owner.weight_name.data in self.store
                and self.store.has_data(owner.weight_name.data)):  # an external (meta) weight has no values
            return self.store[owner.weight_name.data]
        return f"{value.name_hint or 'an operand'} is not a constant"

    def _folded(self, bn: aten.AtenOp, conv: aten.AtenOp) -> tuple[str, str] | str:
        """Store the folded weight and bias; returns their store names, or why it cannot fold."""
        import torch

        values = {}
        for name, op, arg in (("w", conv, "weight"), ("b", conv, "bias"), ("gamma", bn, "weight"),
                              ("beta", bn, "bias"), ("mean", bn, "running_mean"), ("var", bn, "running_var")):
            t = self._constant(op.tensor_arg(arg))
            if isinstance(t, str):
                return t
            values[name] = t
        w = values["w"]
        assert isinstance(w, torch.Tensor)
        if values["mean"] is None or values["var"] is None:
            return "the batch norm has no running statistics"
        c = w.shape[0]
        if any(t is not None and tuple(t.shape) != (c,) for k, t in values.items() if k != "w"):
            return f"the batch-norm vectors do not all have the convolution's {c} output channels"
        if not w.is_floating_point():
            return "the convolution's weight is not floating point"
        v = {k: (t.double() if t is not None else None) for k, t in values.items()}
        scale = torch.rsqrt(v["var"] + float(bn.arg("eps")))
        if v["gamma"] is not None:
            scale = scale * v["gamma"]
        bias = v["b"] if v["b"] is not None else torch.zeros(c, dtype=torch.float64)
        bias = (bias - v["mean"]) * scale
        if v["beta"] is not None:
            bias = bias + v["beta"]
        weight = v["w"] * scale.reshape(c, *[1] * (w.dim() - 1))
        base = self._weight_name(conv)
        stem = base.removesuffix("weight") if base.endswith(".weight") else f"{base}."
        w_name = self.store.add_constant(weight.to(w.dtype).contiguous(), f"fold.{base}")
        b_name = self.store.add_constant(bias.to(w.dtype).contiguous(), f"fold.{stem}bias")
        return w_name, b_name

    @staticmethod
    def _weight_name(conv: aten.AtenOp) -> str:
        owner = conv.tensor_arg("weight").owner
        if isinstance(owner, aten.WeightOp):
            return owner.weight_name.data
        return conv.results[0].name_hint or "conv"

    # --- the new convolution ----------------------------------------------------------------------

    def _new_conv(self, conv: aten.AtenOp, weight: str, bias: str, rewriter: PatternRewriter) -> Operation:
        w_type = conv.tensor_arg("weight").type
        c = w_type.get_shape()[0]
        b_type = TensorType(w_type.element_type, [c])
        new_w = aten.WeightOp(weight, w_type)
        new_b = aten.WeightOp(bias, b_type)
        new_w.results[0].name_hint = _hint(conv.tensor_arg("weight"), "folded_weight")
        new_b.results[0].name_hint = _hint(conv.tensor_arg("weight"), "folded_bias", suffix="_bias")
        new = rebuilt(conv, weight=new_w.results[0], bias=new_b.results[0])
        rewriter.insert([new_w, new_b, new], InsertPoint.before(conv))
        return new


def _hint(value: SSAValue, default: str, suffix: str = "") -> str:
    return f"{value.name_hint}_folded{suffix}" if value.name_hint else default



def rebuilt(op: aten.AtenOp, **operands: SSAValue) -> aten.AtenOp:
    """A copy of `op` (same class, arguments, result type, location and name) with the tensor
    arguments named in `operands` bound to new values (an absent optional one becomes present)."""
    groups = []
    for spec in op.SIGNATURE.tensor_args:
        value = operands.get(spec.name, op.tensor_arg(spec.name))
        groups.append([] if value is None else [value])
    props = {k: v for k, v in op.properties.items() if k != "operandSegmentSizes"}
    new = type(op).build_op(groups, props, [r.type for r in op.results], location=op.location)
    for old_result, new_result in zip(op.results, new.results, strict=True):
        new_result.name_hint = old_result.name_hint
    return new
