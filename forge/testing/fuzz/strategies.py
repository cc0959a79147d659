"""Hypothesis strategies for fuzz cases, generated from the overloads' schemas (dialects/aten_table.py).

`case_strategy(op)` draws one call of the overload: every argument from its schema type, shaped by
its name where the name says what it is (a `dim` is a valid or negative dimension of the first
tensor, an `index` tensor holds indices of it, `kernel_size` is a short list of small sizes, a `str`
argument one of its known options: `OPTIONS`), then keeps the draw only when torch's own kernel
accepts it (so every generated case is a valid call, and the dtypes an op accepts are found by
trying). What is drawn:

- tensors of every fuzzed dtype (f32, f16, bf16, i64, i32, i8, u8, bool), 0-d, size 0 and up to
  rank 4, the others broadcasting against the first; values plain, integral, or mixed with special
  values (NaN, ±inf, -0.0, subnormals, the largest magnitudes) and, for integers, the type's bounds;
- a Python number for a Tensor argument now and then (torch wraps it; export keeps it a number);
- Python numbers for Scalar/float arguments: negative, zero, non-integral, large, NaN, ±inf;
- the options: `rounding_mode`, `approximate`, `keepdim`, `reduce`, negative dims, dtypes, ...

forge.testing.fuzz.overrides holds the overloads whose arguments are related beyond what names tell
(matrix products, convolutions, pools, scatters, ...); forge.testing.fuzz.values the values.
"""

from __future__ import annotations

import math
import re
import warnings
from functools import cache
from typing import Any

import torch
from hypothesis import assume
from hypothesis import strategies as st

from dialects.aten_schema import ArgKind, ArgSpec, Signature, signature
from dialects.aten_table import SIGNATURES
from forge.testing.fuzz.cases import Case
from forge.testing.fuzz.overrides import OVERRIDES, Context
from forge.testing.fuzz.values import (
    any_dtype,
    plain_floats,
    python_numbers,
    related_shape,
    shapes,
    tensors,
)

MAX_RESULT_NUMEL = 4096
"""A call whose results hold more elements is not kept (arange(1e9), full([big]))."""


OPTIONS: dict[str, tuple[Any, ...]] = {
    "rounding_mode": (None, "trunc", "floor"),
    "approximate": ("none", "tanh"),
    "reduce": ("sum", "prod", "mean", "amax", "amin", "add", "multiply", "max", "min"),
    "mode": ("constant", "reflect", "replicate", "circular", "reduced", "complete", "r"),
    "padding": ("valid", "same"),
    "side": (None, "left", "right"),
    "UPLO": ("L", "U"),
    "driver": (None,),
    "activation": ("none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "relu6"),
}
"""The values each `str` argument takes, by argument name (the union over the ops that have it;
torch refuses the ones an op does not know, and the draw is dropped)."""

DIM_NAMES = frozenset({"dim", "dim0", "dim1", "dim2", "start_dim", "end_dim", "dimension", "axis"})
DIMS_NAMES = frozenset({"dims", "source", "destination", "physical_layout"})
SHAPE_NAMES = frozenset({"size", "shape", "sizes"})
SPATIAL_NAMES = frozenset({"kernel_size", "stride", "padding", "dilation", "output_padding", "output_size"})
INDEX_TENSOR_NAMES = frozenset({"index", "indices", "offsets", "lengths", "pivots", "LU_pivots"})
MASK_NAMES = frozenset({"mask", "condition"})


@cache
def op_signature(op: str) -> Signature:
    """The Signature of overload `op` (`aten::add.Tensor`) from the generated table."""
    return signature(op, SIGNATURES[op], set())


@cache
def fixed_lengths(op: str) -> dict[str, int]:
    """List arguments whose schema fixes their length (`SymInt[2] stride` -> {"stride": 2})."""
    text = SIGNATURES[op][0]
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"\w+\[(\d+)\]\?? (\w+)", text)}


