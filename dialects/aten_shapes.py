"""Native result types (shape and dtype) of `aten` ops, without torch.

`infer(op)` is what the verifier and type inference call first (`AtenOp.infer_result_types`): the
result types of `op` computed here from its operand types and properties, or None when this module
has no rule for the op, in which case the op falls back to torch's meta kernel (imported lazily).
A rule only has to be right on operands torch accepts: when a rule finds the operands invalid (any
exception), `infer` returns None too and torch produces the error message, so every diagnostic is
exactly torch's. tests/dialects/test_aten_shapes.py checks every rule against torch's meta kernels
on generated shapes, dtypes and properties, valid and invalid ones: a rule that accepts what torch
rejects, or disagrees on a type, fails it.

Two kinds of rules:
- elementwise ops (`ELEMENTWISE_TYPES` in dialects/aten_table.py, found by scripts/gen_aten_ops.py
  probing torch's kernels on every dtype combination): the broadcast shape and torch's type
  promotion (`result_dtype`), the dtype rule and the dtypes each operand accepts written out;
- the hand-written rules in `RULES` below (views, reductions, matmuls, convolutions, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from dialects import aten_schema as schema
from dialects import aten_table
from dialects.aten_schema import ArgKind
from dialects.shapes import broadcast_shapes, slice_bounds
from dialects.torch_types import DTYPE_NAMES, ELEMENT_TYPES, FLOAT_DTYPES, INT_DTYPES, tensor_of

Shape = tuple[int, ...]
Result = tuple[Shape, str]
"""A result type as the rules compute it: the shape and the dtype name."""


class ShapeError(ValueError):
    """The operands are invalid for the op (torch's kernel then gives the message)."""


def check(condition: bool, message: str = "invalid operands") -> None:
    if not condition:
        raise ShapeError(message)


# --- dtypes: torch's promotion lattice ------------------------------------------------------------

_CATEGORY = {"bool": 0, **dict.fromkeys(INT_DTYPES, 1), **dict.fromkeys(FLOAT_DTYPES, 2)}
_INT_ORDER = ("uint8", "int8", "int16", "int32", "int64")
_INT_BITS = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}
_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
DEFAULT_FLOAT = "float32"
"""torch's default dtype: the result of an integer op that produces floats."""


def category(dtype: str) -> int:
    """0 bool, 1 integer, 2 floating point."""
    return _CATEGORY[dtype]


def promote_types(a: str, b: str) -> str:
    """torch.promote_types on dtype names."""
    if a == b:
        return a
    ca, cb = _CATEGORY[a], _CATEGORY[b]
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if _FLOAT_BITS[a] > _FLOAT_BITS[b] else b
    if "uint8" in (a, b):  # uint8 with a signed type: the next signed type wide enough
        other = b if a == "uint8" else a
        return "int16" if other == "int8" else other
    return a if _INT_BITS[a] > _INT_BITS[b] else b


def _promote_all(dtypes: Sequence[str]) -> str | None:
    out = None
    for d in dtypes:
        out = d if out is None else promote_types(out, d)
    return out


def _combine(higher: str | None, lower: str | None) -> str | None:
    """c10's combine_categories: a lower-priority participant only matters in a higher category."""
    if higher is None:
        return lower
    if lower is None or category(higher) == 2:
        return higher
    if higher == "bool" or category(lower) == 2:
        return promote_types(higher, lower)
    return higher


def result_dtype(tensors: Sequence[tuple[Shape, str]], scalars: Sequence[Any]) -> str | None:
    """torch's result_type: tensors with dims, then rank-0 tensors, then Python scalars (a float
    scalar counts as the default float dtype, an int as int64, a bool as bool)."""
    dim = _promote_all([d for s, d in tensors if len(s) > 0])
    zero = _promote_all([d for s, d in tensors if len(s) == 0])
    wrapped = _promote_all([scalar_dtype(v) for v in scalars])
    return _combine(dim, _combine(zero, wrapped))


def scalar_dtype(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    return DEFAULT_FLOAT


def scalar_class(value: Any) -> str:
    """How the elementwise table tells Python scalars apart: type and sign (`int-`, `float0`, ...)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    kind = "int" if isinstance(value, int) else "float"
    if value != value:  # nan
        return "floatnan"
    return kind + ("-" if value < 0 else "0" if value == 0 else "+")


# --- reading an op --------------------------------------------------------------------------------


class View:
    """An op's operands (shape, dtype name) by tensor argument and its properties as Python values,
    read without torch (dtype properties are dtype names)."""

    def __init__(self, op: Any):
        self.op = op
        self.sig = op.SIGNATURE
        self.tensors: dict[str, Any] = {}
        operands = iter(op.operands)
        for spec in self.sig.tensor_args:
            if spec.kind is ArgKind.TENSOR:
                self.tensors[spec.name] = _typed(next(operands))
            elif spec.kind is ArgKind.OPT_TENSOR:
                self.tensors[spec.name] = _typed(next(operands)) if getattr(op, spec.field) is not None else None
            elif spec.kind is ArgKind.TENSOR_LIST:
                self.tensors[spec.name] = [_typed(next(operands)) for _ in getattr(op, spec.field)]
            else:
                self.tensors[spec.name] = [_typed(next(operands)) if p else None for p in op.present_mask()]

    def t(self, name: str) -> Any:
        return self.tensors[name]

    def shape(self, name: str) -> Shape:
        return self.tensors[name][0]

    def dtype(self, name: str) -> str:
        return self.tensors[name][1]

    def __getitem__(self, name: str) -> Any:
        spec = self.sig.arg(name)
        attr = self.op.properties.get(spec.name)
        if attr is None:
            return spec.default if spec.has_default else None
        if spec.kind is ArgKind.DTYPE:
            return DTYPE_NAMES[attr]
        if spec.kind in (ArgKind.DEVICE, ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT):
            return attr.data
        return schema.from_attribute(spec.kind, attr)

    def scalar_dtype_arg(self, name: str) -> str | None:
        """A dtype argument's name (None when absent); integer defaults are ScalarType codes."""
        value = self[name]
        if isinstance(value, int) and not isinstance(value, bool):
            return _SCALAR_TYPE_CODES[value]
        return value


_SCALAR_TYPE_CODES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                      7: "float64", 11: "bool", 15: "bfloat16"}  # fmt: skip


def _typed(value: Any) -> tuple[Shape, str]:
    ty = value.type
    assert isinstance(ty, TensorType)
    return tuple(ty.get_shape()), DTYPE_NAMES[ty.element_type]


# --- the entry point ------------------------------------------------------------------------------


