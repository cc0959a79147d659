"""Rules for ops that make or move data without arithmetic: sources, no-ops, views, slices, lookups.

Weights and constants become `npuir.weight` / `npuir.constant`; factories (`arange`, `full`,
`zeros_like`, ...) become constants; clone/contiguous/alias/detach, eval-mode dropout, same-type
views and `_assert_tensor_metadata` disappear; views (view, unflatten, unbind, expand_as, ...),
permutations, expand/repeat, slices, splits, cat/stack and gathers become npuir data-movement ops
with dims and bounds normalized. Writes into a copy (`copy`, `slice_scatter`, `select_scatter`,
what functionalization makes of in-place updates) are slices and a concat, or, strided, one gather
from the concatenation of the base and the source. `gather` is `gather_elements`; advanced
indexing with several index tensors gathers from the indexed dims flattened into one, at an index
computed at lowering time when the indices are constants.
"""

from __future__ import annotations

import math
from typing import Any

from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerType, i1, i64
from xdsl.ir import Operation, SSAValue

from dialects import aten
from dialects import npuir as N
from dialects.shapes import broadcast_shapes, slice_bounds
from dialects.torch_types import DTYPE_NAMES, torch_dtype
from lowering.function_lowering import (
    Fallback,
    FunctionLowering,
    fits,
    i64_attr,
    ints_attr,
    normalize_dim,
    out_type,
    rule,
    tensor_type,
    type_of,
)

# --- sources ---------------------------------------------------------------------------------


@rule("aten.weight")
def _weight(L: FunctionLowering, op: aten.WeightOp) -> None:
    result = op.results[0]
    L.bind(result, L.source(N.WeightOp, result.type, {"name": op.properties["name"]}))


@rule("aten.constant")
def _constant(L: FunctionLowering, op: aten.ConstantOp) -> None:
    result = op.results[0]
    L.bind(result, L.source(N.ConstantOp, result.type, {"value": op.properties["value"]}))


_MAX_CONSTANT = 4096
"""Largest non-uniform factory result that becomes an inline constant (else the fallback)."""


@rule(
    "aten.arange",
    "aten.arange.start",
    "aten.arange.start_step",
    "aten.full",
    "aten.ones",
    "aten.zeros",
    "aten.new_ones",
    "aten.new_zeros",
    "aten.full_like",
    "aten.ones_like",
    "aten.zeros_like",
    "aten.scalar_tensor",
)
def _factory(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    if math.prod(out.get_shape()) > _MAX_CONSTANT and op.name.startswith("aten.arange"):
        raise Fallback
    values = factory_values(op)
    if values is not None:
        L.bind(op.results[0], L.const_values(values, out.element_type, tuple(out.get_shape())))
        return
    import torch  # the rarer variants (a float range, a half-precision fill): run the factory itself

    dtype = torch_dtype(out.element_type)
    empties = [torch.zeros(type_of(v).get_shape(), dtype=torch_dtype(type_of(v).element_type)) for v in op.operands]
    value = op.call(empties)
    assert isinstance(value, torch.Tensor) and value.dtype == dtype
    L.bind(op.results[0], L.const_tensor(value))


_FILL = {"zeros": 0, "zeros_like": 0, "new_zeros": 0, "ones": 1, "ones_like": 1, "new_ones": 1}
_FILL_ARG = {"full": "fill_value", "full_like": "fill_value", "scalar_tensor": "s"}


def factory_values(op: aten.AtenOp) -> list[Any] | None:
    """The values of a factory's result, row-major, computed without torch, or None when torch must
    run it (this covers integer ranges and fills that need no rounding: the dtype is a 32/64-bit
    float or an integer type that holds every value exactly; tests/dialects check it against torch)."""
    out = out_type(op)
    elt = out.element_type
    n = math.prod(out.get_shape())
    packet = op.name.removeprefix("aten.").split(".")[0]
    if packet == "arange":
        names = {a.name for a in op.SIGNATURE.args}
        start, end = (op.arg("start") if "start" in names else 0), op.arg("end")
        step = op.arg("step") if "step" in names else 1
        if not all(type(v) is int for v in (start, end, step)) or step == 0 or elt == i1:
            return None  # torch has no boolean arange
        values: list[Any] = [start + i * step for i in range(n)]
        if n != len(range(start, end, step)):
            return None  # the verifier checked the shape: never reached on valid IR
    else:
        value = _FILL[packet] if packet in _FILL else op.arg(_FILL_ARG[packet])
        if type(value) not in (bool, int, float):
            return None
        values = [value] * n
    return _exact(values, elt)


def _exact(values: list[Any], elt: Any) -> list[Any] | None:
    """`values` as elements of `elt` when each converts exactly (and a float type is f32/f64)."""
    if isinstance(elt, (Float32Type, Float64Type)):
        f32 = isinstance(elt, Float32Type)
        limit = 2**24 if f32 else 2**53
        if any(type(v) is int and abs(v) > limit for v in values):
            return None
        floats = [float(v) for v in values]
        if not all(fits(v, elt) for v in floats):
            return None  # beyond f32: torch's factory refuses it; packing it as f32 would overflow
        return floats
    if isinstance(elt, IntegerType):
        dtype = DTYPE_NAMES[elt]
        if dtype == "bool":
            return [bool(v) for v in values] if all(type(v) in (bool, int) for v in values) else None
        if not all(type(v) in (bool, int) and fits(v, elt) for v in values):
            return None
        return [int(v) for v in values]
    return None


# --- no-ops and views -----------------------------------------------------------------------


@rule("aten.contiguous", "aten.clone", "aten.alias", "aten.detach", "aten.lift_fresh_copy")
def _identity(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], L.vmap[op.operands[0]])


