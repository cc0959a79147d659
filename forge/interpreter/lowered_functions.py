"""Interpreter semantics of the `npuir` and `buffer` dialects, computed with torch.

`lowered_functions(weights)` is picked up by `forge.interpreter.functions_for`, so
`interpret(module, weights, *inputs)` runs aten, npuir and buffer IR alike, and a test can check
that lowering preserved a function.

One function, `run_kind(cls, params, ins, result_type)`, gives every npuir kind its meaning, read
from the kind table (`forge.kinds`); npuir ops and `buffer.exec` both call it. The buffer
interpreter simulates memory: `buffer.arena` and a `buffer.alloc` of its own make a byte array
(a `buffer.alloc %arena[offset]` is a slice of its arena's), `buffer.exec` /
`buffer.transfer` write their result *into* it and return a view of those bytes. A value whose
buffer is overwritten while it is still to be read therefore changes under its readers, and the
results differ, exactly as they would on the device: the interpreter checks the allocation, not
just the arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from dialects import buffer as B
from dialects import npuir as N
from dialects.torch_types import dense_tensor, dtype_of, shape_of
from forge.kinds import KINDS
from forge.weights import WeightStore


class MissingWeightError(KeyError):
    """IR names a weight that the WeightStore does not have."""


# ======================================================================== kind semantics


def run_kind(cls: type[N.NpuirOp], p: N.Params, ins: Sequence[torch.Tensor], out: TensorType) -> torch.Tensor:
    """The value an op of npuir kind `cls` with parameters `p` computes from `ins` (the kind table's
    `evaluate`: its reference semantics, cast to the result type's element type)."""
    kind = cls.mnemonic()
    spec = KINDS.get(kind)
    if spec is None:
        raise NotImplementedError(f"no interpreter semantics for npuir kind '{kind}'")
    return spec.evaluate(p, ins, out)


def _input(interpreter: Interpreter, op: Any, index: int) -> Any:
    """Graph input `index`: the argument of the function the op is in."""
    fn = op.parent_op()
    while fn is not None and fn.name != "func.func":
        fn = fn.parent_op()
    assert fn is not None, f"{op.name} outside a function"
    arg = fn.body.block.args[index]
    return interpreter.get_values((arg,))[0]


# ================================================================================ npuir


def _run_npuir(self: Any, interpreter: Interpreter, op: N.NpuirOp, args: tuple) -> tuple:
    return (run_kind(type(op), N.Params.of(op), args, op.result.type),)


@register_impls
class NpuirFunctions(InterpreterFunctions):
    """Semantics of every npuir op."""

    def __init__(self, weights: WeightStore | None = None):
        super().__init__()
        self.weights = weights
        self._constants: dict[Any, torch.Tensor] = {}

    @impl(N.InputOp)
    def run_input(self, interpreter: Interpreter, op: N.InputOp, args: tuple) -> tuple:
        return (_input(interpreter, op, op.index.value.data),)

    @impl(N.WeightOp)
    def run_weight(self, interpreter: Interpreter, op: N.WeightOp, args: tuple) -> tuple:
        return (_weight(self.weights, op.weight_name.data),)

    @impl(N.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: N.ConstantOp, args: tuple) -> tuple:
        return (_constant(self._constants, op.value),)

    for _kind, _cls in N.npuir_kinds().items():
        if not issubclass(_cls, N.SourceOp):
            locals()[f"run_{_kind}"] = impl(_cls)(_run_npuir)
    del _kind, _cls


def _weight(weights: WeightStore | None, name: str) -> torch.Tensor:
    if weights is None or name not in weights:
        raise MissingWeightError(f"weight '{name}' is not in the WeightStore")
    return weights[name]


def _constant(cache: dict[Any, torch.Tensor], attr: DenseIntOrFPElementsAttr) -> torch.Tensor:
    found = cache.get(attr)
    if found is None:
        found = cache[attr] = dense_tensor(attr)
    return found


# =============================================================================== buffer


def _write(buf: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    """Store `value` in the first bytes of `buf` (a uint8 tensor); return the stored view."""
    nbytes = value.numel() * value.element_size()
    view = buf[:nbytes].view(value.dtype).view(value.shape)
    view.copy_(value)
    return view


@register_impls
class BufferFunctions(InterpreterFunctions):
    """Semantics of the buffer dialect with simulated memory (see the module docstring)."""

    def __init__(self, weights: WeightStore | None = None):
        super().__init__()
        self.weights = weights
        self._constants: dict[Any, torch.Tensor] = {}
        self.states: dict[str, torch.Tensor] = {}

    @impl(B.ArenaOp)
    def run_arena(self, interpreter: Interpreter, op: B.ArenaOp, args: tuple) -> tuple:
        arena = op.arena.type
        assert isinstance(arena, B.ArenaType)
        return (torch.full((arena.nbytes,), 0xFF, dtype=torch.uint8),)

    @impl(B.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: B.AllocOp, args: tuple) -> tuple:
        buf = op.buffer.type
        assert isinstance(buf, B.BufType)
        if args:  # a view of its arena: overlapping buffers share bytes, as in the executor
            return (args[0][op.byte_offset : op.byte_offset + buf.nbytes],)
        # Filled with 0xFF (NaN for floats): reading a value that was never written shows.
        return (torch.full((buf.nbytes,), 0xFF, dtype=torch.uint8),)

    @impl(B.InputOp)
    def run_input(self, interpreter: Interpreter, op: B.InputOp, args: tuple) -> tuple:
        return (_input(interpreter, op, op.index.value.data),)

    @impl(B.WeightOp)
    def run_weight(self, interpreter: Interpreter, op: B.WeightOp, args: tuple) -> tuple:
        return (_weight(self.weights, op.weight_name.data),)

    @impl(B.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: B.ConstantOp, args: tuple) -> tuple:
        return (_constant(self._constants, op.value),)

    @impl(B.StateOp)
    def run_state(self, interpreter: Interpreter, op: B.StateOp, args: tuple) -> tuple:
        # a state's entry value: what `states` holds under its name (zeros when unset), as the
        # executor's StateStore starts
        (buf,) = args
        t = op.result.type
        value = self.states.get(op.state_name.data)
        if value is None:
            value = torch.zeros(shape_of(t), dtype=dtype_of(t))
        return (_write(buf, value),)

    @impl(B.TransferOp)
    def run_transfer(self, interpreter: Interpreter, op: B.TransferOp, args: tuple) -> tuple:
        source, buf = args
        return (_write(buf, source),)

    @impl(B.ExecOp)
    def run_exec(self, interpreter: Interpreter, op: B.ExecOp, args: tuple) -> tuple:
        *ins, buf = args
        cls = op.npuir_class()
        assert cls is not None, f"unknown npuir kind {op.kind.data}"
        value = run_kind(cls, op.param_view(), ins, op.result.type)
        return (_write(buf, value.contiguous()),)


def lowered_functions(weights: WeightStore | None) -> list[InterpreterFunctions]:
    """The npuir and buffer interpreter functions, bound to one WeightStore."""
    return [NpuirFunctions(weights), BufferFunctions(weights)]
