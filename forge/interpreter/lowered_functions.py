"""Interpreter semantics of the `npuir` and `buffer` dialects, computed with torch.

`lowered_functions(weights)` is picked up by `forge.interpreter.functions_for`, so
`interpret(module, weights, *inputs)` runs aten, npuir and buffer IR alike, and a test can check
that lowering preserved a function.

One function, `run_kind(cls, params, ins, result_type)`, gives every npuir kind its meaning;
npuir ops and `buffer.exec` both call it. The buffer interpreter simulates memory: `buffer.alloc`
makes a byte array, `buffer.exec` / `buffer.transfer` write their result *into* it and return a
view of those bytes. A value whose buffer is overwritten while it is still to be read therefore
changes under its readers, and the results differ, exactly as they would on the device: the
interpreter checks the allocation, not just the arithmetic.

Kind semantics that torch leaves open: `gather` wraps negative indices (ONNX Gather); integer
`div` truncates; every result is cast to the result type's element type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls

from dialects import buffer as B
from dialects import npuir as N
from dialects.fused_kernels import apply_activation
from dialects.torch_types import dense_tensor, dtype_of, shape_of
from forge.weights import WeightStore


class MissingWeightError(KeyError):
    """IR names a weight that the WeightStore does not have."""


# ======================================================================== kind semantics

# Kinds whose torch function has an `out=` variant: the executor's allocation-free cpu kernels
# call the same functions with `out=` (backends/nnfactory/executor.py), so both agree by
# construction.
UNARY_OUT_FUNCTIONS = {
    "neg": torch.neg,
    "exp": torch.exp,
    "log": torch.log,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "sin": torch.sin,
    "cos": torch.cos,
    "abs": torch.abs,
    "erf": torch.erf,
    "reciprocal": torch.reciprocal,
    "not": torch.logical_not,
}

_UNARY = {
    **UNARY_OUT_FUNCTIONS,
    "relu": torch.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
}


def _div(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if a.dtype.is_floating_point:
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


def logical_or_bitwise(kind: str, dtype: torch.dtype):
    """`and`/`or` are logical on booleans and bitwise on integers."""
    boolean = dtype == torch.bool
    if kind == "and":
        return torch.logical_and if boolean else torch.bitwise_and
    return torch.logical_or if boolean else torch.bitwise_or


def _and(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return logical_or_bitwise("and", a.dtype)(a, b)


def _or(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return logical_or_bitwise("or", a.dtype)(a, b)


BINARY_OUT_FUNCTIONS = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,  # floating point; integer div truncates (`_div`)
    "pow": torch.pow,
    "max": torch.maximum,
    "min": torch.minimum,
}

_BINARY = {**BINARY_OUT_FUNCTIONS, "div": _div, "and": _and, "or": _or}

COMPARE_FUNCTIONS = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


def _reduce(x: torch.Tensor, kind: str, axes: tuple[int, ...], keep: bool) -> torch.Tensor:
    if not axes:
        return x
    if kind == "sum":
        return torch.sum(x, dim=axes, keepdim=keep)
    if kind == "mean":
        return torch.mean(x, dim=axes, keepdim=keep)
    if kind == "max":
        return torch.amax(x, dim=axes, keepdim=keep)
    return torch.amin(x, dim=axes, keepdim=keep)


def _gather(data: torch.Tensor, indices: torch.Tensor, axis: int) -> torch.Tensor:
    size = data.shape[axis]
    flat = indices.reshape(-1).to(torch.int64)
    flat = torch.where(flat < 0, flat + size, flat)
    picked = torch.index_select(data, axis, flat)
    return picked.reshape(*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])


def run_kind(cls: type[N.NpuirOp], p: N.Params, ins: Sequence[torch.Tensor], out: TensorType) -> torch.Tensor:
    """The value an op of npuir kind `cls` with parameters `p` computes from `ins`."""
    kind = cls.mnemonic()
    r = _compute(kind, p, ins, out)
    dtype = dtype_of(out)
    if r.dtype != dtype:
        r = r.to(dtype)
    return r


def _compute(kind: str, p: N.Params, ins: Sequence[torch.Tensor], out: TensorType) -> torch.Tensor:
    if kind == "matmul":
        a, b = ins
        if p.get_flag("transpose_a"):
            a = a.transpose(-1, -2)
        if p.get_flag("transpose_b"):
            b = b.transpose(-1, -2)
        return torch.matmul(a, b)
    if kind == "linear":
        x, w, *bias = ins
        if not p.get_flag("transpose_w"):
            w = w.t()
        return apply_activation(F.linear(x, w, bias[0] if bias else None), p.get_str("activation"))
    if kind == "gated_mlp":
        x, wg, wu = ins
        if not p.get_flag("transpose_w"):
            wg, wu = wg.t(), wu.t()
        return apply_activation(F.linear(x, wg), p.get_str("activation")) * F.linear(x, wu)
    if kind == "sdpa":
        q, k, v, *mask = ins
        return F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask[0] if mask else None,
            is_causal=p.get_flag("is_causal"),
            scale=p.get_float("scale"),
            enable_gqa=q.shape[-3] != k.shape[-3],
        )
    if kind == "softmax":
        return torch.softmax(ins[0], p.get_int("axis"))
    if kind == "cumsum":
        return torch.cumsum(ins[0], p.get_int("axis"))
    if kind in ("layer_norm", "rms_norm"):
        x, *affine = ins
        axis = p.get_int("axis")
        eps = p.get_float("eps")
        shape = tuple(x.shape[axis:])
        if kind == "layer_norm":
            w = affine[0] if affine else None
            b = affine[1] if len(affine) > 1 else None
            return F.layer_norm(x, shape, w, b, eps)
        return F.rms_norm(x, shape, affine[0] if affine else None, eps)
    if kind == "unary":
        return _UNARY[p.get_str("kind")](ins[0])
    if kind == "binary":
        return _BINARY[p.get_str("kind")](ins[0], ins[1])
    if kind == "compare":
        return COMPARE_FUNCTIONS[p.get_str("kind")](ins[0], ins[1])
    if kind == "select":
        return torch.where(ins[0], ins[1], ins[2])
    if kind == "reduce":
        return _reduce(ins[0], p.get_str("kind"), p.get_ints("axes"), p.get_flag("keepdims"))
    if kind == "reshape":
        return ins[0].reshape(shape_of(out))
    if kind == "transpose":
        return ins[0].permute(p.get_ints("perm"))
    if kind == "broadcast":
        return ins[0].expand(shape_of(out))
    if kind == "slice":
        index = tuple(slice(s, e, st) for s, e, st in zip(p.get_ints("starts"), p.get_ints("ends"), p.get_ints("steps")))
        return ins[0][index]
    if kind == "concat":
        return torch.cat(list(ins), p.get_int("axis"))
    if kind == "gather":
        return _gather(ins[0], ins[1], p.get_int("axis"))
    if kind == "convert":
        return ins[0].to(dtype_of(out))
    if kind == "aten":
        attrs = p.attr("attrs")
        ins_types = tuple(_type_of(t) for t in ins)
        call = N.aten_call(p.get_str("op"), attrs, ins_types)  # type: ignore[arg-type]
        result = call.call(list(ins))
        if isinstance(result, torch.Tensor):
            return result
        return result[p.get_int("result_index")]
    raise NotImplementedError(f"no interpreter semantics for npuir kind '{kind}'")


def _type_of(t: torch.Tensor) -> TensorType:
    from dialects.torch_types import type_of

    return type_of(t)


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
    return (run_kind(type(op), N.Params.of(op), args, op.result.type),)  # type: ignore[arg-type]


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

    @impl(B.AllocOp)
    def run_alloc(self, interpreter: Interpreter, op: B.AllocOp, args: tuple) -> tuple:
        buf = op.buffer.type
        assert isinstance(buf, B.BufType)
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

    @impl(B.TransferOp)
    def run_transfer(self, interpreter: Interpreter, op: B.TransferOp, args: tuple) -> tuple:
        source, buf = args
        return (_write(buf, source),)

    @impl(B.ExecOp)
    def run_exec(self, interpreter: Interpreter, op: B.ExecOp, args: tuple) -> tuple:
        *ins, buf = args
        cls = op.npuir_class()
        assert cls is not None, f"unknown npuir kind {op.kind.data}"
        value = run_kind(cls, op.param_view(), ins, op.result.type)  # type: ignore[arg-type]
        return (_write(buf, value.contiguous()),)


def lowered_functions(weights: WeightStore | None) -> list[InterpreterFunctions]:
    """The npuir and buffer interpreter functions, bound to one WeightStore."""
    return [NpuirFunctions(weights), BufferFunctions(weights)]
