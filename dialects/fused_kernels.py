"""Reference semantics of Forge's fused ops, as torch operators in the `forge` namespace.

Defining them as torch operators gives each fused op a schema and a meta kernel, so the `aten`
dialect defines, verifies, interprets and folds them exactly like ATen overloads. They use the
low-level `torch.library.Library` API on purpose: `torch.library.custom_op` imports
`torch._dynamo` (seconds), which every `forge-opt` run would pay just to load the dialect.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid")

SCHEMAS = {
    "fused_linear": "fused_linear(Tensor input, Tensor weight, Tensor? bias, str activation) -> Tensor",
    "gated_mlp": "gated_mlp(Tensor input, Tensor gate_weight, Tensor up_weight, str activation) -> Tensor",
    "add_layer_norm": (
        "add_layer_norm(Tensor input, Tensor residual, int[] normalized_shape, Tensor? weight, Tensor? bias, "
        "float eps) -> Tensor"
    ),
    "matmul_transposed": (
        "matmul_transposed(Tensor input, Tensor other, bool transpose_input, bool transpose_other) -> Tensor"
    ),
}


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
    return x


def fused_linear(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, activation: str) -> torch.Tensor:
    """activation(input @ weight.T + bias): a linear layer with its activation fused in."""
    return apply_activation(F.linear(input, weight, bias), activation)


def gated_mlp(input: torch.Tensor, gate_weight: torch.Tensor, up_weight: torch.Tensor, activation: str) -> torch.Tensor:
    """activation(input @ gate_weight.T) * (input @ up_weight.T): the gated half of SwiGLU/GeGLU."""
    return apply_activation(F.linear(input, gate_weight), activation) * F.linear(input, up_weight)


def matmul_transposed(input: torch.Tensor, other: torch.Tensor, transpose_input: bool, transpose_other: bool) -> torch.Tensor:
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


def _fused_linear_meta(input, weight, bias, activation):
    _check_activation(activation)
    return F.linear(input, weight, bias)


def _gated_mlp_meta(input, gate_weight, up_weight, activation):
    _check_activation(activation)
    return F.linear(input, gate_weight) * F.linear(input, up_weight)


def _check_activation(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{activation}' (expected one of {', '.join(ACTIVATIONS)})")


_LIBRARY = torch.library.Library("forge", "DEF")
for _name, _schema in SCHEMAS.items():
    _LIBRARY.define(_schema)
for _name, _kernel, _meta in (
    ("fused_linear", fused_linear, _fused_linear_meta),
    ("gated_mlp", gated_mlp, _gated_mlp_meta),
    ("matmul_transposed", matmul_transposed, matmul_transposed),
    ("add_layer_norm", add_layer_norm, add_layer_norm),
):
    _LIBRARY.impl(_name, _kernel, "CompositeExplicitAutograd")
    _LIBRARY.impl(_name, _meta, "Meta")
