"""Interpreter functions for the `aten` dialect: each op runs its own overload (`op.call`)."""

from __future__ import annotations

from typing import Any

import torch
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from dialects import aten
from forge.weights import WeightStore


class MissingWeightError(KeyError):
    """IR names a weight that the WeightStore does not have."""


def _run_schema_op(functions: AtenFunctions, interpreter: Interpreter, op: aten.AtenOp, args: tuple) -> tuple:
    out = op.call(args)
    if out is None:
        return ()
    if isinstance(out, torch.Tensor):
        return (out,)
    return tuple(out)


@register_impls
class AtenFunctions(InterpreterFunctions):
    """Semantics of every `aten` op; weights are read from the bound WeightStore."""

    def __init__(self, weights: WeightStore | None = None):
        super().__init__()
        self.weights = weights

    @impl(aten.WeightOp)
    def run_weight(self, interpreter: Interpreter, op: aten.WeightOp, args: tuple) -> tuple[Any, ...]:
        name = op.weight_name.data
        if self.weights is None or name not in self.weights:
            raise MissingWeightError(f"weight '{name}' is not in the WeightStore")
        return (self.weights[name],)

    @impl(aten.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: aten.ConstantOp, args: tuple) -> tuple[Any, ...]:
        return (op.to_tensor(),)

    # One implementation serves every schema-driven op: the op knows how to call its overload.
    for _cls in aten.SCHEMA_OPS:
        locals()[f"run_{_cls.__name__}"] = impl(_cls)(_run_schema_op)
    del _cls
