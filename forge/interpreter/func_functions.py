"""The `func` dialect for Forge's interpreter: calls, returns, and function bodies.

xDSL ships the same three implementations as `xdsl.interpreters.func.FuncFunctions`, but importing
that module first runs the `xdsl.interpreters` package, which imports every dialect interpreter xDSL
has (RISC-V, Snitch, linalg, ... ~900 op definitions): 0.6-1.6 s of every `forge-opt
--verify-semantics` start-up and every `forge-reduce` candidate, for three methods. These follow the
same `xdsl.interpreter` contract.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import func
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_callable,
    impl_terminator,
    register_impls,
)


@register_impls
class FuncFunctions(InterpreterFunctions):
    """`func.func` runs its body (an empty one is external), `func.call` calls it, `func.return` returns."""

    @impl_terminator(func.ReturnOp)
    def run_return(self, interpreter: Interpreter, op: func.ReturnOp,
                   args: tuple[Any, ...]) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()

    @impl(func.CallOp)
    def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]) -> tuple[Any, ...]:
        return interpreter.call_op(op.callee, args)

    @impl_callable(func.FuncOp)
    def call_func(self, interpreter: Interpreter, op: func.FuncOp, args: tuple[Any, ...]) -> tuple[Any, ...]:
        body = op.body.blocks.first
        if body is None or not body.ops:
            return interpreter.call_external(op.sym_name.data, op, args)
        return interpreter.run_ssacfg_region(op.body, args, op.sym_name.data)