def fuzzed_ops() -> list[str]:
    """Every overload of the `aten` table (the generated and hand-named ones, and Forge's fused ops)."""
    return list(SIGNATURES)


# --- arguments ------------------------------------------------------------------------------------------


def _tensor_arg(draw, ctx: Context, spec: ArgSpec, first: bool) -> Any:
    if spec.name in INDEX_TENSOR_NAMES:
        n = max(ctx.size_at_dim(), 1)
        shape = draw(st.one_of(related_shape(ctx.base or ()), shapes(2)))
        dtype = draw(st.sampled_from([torch.int64, torch.int64, torch.int32]))
        return draw(tensors(shape, dtype, "plain")).remainder(n) - draw(st.sampled_from([0, 0, n]))
    if spec.name in MASK_NAMES:
        return draw(tensors(draw(related_shape(ctx.base or ())), torch.bool))
    if first and ctx.base is None:
        ctx.base = draw(shapes())
        ctx.dtype = any_dtype(draw)
        return draw(tensors(ctx.base, ctx.dtype))
    if not first and draw(st.integers(0, 6)) == 0:
        return draw(python_numbers())  # a number for a Tensor argument, as `t / 2` passes it
    shape = draw(related_shape(ctx.base or ()))
    dtype = ctx.dtype if ctx.dtype is not None and draw(st.booleans()) else any_dtype(draw)
    return draw(tensors(shape, dtype))


def _dims(draw, ctx: Context, length: int | None = None) -> list[int]:
    rank = max(ctx.rank, 1)
    n = length if length is not None else draw(st.integers(0, rank))
    picked = draw(st.permutations(range(rank)))[:n]
    return [d - rank if draw(st.booleans()) else d for d in picked]


def _shape_like(draw, ctx: Context) -> list[int]:
    """A size for view/reshape/expand-like arguments: a reshape of the first tensor (maybe with -1),
    an expansion of it, or any small shape."""
    base = list(ctx.base or ())
    how = draw(st.sampled_from(["reshape", "reshape", "expand", "any"]))
    numel = math.prod(base)
    if how == "reshape":
        dims: list[int] = []
        rest = numel
        for f in draw(st.permutations([2, 3, 5, 2, 3])):
            if rest and rest % f == 0 and draw(st.booleans()):
                dims.append(f)
                rest //= f
        dims.append(rest)
        dims = draw(st.permutations(dims))
        if dims and draw(st.booleans()):
            dims[draw(st.integers(0, len(dims) - 1))] = -1
        return list(dims)
    if how == "expand":
        lead = draw(st.lists(st.integers(1, 3), max_size=1))
        return lead + [draw(st.sampled_from([d, -1, 3])) if d == 1 else d for d in base]
    return list(draw(shapes()))


def _int_arg(draw, ctx: Context, spec: ArgSpec) -> int:
    if spec.name in DIM_NAMES:
        value = draw(st.integers(-ctx.rank, max(ctx.rank - 1, 0)))
        if spec.name == "dim":
            ctx.dim = value
        return value
    if spec.name == "index":
        n = ctx.size_at_dim()
        return draw(st.integers(-n, max(n - 1, 0)))
    return draw(st.one_of(st.integers(-2, 4), st.integers(0, 3), st.sampled_from([0, 1, 2])))


def _int_list_arg(draw, ctx: Context, spec: ArgSpec, length: int | None) -> list[int]:
    if spec.name in DIMS_NAMES or spec.name == "dim":
        if spec.name in ("dims", "source", "destination", "physical_layout") and draw(st.booleans()):
            return _dims(draw, ctx, max(ctx.rank, 1) if spec.name != "dims" or ctx.op.startswith("aten::permute")
                         else None)
        return _dims(draw, ctx, length)
    if spec.name in SHAPE_NAMES:
        return _shape_like(draw, ctx)
    if spec.name in SPATIAL_NAMES:
        n = length or draw(st.integers(1, 3))
        low = 0 if spec.name in ("padding", "output_padding") else 1
        return draw(st.lists(st.integers(low, 3), min_size=n, max_size=n))
    if spec.name == "normalized_shape":
        base = list(ctx.base or ())
        return base[len(base) - draw(st.integers(0, len(base))) :]
    if spec.name == "pad":
        n = 2 * draw(st.integers(1, 3))
        return draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n))
    n = length if length is not None else draw(st.integers(0, 4))
    return draw(st.lists(st.integers(-1, 4), min_size=n, max_size=n))