@rule("aten._assert_tensor_metadata")
def _assert(L: FunctionLowering, op: aten.AtenOp) -> None:
    """Static shapes and dtypes were checked by the verifier: nothing to run."""


@rule("aten.dropout")
def _dropout(L: FunctionLowering, op: aten.AtenOp) -> None:
    if op.arg("train") and op.arg("p") > 0:
        raise Fallback  # random: keep torch's semantics on the host
    L.bind(op.results[0], L.vmap[op.operands[0]])


@rule(
    "aten.view",
    "aten.reshape",
    "aten._unsafe_view",
    "aten.flatten.using_ints",
    "aten.unsqueeze",
    "aten.squeeze",
    "aten.squeeze.dim",
    "aten.squeeze.dims",
    "aten.unflatten.int",
)
def _reshape(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], L.reshape(L.vmap[op.operands[0]], out_type(op).get_shape()))


@rule("aten.to.dtype", "aten.to.dtype_layout", "aten.to.device", "aten._to_copy")
def _to(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], L.convert(L.vmap[op.operands[0]], out_type(op).element_type))


def _transpose(L: FunctionLowering, op: Operation, x: SSAValue, perm: list[int]) -> None:
    if perm == sorted(perm):
        L.bind(op.results[0], x)
    else:
        L.bind(op.results[0], L.emit(N.TransposeOp, [x], out_type(op), {"perm": ints_attr(tuple(perm))}))