def infer(op: Any) -> list[Attribute] | None:
    """The result types of `op`, or None when there is no native rule (or the operands are invalid:
    torch's kernel then decides, and words the error)."""
    qualname = op.SIGNATURE.qualname
    rule = RULES.get(qualname)
    model = aten_table.ELEMENTWISE_TYPES.get(qualname) if rule is None else None
    if rule is None and model is None:
        return None
    try:
        view = View(op)
        _check_placement(view)
        results = rule(view) if rule is not None else _elementwise(view, model)
    except Exception:  # invalid operands, or a case a rule does not cover: torch decides
        return None
    if results is None:
        return None
    return [tensor_of(tuple(shape), ELEMENT_TYPES[dtype]) for shape, dtype in results]


def has_rule(qualname: str) -> bool:
    """Whether the op's result types are native (a RULES entry or an elementwise model)."""
    return qualname in RULES or qualname in aten_table.ELEMENTWISE_TYPES


_PLACEMENT = {
    "memory_format": (None, 0, "contiguous_format", "preserve_format"),  # 0: contiguous's ScalarType-style default
    "layout": (None, "strided"),
    "pin_memory": (None, False),
    "device": (None, "cpu", "meta"),
}
"""Where and how a result is laid out: no rule decides other values (channels_last on a rank-3 tensor,
pinned memory on a machine without an accelerator, ...); torch does."""


_CHANNELS_LAST_RANK = {"channels_last": 4, "channels_last_3d": 5}


def _check_placement(v: View) -> None:
    for spec in v.sig.property_args:
        allowed = _PLACEMENT.get(spec.name)
        value = v[spec.name]
        if spec.name == "memory_format" and value in _CHANNELS_LAST_RANK:
            first = next(iter(v.tensors.values()), None)
            check(isinstance(first, tuple) and len(first[0]) == _CHANNELS_LAST_RANK[value], "channels_last rank")
        elif allowed is not None:
            check(value in allowed, f"{spec.name}: left to torch")


# --- elementwise ops: the generated model ---------------------------------------------------------


def _elementwise(v: View, models: dict) -> list[Result] | None:
    variant = tuple(
        (s.name, v[s.name]) for s in v.sig.property_args if s.kind is not ArgKind.SCALAR and s.name in v.op.properties
    )
    model = models.get(variant)
    if model is None:
        return None
    kind, participants, scalars_participate, allowed, rejected = model
    tensor_specs = v.sig.tensor_args
    operands = [v.t(s.name) for s in tensor_specs]
    for spec, value, ok in zip(tensor_specs, operands, allowed, strict=True):
        check(value is None or value[1] in ok, f"{spec.name}: dtype")
    scalar_specs = [s for s in v.sig.property_args if s.kind is ArgKind.SCALAR]
    scalars = [v[s.name] for s in scalar_specs]
    present = [o for o in operands if o is not None]
    shape = broadcast_shapes(*(s for s, _ in present))
    tensors = [operands[i] for i in participants if operands[i] is not None]
    common = result_dtype(tensors, [scalars[i] for i in scalars_participate if scalars[i] is not None])
    classes = tuple(scalar_class(x) for x in scalars) + tuple(
        "absent" if o is None else "present" for s, o in zip(tensor_specs, operands, strict=True)
        if s.kind is ArgKind.OPT_TENSOR
    )
    check(common is not None and (common, *classes) not in rejected, "rejected dtype combination")
    return [(shape, _apply_kind(kind, common))]


def _apply_kind(kind: str, common: str) -> str:
    if kind == "always_bool":
        return "bool"
    if kind == "int_to_float":
        return DEFAULT_FLOAT if category(common) < 2 else common
    if kind == "bool_to_long":
        return "int64" if common == "bool" else common
    return common


# --- hand-written rules ---------------------------------------------------------------------------

RULES: dict[str, Callable[[View], list[Result] | None]] = {}


def rule(*names: str) -> Callable:
    def register(fn: Callable[[View], list[Result] | None]) -> Callable[[View], list[Result] | None]:
        for name in names:
            RULES["aten::" + name if "::" not in name else name] = fn
        return fn

    return register