def _float_arg(draw, spec: ArgSpec) -> float:
    name = spec.name
    if name == "eps":
        return draw(st.sampled_from([1e-5, 1e-6, 1e-3, 0.1, 0.0]))
    if name in ("p", "dropout_p"):
        return draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, math.inf]))
    if name == "momentum":
        return draw(st.sampled_from([0.1, 0.5, 0.0]))
    if name == "scale":
        return draw(st.sampled_from([0.5, 1.0, 0.125, 2.0]))
    return draw(st.one_of(plain_floats(), st.sampled_from([0.0, -0.0, 1e10, math.nan, math.inf, -math.inf])))


def _value(draw, ctx: Context, spec: ArgSpec, length: int | None, first_tensor: bool) -> Any:
    kind = spec.kind
    if kind is ArgKind.TENSOR:
        return _tensor_arg(draw, ctx, spec, first_tensor)
    if kind is ArgKind.OPT_TENSOR:
        return None if draw(st.booleans()) else _tensor_arg(draw, ctx, spec, first_tensor)
    if kind is ArgKind.TENSOR_LIST:
        n = draw(st.integers(1, 3))
        if ctx.base is None:
            ctx.base, ctx.dtype = draw(shapes(3)), any_dtype(draw)
        return [draw(tensors(ctx.base if draw(st.integers(0, 3)) else draw(shapes(3)), ctx.dtype
                             if draw(st.booleans()) else any_dtype(draw))) for _ in range(n)]
    if kind is ArgKind.OPT_TENSOR_LIST:
        return _index_list(draw, ctx)
    if kind is ArgKind.INT:
        return _int_arg(draw, ctx, spec)
    if kind is ArgKind.INT_LIST:
        return _int_list_arg(draw, ctx, spec, length)
    if kind is ArgKind.FLOAT:
        return _float_arg(draw, spec)
    if kind is ArgKind.FLOAT_LIST:
        n = length or draw(st.integers(1, 3))
        return draw(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]), min_size=n, max_size=n))
    if kind is ArgKind.BOOL:
        return draw(st.booleans())
    if kind is ArgKind.SCALAR:
        return draw(python_numbers())
    if kind is ArgKind.STR:
        return draw(st.sampled_from(OPTIONS.get(spec.name, ("none",))))
    if kind is ArgKind.DTYPE:
        return any_dtype(draw)
    raise AssertionError(f"no strategy for {kind}")


def _index_list(draw, ctx: Context) -> list[torch.Tensor | None]:
    """`Tensor?[] indices` (aten.index): per leading dim, None, an index tensor or a boolean mask."""
    base = ctx.base or ()
    n = draw(st.integers(1, max(len(base), 1)))
    shape = draw(shapes(2))
    out: list[torch.Tensor | None] = []
    for d in range(n):
        size = base[d] if d < len(base) else 1
        how = draw(st.sampled_from(["index", "index", "none", "mask"]))
        if how == "none":
            out.append(None)
        elif how == "mask":
            out.append(draw(tensors((size,), torch.bool)))
        else:
            out.append(draw(tensors(shape, torch.int64, "plain")).remainder(max(size, 1)))
    return out


_SKIPPED_KINDS = (ArgKind.DEVICE, ArgKind.LAYOUT, ArgKind.MEMORY_FORMAT, ArgKind.GENERATOR)


