"""The native result types (dialects/aten_shapes.py) are torch's (that forge-opt runs without torch:
tests/dialects/test_torch_free.py).

The property: for every op with a native rule, on generated operand shapes, dtypes and properties
(valid and invalid ones), the native result types equal the ones torch's meta kernel (or, for the
elementwise ops, its CPU kernel on 1-element probes) gives, and whenever torch rejects the operands
the native rule does not accept them. Shapes are drawn from a small pool of sizes so that operands
often fit together (matmul inner dims, channels, normalized shapes). FORGE_SHAPE_EXAMPLES sets the
examples per op (default 25; a deeper run: FORGE_SHAPE_EXAMPLES=400).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import DenseArrayBase, StringAttr
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.test_value import create_ssa_value

from dialects import aten, aten_schema, aten_shapes, aten_table
from dialects.aten_schema import ArgKind
from dialects.torch_types import DTYPE_NAMES, ELEMENT_TYPES, tensor_of

EXAMPLES = int(os.environ.get("FORGE_SHAPE_EXAMPLES", "25"))
NATIVE_OPS = sorted(c.SIGNATURE.qualname for c in aten.SCHEMA_OPS if aten_shapes.has_rule(c.SIGNATURE.qualname))
DTYPES = sorted(ELEMENT_TYPES)
FLOAT_BIASED = ["float32"] * 6 + DTYPES

STR_VALUES = {
    "activation": ["none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "relu6", "swish"],
    "padding": ["same", "valid", "full"],
    "mode": ["constant", "reflect", "replicate", "circular"],
    "rounding_mode": ["floor", "trunc"],
    "approximate": ["none", "tanh"],
}


def _shape(draw, max_rank: int = 4) -> tuple[int, ...]:
    rank = draw(st.integers(0, max_rank))
    return tuple(draw(st.sampled_from([1, 2, 2, 3, 3, 4, 0])) for _ in range(rank))


def _tensor(draw, dtypes=FLOAT_BIASED):
    return tensor_of(_shape(draw), ELEMENT_TYPES[draw(st.sampled_from(dtypes))])


def _int(draw) -> int:
    return draw(st.sampled_from([-2, -1, 0, 1, 1, 2, 3, 4]))


def _property(draw, spec):
    kind = spec.kind
    if kind is ArgKind.INT:
        value = _int(draw)
    elif kind is ArgKind.FLOAT:
        value = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, -1.0, 1e-5]))
    elif kind is ArgKind.BOOL:
        value = draw(st.booleans())
    elif kind is ArgKind.SCALAR:
        value = draw(st.sampled_from([0, 1, 2, -1, 0.5, -2.5, 0.0, True, False, float("nan")]))
    elif kind is ArgKind.INT_LIST:
        value = draw(st.lists(st.sampled_from([-1, 0, 1, 1, 2, 2, 3, 4]), max_size=4))
    elif kind is ArgKind.FLOAT_LIST:
        value = draw(st.lists(st.sampled_from([0.5, 1.0, 1.5, 2.0]), min_size=1, max_size=3))
    elif kind is ArgKind.DTYPE:
        return ELEMENT_TYPES[draw(st.sampled_from(DTYPES))]
    elif kind is ArgKind.STR:
        return StringAttr(draw(st.sampled_from(STR_VALUES.get(spec.name, ["none", "sum", "mean"]))))
    elif kind is ArgKind.DEVICE:
        return StringAttr("cpu")
    elif kind is ArgKind.LAYOUT:
        return StringAttr(draw(st.sampled_from(["strided", "sparse_coo"])))
    else:
        return StringAttr(draw(st.sampled_from(["contiguous_format", "preserve_format", "channels_last"])))
    return aten_schema.to_attribute(kind, value)


@st.composite
def ops(draw, qualname: str):
    """An op of `qualname` with generated operand types and properties (results typed arbitrarily)."""
    cls = aten.OPS_BY_NAME[qualname]
    sig = cls.SIGNATURE
    groups, present = [], []
    for spec in sig.tensor_args:
        if spec.kind is ArgKind.TENSOR:
            groups.append([_tensor(draw)])
        elif spec.kind is ArgKind.OPT_TENSOR:
            groups.append([_tensor(draw)] if draw(st.booleans()) else [])
        elif spec.kind is ArgKind.TENSOR_LIST:
            groups.append([_tensor(draw) for _ in range(draw(st.integers(1, 3)))])
        else:
            present = [draw(st.booleans()) for _ in range(draw(st.integers(1, 3)))]
            groups.append([_tensor(draw, ["int64"] * 4 + DTYPES) for p in present if p])
    properties = {}
    for spec in sig.property_args:
        if spec.has_default and draw(st.integers(0, 2)) == 0:
            continue  # the default
        properties[spec.name] = _property(draw, spec)
    if present:
        properties[aten.PRESENT_MASK] = DenseArrayBase.from_list(aten_schema.i64, [int(p) for p in present])
    values = [[create_ssa_value(t) for t in g] for g in groups]
    return cls.build_op(values, properties, [])


def _reference(op):
    try:
        return op.infer_with_torch()
    except VerifyException:
        return None


def _describe(op) -> str:
    types = ", ".join(str(t) for t in op.operand_types)
    props = ", ".join(f"{k} = {v}" for k, v in op.properties.items())
    return f"{op.name}({types}) {{{props}}}"


def _check(op) -> None:
    native = aten_shapes.infer(op)
    if native is None:
        return  # no native answer (invalid operands, or a case the rule leaves to torch)
    want = _reference(op)
    assert want is not None, f"{_describe(op)}: the native rule accepts what torch rejects (gives {native})"
    same = aten._same_result_types(op.SIGNATURE.qualname, want, native)
    assert same, f"{_describe(op)}: native {[str(t) for t in native]} != torch {[str(t) for t in want]}"


@pytest.mark.parametrize("qualname", NATIVE_OPS)
def test_native_result_types_are_torchs(qualname):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, phases=[Phase.generate, Phase.shrink],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])  # fmt: skip
    @given(ops(qualname))
    def prop(op):
        _check(op)

    prop()


def test_native_counts():
    """How many ops have native result types (the rest fall back to torch lazily)."""
    lazy = [c.SIGNATURE.qualname for c in aten.SCHEMA_OPS if not aten_shapes.has_rule(c.SIGNATURE.qualname)]
    assert len(NATIVE_OPS) + len(lazy) == len(aten.SCHEMA_OPS)
    assert len(NATIVE_OPS) >= 200, len(NATIVE_OPS)


def test_promote_types_is_torchs():
    import torch

    for a in DTYPES:
        for b in DTYPES:
            want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).removeprefix("torch.")
            assert aten_shapes.promote_types(a, b) == want, (a, b)


def test_dtype_table_is_torchs():
    import torch

    for name, element in ELEMENT_TYPES.items():
        dtype = getattr(torch, name)
        assert DTYPE_NAMES[element] == name and aten_shapes._SCALAR_TYPE_CODES.get(_scalar_type_code(dtype)) == name


def _scalar_type_code(dtype) -> int:
    import torch

    # the ScalarType code torch stores as a schema default (randperm's dtype=4 is int64)
    return [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.float32,
            torch.float64, None, None, None, torch.bool, None, None, None, torch.bfloat16].index(dtype)  # fmt: skip


def test_layout_and_memory_format_names_are_torchs():
    import torch

    names = {n for n in dir(torch) if isinstance(getattr(torch, n, None), (torch.layout, torch.memory_format))}
    assert aten_schema.LAYOUTS_AND_MEMORY_FORMATS == names


def test_table_entries_are_the_live_schemas():
    """The schema entries dialects/aten_table.py holds are torch's (scripts/gen_aten_ops.py --check
    covers the whole table; this is the cheap part of it)."""
    for cls in aten.SCHEMA_OPS:
        sig = cls.SIGNATURE
        assert aten_table.SIGNATURES[sig.qualname] == aten_schema.schema_entry(sig.target), sig.qualname


def test_scalar_value_is_item():
    """torch_types.scalar_value (fuse-ops reads a constant eps with it) is torch's `.item()`."""
    import math

    from xdsl.dialects.builtin import DenseIntOrFPElementsAttr

    from dialects.torch_types import dense_tensor, scalar_value, tensor_type

    values = [1e-5, 1e-6, 0.1, 1 / 3, -2.5, 65504.0, 1e-8, float("inf"), float("nan"), 1.00390625, 1.0078125 + 1e-9, 7]
    for dtype in ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool"):
        for v in values:
            if not dtype.startswith(("float", "bfloat")):
                v = bool(v) if dtype == "bool" else 7 if math.isinf(v) or math.isnan(v) else int(v)
            attr = DenseIntOrFPElementsAttr.from_list(tensor_type((1,), dtype), [v])
            want, got = dense_tensor(attr).reshape(()).item(), scalar_value(attr)
            assert type(got) is type(want) and (got == want or math.isnan(got) and math.isnan(want)), (dtype, v)
