"""The aten dialect: round-trip coverage of every op, parse and verify errors, op.arg() and op.call()."""

from __future__ import annotations

import functools
import math
import re
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from xdsl.dialects.builtin import TensorType, f32, i64
from xdsl.traits import Pure
from xdsl.utils.exceptions import ParseError, VerifyException

from dialects import aten, aten_schema, aten_table
from dialects.aten import Aten, AtenOp
from dialects.torch_types import dtype_of, meta_tensor, shape_of, tensor_type
from tests.dialects.ir_util import parse, show

FILECHECK_DIR = Path(__file__).resolve().parents[2] / "filecheck" / "dialects" / "aten"
ROUND_TRIP_RUN = "--print-op-generic | forge-opt"


def one_op(text: str) -> AtenOp:
    """The last op of the body of a one-function module (the op under test)."""
    module = parse(text)
    module.verify()
    func = module.body.block.first_op
    ops = list(func.body.block.ops)
    return ops[-2]  # the op before func.return


def func_text(args: str, body: str) -> str:
    return f"func.func @f({args}) {{\n  {body}\n  func.return\n}}\n"


# --- coverage: every op of the dialect has a FileCheck round trip -------------------------------


def round_trip_files() -> list[Path]:
    """The aten FileCheck files that check both the custom and the generic round trip."""
    return sorted(p for p in FILECHECK_DIR.glob("*.mlir") if ROUND_TRIP_RUN in p.read_text())


def test_round_trip_files_exist():
    names = {p.name for p in round_trip_files()}
    assert "ops.mlir" in names, f"no round-trip RUN line in {FILECHECK_DIR}/ops.mlir"


def test_every_aten_op_has_a_round_trip_test():
    seen: set[str] = set()
    for path in round_trip_files():
        seen |= {op.name for op in parse(path.read_text()).walk() if op.name.startswith("aten.")}
    dialect_ops = {cls.name for cls in Aten.operations}
    missing = sorted(dialect_ops - seen)
    assert not missing, (
        f"aten ops without a round-trip test in {FILECHECK_DIR}/*.mlir: " + ", ".join(missing)
    )
    assert seen <= dialect_ops  # parsing would have failed otherwise


def test_schema_ops_are_the_dialect_minus_weight_and_constant():
    assert {c.name for c in Aten.operations} == {c.name for c in aten.SCHEMA_OPS} | {
        "aten.weight",
        "aten.constant",
    }
    assert len({c.name for c in aten.SCHEMA_OPS}) == len(aten.SCHEMA_OPS)
    assert all(aten.OPS_BY_TARGET[c.SIGNATURE.target] is c for c in aten.SCHEMA_OPS)


@pytest.mark.parametrize("path", round_trip_files(), ids=lambda p: p.name)
def test_round_trip_files_print_stably(path: Path):
    """In-process version of the lit round trips: custom and generic print reparse to the same text."""
    module = parse(path.read_text())
    module.verify()
    custom = show(module)
    assert show(parse(custom)) == custom
    assert show(parse(show(module, generic=True))) == custom


def test_only_side_effecting_and_random_ops_are_not_pure():
    impure = {c.name for c in aten.SCHEMA_OPS if not c.has_trait(Pure)}
    generated = {aten.OPS_BY_TARGET[aten_schema_overload(n)] for n in aten_table.GENERATED}
    random = {c.name for c in generated if torch.Tag.nondeterministic_seeded in c.SIGNATURE.target.tags}
    assert {"aten.rand", "aten.randn", "aten.native_dropout", "aten.multinomial"} <= random
    assert impure == {"aten.dropout", "aten._assert_tensor_metadata"} | random
    assert aten.ScaledDotProductAttentionOp.has_trait(Pure)  # tagged for dropout_p; 0 in inference
    assert aten.WeightOp.has_trait(Pure) and aten.ConstantOp.has_trait(Pure)


# --- parse errors ---------------------------------------------------------------------------------