@st.composite
def raw_case(draw, op: str) -> Case:
    """A call of `op` from its schema, not yet checked against torch."""
    override = OVERRIDES.get(op)
    ctx = Context(op)
    if override is not None:
        override(draw, ctx)
    sig = op_signature(op)
    lengths = fixed_lengths(op)
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    positional = True
    first_tensor = True
    for spec in sig.args:
        if spec.kind is ArgKind.DEVICE and not spec.has_default:
            value: Any = "cpu"  # to.device: the one device there is
        elif spec.kind in _SKIPPED_KINDS or spec.name == "pin_memory":
            positional = False
            continue
        elif spec.has_default and spec.name not in ctx.preset and draw(st.booleans()):
            positional = False  # left at its default; later arguments go by keyword
            continue
        else:
            value = ctx_value(draw, ctx, spec, lengths.get(spec.name), first_tensor)
        if spec.kind.is_tensor:
            first_tensor = False
        if positional and not spec.kwarg_only:
            args.append(value)
        else:
            kwargs[spec.name] = value
    return Case(op, tuple(args), kwargs)


def ctx_value(draw, ctx: Context, spec: ArgSpec, length: int | None, first_tensor: bool) -> Any:
    """An argument's value: the override's, when it drew this argument, else `_value`'s."""
    if spec.name in ctx.preset:
        value = ctx.preset[spec.name]
        return draw(value) if isinstance(value, st.SearchStrategy) else value
    return _value(draw, ctx, spec, length, first_tensor)


def valid(case: Case) -> bool:
    """Whether torch's kernel accepts the call and returns small dense tensors. The call is tried on
    meta tensors first: a meta kernel checks the arguments without touching memory (some CPU kernels
    crash the process on arguments they do not check) and gives the result size before it is
    allocated (`arange(1e10)`)."""
    if not _meta_accepts(case):
        return False
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = case.call()
    except Exception:  # torch refuses the call: not a case
        return False
    if not results and case.op != "aten::_assert_tensor_metadata.default":
        return False
    return all(r.layout == torch.strided and r.numel() <= MAX_RESULT_NUMEL for r in results)


def _meta_accepts(case: Case) -> bool:
    meta = case.with_tensors([t.to("meta") for t in case.tensors()])
    devices = [a for a in op_signature(case.op).args if a.kind is ArgKind.DEVICE]
    if devices and not devices[0].has_default:
        return True  # to.device: it was given the CPU; a copy to it is small
    if devices and "device" not in meta.kwargs:
        meta.kwargs["device"] = "meta"
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results = meta.call([t for t in meta.tensors()])
    except NotImplementedError:  # no meta kernel: the CPU kernel decides
        return True
    except Exception as err:
        return "meta" in str(err).lower() and "device" in str(err).lower()  # a kernel that refuses meta: try CPU
    return all(r.numel() <= MAX_RESULT_NUMEL for r in results)


@st.composite
def case_strategy(draw, op: str) -> Case:
    """A valid call of `op` (torch's kernel accepts it)."""
    case = draw(raw_case(op))
    assume(valid(case))
    return case



def draw_cases(op: str, n: int, seed: int) -> list[Case]:
    """Up to `n` distinct valid cases of `op`, the same ones for the same seed (hypothesis drives the
    draws: its generation favours small and boundary values, and explores). Fewer when hypothesis
    gives up finding valid calls (an op whose arguments the schema-driven draw rarely gets right)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as seeded
    from hypothesis.errors import Unsatisfiable

    found: dict[str, Case] = {}

    @settings(max_examples=SPREAD * n, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seeded(seed)
    @given(case_strategy(op))
    def collect(case: Case) -> None:
        found.setdefault(case.key(), case)

    try:
        collect()
    except Unsatisfiable:
        pass
    drawn = list(found.values())
    return drawn[:: max(len(drawn) // n, 1)][:n]


SPREAD = 3
"""`draw_cases` keeps one in SPREAD of hypothesis' draws, evenly spaced: consecutive draws are often
small mutations of each other (how hypothesis explores), and a batch gains more from distinct calls."""
