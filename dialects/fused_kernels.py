"""Reference semantics of Forge's fused ops, as torch custom ops in the `forge` namespace.

Defining them with `torch.library` gives each fused op a schema and a meta kernel, so the
`aten` dialect defines, verifies, interprets and folds them exactly like ATen overloads.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid")


def apply_activation(x: torch.Tensor, activation: str) -> torch.Tensor:
    """The activation function named `activation` (one of ACTIVATIONS)."""
    if activation == "none":
        return x
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
    raise ValueError(f"unknown activation '{activation}' (expected one of {', '.join(ACTIVATIONS)})")


@torch.library.custom_op("forge::fused_linear", mutates_args=())
def fused_linear(
    input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, activation: str
) -> torch.Tensor:
    """activation(input @ weight.T + bias): a linear layer with its activation fused in."""
    return apply_activation(F.linear(input, weight, bias), activation)


@fused_linear.register_fake
def _(input, weight, bias, activation):
    _check_activation(activation)
    return F.linear(input, weight, bias)


@torch.library.custom_op("forge::gated_mlp", mutates_args=())
def gated_mlp(
    input: torch.Tensor, gate_weight: torch.Tensor, up_weight: torch.Tensor, activation: str
) -> torch.Tensor:
    """activation(input @ gate_weight.T) * (input @ up_weight.T): the gated half of SwiGLU/GeGLU."""
    return apply_activation(F.linear(input, gate_weight), activation) * F.linear(input, up_weight)


@gated_mlp.register_fake
def _(input, gate_weight, up_weight, activation):
    _check_activation(activation)
    return F.linear(input, gate_weight) * F.linear(input, up_weight)


@torch.library.custom_op("forge::matmul_transposed", mutates_args=())
def matmul_transposed(
    input: torch.Tensor, other: torch.Tensor, transpose_input: bool, transpose_other: bool
) -> torch.Tensor:
    """matmul with its operands' last two dims optionally swapped (layout folded into the op)."""
    a = input.transpose(-1, -2) if transpose_input else input
    b = other.transpose(-1, -2) if transpose_other else other
    return torch.matmul(a, b)


@matmul_transposed.register_fake
def _(input, other, transpose_input, transpose_other):
    a = input.transpose(-1, -2) if transpose_input else input
    b = other.transpose(-1, -2) if transpose_other else other
    return torch.matmul(a, b)


def _check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{activation}' (expected one of {', '.join(ACTIVATIONS)})")
