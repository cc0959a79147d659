"""Reference semantics: run Forge IR on real tensors with xDSL's interpreter.

`interpret(module, weights, *inputs)` is what lets a test say "this pass preserved the function".
The implementations of every dialect (aten, npuir, buffer) are listed in `functions_for(weights)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter, InterpreterFunctions

from forge.interpreter.aten_functions import AtenFunctions
from forge.interpreter.func_functions import FuncFunctions
from forge.interpreter.lowered_functions import lowered_functions
from forge.weights import WeightStore


def functions_for(weights: WeightStore | None) -> list[InterpreterFunctions]:
    """The interpreter functions of every dialect Forge runs (aten, npuir, buffer), bound to one WeightStore."""
    return [FuncFunctions(), AtenFunctions(weights), *lowered_functions(weights)]


def interpret(
    module: ModuleOp, weights: WeightStore | None, *inputs: torch.Tensor, func_name: str = "forward",
    listeners: Sequence[Interpreter.Listener] = (),
) -> tuple[Any, ...]:
    """Run `func_name` of `module` on `inputs`; returns the function's results as a tuple. `listeners` see
    every op run with its results (forge bisect records each op's value)."""
    interpreter = Interpreter(module, listeners=tuple(listeners))
    for functions in functions_for(weights):
        interpreter.register_implementations(functions)
    return interpreter.call_op(func_name, tuple(inputs))


def run_function(module: ModuleOp, weights: WeightStore | None, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """`interpret` on the module's single function, whatever its name."""
    names = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
    if len(names) != 1:
        raise ValueError(f"expected one func.func in the module, found {len(names)}")
    return list(interpret(module, weights, *inputs, func_name=names[0]))
