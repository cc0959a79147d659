"""Reference semantics of Forge's fused ops, as torch operators in the `forge` namespace.

Defining them as torch operators gives each fused op a schema and a meta kernel, so the `aten`
dialect defines, verifies, interprets and folds them exactly like ATen overloads. They use the
low-level `torch.library.Library` API on purpose: `torch.library.custom_op` imports
`torch._dynamo` (seconds), which every `forge-opt` run would pay just to load the dialect.

`FUSED_OPS` is the table of them: one `FusedOp` per op (its name, the `aten` dialect's op class
name, schema, kernel and meta kernel). Importing this module registers them all with torch; the
`aten` dialect generates its op classes (`aten.FusedLinearOp`, ...) from the same table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "relu6")


def apply_activation(x: torch.Tensor, activation: str) -> torch.Tensor:
    """The activation function named `activation` (one of ACTIVATIONS)."""
    _check_activation(activation)
    if activation == "relu":
        return torch.relu(x)
    if activation == "gelu":
        return F.gelu(x)
    if activation == "gelu_tanh":
        return F.gelu(x, approximate="tanh")
    if activation == "silu":
        return F.silu(x)
    if activation == "sigmoid":
        return torch.sigmoid(x)
    if activation == "relu6":  # hardtanh(x, 0, 6), MobileNet's ReLU6
        return torch.clamp(x, 0.0, 6.0)
    return x


def fused_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, activation: str) -> torch.Tensor:
    """activation(input @ weight.T + bias): a linear layer with its activation fused in."""
    return apply_activation(F.linear(input, weight, bias), activation)


def gated_mlp(input: torch.Tensor, gate_weight: torch.Tensor, up_weight: torch.Tensor, activation: str) -> torch.Tensor:
    """activation(input @ gate_weight.T) * (input @ up_weight.T): the gated half of SwiGLU/GeGLU."""
    return apply_activation(F.linear(input, gate_weight), activation) * F.linear(input, up_weight)


def matmul_transposed(
    input: torch.Tensor, other: torch.Tensor, transpose_input: bool, transpose_other: bool
) -> torch.Tensor:
    """matmul with its operands' last two dims optionally swapped (layout folded into the op)."""
    a = input.transpose(-1, -2) if transpose_input else input
    b = other.transpose(-1, -2) if transpose_other else other
    return torch.matmul(a, b)


def add_layer_norm(
    input: torch.Tensor,
    residual: torch.Tensor,
    normalized_shape: list[int],
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
) -> torch.Tensor:
    """layer_norm(input + residual): a residual connection fused with the norm after it."""
    return F.layer_norm(input + residual, normalized_shape, weight, bias, eps)


def fused_conv(
    input: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    stride: list[int],
    padding: list[int],
    dilation: list[int],
    groups: int,
    activation: str,
) -> torch.Tensor:
    """activation(conv(input, weight) + bias): a (non-transposed) convolution with its activation."""
    return apply_activation(_conv(input, weight, bias, stride, padding, dilation, groups), activation)


def _conv(input, weight, bias, stride, padding, dilation, groups):
    n = input.dim() - 2
    return torch.ops.aten.convolution(input, weight, bias, stride, padding, dilation, False, [0] * n, groups)


def _fused_conv_meta(input, weight, bias, stride, padding, dilation, groups, activation):
    _check_activation(activation)
    return _conv(input, weight, bias, stride, padding, dilation, groups)


def _fused_linear_meta(input, weight, bias, activation):
    # the activation too: it decides the dtype of an integer linear's result (sigmoid gives float32)
    _check_linear_dtype(input, activation)
    return apply_activation(F.linear(input, weight, bias), activation)


def _gated_mlp_meta(input, gate_weight, up_weight, activation):
    _check_linear_dtype(input, activation)
    return apply_activation(F.linear(input, gate_weight), activation) * F.linear(input, up_weight)


def _check_linear_dtype(input: torch.Tensor, activation: str) -> None:
    """What the CPU kernel refuses and the meta kernels would not: a bool matrix product, gelu or
    silu of integers."""
    if input.dtype == torch.bool:
        raise RuntimeError("a linear of bool tensors is not implemented")
    if not input.is_floating_point() and activation in ("gelu", "gelu_tanh", "silu"):
        raise RuntimeError(f"{activation} of {str(input.dtype).removeprefix('torch.')} is not implemented")


def _check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{activation}' (expected one of {', '.join(ACTIVATIONS)})")


@dataclass(frozen=True)
class FusedOp:
    """One of Forge's fused ops: `torch.ops.forge.<name>.default`, `aten.<name>` in the IR."""

    name: str
    class_name: str
    """The op class of the `aten` dialect (`dialects.aten.<class_name>`)."""
    schema: str
    kernel: Callable[..., torch.Tensor]
    meta: Callable[..., torch.Tensor]


FUSED_OPS: tuple[FusedOp, ...] = (
    FusedOp(
        "fused_linear",
        "FusedLinearOp",
        "fused_linear(Tensor input, Tensor weight, Tensor? bias, str activation) -> Tensor",
        fused_linear,
        _fused_linear_meta,
    ),
    FusedOp(
        "gated_mlp",
        "GatedMlpOp",
        "gated_mlp(Tensor input, Tensor gate_weight, Tensor up_weight, str activation) -> Tensor",
        gated_mlp,
        _gated_mlp_meta,
    ),
    FusedOp(
        "matmul_transposed",
        "MatmulTransposedOp",
        "matmul_transposed(Tensor input, Tensor other, bool transpose_input, bool transpose_other) -> Tensor",
        matmul_transposed,
        matmul_transposed,
    ),
    FusedOp(
        "fused_conv",
        "FusedConvOp",
        "fused_conv(Tensor input, Tensor weight, Tensor? bias, int[] stride, int[] padding, int[] dilation, "
        "int groups, str activation) -> Tensor",
        fused_conv,
        _fused_conv_meta,
    ),
    FusedOp(
        "add_layer_norm",
        "AddLayerNormOp",
        "add_layer_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight, Tensor? bias, "
        "float eps) -> Tensor",
        add_layer_norm,
        add_layer_norm,
    ),
)


_LIBRARY = torch.library.Library("forge", "DEF")
for _op in FUSED_OPS:
    _LIBRARY.define(_op.schema)
    _LIBRARY.impl(_op.name, _op.kernel, "CompositeExplicitAutograd")
    _LIBRARY.impl(_op.name, _op.meta, "Meta")