@rule("aten.permute")
def _permute(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    rank = len(type_of(x).get_shape())
    _transpose(L, op, x, [normalize_dim(d, rank) for d in op.arg("dims")])


@rule("aten.transpose.int")
def _transpose_int(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    rank = len(type_of(x).get_shape())
    if rank == 0:
        L.bind(op.results[0], x)
        return
    perm = list(range(rank))
    a, b = normalize_dim(op.arg("dim0"), rank), normalize_dim(op.arg("dim1"), rank)
    perm[a], perm[b] = perm[b], perm[a]
    _transpose(L, op, x, perm)


@rule("aten.t")
def _t(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    rank = len(type_of(x).get_shape())
    _transpose(L, op, x, [1, 0] if rank == 2 else list(range(rank)))


def _broadcast_to(L: FunctionLowering, x: SSAValue, shape: tuple[int, ...]) -> SSAValue:
    t = type_of(x)
    if t.get_shape() == shape:
        return x
    return L.emit(N.BroadcastOp, [x], tensor_type(t.element_type, shape))


@rule("aten.expand", "aten.expand_as")
def _expand(L: FunctionLowering, op: aten.AtenOp) -> None:
    L.bind(op.results[0], _broadcast_to(L, L.vmap[op.operands[0]], out_type(op).get_shape()))


@rule("aten.repeat")
def _repeat(L: FunctionLowering, op: aten.AtenOp) -> None:
    """x.repeat(r): view x as [1, s0, 1, s1, ...], broadcast to [r0, s0, r1, s1, ...], flatten."""
    x = L.vmap[op.operands[0]]
    reps = list(op.arg("repeats"))
    shape = list(type_of(x).get_shape())
    shape = [1] * (len(reps) - len(shape)) + shape
    x = L.reshape(x, tuple(d for s in shape for d in (1, s)))
    x = _broadcast_to(L, x, tuple(d for r, s in zip(reps, shape, strict=True) for d in (r, s)))
    L.bind(op.results[0], L.reshape(x, out_type(op).get_shape()))


# --- slices, splits, concatenation ---------------------------------------------------------------


def _slice_of(op: aten.AtenOp, x) -> tuple[int, int, int, int]:
    """(axis, start, end, step) of a slice-like op on `x`; a step below 1 falls back."""
    shape = type_of(x).get_shape()
    axis = normalize_dim(op.arg("dim"), len(shape))
    start, end = slice_bounds(op.arg("start"), op.arg("end"), shape[axis])
    step = op.arg("step")
    if step < 1:
        raise Fallback
    return axis, start, end, step


@rule("aten.slice.Tensor")
def _slice(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    L.bind(op.results[0], L.slice(x, *_slice_of(op, x)))


@rule("aten.select.int")
def _select(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    shape = type_of(x).get_shape()
    axis = normalize_dim(op.arg("dim"), len(shape))
    index = op.arg("index")
    index = index + shape[axis] if index < 0 else index
    L.bind(op.results[0], L.reshape(L.slice(x, axis, index, index + 1), out_type(op).get_shape()))


def _split(L: FunctionLowering, op: aten.AtenOp, sizes: list[int]) -> None:
    x = L.vmap[op.operands[0]]
    shape = type_of(x).get_shape()
    axis = normalize_dim(op.arg("dim"), len(shape))
    start = 0
    for r, size in zip(op.results, sizes, strict=True):
        end = min(start + size, shape[axis])
        if L.used(r):
            L.bind(r, L.slice(x, axis, start, end))
        start = end


@rule("aten.split.Tensor")
def _split_tensor(L: FunctionLowering, op: aten.AtenOp) -> None:
    _split(L, op, [op.arg("split_size")] * len(op.results))


@rule("aten.split_with_sizes")
def _split_sizes(L: FunctionLowering, op: aten.AtenOp) -> None:
    _split(L, op, list(op.arg("split_sizes")))


@rule("aten.chunk")
def _chunk(L: FunctionLowering, op: aten.AtenOp) -> None:
    """Slices of the sizes torch chose (ceil(n / chunks) each, the last smaller; maybe fewer than
    `chunks`): read off the result types."""
    axis = normalize_dim(op.arg("dim"), len(type_of(L.vmap[op.operands[0]]).get_shape()))
    _split(L, op, [r.type.get_shape()[axis] for r in op.results])


@rule("aten.unbind.int")
def _unbind(L: FunctionLowering, op: aten.AtenOp) -> None:
    x = L.vmap[op.operands[0]]
    shape = type_of(x).get_shape()
    axis = normalize_dim(op.arg("dim"), len(shape))
    for i, r in enumerate(op.results):
        if L.used(r):
            L.bind(r, L.reshape(L.slice(x, axis, i, i + 1), r.type.get_shape()))


@rule("aten.cat")
def _cat(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    values = [L.vmap[v] for v in op.operands]
    if len(out.get_shape()) != 1 and any(type_of(v).get_shape() == (0,) for v in values):
        # torch's legacy rule: a 1-D empty part is skipped whatever the rank (transformers' KV cache starts
        # from torch.tensor([])); it still takes part in the result's dtype, so a part of another dtype falls back
        values = [v for v in values if type_of(v).get_shape() != (0,)]
        if not values or any(type_of(v).element_type != out.element_type for v in values):
            raise Fallback
    axis = normalize_dim(op.arg("dim"), len(out.get_shape()))
    L.bind(op.results[0], L.concat(values, axis, out))


@rule("aten.stack")
def _stack(L: FunctionLowering, op: aten.AtenOp) -> None:
    out = out_type(op)
    axis = normalize_dim(op.arg("dim"), len(out.get_shape()))
    parts = []
    for v in op.operands:
        x = L.vmap[v]
        shape = list(type_of(x).get_shape())
        shape.insert(axis, 1)
        parts.append(L.reshape(x, tuple(shape)))
    L.bind(op.results[0], L.concat(parts, axis, out))


# --- lookups ----------------------------------------------------------------------------------


def _gather(L: FunctionLowering, op: Operation, data: SSAValue, indices: SSAValue, axis: int) -> None:
    if type_of(indices).element_type == i1:
        raise Fallback  # boolean masks select, they do not index
    L.bind(op.results[0], L.emit(N.GatherOp, [data, indices], out_type(op), {"axis": i64_attr(axis)}))


@rule("aten.embedding")
def _embedding(L: FunctionLowering, op: aten.AtenOp) -> None:
    w, ids = L.arg(op, "weight"), L.arg(op, "indices")
    assert w is not None and ids is not None
    _gather(L, op, w, ids, 0)


@rule("aten.index_select")
def _index_select(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, idx = L.arg(op, "self"), L.arg(op, "index")
    assert x is not None and idx is not None
    _gather(L, op, x, idx, normalize_dim(op.arg("dim"), len(type_of(x).get_shape())))


@rule("aten.gather")
def _gather_elements(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, idx = L.arg(op, "self"), L.arg(op, "index")
    assert x is not None and idx is not None
    out = out_type(op)
    shape = type_of(x).get_shape()
    if not shape and not type_of(idx).get_shape():  # 0-d: a gather of one element
        one = (1,)
        picked = L.emit(
            N.GatherElementsOp, [L.reshape(x, one), L.reshape(idx, one)], tensor_type(out.element_type, one),
            {"axis": i64_attr(0)},
        )
        L.bind(op.results[0], L.reshape(picked, ()))
        return
    if len(type_of(idx).get_shape()) != len(shape):
        raise Fallback  # torch's 0-d special cases
    axis = normalize_dim(op.arg("dim"), len(shape))
    L.bind(op.results[0], L.emit(N.GatherElementsOp, [x, idx], out, {"axis": i64_attr(axis)}))


@rule("aten.index.Tensor", "aten._unsafe_index.Tensor")
def _index(L: FunctionLowering, op: aten.AtenOp) -> None:
    """x[idx] or x[:, ..., idx] with one index tensor: a gather; several index tensors: a gather from
    the indexed dims flattened into one (boolean masks select by value: the fallback)."""
    mask = op.present_mask()
    x, *indices = (L.vmap[v] for v in op.operands)
    if any(type_of(i).element_type == i1 for i in indices):
        raise Fallback
    dims = [d for d, present in enumerate(mask) if present]
    if not indices:  # x[None, ...]: no index tensor, every dim taken whole
        if type_of(x) != out_type(op):
            raise Fallback
        L.bind(op.results[0], x)
        return
    if len(indices) == 1:
        _gather(L, op, x, indices[0], dims[0])
        return
    _gather_multi(L, op, x, indices, dims)


def _gather_multi(L: FunctionLowering, op: Operation, x: SSAValue, indices: list[SSAValue], dims: list[int]) -> None:
    """x[..., i0, ..., i1, ...]: the indexed dims moved first, then a gather along the first at i0
    and, for each further index, a gather_elements along the next (no index arithmetic: the
    indices only move, and their values are small: a valid index lies in [-d, d)). torch puts the
    broadcast index dims where the indexed dims were when those are adjacent, first otherwise."""
    shape = type_of(x).get_shape()
    elt = type_of(x).element_type
    rest = [d for d in range(len(shape)) if d not in dims]
    sizes = [shape[d] for d in dims]
    tail = tuple(shape[d] for d in rest)
    batch = tuple(broadcast_shapes(*(type_of(i).get_shape() for i in indices)))
    for index in indices:
        L.assume_small(index)
    spread = [_broadcast_to(L, index, batch) for index in indices]
    moved = _permuted(L, x, dims + rest)
    picked_shape = (*batch, *sizes[1:], *tail)
    picked = L.emit(N.GatherOp, [moved, spread[0]], tensor_type(elt, picked_shape), {"axis": i64_attr(0)})
    b = len(batch)
    for j, index in enumerate(spread[1:], start=1):
        after = (*sizes[j + 1 :], *tail)
        column = L.reshape(index, (*batch, *(1 for _ in range(1 + len(after)))))
        column = _broadcast_to(L, column, (*batch, 1, *after))
        taken_type = tensor_type(elt, (*batch, 1, *after))
        taken = L.emit(N.GatherElementsOp, [picked, column], taken_type, {"axis": i64_attr(b)})
        picked = L.reshape(taken, (*batch, *after))
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    lead = dims[0] if adjacent else 0
    # picked is [*batch, *rest]; torch's result is [*rest[:lead], *batch, *rest[lead:]]
    r = len(rest)
    perm = [b + i for i in range(lead)] + list(range(b)) + [b + i for i in range(lead, r)]
    L.bind(op.results[0], _permuted(L, picked, perm))


def _permuted(L: FunctionLowering, x: SSAValue, perm: list[int]) -> SSAValue:
    if perm == sorted(perm):
        return x
    t = type_of(x)
    shape = t.get_shape()
    out = tensor_type(t.element_type, tuple(shape[p] for p in perm))
    return L.emit(N.TransposeOp, [x], out, {"perm": ints_attr(tuple(perm))})


# --- writes into a copy --------------------------------------------------------------------------


@rule("aten.copy")
def _copy(L: FunctionLowering, op: aten.AtenOp) -> None:
    """self's type, src's values (converted, broadcast)."""
    out = out_type(op)
    src = L.convert(L.vmap[op.operands[1]], out.element_type)
    L.bind(op.results[0], _broadcast_to(L, src, out.get_shape()))


@rule("aten.slice_scatter")
def _slice_scatter(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, src = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    L.bind(op.results[0], scatter_slice(L, x, src, *_slice_of(op, x)))


@rule("aten.select_scatter")
def _select_scatter(L: FunctionLowering, op: aten.AtenOp) -> None:
    x, src = L.vmap[op.operands[0]], L.vmap[op.operands[1]]
    shape = type_of(x).get_shape()
    axis = normalize_dim(op.arg("dim"), len(shape))
    index = op.arg("index")
    index = index + shape[axis] if index < 0 else index
    if not 0 <= index < shape[axis]:
        raise Fallback  # torch raises: keep its error
    row = list(type_of(src).get_shape())
    row.insert(axis, 1)
    L.bind(op.results[0], scatter_slice(L, x, L.reshape(src, tuple(row)), axis, index, index + 1, 1))


def scatter_slice(
    L: FunctionLowering, x: SSAValue, src: SSAValue, axis: int, start: int, end: int, step: int
) -> SSAValue:
    """x with x[start:end:step] along `axis` replaced by src (of that slice's shape)."""
    out = type_of(x)
    shape = out.get_shape()
    src = L.convert(src, out.element_type)
    if not len(range(start, end, step)):
        return x
    if step == 1:
        parts = [L.slice(x, axis, 0, start), src, L.slice(x, axis, end, shape[axis])]
        return L.concat(parts, axis, out)
    # Strided: gather every position from concat(x, src) along axis (src rows follow x's n rows).
    n = shape[axis]
    table_shape = list(shape)
    table_shape[axis] = n + type_of(src).get_shape()[axis]
    table = L.concat([x, src], axis, tensor_type(out.element_type, tuple(table_shape)))
    written = range(start, end, step)
    picks = [n + written.index(p) if p in written else p for p in range(n)]
    index = L.const_values(picks, i64, (n,))
    return L.emit(N.GatherOp, [table, index], out, {"axis": i64_attr(axis)})