X = "%x: tensor<4xf32>"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "%y = aten.unsqueeze %x {dims = 0} : (tensor<4xf32>) -> tensor<1x4xf32>",
            r"unknown property 'dims' \(known: dim\)",
        ),
        (
            "%y = aten.unsqueeze %x {dim = 1.5} : (tensor<4xf32>) -> tensor<4x1xf32>",
            r"property 'dim' expects an integer",
        ),
        (
            "%y = aten.dropout %x {p = 0.0, train = 1} : (tensor<4xf32>) -> tensor<4xf32>",
            r"property 'train' expects true or false",
        ),
        (
            "%y = aten.view %x {size = [2.0, 2]} : (tensor<4xf32>) -> tensor<2x2xf32>",
            r"property 'size' expects a list of integers",
        ),
        (
            "%y = aten.unsqueeze %x {dim = 0, dim = 0} : (tensor<4xf32>) -> tensor<1x4xf32>",
            r"duplicate property 'dim'",
        ),
        (
            "%y = aten.unsqueeze %x {dim = 0} : (tensor<4xf32>, tensor<4xf32>) -> tensor<1x4xf32>",
            r"aten.unsqueeze: 1 operands but 2 operand types",
        ),
        (
            "%y = aten.cat [%x, %x, %x] : (tensor<4xf32>, tensor<4xf32>) -> tensor<12xf32>",
            r"aten.cat: 3 operands but 2 operand types",
        ),
        (
            "%y = aten.linear %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>",
            r"Expected ',' before tensor argument 'bias' of aten.linear \(write `none`",
        ),
        (
            "%c = aten.constant 1.0 : f32",
            r"aten.constant expects a dense<\.\.\.> : tensor<\.\.\.> value",
        ),
    ],
    ids=["unknown", "float-for-int", "int-for-bool", "int-list", "duplicate", "type-count",
         "list-type-count", "missing-optional", "constant"],
)
def test_parse_error_messages(body: str, message: str):
    with pytest.raises(ParseError, match=message):
        parse(func_text(X, body))


def test_parse_error_points_at_the_property():
    with pytest.raises(ParseError) as info:
        parse(func_text(X, "%y = aten.unsqueeze %x {dims = 0} : (tensor<4xf32>) -> tensor<1x4xf32>"))
    lines = str(info.value).splitlines()
    source = next(i for i, line in enumerate(lines) if "aten.unsqueeze" in line)
    assert lines[source + 1].index("^") == lines[source].index("dims")
    assert lines[source + 1].strip() == "^^^^"  # the name only, not the space after it


# --- verify errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "body", "message"),
    [
        (X, "%y = aten.unsqueeze %x {dim = 0} : (tensor<4xf32>) -> tensor<4x1xf32>",
         r"aten.unsqueeze: result type tensor<4x1xf32> does not match inferred type tensor<1x4xf32>"),
        ("%a: tensor<2x3xf32>, %b: tensor<4x5xf32>",
         "%y = aten.mm %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>",
         r"aten.mm: a and b must have same reduction dim"),
        ("%x: tensor<?x4xf32>", "%y = aten.neg %x : (tensor<?x4xf32>) -> tensor<?x4xf32>",
         r"aten.neg: operands must be statically shaped tensors, got tensor<\?x4xf32>"),
        ("%x: tensor<4xi7>", "%y = aten.neg %x : (tensor<4xi7>) -> tensor<4xi7>",
         r"aten.neg: unsupported element type i7"),
        ("", '%y = aten.zeros {size = [4], device = "npu0"} : () -> tensor<4xf32>',
         r"aten.zeros: property 'device' has invalid value \"npu0\""),
        (X, '%y = "aten.dropout"(%x) <{p = 0.5 : f32, train = false}> : (tensor<4xf32>) -> tensor<4xf32>',
         r"aten.dropout: property 'p' has invalid value"),
        (X, '%y = "aten.add.Scalar"(%x) <{other = 1 : i32}> : (tensor<4xf32>) -> tensor<4xf32>',
         r"aten.add.Scalar: property 'other' has invalid value 1 : i32"),
        ("%x: tensor<4x5xf32>, %i: tensor<2xi64>",
         '%y = "aten.index.Tensor"(%x, %i) <{present = array<i64: 0, 0>}> '
         ': (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2xf32>',
         r"aten.index.Tensor: 'present' mask does not match the operand count"),
        ("", '%c = "aten.constant"() <{value = dense<1> : tensor<2xi64>}> : () -> tensor<2xi32>',
         r"aten.constant: value type tensor<2xi64> does not match result type tensor<2xi32>"),
    ],
    ids=["shape", "meta-kernel", "dynamic", "element-type", "device", "float-width", "scalar-width",
         "present", "constant"],
)
def test_verify_error_messages(args: str, body: str, message: str):
    module = parse(func_text(args, body))
    with pytest.raises(VerifyException, match=message):
        module.verify()


