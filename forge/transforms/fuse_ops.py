"""fuse-ops: fold linear layers, their bias and activation, SwiGLU and RMSNorm into fused ops.

One forward sweep over the IR (`forge.patterns.apply_patterns`; no DCE: each pattern erases exactly
the ops it made dead). Patterns look *backwards* from the last op of a motif, so a forward walk
meets every producer before its consumers and the motifs compose in one sweep:

* `LinearToFusedLinear` -- every linear-like op becomes `aten.fused_linear` with `activation =
  "none"`: `linear`; `addmm(b, x, W)` (alpha = beta = 1, bias [N]); `mm`/`matmul` whose right
  operand is a constant (`aten.weight`/`aten.constant`). One op form for "a linear layer" keeps
  the lowering to `npuir.linear` a 1:1 mapping. `fused_linear` wants the torch `[out, in]` weight:
  a `[in, out]` right operand (GPT-2's Conv1D, `mm`, `matmul`) is passed through an explicit
  `aten.t`, which `layout` folds into a pre-transposed WeightStore entry when the store is
  attached (a transpose already in the IR, `t(W)`, is looked through instead). GPT-2's
  `view(addmm(b, view(x3d), W))` flattening becomes a single N-D `fused_linear(x3d, ...)`.
* `FuseBiasAdd` -- `add(fused_linear(x, W, none), b[N])` (through reshapes that keep the last dim)
  takes the bias in.
* `FuseActivation` -- relu, gelu (erf or tanh), silu, sigmoid of a linear (through single-use
  reshapes) becomes the linear's `activation`.
* `FuseConvBias` -- `add(conv(x, W, none), b)` of a per-channel constant `b` ([C, 1, ...]) and a
  (non-transposed) convolution used only by it takes `view(b, [C])` in as the convolution's bias.
* `FuseConvActivation` -- relu, gelu, silu, sigmoid, relu6 (clamp / hardtanh to [0, 6]) of a
  (non-transposed) conv1d / conv2d / convolution used only by it becomes `aten.fused_conv` with
  that activation (its bias: torch's convolutions carry one, or `FuseConvBias` took it in).
* `GeluPolynomial` -- GPT-2's written-out `0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))` and
  BERT's `x*0.5*(1+erf(x/sqrt(2)))` (constants checked with a relative tolerance, every
  intermediate used only inside the motif) become gelu(tanh) / gelu: fused into the producing
  linear when legal, else `aten.gelu`.
* `GatedMlp` -- `act(x·Wgᵀ) * (x·Wuᵀ)` (both linears bias-free, same input) becomes
  `aten.gated_mlp`.
* `RmsNormFusion` -- `w * [cast] (x * rsqrt(mean(x**2, -1, keepdim) + eps))`, with Llama's
  no-op `to.dtype` casts, becomes `aten.rms_norm(x, [N], w, eps)` (without `w`: no weight).
* `AddLayerNorm` -- `layer_norm(a + b)` of a residual add whose sum has no other user (BERT's
  post-norm blocks) becomes `aten.add_layer_norm(a, b, ...)` ("SkipLayerNorm").
* `DenseExperts` -- a mixture-of-experts projection `bmm(W[ids], X)` (a copy of an expert's weights
  per token and pick) becomes every expert on every input column, `matmul(W, columns)`, and a
  gather_elements of each pick's expert, where that is cheaper (`forge/transforms/dense_experts.py`).

Every legality check that fails records its reason (`forge-opt --explain-pattern NAME`). Reading
linear-like ops as one linear layer lives in `linear_layers`, IR queries in `ir_queries`; each
option that switches a family of patterns declares them (`FuseOpsPass.families`, read by the
autotuner).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, get_args

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, ModuleOp, StringAttr, TensorType, f64, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from dialects import aten
from dialects.aten_schema import ArgKind, to_attribute
from dialects.shapes import static_shape
from dialects.torch_types import scalar_value
from forge.patterns import ForgePattern, PatternTable, apply_patterns
from forge.transforms.batch_norm_folding import rebuilt
from forge.transforms.dense_experts import DenseExperts
from forge.transforms.ir_queries import (
    close,
    element_of,
    erase_dead,
    is_one,
    producer,
    single_use,
    unique_user,
    uses_within,
    value_name,
)
from forge.transforms.linear_layers import (
    RESHAPES,
    Linear,
    activation_of,
    as_linear,
    fuse_activation,
    fused_linear,
    is_constant,
    producer_through_reshapes,
)


def _either(reasons: list[str]) -> str:
    """One failure reason per operand order: `lhs: ...; rhs: ...` unless they agree."""
    if len(set(reasons)) == 1:
        return reasons[0]
    return "; ".join(f"{side}: {r}" for side, r in zip(("as ordered", "swapped"), reasons, strict=True))


# --- linear layers ---------------------------------------------------------------------------------

_LinearRoot = aten.LinearOp | aten.AddmmOp | aten.MmOp | aten.MatmulOp


class LinearToFusedLinear(ForgePattern):
    """linear / addmm / mm·W / matmul·W → `fused_linear activation="none"`."""

    ROOTS = get_args(_LinearRoot)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _LinearRoot, rewriter: PatternRewriter) -> None:
        lin = as_linear(op)
        if isinstance(lin, str):
            return self.fail(op, lin)
        if isinstance(op, (aten.MmOp, aten.MatmulOp)) and not is_constant(lin.weight):
            return self.fail(op, "right operand is not a weight (left to layout)")
        result = op.results[0]
        # view(addmm(b, view(x3d), W)) -> fused_linear(x3d, W', b): drop the 2-D flattening.
        flatten = producer(lin.input)
        user = unique_user(result)
        if isinstance(op, (aten.AddmmOp, aten.MmOp)) and isinstance(flatten, RESHAPES) \
                and isinstance(user, RESHAPES):
            x = flatten.operands[0]
            lead, flat = static_shape(x)[:-1], static_shape(lin.input)
            out_shape = (*lead, lin.out_features())
            if lead and static_shape(x)[-1] == flat[1] and math.prod(lead) == flat[0] \
                    and static_shape(user.results[0]) == out_shape:
                rewriter.replace(user, fused_linear(lin, x, lin.bias, "none", user.results[0].type,
                                                     op.location))
                erase_dead(rewriter, [op, flatten, *lin.replaced_transpose()])
                return
        rewriter.replace(op, fused_linear(lin, lin.input, lin.bias, "none", result.type, op.location))
        erase_dead(rewriter, lin.replaced_transpose())


class _BiasAddEpilogue(ForgePattern):
    """An `add` (alpha 1) of a producer's result and a bias, either operand order: subclasses
    say in `_try(op, value, bias, rewriter)` whether `value`'s producer absorbs `bias` (None when
    it rewrote, else the reason it did not)."""

    ROOTS = (aten.AddTensorOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.AddTensorOp, rewriter: PatternRewriter) -> None:
        if not is_one(op.arg("alpha")):
            return self.fail(op, "add with alpha != 1")
        reasons: list[str] = []
        for value, bias in ((op.input, op.other), (op.other, op.input)):
            reason = self._try(op, value, bias, rewriter)
            if reason is None:
                return
            reasons.append(reason)
        return self.fail(op, _either(reasons))

    def _try(self, op: aten.AddTensorOp, value: SSAValue, bias: SSAValue, rewriter: PatternRewriter) -> str | None:
        raise NotImplementedError


class FuseBiasAdd(_BiasAddEpilogue):
    """add(fused_linear(x, W, none, no bias), b[N]) → fused_linear(x, W, b)."""

    def _try(self, op: aten.AddTensorOp, value: SSAValue, bias: SSAValue,
             rewriter: PatternRewriter) -> str | None:
        if op.results[0].type != value.type:
            return "the add broadcasts the linear's output"
        found = producer_through_reshapes(value, (op,), "bias add", keep_last_dim=True)
        if isinstance(found, str):
            return found
        linear_op, value = found
        lin = as_linear(linear_op)
        if isinstance(lin, str):
            return lin
        if lin.activation != "none" or lin.bias is not None:
            return "the linear already has a bias or an activation"
        n = lin.out_features()
        if static_shape(bias) != (n,) or element_of(bias) != element_of(value):
            return f"bias of type {bias.type} is not a [{n}] vector of the linear's type"
        if isinstance(producer(bias), Operation) and not _dominates(bias, linear_op):
            return "the bias is computed after the linear"
        rewriter.replace(linear_op, fused_linear(lin, lin.input, bias, "none", linear_op.results[0].type,
                                                 linear_op.location))
        rewriter.replace(op, [], [op.input if op.input is not bias else op.other])
        erase_dead(rewriter, lin.replaced_transpose())
        return None


def _dominates(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined before `op` (same block, or an enclosing one)."""
    definition = producer(value)
    if definition is None:
        return True
    if definition.parent is op.parent:
        return definition.is_before_in_block(op)
    return False