def wrap_dim(dim: int, rank: int) -> int:
    """torch's maybe_wrap_dim: a rank-0 tensor takes dims -1 and 0."""
    r = max(rank, 1)
    check(-r <= dim < r, "dim out of range")
    return dim + r if dim < 0 else dim


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _infer_size(size: Sequence[int], total: int) -> Shape:
    """torch's infer_size for view/reshape: at most one -1."""
    check(sum(1 for d in size if d == -1) <= 1 and all(d >= -1 for d in size), "bad size")
    known = math.prod(d for d in size if d != -1)
    if -1 in size:
        check(known != 0 and total % known == 0, "shape is invalid")
        return tuple(total // known if d == -1 else d for d in size)
    check(known == total, "shape is invalid")
    return tuple(size)


@rule("view.default", "reshape.default", "_unsafe_view.default", "view_copy.default")
def _view(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    size = v["shape"] if v.sig.qualname == "aten::reshape.default" else v["size"]
    return [(_infer_size(size, numel(shape)), dtype)]


@rule("permute.default", "permute_copy.default")
def _permute(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    dims = [wrap_dim(d, len(shape)) for d in v["dims"]]
    check(len(dims) == len(shape) and len(set(dims)) == len(dims), "dims")
    return [(tuple(shape[d] for d in dims), dtype)]


@rule("transpose.int")
def _transpose(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    a, b = wrap_dim(v["dim0"], len(shape)), wrap_dim(v["dim1"], len(shape))
    out = list(shape)
    if shape:
        out[a], out[b] = out[b], out[a]
    return [(tuple(out), dtype)]


@rule("t.default")
def _t(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) <= 2, "t expects <= 2-D")
    return [(tuple(reversed(shape)), dtype)]


@rule("expand.default")
def _expand(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    size = v["size"]
    check(len(size) >= len(shape), "expand: fewer sizes than dims")
    out = []
    lead = len(size) - len(shape)
    for i, s in enumerate(size):
        if i < lead:
            check(s >= 0, "expand: -1 in a new leading dim")
            out.append(s)
            continue
        d = shape[i - lead]
        if s == -1:
            out.append(d)
        else:
            check(s >= 0 and (d == s or d == 1), "expand: size mismatch")
            out.append(s)
    return [(tuple(out), dtype)]


def _slice_len(size: int, start: int | None, end: int | None, step: int) -> int:
    check(step > 0, "slice step must be positive")
    start, end = slice_bounds(start, end, size)
    return (end - start + step - 1) // step


@rule("slice.Tensor")
def _slice(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) > 0, "slice of a 0-d tensor")
    dim = wrap_dim(v["dim"], len(shape))
    out = list(shape)
    out[dim] = _slice_len(shape[dim], v["start"], v["end"], v["step"])
    return [(tuple(out), dtype)]


@rule("select.int")
def _select(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) > 0, "select of a 0-d tensor")
    dim = wrap_dim(v["dim"], len(shape))
    index = v["index"]
    check(-shape[dim] <= index < shape[dim], "index out of range")
    return [(shape[:dim] + shape[dim + 1 :], dtype)]


@rule("split.Tensor")
def _split(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) > 0, "split of a 0-d tensor")
    dim = wrap_dim(v["dim"], len(shape))
    size, step = shape[dim], v["split_size"]
    check(step >= 0 and (step > 0 or size == 0), "split_size")
    count = max((size + step - 1) // step, 1) if step else 1
    return [(shape[:dim] + (min(step, size - i * step),) + shape[dim + 1 :], dtype) for i in range(count)]


@rule("split_with_sizes.default")
def _split_with_sizes(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) > 0, "split of a 0-d tensor")
    dim = wrap_dim(v["dim"], len(shape))
    sizes = v["split_sizes"]
    check(all(s >= 0 for s in sizes) and sum(sizes) == shape[dim], "split_sizes")
    return [(shape[:dim] + (s,) + shape[dim + 1 :], dtype) for s in sizes]


@rule("cat.default")
def _cat(v: View) -> list[Result]:
    tensors = v.t("tensors")
    check(len(tensors) > 0, "cat of nothing")
    # legacy: 1-D empty tensors are skipped
    real = [(s, d) for s, d in tensors if s != (0,)]
    dtype = _promote_all([d for _, d in tensors])
    if not real:
        return [((0,), dtype)]
    rank = len(real[0][0])
    check(rank > 0, "zero-dimensional tensor cannot be concatenated")
    dim = wrap_dim(v["dim"], rank)
    for s, _ in real:
        check(len(s) == rank and all(s[i] == real[0][0][i] for i in range(rank) if i != dim), "cat sizes")
    out = list(real[0][0])
    out[dim] = sum(s[dim] for s, _ in real)
    return [(tuple(out), dtype)]


@rule("stack.default")
def _stack(v: View) -> list[Result]:
    tensors = v.t("tensors")
    check(len(tensors) > 0, "stack of nothing")
    shape = tensors[0][0]
    check(all(s == shape for s, _ in tensors), "stack sizes")
    dim = wrap_dim(v["dim"], len(shape) + 1)
    return [(shape[:dim] + (len(tensors),) + shape[dim:], _promote_all([d for _, d in tensors]))]


@rule("unsqueeze.default")
def _unsqueeze(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    dim = wrap_dim(v["dim"], len(shape) + 1)
    return [(shape[:dim] + (1,) + shape[dim:], dtype)]


@rule("squeeze.default", "squeeze.dim", "squeeze.dims")
def _squeeze(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    name = v.sig.qualname
    if name == "aten::squeeze.default":
        dims = set(range(len(shape)))
    else:
        raw = v["dim"]
        listed = [wrap_dim(d, len(shape)) for d in (raw if isinstance(raw, list) else [raw])]
        dims = set(listed)
        check(len(dims) == len(listed), "dim appears multiple times")
    return [(tuple(d for i, d in enumerate(shape) if not (i in dims and d == 1)), dtype)]


@rule("flatten.using_ints")
def _flatten(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    if not shape:
        wrap_dim(v["start_dim"], 0), wrap_dim(v["end_dim"], 0)
        return [((1,), dtype)]
    start, end = wrap_dim(v["start_dim"], len(shape)), wrap_dim(v["end_dim"], len(shape))
    check(start <= end, "flatten() has invalid args: start_dim cannot come after end_dim")
    return [(shape[:start] + (numel(shape[start : end + 1]),) + shape[end + 1 :], dtype)]


@rule("repeat.default")
def _repeat(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    repeats = v["repeats"]
    check(len(repeats) >= len(shape) and all(r >= 0 for r in repeats), "repeat")
    padded = (1,) * (len(repeats) - len(shape)) + shape
    return [(tuple(a * b for a, b in zip(padded, repeats, strict=True)), dtype)]


@rule("contiguous.default", "alias.default", "detach.default", "lift_fresh_copy.default", "positive.default",
      "resolve_conj.default", "resolve_neg.default")  # fmt: skip
def _same(v: View) -> list[Result]:
    if v.sig.qualname == "aten::positive.default":
        check(v.dtype("self") != "bool", "positive of bool")
    return [v.t("self")]


@rule("clone.default")
def _clone(v: View) -> list[Result]:
    return [v.t("self")]


@rule("dropout.default")
def _dropout(v: View) -> list[Result]:
    check(0.0 <= v["p"] <= 1.0, "dropout probability")
    check(not v["train"] or category(v.dtype("input")) == 2, "training dropout of integers")
    return [v.t("input")]


# --- lookups --------------------------------------------------------------------------------------


@rule("embedding.default")
def _embedding(v: View) -> list[Result]:
    (wshape, wdtype), (ishape, idtype) = v.t("weight"), v.t("indices")
    check(idtype in ("int64", "int32") and len(wshape) == 2, "embedding")
    return [(ishape + wshape[1:], wdtype)]


@rule("index_select.default")
def _index_select(v: View) -> list[Result]:
    (shape, dtype), (ishape, idtype) = v.t("self"), v.t("index")
    check(idtype in ("int64", "int32") and len(ishape) <= 1, "index_select")
    dim = wrap_dim(v["dim"], len(shape))
    n = numel(ishape)
    if not shape:
        return [((), dtype)] if n == 1 else None
    return [(shape[:dim] + (n,) + shape[dim + 1 :], dtype)]


# --- linear algebra -------------------------------------------------------------------------------


def _same_dtype(*dtypes: str) -> str:
    check(len(set(dtypes)) == 1, "dtypes differ")
    return dtypes[0]


@rule("mm.default")
def _mm(v: View) -> list[Result]:
    (a, da), (b, db) = v.t("self"), v.t("mat2")
    check(len(a) == 2 and len(b) == 2 and a[1] == b[0], "mm shapes")
    return [((a[0], b[1]), _same_dtype(da, db))]


@rule("bmm.default")
def _bmm(v: View) -> list[Result]:
    (a, da), (b, db) = v.t("self"), v.t("mat2")
    check(len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1], "bmm shapes")
    return [((a[0], a[1], b[2]), _same_dtype(da, db))]


@rule("addmm.default")
def _addmm(v: View) -> list[Result]:
    (c, dc), (a, da), (b, db) = v.t("self"), v.t("mat1"), v.t("mat2")
    check(len(a) == 2 and len(b) == 2 and a[1] == b[0], "addmm shapes")
    out = (a[0], b[1])
    check(len(c) <= 2 and broadcast_shapes(c, out) == out, "addmm bias")
    return [(out, _same_dtype(dc, da, db))]


@rule("baddbmm.default")
def _baddbmm(v: View) -> list[Result]:
    (c, dc), (a, da), (b, db) = v.t("self"), v.t("batch1"), v.t("batch2")
    check(len(a) == 3 and len(b) == 3 and a[0] == b[0] and a[2] == b[1], "baddbmm shapes")
    out = (a[0], a[1], b[2])
    check(len(c) <= 3 and broadcast_shapes(c, out) == out, "baddbmm bias")
    return [(out, _same_dtype(dc, da, db))]


def matmul_shape(a: Shape, b: Shape) -> Shape:
    """torch.matmul's result shape."""
    check(len(a) > 0 and len(b) > 0, "matmul of a 0-d tensor")
    if len(a) == 1 and len(b) == 1:
        check(a[0] == b[0], "dot sizes")
        return ()
    if len(b) == 1:
        check(a[-1] == b[0], "mv sizes")
        return a[:-1]
    if len(a) == 1:
        check(a[0] == b[-2], "vm sizes")
        return b[:-2] + (b[-1],)
    check(a[-1] == b[-2], "matmul sizes")
    return broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])


@rule("matmul.default")
def _matmul(v: View) -> list[Result]:
    (a, da), (b, db) = v.t("self"), v.t("other")
    return [(matmul_shape(a, b), _same_dtype(da, db))]


@rule("linear.default")
def _linear(v: View) -> list[Result]:
    (x, dx), (w, dw) = v.t("input"), v.t("weight")
    bias = v.t("bias")
    check(len(w) in (1, 2) and len(x) > 0, "linear weight")
    out = matmul_shape(x, w[::-1] if len(w) == 2 else w)
    dtypes = [dx, dw]
    if bias is not None:
        check(broadcast_shapes(bias[0], out) == out, "linear bias")
        dtypes.append(bias[1])
    return [(out, _same_dtype(*dtypes))]


# --- reductions, normalization, attention ---------------------------------------------------------


def _reduce_dims(shape: Shape, dims: Sequence[int] | None) -> set[int]:
    if dims is None or len(dims) == 0:
        return set(range(len(shape)))
    wrapped = [wrap_dim(d, len(shape)) for d in dims]
    check(len(set(wrapped)) == len(wrapped), "dim appears multiple times")
    return set(wrapped)


def _reduced(shape: Shape, dims: set[int], keepdim: bool) -> Shape:
    if keepdim:
        return tuple(1 if i in dims else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in dims)


@rule("mean.dim", "mean.default")
def _mean(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    out_dtype = v.scalar_dtype_arg("dtype")
    check(category(out_dtype or dtype) == 2, "mean needs a floating point dtype")
    if v.sig.qualname == "aten::mean.default":
        return [((), out_dtype or dtype)]
    dims = _reduce_dims(shape, v["dim"])
    return [(_reduced(shape, dims, v["keepdim"]), out_dtype or dtype)]


@rule("sum.dim_IntList", "sum.default")
def _sum(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    out_dtype = v.scalar_dtype_arg("dtype") or ("int64" if category(dtype) < 2 else dtype)
    if v.sig.qualname == "aten::sum.default":
        return [((), out_dtype)]
    dims = _reduce_dims(shape, v["dim"])
    return [(_reduced(shape, dims, v["keepdim"]), out_dtype)]


@rule("amax.default", "amin.default")
def _amax(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    dims = _reduce_dims(shape, v["dim"])
    check(all(shape[d] > 0 for d in dims) if shape else True, "reduction over an empty dim")
    return [(_reduced(shape, dims, v["keepdim"]), dtype)]


@rule("cumsum.default")
def _cumsum(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    wrap_dim(v["dim"], len(shape))
    out = v.scalar_dtype_arg("dtype") or ("int64" if category(dtype) < 2 else dtype)
    return [(shape, out)]


@rule("softmax.int", "log_softmax.int")
def _softmax_int(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    wrap_dim(v["dim"], len(shape))
    out = v.scalar_dtype_arg("dtype") or dtype
    check(category(out) == 2, "softmax of integers")
    return [(shape, out)]


@rule("_softmax.default", "_log_softmax.default")
def _softmax(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    wrap_dim(v["dim"], len(shape))
    check(category(dtype) == 2, "softmax of integers")
    if v["half_to_float"]:
        check(dtype == "float16", "half_to_float")
        return [(shape, "float32")]
    return [(shape, dtype)]


def _check_norm_params(shape: Shape, normalized: Sequence[int], *params: Any) -> None:
    n = len(normalized)
    check(n >= 1 and len(shape) >= n and tuple(shape[len(shape) - n :]) == tuple(normalized), "normalized_shape")
    for p in params:
        check(p is None or p[0] == tuple(normalized), "norm weight shape")


@rule("layer_norm.default")
def _layer_norm(v: View) -> list[Result]:
    shape, dtype = v.t("input")
    w, b = v.t("weight"), v.t("bias")
    _check_norm_params(shape, v["normalized_shape"], w, b)
    check(category(dtype) == 2 and all(p is None or p[1] == dtype for p in (w, b)), "layer_norm dtypes")
    return [(shape, dtype)]


@rule("native_layer_norm.default")
def _native_layer_norm(v: View) -> list[Result]:
    shape, dtype = v.t("input")
    w, b = v.t("weight"), v.t("bias")
    normalized = v["normalized_shape"]
    _check_norm_params(shape, normalized, w, b)
    check(category(dtype) == 2 and all(p is None or p[1] == dtype for p in (w, b)), "layer_norm dtypes")
    stat = tuple(shape[: len(shape) - len(normalized)]) + (1,) * len(normalized)
    # the CPU kernel keeps a half input's dtype (float32 statistics only of float32 parameters,
    # which the check above leaves to torch); the meta kernel's are always float32
    return [(shape, dtype), (stat, dtype), (stat, dtype)]


@rule("rms_norm.default")
def _rms_norm(v: View) -> list[Result]:
    shape, dtype = v.t("input")
    w = v.t("weight")
    _check_norm_params(shape, v["normalized_shape"], w)
    check(category(dtype) == 2, "rms_norm of integers")
    if w is not None:
        check(category(w[1]) == 2, "rms_norm weight")
        return [(shape, promote_types(dtype, w[1]))]
    return [(shape, dtype)]


@rule("scaled_dot_product_attention.default")
def _sdpa(v: View) -> list[Result]:
    (q, dq), (k, dk), (val, dv) = v.t("query"), v.t("key"), v.t("value")
    mask = v.t("attn_mask")
    check(len(q) >= 2 and len(k) == len(q) and len(val) == len(q), "sdpa ranks")
    check(dq == dk == dv and category(dq) == 2, "sdpa dtypes")
    check(q[-1] == k[-1] and k[-2] == val[-2], "sdpa sizes")
    if v["enable_gqa"]:
        check(len(q) >= 3 and k[:-3] == q[:-3] == val[:-3] and k[-3] == val[-3], "gqa batch")
        check(k[-3] > 0 and q[-3] % k[-3] == 0, "query heads must be a multiple of key heads")
    else:
        batch = broadcast_shapes(q[:-2], k[:-2], val[:-2])
        check(batch == q[:-2], "sdpa batch")
    out = q[:-2] + (q[-2], val[-1])
    if mask is not None:
        check(mask[1] == "bool" or mask[1] == dq, "sdpa mask dtype")
        check(broadcast_shapes(mask[0], q[:-1] + (k[-2],)) == q[:-1] + (k[-2],), "sdpa mask shape")
    check(not (v["is_causal"] and mask is not None), "causal and mask")
    return [(out, dq)]


# --- masks, triangles, conversions ----------------------------------------------------------------


@rule("masked_fill.Scalar")
def _masked_fill_scalar(v: View) -> list[Result]:
    (shape, dtype), (mshape, mdtype) = v.t("self"), v.t("mask")
    check(mdtype == "bool", "mask must be bool")
    check(broadcast_shapes(shape, mshape) == shape, "mask broadcast")
    value = v["value"]
    if category(dtype) < 2 and isinstance(value, float):
        return None  # torch may refuse a float into an integer tensor: let it decide
    return [(shape, dtype)]


@rule("masked_fill.Tensor")
def _masked_fill_tensor(v: View) -> list[Result]:
    (shape, dtype), (mshape, mdtype), (vshape, _) = v.t("self"), v.t("mask"), v.t("value")
    check(mdtype == "bool" and vshape == (), "masked_fill value must be 0-d")
    check(broadcast_shapes(shape, mshape) == shape, "mask broadcast")
    return None if v.t("value")[1] != dtype else [(shape, dtype)]


@rule("triu.default", "tril.default")
def _triangle(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) >= 2, "triu/tril need >= 2-D")
    return [(shape, dtype)]


@rule("to.dtype")
def _to_dtype(v: View) -> list[Result]:
    shape, _ = v.t("self")
    return [(shape, v.scalar_dtype_arg("dtype"))]


@rule("to.dtype_layout", "_to_copy.default", "to.device")
def _to_copy(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    if v.sig.qualname == "aten::to.device":
        return [(shape, v.scalar_dtype_arg("dtype"))]
    layout = v["layout"]
    check(layout in (None, "strided"), "layout")
    return [(shape, v.scalar_dtype_arg("dtype") or dtype)]


def contiguous_strides(shape: Shape) -> Shape:
    """The strides of a new contiguous tensor (size-0 and size-1 dims count as 1)."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


@rule("_assert_tensor_metadata.default")
def _assert_metadata(v: View) -> list[Result] | None:
    shape, dtype = v.t("a")
    size, stride, want = v["size"], v["stride"], v.scalar_dtype_arg("dtype")
    check(size is None or tuple(size) == shape, "size")
    check(stride is None or tuple(stride) == contiguous_strides(shape), "stride")
    check(want is None or want == dtype, "dtype")
    check(v["layout"] in (None, "strided"), "layout")
    return []


# --- factories ------------------------------------------------------------------------------------


def _factory_dtype(v: View, default: str) -> str:
    layout = v["layout"]
    check(layout in (None, "strided"), "layout")
    return v.scalar_dtype_arg("dtype") or default


def _sizes(size: Sequence[int]) -> Shape:
    check(all(d >= 0 for d in size), "negative size")
    return tuple(size)


@rule("zeros.default", "ones.default")
def _zeros(v: View) -> list[Result]:
    return [(_sizes(v["size"]), _factory_dtype(v, DEFAULT_FLOAT))]


@rule("full.default")
def _full(v: View) -> list[Result]:
    value = v["fill_value"]
    return [(_sizes(v["size"]), _factory_dtype(v, scalar_dtype(value)))]


@rule("new_ones.default", "new_zeros.default")
def _new_ones(v: View) -> list[Result]:
    return [(_sizes(v["size"]), _factory_dtype(v, v.dtype("self")))]


@rule("ones_like.default", "zeros_like.default", "full_like.default")
def _like(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(v["memory_format"] in (None, "preserve_format", "contiguous_format"), "memory_format")
    return [(shape, _factory_dtype(v, dtype))]


@rule("scalar_tensor.default")
def _scalar_tensor(v: View) -> list[Result]:
    return [((), _factory_dtype(v, DEFAULT_FLOAT))]


@rule("arange.default", "arange.start", "arange.start_step")
def _arange(v: View) -> list[Result] | None:
    name = v.sig.qualname
    end = v["end"]
    start = v["start"] if name != "aten::arange.default" else 0
    step = v["step"] if name == "aten::arange.start_step" else 1
    values = [start, end, step]
    check(step != 0, "step must be nonzero")
    check(all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values), "arange values")
    check(all(math.isfinite(x) for x in values), "arange bounds")
    check((end - start) / step >= 0 or end == start, "upper bound and larger bound inconsistent with step sign")
    all_int = all(isinstance(x, int) for x in values)
    dtype = _factory_dtype(v, "int64" if all_int else DEFAULT_FLOAT)
    check(dtype != "bool", "arange of bool")
    if dtype == "int64":  # torch truncates the bounds and step to int64 first, then divides exactly
        start, end, step = int(start), int(end), int(step)
        check(step != 0, "step must be nonzero")
        all_int = True
    # otherwise torch computes the length in double precision from the bounds as given
    length = -(-(end - start) // step) if all_int else math.ceil((end - start) / step)
    return [((max(length, 0),), dtype)]


# --- Forge's fused ops ----------------------------------------------------------------------------


@rule("forge::fused_linear.default")
def _fused_linear(v: View) -> list[Result]:
    (x, dx), (w, dw) = v.t("input"), v.t("weight")
    bias = v.t("bias")
    check(len(w) == 2 and len(x) > 0, "fused_linear weight")
    _check_activation(v["activation"])
    out = matmul_shape(x, w[::-1])
    dtypes = [dx, dw]
    if bias is not None:
        check(broadcast_shapes(bias[0], out) == out, "bias")
        dtypes.append(bias[1])
    return [(out, _activated(_same_dtype(*dtypes), v["activation"]))]


@rule("forge::gated_mlp.default")
def _gated_mlp(v: View) -> list[Result]:
    (x, dx), (g, dg), (u, du) = v.t("input"), v.t("gate_weight"), v.t("up_weight")
    check(len(g) == 2 and g == u and len(x) > 0, "gated_mlp weights")
    _check_activation(v["activation"])
    dtype = _same_dtype(dx, dg, du)
    return [(matmul_shape(x, g[::-1]), promote_types(_activated(dtype, v["activation"]), dtype))]


def _activated(dtype: str, activation: str) -> str:
    """The dtype of a fused activation's result on `dtype` (fused_kernels.apply_activation): an
    integer one that sigmoid or relu6 (a clamp to float bounds) makes float32."""
    check(category(dtype) != 0, "a linear of bool tensors")
    if category(dtype) == 2 or activation in ("none", "relu"):
        return dtype
    check(activation in ("sigmoid", "relu6"), "activation of integers")
    return DEFAULT_FLOAT


@rule("forge::matmul_transposed.default")
def _matmul_transposed(v: View) -> list[Result]:
    (a, da), (b, db) = v.t("input"), v.t("other")
    if v["transpose_input"]:
        check(len(a) >= 2, "transpose")
        a = a[:-2] + (a[-1], a[-2])
    if v["transpose_other"]:
        check(len(b) >= 2, "transpose")
        b = b[:-2] + (b[-1], b[-2])
    return [(matmul_shape(a, b), _same_dtype(da, db))]


@rule("forge::add_layer_norm.default")
def _add_layer_norm(v: View) -> list[Result]:
    (x, dx), (r, dr) = v.t("input"), v.t("residual")
    w, b = v.t("weight"), v.t("bias")
    shape = broadcast_shapes(x, r)
    dtype = _same_dtype(dx, dr)
    _check_norm_params(shape, v["normalized_shape"], w, b)
    check(category(dtype) == 2 and all(p is None or p[1] == dtype for p in (w, b)), "dtypes")
    return [(shape, dtype)]


_ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "relu6")


def _check_activation(name: str) -> None:
    check(name in _ACTIVATIONS, f"unknown activation {name}")


# --- convolution and padding ----------------------------------------------------------------------


def _expand_param(values: Any, n: int, name: str) -> list[int]:
    """torch's expand_param_if_needed: one value for every spatial dim, or one each."""
    values = [values] if isinstance(values, int) else list(values)
    if len(values) == 1:
        return values * n
    check(len(values) == n, f"{name} must have {n} elements")
    return values


def _conv_shape(
    x: Shape, w: Shape, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int,
    transposed: bool = False, output_padding: Any = 0, batched_only: bool = False,
) -> Shape:  # fmt: skip
    n = len(w) - 2
    check(n >= 1, "weight rank")
    unbatched = len(x) == n + 1
    check(len(x) == n + 2 or (unbatched and not batched_only), "input rank")
    xb = (1, *x) if unbatched else x
    check(groups > 0, "groups")
    stride, dilation = _expand_param(stride, n, "stride"), _expand_param(dilation, n, "dilation")
    check(all(s > 0 for s in stride) and all(d > 0 for d in dilation), "stride/dilation")
    if isinstance(padding, str):
        check(padding in ("same", "valid") and not transposed, "padding")
        if padding == "same":
            check(all(s == 1 for s in stride), "padding='same' needs stride 1")
        padding = [0] * n if padding == "valid" else None
    else:
        padding = _expand_param(padding, n, "padding")
        check(all(p >= 0 for p in padding), "negative padding")
    if transposed:
        check(xb[1] == w[0] and w[0] % groups == 0, "transposed conv channels")
        out_channels = w[1] * groups
        out_pad = _expand_param(output_padding, n, "output_padding")
        check(all(0 <= op < max(s, d) for op, s, d in zip(out_pad, stride, dilation, strict=True)), "output_padding")
        spatial = [
            (xb[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w[2 + i] - 1) + out_pad[i] + 1
            for i in range(n)
        ]
    else:
        check(xb[1] == w[1] * groups and w[0] % groups == 0 and w[0] > 0, "conv channels")
        out_channels = w[0]
        effective = [dilation[i] * (w[2 + i] - 1) + 1 for i in range(n)]
        if padding is None:  # same
            spatial = list(xb[2:])
            check(all(xb[2 + i] >= 1 for i in range(n)), "empty input")
        else:
            check(all(xb[2 + i] + 2 * padding[i] >= effective[i] for i in range(n)), "kernel larger than input")
            spatial = [(xb[2 + i] + 2 * padding[i] - effective[i]) // stride[i] + 1 for i in range(n)]
    check(all(s > 0 for s in spatial) and xb[0] > 0 and all(d > 0 for d in xb[1:]), "empty conv")
    if bias is not None:
        check(bias[0] == (out_channels,), "bias shape")
    out = (xb[0], out_channels, *spatial)
    return out[1:] if unbatched else out


def _conv_dtype(*typed: Any) -> str:
    dtype = _same_dtype(*(t[1] for t in typed if t is not None))
    check(category(dtype) == 2, "conv of integers")
    return dtype


@rule("conv1d.default", "conv2d.default", "conv1d.padding", "conv2d.padding")
def _conv(v: View) -> list[Result]:
    x, w, b = v.t("input"), v.t("weight"), v.t("bias")
    check(len(w[0]) == (3 if "conv1d" in v.sig.qualname else 4), "weight rank")
    shape = _conv_shape(x[0], w[0], b, v["stride"], v["padding"], v["dilation"], v["groups"])
    return [(shape, _conv_dtype(x, w, b))]


@rule("convolution.default")
def _convolution(v: View) -> list[Result]:
    x, w, b = v.t("input"), v.t("weight"), v.t("bias")
    transposed = v["transposed"]
    shape = _conv_shape(x[0], w[0], b, v["stride"], v["padding"], v["dilation"], v["groups"],
                        transposed, v["output_padding"] if transposed else 0, batched_only=True)  # fmt: skip
    return [(shape, _conv_dtype(x, w, b))]


@rule("conv_transpose1d.default", "conv_transpose2d.input")
def _conv_transpose(v: View) -> list[Result]:
    x, w, b = v.t("input"), v.t("weight"), v.t("bias")
    check(len(w[0]) == (3 if "1d" in v.sig.qualname else 4), "weight rank")
    shape = _conv_shape(x[0], w[0], b, v["stride"], v["padding"], v["dilation"], v["groups"], True,
                        v["output_padding"])  # fmt: skip
    return [(shape, _conv_dtype(x, w, b))]


@rule("forge::fused_conv.default")
def _fused_conv(v: View) -> list[Result]:
    x, w, b = v.t("input"), v.t("weight"), v.t("bias")
    _check_activation(v["activation"])
    shape = _conv_shape(x[0], w[0], b, v["stride"], v["padding"], v["dilation"], v["groups"], batched_only=True)
    return [(shape, _conv_dtype(x, w, b))]


def _constant_pad(shape: Shape, pad: Sequence[int]) -> Shape:
    check(len(pad) % 2 == 0 and len(pad) // 2 <= len(shape), "pad length")
    out = list(shape)
    for i in range(len(pad) // 2):
        d = len(shape) - 1 - i
        out[d] = shape[d] + pad[2 * i] + pad[2 * i + 1]
        check(out[d] > 0 and shape[d] + min(pad[2 * i], 0) + min(pad[2 * i + 1], 0) > 0, "padded size")
    return tuple(out)


@rule("constant_pad_nd.default")
def _constant_pad_nd(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    return [(_constant_pad(shape, v["pad"]), dtype)]


@rule("pad.default")
def _pad(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    mode, pad, value = v["mode"], v["pad"], v["value"]
    if mode == "constant":
        check(value is None or category(dtype) == 2 or value == int(value), "value")
        return [(_constant_pad(shape, pad), dtype)]
    check(mode in ("reflect", "replicate", "circular") and value is None, "mode")
    n = len(pad) // 2
    check(len(pad) % 2 == 0 and 1 <= n <= 3 and len(shape) in (n + 1, n + 2), "pad rank")
    check(all(p >= 0 for p in pad) and category(dtype) == 2 and all(d > 0 for d in shape), "pad")
    for i in range(n):
        size = shape[len(shape) - 1 - i]
        limit = size - 1 if mode == "reflect" else size if mode == "circular" else None
        check(limit is None or max(pad[2 * i], pad[2 * i + 1]) <= limit, "padding too large")
    return [(_constant_pad(shape, pad), dtype)]


# --- pooling, normalization, resampling -----------------------------------------------------------


def _pool_size(size: int, k: int, pad: int, stride: int, dilation: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape."""
    out = (size + 2 * pad - dilation * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool(v: View, n: int, *, dilated: bool, is_max: bool) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) in (n + 1, n + 2) and all(d > 0 for d in shape), "pool input")
    check(category(dtype) == 2, "pool of integers")
    k = _expand_param(v["kernel_size"], n, "kernel_size")
    stride = v["stride"]
    stride = k if stride is None or len(stride) == 0 else _expand_param(stride, n, "stride")
    pad = _expand_param(v["padding"], n, "padding")
    dil = _expand_param(v["dilation"], n, "dilation") if dilated else [1] * n
    check(all(x > 0 for x in (*k, *stride, *dil)) and all(p >= 0 for p in pad), "pool params")
    if is_max and n == 1:  # max_pool1d checks against the kernel size, max_pool2d the effective one
        check(all(p <= kk // 2 for p, kk in zip(pad, k, strict=True)), "pad > half kernel")
    elif is_max:
        check(all(p <= ((kk - 1) * d + 1) // 2 for p, kk, d in zip(pad, k, dil, strict=True)), "pad > half kernel")
    else:
        check(all(p <= kk // 2 for p, kk in zip(pad, k, strict=True)), "pad > half kernel")
    spatial = shape[-n:]
    out = [_pool_size(spatial[i], k[i], pad[i], stride[i], dil[i], v["ceil_mode"]) for i in range(n)]
    check(all(o >= 1 for o in out), "pool output too small")
    if not is_max and "divisor_override" in {a.name for a in v.sig.args}:
        check(v["divisor_override"] in (None,) or v["divisor_override"] != 0, "divisor_override")
    return [(shape[:-n] + tuple(out), dtype)]


@rule("max_pool1d.default")
def _max_pool1d(v: View) -> list[Result]:
    return _pool(v, 1, dilated=True, is_max=True)


@rule("max_pool2d.default")
def _max_pool2d(v: View) -> list[Result]:
    return _pool(v, 2, dilated=True, is_max=True)


@rule("avg_pool1d.default")
def _avg_pool1d(v: View) -> list[Result]:
    return _pool(v, 1, dilated=False, is_max=False)


@rule("avg_pool2d.default")
def _avg_pool2d(v: View) -> list[Result]:
    return _pool(v, 2, dilated=False, is_max=False)


@rule("adaptive_avg_pool1d.default", "adaptive_avg_pool2d.default", "_adaptive_avg_pool2d.default")
def _adaptive_avg_pool(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    n = 1 if "1d" in v.sig.qualname else 2
    size = v["output_size"]
    check(len(size) == n, "output_size")
    check(len(shape) in (n + 1, n + 2) and all(d > 0 for d in shape[1:]) and category(dtype) == 2, "input")
    check(all(s >= 0 for s in size), "output_size")
    return [(shape[:-n] + tuple(size), dtype)]


def _channel_params(shape: Shape, dtype: str, *params: Any) -> None:
    check(len(shape) >= 2 and category(dtype) == 2, "batch norm input")
    for p in params:
        check(p is None or (p[0] == (shape[1],) and p[1] == dtype), "batch norm parameter")


@rule("batch_norm.default")
def _batch_norm(v: View) -> list[Result]:
    shape, dtype = v.t("input")
    params = [v.t(n) for n in ("weight", "bias", "running_mean", "running_var")]
    check(v["training"] or (params[2] is not None and params[3] is not None), "running stats")
    check((params[2] is None) == (params[3] is None), "running stats")
    _channel_params(shape, dtype, *params)
    return [(shape, dtype)]


@rule("_native_batch_norm_legit_no_training.default")
def _batch_norm_no_training(v: View) -> list[Result]:
    shape, dtype = v.t("input")
    params = [v.t(n) for n in ("weight", "bias", "running_mean", "running_var")]
    _channel_params(shape, dtype, *params)
    return [(shape, dtype), ((shape[1],), dtype), ((shape[1],), dtype)]


@rule("_weight_norm_interface.default")
def _weight_norm(v: View) -> list[Result]:
    """As the CPU kernel types it (KERNEL_TYPED): the norm in g's shape, float32 for half inputs."""
    (vs, vd), (gs, gd) = v.t("v"), v.t("g")
    dim = wrap_dim(v["dim"], len(vs))
    check(len(vs) >= 1 and dim in (0, len(vs) - 1) and vd == gd and category(vd) == 2, "weight norm")
    check(math.prod(gs) == vs[dim] and all(d > 0 for d in vs), "g shape")
    return [(vs, vd), (gs, "float32" if vd in ("bfloat16", "float16") else vd)]


def _upsample(v: View, n: int) -> list[Result]:
    shape, dtype = v.t("input")
    check(len(shape) == n + 2 and all(d > 0 for d in shape[1:]) and category(dtype) == 2, "upsample input")
    size, scales = v["output_size"], v["scale_factors"]
    check((size is None) != (scales is None), "exactly one of output_size and scale_factors")
    if size is not None:
        check(len(size) == n and all(s > 0 for s in size), "output_size")
        out = tuple(size)
    else:
        check(len(scales) == n and all(s > 0 for s in scales), "scale_factors")
        out = tuple(math.floor(d * s) for d, s in zip(shape[2:], scales, strict=True))
        check(all(o > 0 for o in out), "output size")
    return [(shape[:2] + out, dtype)]


@rule("upsample_nearest1d.vec", "upsample_linear1d.vec")
def _upsample1d(v: View) -> list[Result]:
    return _upsample(v, 1)


@rule("upsample_nearest2d.vec", "upsample_bilinear2d.vec")
def _upsample2d(v: View) -> list[Result]:
    return _upsample(v, 2)


# --- indexing -------------------------------------------------------------------------------------


@rule("gather.default")
def _gather(v: View) -> list[Result]:
    (shape, dtype), (ishape, idtype) = v.t("self"), v.t("index")
    check(idtype == "int64" and len(ishape) == len(shape) and len(shape) > 0, "gather index")
    dim = wrap_dim(v["dim"], len(shape))
    check(all(ishape[d] <= shape[d] for d in range(len(shape)) if d != dim), "index larger than self")
    return [(ishape, dtype)]


@rule("index.Tensor")
def _index(v: View) -> list[Result] | None:
    shape, dtype = v.t("self")
    return _indexed(shape, dtype, v.t("indices"))


@rule("index_put.default", "_unsafe_index_put.default")
def _index_put(v: View) -> list[Result] | None:
    (shape, dtype), (vshape, vdtype) = v.t("self"), v.t("values")
    indexed = _indexed(shape, dtype, v.t("indices"))
    if indexed is None:
        return None
    check(vdtype == dtype and broadcast_shapes(vshape, indexed[0][0]) == indexed[0][0], "values shape")
    return [(shape, dtype)]


def _indexed(shape: Shape, dtype: str, indices: list) -> list[Result] | None:
    """The result of `self[indices]` (advanced indexing with integer index tensors)."""
    check(len(indices) <= len(shape) and any(i is not None for i in indices), "too many indices")
    masks = [p for p, i in enumerate(indices) if i is not None and i[1] in ("bool", "uint8")]
    if masks == [p for p, i in enumerate(indices) if i is not None] and len(masks) == 1:
        return _empty_masked(shape, dtype, masks[0], indices[masks[0]][0])
    if masks or any(i is not None and i[1] not in ("int64", "int32") for i in indices):
        return None  # bool/byte masks: torch decides
    positions = [p for p, i in enumerate(indices) if i is not None]
    broadcast = broadcast_shapes(*(indices[p][0] for p in positions))
    check(all(shape[p] > 0 for p in positions) or numel(broadcast) == 0, "index into an empty dim")
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    rest = [shape[d] for d in range(len(shape)) if d not in positions]
    if adjacent:
        first = positions[0]
        return [(tuple(shape[:first]) + broadcast + tuple(shape[positions[-1] + 1 :]), dtype)]
    return [(broadcast + tuple(rest), dtype)]


def _empty_masked(shape: Shape, dtype: str, at: int, mask: Shape) -> list[Result] | None:
    """`self[mask]` for one bool/byte mask with no elements: it selects nothing, a static shape (the
    meta kernel refuses every mask, its count of selected elements depends on values); any other
    mask: torch decides."""
    if numel(mask) != 0:
        return None
    check(tuple(shape[at : at + len(mask)]) == tuple(mask), "mask shape")
    return [(tuple(shape[:at]) + (0,) + tuple(shape[at + len(mask) :]), dtype)]


@rule("diff.default")
def _diff(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) >= 1, "diff of a 0-d tensor")
    dim = wrap_dim(v["dim"], len(shape))
    n = v["n"]
    total = shape[dim]
    for name in ("prepend", "append"):
        other = v.t(name)
        if other is not None:
            check(len(other[0]) == len(shape) and other[1] == dtype, f"{name} shape")
            check(all(other[0][d] == shape[d] for d in range(len(shape)) if d != dim), f"{name} sizes")
            total += other[0][dim] if n else 0  # n=0: torch returns a copy of self, prepend/append unused
    check(0 <= n <= total, "n")
    if n == 0:  # torch returns a copy of self: prepend and append are checked, not joined
        return [(tuple(shape), dtype)]
    out = list(shape)
    out[dim] = total - n
    return [(tuple(out), dtype if dtype != "bool" or n == 0 else "bool")]


@rule("chunk.default")
def _chunk(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) > 0, "chunk of a 0-d tensor")
    dim, chunks = wrap_dim(v["dim"], len(shape)), v["chunks"]
    size = shape[dim]
    check(chunks > 0 and size > 0, "chunks")
    step = -(-size // chunks)
    count = -(-size // step)
    return [(shape[:dim] + (min(step, size - i * step),) + shape[dim + 1 :], dtype) for i in range(count)]


@rule("group_norm.default")
def _group_norm(v: View) -> list[Result]:
    shape, dtype = v.t("input")
    groups = v["num_groups"]
    check(len(shape) >= 2 and category(dtype) == 2 and all(d > 0 for d in shape), "group_norm input")
    check(groups > 0 and shape[1] % groups == 0, "channels must be divisible by num_groups")
    for p in (v.t("weight"), v.t("bias")):
        check(p is None or (p[0] == (shape[1],) and p[1] == dtype), "group_norm parameter")
    return [(shape, dtype)]


@rule("topk.default")
def _topk(v: View) -> list[Result]:
    shape, dtype = v.t("self")
    check(len(shape) > 0 and dtype != "bool", "topk input")
    dim, k = wrap_dim(v["dim"], len(shape)), v["k"]
    check(0 <= k <= shape[dim], "k out of range")
    out = shape[:dim] + (k,) + shape[dim + 1 :]
    return [(out, dtype), (out, "int64")]