# --- op.arg() and op.tensor_arg() ----------------------------------------------------------------


def test_arg_returns_schema_defaults_when_not_stored():
    op = one_op(func_text("%x: tensor<2x3xf32>", "%y = aten.slice.Tensor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>"))
    assert "dim" not in op.properties
    assert (op.arg("dim"), op.arg("start"), op.arg("end"), op.arg("step")) == (0, None, None, 1)

    op = one_op(func_text(
        "%x: tensor<2x8xf32>",
        "%y = aten.layer_norm %x, none, none {normalized_shape = [8]} : (tensor<2x8xf32>) -> tensor<2x8xf32>",
    ))
    assert op.arg("normalized_shape") == [8]
    assert op.arg("eps") == pytest.approx(1e-05)
    assert op.arg("cudnn_enable") is True
    assert op.tensor_arg("weight") is None and op.tensor_arg("bias") is None

    op = one_op(func_text(X, "%y = aten.gelu %x : (tensor<4xf32>) -> tensor<4xf32>"))
    assert op.arg("approximate") == "none"


def test_arg_returns_python_values_of_stored_properties():
    op = one_op(func_text(
        "%x: tensor<2x3xf32>",
        '%y = aten._to_copy %x {dtype = f16, layout = "strided", device = "cpu", pin_memory = false, '
        'memory_format = "preserve_format"} : (tensor<2x3xf32>) -> tensor<2x3xf16>',
    ))
    assert op.arg("dtype") is torch.float16
    assert op.arg("layout") is torch.strided
    assert op.arg("device") == torch.device("cpu")
    assert op.arg("pin_memory") is False
    assert op.arg("memory_format") is torch.preserve_format
    assert op.arg("non_blocking") is False  # default

    body = "%y = aten.add.Scalar %x {{other = {}}} : (tensor<4xf32>) -> tensor<4xf32>"
    for text, value in (("2", 2), ("2.0", 2.0), ("true", True), ("-inf", -math.inf)):
        got = one_op(func_text(X, body.format(text))).arg("other")
        assert got == value and type(got) is type(value), text
    assert math.isnan(one_op(func_text(X, body.format("nan"))).arg("other"))


def test_arg_and_tensor_arg_names_follow_the_schema():
    op = one_op(func_text(
        "%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>",
        "%y = aten.linear %x, %w, %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>",
    ))
    x, w, b = op.operands
    assert (op.tensor_arg("input"), op.tensor_arg("weight"), op.tensor_arg("bias")) == (x, w, b)
    with pytest.raises(KeyError):
        op.arg("no_such_argument")
    # `self` in a schema reads as `input` on the op, but keeps its schema name for arg()
    op = one_op(func_text(
        "%c: tensor<4xi1>, %x: tensor<4xf32>",
        "%y = aten.where.ScalarSelf %c, %x {self = 0.5} : (tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>",
    ))
    assert op.arg("self") == 0.5


# --- op.call(): the overload's semantics on real tensors ----------------------------------------