_ActivationRoot = aten.ReluOp | aten.GeluOp | aten.SiluOp | aten.SigmoidOp


class _ActivationEpilogue(ForgePattern):
    """An activation op folded into the op that produces its input: subclasses say how (`fuse`)."""

    ROOTS = get_args(_ActivationRoot)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _ActivationRoot, rewriter: PatternRewriter) -> None:
        activation = activation_of(op)
        if activation is None:
            return self.fail(op, f"unsupported gelu approximation {op.arg('approximate')!r}")
        return self.fuse(op, activation, rewriter)

    def fuse(self, op: Operation, activation: str, rewriter: PatternRewriter) -> None:
        raise NotImplementedError


class FuseActivation(_ActivationEpilogue):
    """relu / gelu / silu / sigmoid (linear) → fused_linear with that activation."""

    def fuse(self, op: Operation, activation: str, rewriter: PatternRewriter) -> None:
        reason = fuse_activation(rewriter, op, op.operands[0], activation, (op,))
        if reason is not None:
            return self.fail(op, reason)


# --- convolutions ----------------------------------------------------------------------------------

_ConvRoot = aten.Conv1dOp | aten.Conv2dOp | aten.ConvolutionOp
_FUSED_CONV_ARGS = ("stride", "padding", "dilation", "groups")
_CLAMPS = tuple(c for c in (getattr(aten, "ClampOp", None), getattr(aten, "HardtanhOp", None)) if c is not None)
"""clamp / hardtanh: ReLU6 when they clip to [0, 6] (MobileNetV2's `nn.ReLU6` is `hardtanh(x, 0, 6)`)."""


def _conv_reason(conv: Operation | None, value: SSAValue, what: str) -> str | None:
    """Why `conv` (the producer of `value`) cannot take `what` into its epilogue."""
    if not isinstance(conv, get_args(_ConvRoot)):
        return "the input is not a convolution"
    if isinstance(conv, aten.ConvolutionOp) and conv.arg("transposed"):
        return "the convolution is transposed"
    if not single_use(value):
        return f"{value_name(value)} has users besides the {what}"
    return None


def _is_relu6(op: Operation) -> bool:
    assert isinstance(op, aten.AtenOp)
    names = ("min", "max") if op.name == "aten.clamp" else ("min_val", "max_val")
    lo, hi = (op.arg(n) for n in names)
    return lo is not None and hi is not None and float(lo) == 0.0 and float(hi) == 6.0


class FuseConvActivation(_ActivationEpilogue):
    """relu / gelu / silu / sigmoid / clamp or hardtanh to [0, 6] (relu6) of a conv1d / conv2d /
    convolution used only by it → `aten.fused_conv` with that activation (the bias is already the
    convolution's, or taken in by `FuseConvBias` before)."""

    ROOTS = (*get_args(_ActivationRoot), *_CLAMPS)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.AtenOp, rewriter: PatternRewriter) -> None:
        if isinstance(op, _CLAMPS):
            if not _is_relu6(op):
                return self.fail(op, "the clamp is not to [0, 6] (relu6)")
            return self.fuse(op, "relu6", rewriter)
        return super().match_and_rewrite(op, rewriter)

    def fuse(self, op: Operation, activation: str, rewriter: PatternRewriter) -> None:
        conv = producer(op.operands[0])
        reason = _conv_reason(conv, op.operands[0], "activation")
        if reason is not None:
            return self.fail(op, reason)
        assert conv is not None
        rewriter.replace(op, _fused_conv(conv, activation, op.results[0].type))
        erase_dead(rewriter, [conv])


class FuseConvBias(_BiasAddEpilogue):
    """add(conv(x, W, none), b) with `b` a per-channel constant ([C, 1, ...] or [1, C, 1, ...],
    broadcast along the channel dim only) → conv(x, W, view(b, [C])), the bias of the convolution."""

    def _try(self, op: aten.AddTensorOp, value: SSAValue, bias: SSAValue, rewriter: PatternRewriter) -> str | None:
        conv = producer(value)
        reason = _conv_reason(conv, value, "bias add")
        if reason is not None:
            return reason
        assert isinstance(conv, aten.AtenOp)
        if conv.tensor_arg("bias") is not None:
            return "the convolution already has a bias"
        out = static_shape(value)
        c = out[1]
        padded = (1,) * (len(out) - len(static_shape(bias))) + tuple(static_shape(bias))
        if op.results[0].type != value.type or padded != (1, c) + (1,) * (len(out) - 2):
            return f"the added {bias.type} is not a per-channel [{c}] bias"
        if not is_constant(bias) or element_of(bias) != element_of(value):
            return "the bias is not a constant of the convolution's element type"
        if isinstance(producer(bias), Operation) and not _dominates(bias, conv):
            return "the bias is computed after the convolution"
        vector = TensorType(element_of(bias), [c])
        view = aten.ViewOp.build_op([[bias]], {"size": to_attribute(ArgKind.INT_LIST, [c])}, [vector],
                                    location=op.location)
        view.results[0].name_hint = f"{bias.name_hint}_vec" if bias.name_hint else None
        new = rebuilt(conv, bias=view.results[0])
        rewriter.insert([view, new], InsertPoint.before(conv))
        rewriter.replace(op, [], [new.results[0]])
        erase_dead(rewriter, [conv])
        return None