def test_call_matches_torch():
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 8), torch.randn(4, 8), torch.randn(4)

    op = one_op(func_text(
        "%x: tensor<2x8xf32>, %w: tensor<4x8xf32>, %b: tensor<4xf32>",
        "%y = aten.linear %x, %w, %b : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>",
    ))
    torch.testing.assert_close(op.call([x, w, b]), F.linear(x, w, b))

    op = one_op(func_text(
        "%x: tensor<2x8xf32>, %w: tensor<4x8xf32>",
        '%y = aten.fused_linear %x, %w, none {activation = "gelu_tanh"} : '
        "(tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>",
    ))
    torch.testing.assert_close(op.call([x, w]), F.gelu(F.linear(x, w), approximate="tanh"))

    acc, m1, m2 = torch.randn(3), torch.randn(2, 5), torch.randn(5, 3)
    op = one_op(func_text(
        "%a: tensor<3xf32>, %m1: tensor<2x5xf32>, %m2: tensor<5x3xf32>",
        "%y = aten.addmm %a, %m1, %m2 {beta = 0.5, alpha = 2} : "
        "(tensor<3xf32>, tensor<2x5xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>",
    ))
    torch.testing.assert_close(op.call([acc, m1, m2]), torch.addmm(acc, m1, m2, beta=0.5, alpha=2))

    a, c = torch.randn(2, 3, 4), torch.randn(2, 5, 4)
    op = one_op(func_text(
        "%a: tensor<2x3x4xf32>, %c: tensor<2x5x4xf32>",
        "%y = aten.matmul_transposed %a, %c {transpose_input = false, transpose_other = true} : "
        "(tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>",
    ))
    torch.testing.assert_close(op.call([a, c]), a @ c.transpose(-1, -2))


def test_call_with_optional_tensor_lists_and_several_results():
    t, i = torch.arange(12.0).reshape(3, 4), torch.tensor([3, 0])
    op = one_op(func_text(
        "%t: tensor<3x4xf32>, %i: tensor<2xi64>",
        "%y = aten.index.Tensor %t, [none, %i] : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2xf32>",
    ))
    torch.testing.assert_close(op.call([t, i]), t[:, i])

    op = one_op(func_text(
        "%t: tensor<3x4xf32>",
        "%a, %b = aten.split.Tensor %t {split_size = 3, dim = 1} : "
        "(tensor<3x4xf32>) -> (tensor<3x3xf32>, tensor<3x1xf32>)",
    ))
    parts = op.call([t])
    assert [p.shape for p in parts] == [(3, 3), (3, 1)]
    torch.testing.assert_close(torch.cat(parts, dim=1), t)

    op = one_op(func_text(
        "%t: tensor<3x4xf32>",
        "%y, %mean, %rstd = aten.native_layer_norm %t, none, none {normalized_shape = [4], eps = 1.0e-05} : "
        "(tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x1xf32>, tensor<3x1xf32>)",
    ))
    y, mean, _ = op.call([t])
    torch.testing.assert_close(y, F.layer_norm(t, [4]))
    torch.testing.assert_close(mean, t.mean(-1, keepdim=True))


def test_call_of_masks_factories_and_conversions():
    cond, x = torch.tensor([True, False]), torch.tensor([1.0, 2.0])
    op = one_op(func_text(
        "%c: tensor<2xi1>, %x: tensor<2xf32>",
        "%y = aten.where.ScalarOther %c, %x {other = -inf} : (tensor<2xi1>, tensor<2xf32>) -> tensor<2xf32>",
    ))
    assert op.call([cond, x]).tolist() == [1.0, -math.inf]

    op = one_op(func_text("", '%y = aten.arange.start_step {start = 10, end = 0, step = -3, device = "cpu"} : '
                              "() -> tensor<4xi64>"))
    assert op.call([]).tolist() == [10, 7, 4, 1]

    op = one_op(func_text(X, "%y = aten.to.dtype %x {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>"))
    assert op.call([torch.ones(4)]).dtype is torch.float16