def _fused_conv(conv: Operation, activation: str, result_type: Attribute) -> Operation:
    assert isinstance(conv, aten.AtenOp)
    signature = aten.FusedConvOp.SIGNATURE
    props = {name: to_attribute(signature.arg(name).kind, conv.arg(name)) for name in _FUSED_CONV_ARGS}
    props["activation"] = StringAttr(activation)
    bias = conv.tensor_arg("bias")
    operands = [[conv.tensor_arg("input")], [conv.tensor_arg("weight")], [bias] if bias is not None else []]
    fused = aten.FusedConvOp.build_op(operands, props, [result_type], location=conv.location)
    fused.results[0].name_hint = conv.results[0].name_hint  # named after the convolution
    return fused


# --- written-out GELUs (GPT-2's tanh form, BERT's erf form) ---------------------------------------

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
_SQRT_2 = math.sqrt(2.0)


class GeluPolynomial(ForgePattern):
    """GPT-2's `0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x**3)))` → gelu(tanh) and BERT's
    `x*0.5*(1+erf(x/sqrt(2)))` → gelu, fused into the producing linear when legal, else `aten.gelu`.

    Accepted shapes of the outer product: `(0.5*x) * (1+f)`, `x * (0.5*(1+f))`, `(x*(1+f)) * 0.5`,
    operands in either order; `x**3` as `pow(x, 3)` or `x*(x*x)`; 0.5 as `*0.5` or `/2`; `x/sqrt(2)`
    as a division or `*(1/sqrt(2))`. Constants must match to a relative 1e-5, and every
    intermediate must be used only inside the motif (x itself may have other users).
    """

    ROOTS = (aten.MulTensorOp, aten.MulScalarOp)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.MulTensorOp | aten.MulScalarOp, rewriter: PatternRewriter) -> None:
        match = self._match(op)
        if isinstance(match, str):
            return self.fail(op, match)
        x, activation, internal = match
        for inner in internal[:-1]:
            if not uses_within(inner.results[0], internal):
                return self.fail(op, f"{value_name(inner.results[0])} is used outside the GELU")
        if fuse_activation(rewriter, op, x, activation, internal) is None:
            return
        approximate = "tanh" if activation == "gelu_tanh" else "none"
        props = {"approximate": StringAttr(approximate)} if approximate != "none" else {}
        gelu = aten.GeluOp.build_op([[x]], props, [op.results[0].type], location=op.location)
        rewriter.replace(op, gelu)
        erase_dead(rewriter, internal[:-1])

    def _match(self, op: Operation) -> tuple[SSAValue, str, list[Operation]] | str:
        """(x, activation, the motif's ops with `op` last), or why the product is not a GELU."""
        if op.results[0].type != op.operands[0].type:
            return "the product broadcasts"
        if isinstance(op, aten.MulScalarOp):
            # (x * (1 + f)) * 0.5
            if not close(op.arg("other"), 0.5):
                return "not a product with 0.5"
            inner = producer(op.input)
            if not isinstance(inner, aten.MulTensorOp):
                return "0.5 does not multiply x*(1+f(x))"
            found = _x_times_one_plus(inner)
            if isinstance(found, str):
                return found
            x, activation, ops = found
            return x, activation, [*ops, inner, op]
        reasons = []
        for half, rest in ((op.input, op.other), (op.other, op.input)):
            # (0.5 * x) * (1 + f)
            x = _half_of(half)
            if x is not None:
                poly = _one_plus_gelu_term(rest, x)
                if not isinstance(poly, str):
                    return x, poly[0], [*poly[1], producer(half), op]
                reasons.append(poly)
            # x * (0.5 * (1 + f))
            one_plus = _half_of(rest)
            if one_plus is not None:
                poly = _one_plus_gelu_term(one_plus, half)
                if not isinstance(poly, str):
                    return half, poly[0], [*poly[1], producer(rest), op]
                reasons.append(poly)
        if reasons:
            return reasons[0]
        if not isinstance(_x_times_one_plus(op), str):
            return "the product is not multiplied by 0.5"
        return "no factor is 0.5*x or 0.5*(1+f(x))"


def _x_times_one_plus(op: aten.MulTensorOp) -> tuple[SSAValue, str, list[Operation]] | str:
    reason = "no factor is 1 + tanh(...) or 1 + erf(...)"
    for x, rest in ((op.input, op.other), (op.other, op.input)):
        poly = _one_plus_gelu_term(rest, x)
        if not isinstance(poly, str):
            return x, poly[0], poly[1]
        reason = poly
    return reason


def _half_of(value: SSAValue) -> SSAValue | None:
    """y when `value` is 0.5*y (mul.Scalar 0.5 or div.Scalar 2)."""
    op = producer(value)
    if isinstance(op, aten.MulScalarOp) and close(op.arg("other"), 0.5):
        return op.input
    if isinstance(op, aten.DivScalarOp) and close(op.arg("other"), 2.0):
        return op.input
    return None


def _one_plus_gelu_term(value: SSAValue, x: SSAValue) -> tuple[str, list[Operation]] | str:
    """(activation, ops) when `value` is `1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3))` (gelu_tanh)
    or `1 + erf(x/sqrt(2))` (gelu), ops in dependency order; else why not."""
    add_one = producer(value)
    if not (isinstance(add_one, aten.AddScalarOp) and close(add_one.arg("other"), 1.0)
            and is_one(add_one.arg("alpha"))):
        return "no 1 + f(x) factor"
    inner = producer(add_one.input)
    if isinstance(inner, aten.ErfOp):
        scale = producer(inner.input)
        if isinstance(scale, aten.DivScalarOp) and scale.input is x:
            if not close(scale.arg("other"), _SQRT_2):
                return f"erf argument divides by {scale.arg('other')}, not sqrt(2)"
        elif isinstance(scale, aten.MulScalarOp) and scale.input is x:
            if not close(scale.arg("other"), 1 / _SQRT_2):
                return f"erf argument scales by {scale.arg('other')}, not 1/sqrt(2)"
        else:
            return "erf argument is not x/sqrt(2)"
        return "gelu", [scale, inner, add_one]
    if not isinstance(inner, aten.TanhOp):
        return "1 + ... is not 1 + tanh(...) or 1 + erf(...)"
    tanh = inner
    scale = producer(tanh.input)
    if not isinstance(scale, aten.MulScalarOp):
        return "tanh argument is not a scaled sum"
    if not close(scale.arg("other"), _SQRT_2_OVER_PI):
        return f"tanh scale {scale.arg('other')} is not sqrt(2/pi)"
    inner = producer(scale.input)
    if not (isinstance(inner, aten.AddTensorOp) and is_one(inner.arg("alpha"))):
        return "tanh argument is not x + c*x**3"
    cubic_term = inner.other if inner.input is x else inner.input if inner.other is x else None
    if cubic_term is None:
        return "tanh argument does not add x"
    coeff = producer(cubic_term)
    if not isinstance(coeff, aten.MulScalarOp):
        return "x**3 is not scaled"
    if not close(coeff.arg("other"), _GELU_CUBIC):
        return f"cubic coefficient {coeff.arg('other')} is not 0.044715"
    cube = _cube_ops(coeff.input, x)
    if cube is None:
        return "the cubic term is not x**3 of the same x"
    return "gelu_tanh", [*cube, coeff, inner, scale, tanh, add_one]


def _cube_ops(value: SSAValue, x: SSAValue) -> list[Operation] | None:
    op = producer(value)
    if isinstance(op, aten.PowTensorScalarOp) and op.input is x and close(op.arg("exponent"), 3.0, 0.0):
        return [op]
    if isinstance(op, aten.MulTensorOp):
        for a, b in ((op.input, op.other), (op.other, op.input)):
            square = producer(b)
            if a is x and isinstance(square, aten.MulTensorOp) and square.input is x and square.other is x:
                return [square, op]
    return None


# --- SwiGLU ----------------------------------------------------------------------------------------


class GatedMlp(ForgePattern):
    """act(x·Wgᵀ) * (x·Wuᵀ) → gated_mlp(x, Wg, Wu, act) (SwiGLU with silu, GeGLU with gelu)."""

    ROOTS = (aten.MulTensorOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.MulTensorOp, rewriter: PatternRewriter) -> None:
        reasons: list[str] = []
        for gate, up in ((op.input, op.other), (op.other, op.input)):
            found = self._match(op, gate, up)
            if isinstance(found, str):
                reasons.append(found)
                continue
            gate_lin, up_lin, activation, internal = found
            new_ops, gate_w = gate_lin.weight_nk()
            up_ops, up_w = up_lin.weight_nk()
            new_ops += up_ops
            new_ops.append(aten.GatedMlpOp.build_op(
                [[gate_lin.input], [gate_w], [up_w]], {"activation": StringAttr(activation)},
                [op.results[0].type], location=op.location))
            rewriter.replace(op, new_ops)
            erase_dead(rewriter, [*internal, *gate_lin.replaced_transpose(), *up_lin.replaced_transpose()])
            return
        return self.fail(op, _either(reasons))

    @staticmethod
    def _match(op: Operation, gate: SSAValue, up: SSAValue) -> tuple[Linear, Linear, str, list[Operation]] | str:
        if not (single_use(gate) and single_use(up)) or gate is up:
            return "gate or up projection has other users"
        gate_op = producer(gate)
        activation = activation_of(gate_op)
        if activation is not None:
            inner = gate_op.operands[0]
            if not single_use(inner):
                return "the gate linear has other users"
            gate_lin = as_linear(producer(inner))
            if isinstance(gate_lin, str):
                return gate_lin
            if gate_lin.activation != "none":
                return "the gate linear already has an activation"
            internal = [gate_op, gate_lin.op]
        else:
            gate_lin = as_linear(gate_op)
            if isinstance(gate_lin, str):
                return gate_lin
            activation = gate_lin.activation
            if activation == "none":
                return "the gate has no activation"
            internal = [gate_lin.op]
        up_lin = as_linear(producer(up))
        if isinstance(up_lin, str):
            return up_lin
        if up_lin.activation != "none":
            return "the up projection has an activation"
        if gate_lin.bias is not None or up_lin.bias is not None:
            return "gated_mlp has no bias"
        if gate_lin.input is not up_lin.input:
            return "gate and up projections read different inputs"
        if static_shape(gate_lin.weight) != static_shape(up_lin.weight) or gate_lin.weight_is_kn != up_lin.weight_is_kn:
            return "gate and up weights differ in shape or layout"
        if gate.type != up.type or op.results[0].type != gate.type:
            return "the product broadcasts"
        return gate_lin, up_lin, activation, [*internal, up_lin.op]