def test_call_arguments_bind_by_schema_and_replace_devices():
    op = one_op(func_text("", '%y = aten.zeros {size = [2], dtype = f32, device = "cpu"} : () -> tensor<2xf32>'))
    args, kwargs = op.call_arguments([], device=torch.device("meta"))
    assert args == [[2]]
    assert kwargs["device"] == torch.device("meta") and kwargs["dtype"] is torch.float32


def test_infer_result_types_runs_the_meta_kernel():
    op = one_op(func_text(
        "%q: tensor<1x4x8x16xf32>",
        "%y = aten.scaled_dot_product_attention %q, %q, %q, none {is_causal = true} : "
        "(tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>",
    ))
    assert op.infer_result_types() == [TensorType(f32, [1, 4, 8, 16])]
    op = one_op(func_text("", "%y = aten.arange {end = 5} : () -> tensor<5xi64>"))
    assert op.infer_result_types() == [TensorType(i64, [5])]


def test_custom_syntax_prints_none_lists_and_only_stored_properties():
    text = func_text(
        "%t: tensor<3x4xf32>, %i: tensor<2xi64>",
        "%y = aten.index.Tensor %t, [none, %i] : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2xf32>",
    )
    op = one_op(text)
    assert "aten.index.Tensor %t, [none, %i] : (tensor<3x4xf32>, tensor<2xi64>)" in show(op)
    assert re.search(r"present = array<i64: 0, 1>", show(op, generic=True))


# --- the generated table: torch's core opset; every op round-trips, verifies and runs ------------

TABLE_FILE = FILECHECK_DIR / "table.mlir"


def _torch_core_overloads() -> set[str]:
    names = set()
    for s in torch._C._jit_get_all_schemas():
        if s.name.startswith("aten::"):
            name = f"{s.name.removeprefix('aten::')}.{s.overload_name or 'default'}"
            packet, _, overload = name.rpartition(".")
            if torch.Tag.core in getattr(getattr(torch.ops.aten, packet), overload).tags:
                names.add(name)
    return names


def _overload_name(cls: type[AtenOp]) -> str:
    target = cls.SIGNATURE.target
    return f"{target._schema.name.removeprefix('aten::')}.{target._overloadname}"


def test_table_is_torch_core_opset():
    """Fails, naming them, when torch adds or removes core overloads (run scripts/gen_aten_ops.py)."""
    core = _torch_core_overloads()
    dialect = {_overload_name(c) for c in aten.SCHEMA_OPS if c.SIGNATURE.target.namespace == "aten"}
    skipped = set(aten_table.SKIPPED_CORE)
    assert not sorted(core - dialect - skipped), "core overloads missing from the dialect (regenerate)"
    assert not sorted(set(aten_table.CORE) - core), "table entries torch no longer tags core (regenerate)"
    assert not sorted(skipped - core), "SKIPPED_CORE entries torch no longer tags core (regenerate)"
    assert not sorted(skipped & dialect)
    assert core & dialect == core - skipped and len(core & dialect) >= 175


def test_mutating_schemas_are_refused():
    for target in (torch.ops.aten.add_.Tensor, torch.ops.aten.atan2.out, torch.ops.aten.resize_.default):
        with pytest.raises(aten_schema.SchemaError, match="mutates an argument"):
            aten.aten_op(target)


def test_generated_class_names_keep_leading_underscores():
    assert aten._LogSoftmaxOp.SIGNATURE.target is torch.ops.aten._log_softmax.default
    assert aten._AdaptiveAvgPool2dOp is not aten.AdaptiveAvgPool2dOp
    assert aten.TopkOp.name == "aten.topk" and aten.MaxDimOp.name == "aten.max.dim"


@functools.cache
def _table_functions() -> dict[str, str]:
    """Example function text per generated op (`aten.x.y` -> `func.func @x_y ...`)."""
    module = parse(TABLE_FILE.read_text())
    functions = {}
    for func_op in module.body.block.ops:
        op = func_op.body.block.first_op
        while op is not None and not op.name.startswith("aten.") or op.name == "aten.constant":
            op = op.next_op
        functions[op.name] = show(func_op)
    return functions