# --- RMSNorm ---------------------------------------------------------------------------------------


def _scalar_constant(value: SSAValue) -> float | None:
    """The value of a one-element `aten.constant`, or None."""
    op = producer(value)
    if not isinstance(op, aten.ConstantOp) or math.prod(static_shape(value)) != 1:
        return None
    number = scalar_value(op.value)  # what op.to_tensor().item() gives, without torch
    return float(number) if isinstance(number, (int, float)) and not isinstance(number, bool) else None


def _match_rms(value: SSAValue) -> tuple[SSAValue, float, list[Operation]] | str:
    """`value` = [no-op to.dtype] (x * rsqrt(mean(x**2, -1, keepdim) + eps)): (x, eps, ops from
    `value`'s producer up). Every op above the product must be used only inside the motif.
    Variants: `x*x` for the square, `1/sqrt` (reciprocal of sqrt) for rsqrt, eps as a one-element
    constant tensor."""
    ops: list[Operation] = []
    scaled = producer(value)
    if isinstance(scaled, aten.ToDtypeOp) and scaled.results[0].type == scaled.input.type:
        ops.append(scaled)
        if not single_use(scaled.input):
            return "the normalized value has other users"
        scaled = producer(scaled.input)
    if not isinstance(scaled, aten.MulTensorOp):
        return "not x * rsqrt(...)"
    ops.append(scaled)
    for operands in ((scaled.input, scaled.other), (scaled.other, scaled.input)):
        x, inv = operands  # x is used after the loop: the operand the rsqrt scales
        inv_op = producer(inv)
        if isinstance(inv_op, aten.RsqrtOp):
            inv_ops = [inv_op]
            break
        if isinstance(inv_op, aten.ReciprocalOp) and isinstance(sqrt := producer(inv_op.input), aten.SqrtOp):
            inv_ops = [inv_op, sqrt]
            break
    else:
        return "the normalized value is not x * rsqrt(...)"
    shape = static_shape(x)
    if not shape:
        return "x is a scalar"
    if scaled.results[0].type != x.type:
        return "the product broadcasts x"
    add = producer(inv_ops[-1].operands[0])
    if isinstance(add, aten.AddScalarOp) and is_one(add.arg("alpha")):
        eps, mean = add.arg("other"), producer(add.input)
    elif isinstance(add, aten.AddTensorOp) and is_one(add.arg("alpha")):
        eps, mean, constant = _scalar_constant(add.other), producer(add.input), add.other
        if eps is None:
            eps, mean, constant = _scalar_constant(add.input), producer(add.other), add.input
        ops.append(producer(constant))  # erased with the motif if nothing else uses it
        if add.results[0].type != add.input.type:
            return "eps broadcasts the mean"
    else:
        return "rsqrt argument is not mean + eps"
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not 0 <= eps < 1:
        return f"eps {eps!r} is not a small non-negative number"
    if not isinstance(mean, aten.MeanDimOp):
        return "eps is not added to a mean"
    dims = mean.arg("dim")
    if dims is None or [d % len(shape) for d in dims] != [len(shape) - 1]:
        return f"mean over dims {dims}, not the last axis"
    if not mean.arg("keepdim") or mean.arg("dtype") is not None:
        return "mean without keepdim or with a dtype"
    square = producer(mean.input)
    if isinstance(square, aten.PowTensorScalarOp):
        if square.input is not x or not close(square.arg("exponent"), 2.0, 0.0):
            return "the mean is not over x**2"
    elif isinstance(square, aten.MulTensorOp):
        if square.input is not x or square.other is not x:
            return "the mean is not over x*x"
    else:
        return "the mean is not over x**2"
    above = [*inv_ops, add, mean, square]
    for inner in above:
        if not single_use(inner.results[0]):
            return f"{value_name(inner.results[0])} has users outside the RMSNorm"
    return x, float(eps), ops + above


def _rms_norm(x: SSAValue, weight: SSAValue | None, eps: float, root: Operation) -> Operation:
    return aten.RmsNormOp.build_op(
        [[x], [weight] if weight is not None else []],
        {"normalized_shape": DenseArrayBase.from_list(i64, [static_shape(x)[-1]]), "eps": FloatAttr(eps, f64)},
        [root.results[0].type], location=root.location)


def _is_norm_weight(value: SSAValue, x_type: Attribute) -> bool:
    """Whether `value` can be RMSNorm's weight for an x of type `x_type`: a [N] vector, same type."""
    assert isinstance(x_type, TensorType)
    return static_shape(value) == tuple(x_type.get_shape())[-1:] and element_of(value) == x_type.element_type


class RmsNormFusion(ForgePattern):
    """w * [to.dtype] (x * rsqrt(mean(x**2, dim=-1, keepdim=True) + eps)) → rms_norm(x, [N], w, eps);
    without the weight product → rms_norm(x, [N], none, eps)."""

    ROOTS = (aten.MulTensorOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.MulTensorOp, rewriter: PatternRewriter) -> None:
        reasons: list[str] = []
        for weight, normed in ((op.input, op.other), (op.other, op.input)):
            if not single_use(normed):
                reasons.append("the normalized value has other users")
                continue
            found = _match_rms(normed)
            if isinstance(found, str):
                reasons.append(found)
                continue
            x, eps, internal = found
            if not _is_norm_weight(weight, x.type) or op.results[0].type != x.type:
                reasons.append(f"weight of type {weight.type} is not a [N] vector of x's type")
                continue
            rewriter.replace(op, _rms_norm(x, weight, eps, op))
            erase_dead(rewriter, internal)
            return
        # No weight: `op` itself is x * rsqrt(...), unless a weight product follows it.
        found = _match_rms(op.results[0])
        if isinstance(found, str):
            return self.fail(op, _either(reasons))
        x, eps, internal = found
        user = unique_user(op.results[0])
        if isinstance(user, aten.ToDtypeOp) and user.results[0].type == user.input.type:
            user = unique_user(user.results[0])
        if isinstance(user, aten.MulTensorOp) and (_is_norm_weight(user.input, x.type)
                                                   or _is_norm_weight(user.other, x.type)):
            return self.fail(op, "left for the weight product that follows")
        rewriter.replace(op, _rms_norm(x, None, eps, op))
        erase_dead(rewriter, internal[1:])


# --- residual add + LayerNorm ----------------------------------------------------------------------


class AddLayerNorm(ForgePattern):
    """layer_norm(a + b) → add_layer_norm(a, b): the residual add fused into the norm after it."""

    ROOTS = (aten.LayerNormOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.LayerNormOp, rewriter: PatternRewriter) -> None:
        add = producer(op.input)
        if not isinstance(add, aten.AddTensorOp):
            return self.fail(op, "the input is not an aten.add.Tensor")
        if add.arg("alpha") != 1:
            return self.fail(op, "the add scales its second operand (alpha != 1)")
        if not single_use(add.result):
            return self.fail(op, "the sum has other users (it is the residual stream)")
        if not (add.input.type == add.other.type == op.result.type):
            return self.fail(op, "the add broadcasts or changes the dtype")
        properties = {"normalized_shape": op.properties["normalized_shape"],
                      "eps": FloatAttr(float(op.arg("eps")), f64)}
        groups = [[add.input], [add.other], _present(op.weight), _present(op.bias)]
        fused = aten.AddLayerNormOp.build_op(groups, properties, [op.result.type], location=op.location)
        fused.results[0].name_hint = op.result.name_hint
        rewriter.replace(op, [fused])
        rewriter.erase(add)


def _present(value: SSAValue | None) -> list[SSAValue]:
    return [] if value is None else [value]


# --- the pass --------------------------------------------------------------------------------------


def _result_elements(op: Operation) -> int:
    ty = op.results[0].type if op.results else None
    return math.prod(ty.get_shape()) if isinstance(ty, TensorType) else 0