@pytest.mark.parametrize("name", aten_table.GENERATED)
def test_every_table_op_round_trips_verifies_and_runs(name: str):
    cls = aten.OPS_BY_TARGET[aten_schema_overload(name)]
    text = _table_functions().get(cls.name)
    assert text is not None, f"{cls.name} has no example in {TABLE_FILE} (scripts/gen_aten_ops.py --examples)"
    module = parse(text)
    module.verify()  # result types are the meta kernel's (AUX_RESULTS: dtype and rank)
    assert show(parse(show(module))) == show(module)
    assert show(parse(show(module, generic=True))) == show(module)
    op = next(o for o in module.walk() if isinstance(o, cls))
    if cls.SIGNATURE.target in aten.ELEMENTWISE_TARGETS:  # the fast path agrees with the meta kernel
        assert op._infer_elementwise() == _meta_result_types(op)
    if op.has_trait(Pure) and all(dtype_of(v.type).is_floating_point for v in op.operands):
        values = [_example_value(v.type) for v in op.operands]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated overloads (torch.cholesky) still run
            try:
                results = _flatten(op.call(values))
            except torch._C._LinAlgError:  # random values outside a linalg op's domain (not SPD, ...)
                return
        assert [tensor_type(tuple(r.shape), r.dtype) for r in results] == list(op.result_types)


def aten_schema_overload(name: str):
    packet, _, overload = name.rpartition(".")
    return getattr(getattr(torch.ops.aten, packet), overload)


def _meta_result_types(op: AtenOp):
    metas = [meta_tensor(v.type) for v in op.operands]
    args, kwargs = op.call_arguments(metas, device=torch.device("meta"))
    return [tensor_type(tuple(t.shape), t.dtype) for t in _flatten(op.SIGNATURE.target(*args, **kwargs))]


def _example_value(ty) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    return torch.rand(shape_of(ty), generator=gen, dtype=torch.float64).to(dtype_of(ty)) + 0.5


def _flatten(out) -> list[torch.Tensor]:
    return [out] if isinstance(out, torch.Tensor) else [t for t in out if isinstance(t, torch.Tensor)]


def test_aux_results_take_the_declared_shape_on_cpu():
    """CPU gives `_native_batch_norm_legit_no_training` empty saved statistics, meta gives [C]."""
    op = one_op(func_text(
        "%x: tensor<2x3x4xf32>, %c: tensor<3xf32>",
        "%y:3 = aten._native_batch_norm_legit_no_training %x, %c, %c, %c, %c {momentum = 0.1, eps = 1.0e-05} : "
        "(tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> "
        "(tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)",
    ))
    x, c = torch.randn(2, 3, 4), torch.rand(3) + 0.5
    out, mean, invstd = op.call([x, c, c, c, c])
    assert mean.shape == invstd.shape == (3,)
    assert torch.allclose(out, F.batch_norm(x, c, c, c, c, training=False, eps=1e-5), atol=1e-6)


def test_native_batch_norm_in_eval_saves_no_statistics_and_verifies():
    """training=False: the CPU kernel's save_mean/save_invstd are empty (0,), the meta kernel's (C,);
    both are accepted (AUX_RESULTS: dtype and rank), so the OpInfo samples of native_batch_norm verify."""
    module = parse(
        "func.func @f(%x: tensor<3x2x4xf32>, %w: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) "
        "-> tensor<3x2x4xf32> {\n"
        "  %y, %mean, %invstd = aten.native_batch_norm %x, %w, %w, %m, %v {training = false, momentum = 0.5, "
        "eps = 1.0e-05} : (tensor<3x2x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> "
        "(tensor<3x2x4xf32>, tensor<0xf32>, tensor<0xf32>)\n"
        "  func.return %y : tensor<3x2x4xf32>\n}"
    )
    module.verify()