def aggressiveness_threshold(module: ModuleOp, roots: Iterable[type[Operation]], alpha: float) -> float:
    """The smallest result (in elements) a fusion site needs at aggressiveness `alpha`.

    Sites are the ops whose type roots an enabled pattern; a site's modelled gain grows with the
    size of the tensor it writes (the intermediates a fusion removes are that big), so sites of
    one size count as equally good. The m distinct site sizes are ranked and the largest
    ceil(alpha * m) are taken: the threshold is the last one taken. Counting sizes rather than
    sites keeps alpha's meaning independent of the depth of a model (each layer adds the same
    sizes). alpha = 0: no site (inf); alpha = 1: every site (0).
    """
    if alpha <= 0:
        return math.inf
    if alpha >= 1:
        return 0.0
    root_types = tuple(roots)
    sizes = sorted({_result_elements(op) for op in module.walk() if isinstance(op, root_types)}, reverse=True)
    if not sizes:
        return 0.0
    return float(sizes[max(1, math.ceil(alpha * len(sizes))) - 1])


PATTERN_ORDER: tuple[type[ForgePattern], ...] = (
    LinearToFusedLinear, FuseBiasAdd, FuseConvBias, FuseActivation, FuseConvActivation, GatedMlp, RmsNormFusion,
    GeluPolynomial, AddLayerNorm, DenseExperts,
)
"""The order the enabled patterns are tried in on an op that roots several of them."""


def _family(*patterns: type[ForgePattern], searched: bool = False) -> Any:
    """A `FuseOpsPass` option (on by default) that enables `patterns`; `searched`: the autotuner
    scores the pipeline with it off."""
    return field(default=True, metadata={"patterns": patterns, "searched": searched})


@dataclass(frozen=True)
class FuseOpsPass(ModulePass):
    """Fuse linear layers with their bias and activation, SwiGLU MLPs, written-out RMSNorms and add+LayerNorm;
    compute mixture-of-experts projections densely."""

    name: ClassVar[str] = "fuse-ops"

    # The fusion families, in the order the autotuner lists them. Not searched: `canonicalize_linear`
    # (the lowering makes the same `npuir.linear` either way), `epilogues` (the zoo's biases and
    # activations arrive through addmm and the GELU/SwiGLU patterns) and `residual_norm`
    # (`add_layer_norm` lowers to the same add and norm: no modelled gain until the backend has a
    # fused kernel).

    canonicalize_linear: bool = _family(LinearToFusedLinear)
    """Also turn linear layers without activation into `fused_linear activation="none"`."""

    epilogues: bool = _family(FuseBiasAdd, FuseActivation, FuseConvBias, FuseConvActivation)
    """Fuse a bias add and an activation into the linear or convolution that produces them."""

    gelu: bool = _family(GeluPolynomial, searched=True)
    """Recognise written-out GELU polynomials (fused into their linear when legal)."""

    gated_mlp: bool = _family(GatedMlp, searched=True)
    """Fuse act(x·Wg) * (x·Wu) into `aten.gated_mlp` (SwiGLU / GeGLU)."""

    rms_norm: bool = _family(RmsNormFusion, searched=True)
    """Fuse written-out RMSNorms into `aten.rms_norm`."""

    residual_norm: bool = _family(AddLayerNorm)
    """Fuse a residual add into the LayerNorm that follows it (`aten.add_layer_norm`)."""

    dense_experts: bool = _family(DenseExperts)
    """Compute mixture-of-experts projections densely (every expert, then the picked one) where
    that beats gathering a copy of the weights per token (`DenseExperts`)."""

    aggressiveness: float = 1.0
    """alpha in [0, 1]: fuse only the candidate sites (ops that root an enabled pattern) whose
    result is among the largest ceil(alpha * m) of their m distinct sizes (see
    `aggressiveness_threshold`). 1 fuses every match, 0 none."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.aggressiveness <= 1.0:
            raise ValueError(f"fuse-ops aggressiveness {self.aggressiveness} is not in [0, 1]")

    @classmethod
    def families(cls) -> dict[str, tuple[type[ForgePattern], ...]]:
        """The options that switch a family of patterns on or off, with its patterns (field order)."""
        return {f.name: f.metadata["patterns"] for f in fields(cls) if "patterns" in f.metadata}

    @classmethod
    def searched_families(cls) -> tuple[str, ...]:
        """The families the autotuner switches off one at a time."""
        return tuple(f.name for f in fields(cls) if f.metadata.get("searched"))

    def patterns(self) -> list[ForgePattern]:
        enabled = {p for family, patterns in self.families().items() if getattr(self, family) for p in patterns}
        return [pattern() for pattern in sorted(enabled, key=PATTERN_ORDER.index)]  # raises if one is unordered

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = self.patterns()
        if self.aggressiveness >= 1.0:
            apply_patterns(op, patterns)
            return
        roots = {root for pattern in patterns for root in pattern.ROOTS}
        threshold = aggressiveness_threshold(op, roots, self.aggressiveness)
        apply_patterns(op, PatternTable(patterns, admit=lambda site: _result_elements(site) >= threshold))
