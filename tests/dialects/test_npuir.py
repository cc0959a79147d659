"""The npuir dialect: syntax round trips, builders, helpers and verifier messages."""

from __future__ import annotations

import math

import pytest
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    FloatAttr,
    ModuleOp,
    TensorType,
    f16,
    i1,
    i64,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.traits import Pure
from xdsl.transforms.dead_code_elimination import DeadCodeElimination
from xdsl.utils.exceptions import ParseError, VerifyException

from dialects import npuir
from dialects.npuir import (
    NPUIR,
    Device,
    LinearOp,
    MatmulOp,
    Params,
    SdpaOp,
    TransposeOp,
    broadcast_shapes,
    npuir_kinds,
    op_params,
    tensor_bytes,
)
from forge.driver.registry import make_context
from tests.dialects.ir_util import parse, show, t

PROGRAM = """
func.func @f(%x: tensor<1x4x8xf32>, %w: tensor<16x8xf32>, %q: tensor<1x4x6x2xf32>,
             %kv: tensor<1x2x6x2xf32>, %ids: tensor<1x4xi64>) -> tensor<1x4x16xf32> {
  %0 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x4xi64>
  %1 = npuir.weight npu {name = "wte", vreg = 1} : tensor<10x8xf32>
  %2 = npuir.gather npu %1, %0 {axis = 0, vreg = 2} : (tensor<10x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %3 = npuir.linear npu %2, %w {activation = gelu_tanh, vreg = 3} : (tensor<1x4x8xf32>, tensor<16x8xf32>) \
-> tensor<1x4x16xf32>
  %4 = npuir.sdpa npu %q, %kv, %kv {scale = 0.5, is_causal = true, vreg = 4} \
: (tensor<1x4x6x2xf32>, tensor<1x2x6x2xf32>, tensor<1x2x6x2xf32>) -> tensor<1x4x6x2xf32>
  %5 = npuir.reduce cpu %x {kind = mean, axes = [0, 2], vreg = 5, tag = "mean_1"} : (tensor<1x4x8xf32>) -> tensor<4xf32>
  func.return %3 : tensor<1x4x16xf32>
}
"""


def test_custom_and_generic_forms_round_trip():
    module = parse(PROGRAM)
    custom = show(module)
    generic = show(module, generic=True)
    assert "npuir.linear npu %2, %w {activation = gelu_tanh, vreg = 3}" in custom
    assert "#npuir<activation gelu_tanh>" in generic
    assert "#npuir<device npu>" in generic
    for text in (custom, generic):
        again = parse(text)
        assert show(again) == custom
        assert again.is_structurally_equivalent(module)


def test_verifies_ok():
    parse(PROGRAM).verify()


def test_unknown_enum_value_is_a_parse_error():
    with pytest.raises(ParseError):
        parse(
            "func.func @f(%x: tensor<4xf32>) {\n"
            "  %0 = npuir.unary npu %x {kind = cube, vreg = 0} : (tensor<4xf32>) -> tensor<4xf32>\n"
            "  func.return\n}"
        )


def test_dialect_and_kinds():
    assert NPUIR.name == "npuir"
    kinds = npuir_kinds()
    assert list(kinds)[:3] == ["input", "weight", "constant"]
    assert len(kinds) == len(set(NPUIR.operations)) and {"conv", "pad"} <= set(kinds)
    assert kinds["layer_norm"] is npuir.LayerNormOp
    assert all(cls.mnemonic() == kind for kind, cls in kinds.items())
    assert all(cls.has_trait(Pure) for cls in kinds.values())
    assert npuir.op_class("nope") is None


def test_arity():
    assert LinearOp.arity() == (2, 3)
    assert SdpaOp.arity() == (3, 4)
    assert npuir.ConcatOp.arity() == (0, None)
    assert npuir.InputOp.arity() == (0, 0)


def _block(*types: TensorType) -> Block:
    return Block(arg_types=types)


def test_make_fills_defaults_and_converts_values():
    block = _block(t(2, 8), t(16, 8), t(2, 3, 4))
    x, w, y = block.args
    lin = LinearOp.make([x, w], t(2, 16), "npu", 3, activation="gelu")
    tr = TransposeOp.make([y], t(4, 2, 3), Device.CPU, 4, perm=[2, 0, 1])
    block.add_ops([lin, tr])
    lin.verify()
    tr.verify()
    assert Params.of(lin).get_flag("transpose_w")  # default filled in
    assert lin.transpose_w == npuir.TRUE
    assert op_params(lin) == {
        "activation": npuir.ActivationAttr(npuir.Activation.GELU),
        "transpose_w": npuir.TRUE,
    }
    assert tr.perm == DenseArrayBase.from_list(i64, [2, 0, 1])
    assert "= npuir.transpose cpu %1 {perm = [2, 0, 1], vreg = 4} : " in show(tr)
    with pytest.raises(TypeError, match="no parameter 'perm'"):
        LinearOp.make([x, w], t(2, 16), "npu", 3, perm=[0])


def test_dce_removes_unused_pure_ops():
    module = parse(PROGRAM)
    DeadCodeElimination().apply(make_context(), module)
    names = [op.name for op in module.walk() if op.name.startswith("npuir.")]
    assert names == ["npuir.input", "npuir.weight", "npuir.gather", "npuir.linear"]


# ----------------------------------------------------------------------------------- helpers


def test_tensor_bytes():
    assert tensor_bytes(t(1, 128, 768)) == 393216
    assert tensor_bytes(t(4, elt=f16)) == 8
    assert tensor_bytes(t(3, elt=i1)) == 3  # bools take a byte
    assert tensor_bytes(t(elt=i64)) == 8  # rank 0
    with pytest.raises(ValueError, match="dynamic shape"):
        tensor_bytes(t(DYNAMIC_INDEX, 4))


def test_broadcast_shapes():
    assert broadcast_shapes((2, 1, 3), (4, 1)) == (2, 4, 3)
    assert broadcast_shapes((5,), ()) == (5,)
    assert broadcast_shapes((DYNAMIC_INDEX, 3), (5, 1)) == (5, 3)
    with pytest.raises(VerifyException, match=r"shapes \[2\] and \[3\] are not broadcast-compatible"):
        broadcast_shapes((2,), (3,))


def test_params_view_fills_defaults():
    p = Params(MatmulOp, {"transpose_b": npuir.TRUE})
    assert p.get_flag("transpose_b") and not p.get_flag("transpose_a")
    s = Params(SdpaOp, {"scale": FloatAttr(0.5, 64)})
    assert s.get_float("scale") == 0.5
    assert Params(SdpaOp, {}).get_float("scale") is None


# ------------------------------------------------------------------------ verifier messages
# `check` works on types alone, which is what buffer.exec reuses; the op verifier prefixes the name.

CHECK_CASES = [
    (MatmulOp, [t(2, 64), t(32, 4)], t(2, 4), {}, "contraction dims differ: lhs K=64, rhs K=32"),
    (MatmulOp, [t(8, 2), t(4, 8)], t(2, 4), {"transpose_a": True, "transpose_b": True}, None),
    (MatmulOp, [t(3, 2, 8), t(8, 4)], t(3, 2, 4), {}, None),
    (LinearOp, [t(4, 8), t(8, 16)], t(4, 16), {"transpose_w": False}, None),
    (LinearOp, [t(4, 8), t(16, 8), t(8)], t(4, 16), {}, r"bias shape \[8\] is not \[16\]"),
    (SdpaOp, [t(1, 8, 4, 64), t(1, 3, 4, 64), t(1, 3, 4, 64)], t(1, 8, 4, 64), {},
     "query heads 8 not divisible by kv heads 3"),
    (SdpaOp, [t(1, 8, 4, 64), t(1, 2, 6, 64), t(1, 2, 6, 32)], t(1, 8, 4, 32), {}, None),
    (SdpaOp, [t(8, 4, 2), t(8, 4, 2), t(8, 4, 2), t(4, 4, elt=f16)], t(8, 4, 2), {},
     "mask element type f16 is neither i1 nor f32"),
    (TransposeOp, [t(2, 3, 4)], t(2, 4), {"perm": [0, 2]}, r"perm \[0, 2\] is not a permutation of rank 3"),
    (npuir.SliceOp, [t(10)], t(4), {"starts": [1], "ends": [9], "steps": [2]}, None),
    (npuir.SliceOp, [t(10)], t(5), {"starts": [1], "ends": [9], "steps": [2]},
     r"result type tensor<5xf32> does not match expected tensor<4xf32>"),
    (npuir.ConcatOp, [t(2, 3), t(2, 5)], t(2, 8), {"axis": 1}, None),
    (npuir.GatherOp, [t(10, 4), t(2, 3, elt=i64)], t(2, 3, 4), {"axis": 0}, None),
    (npuir.ReduceOp, [t(2, 3)], t(2, 1), {"kind": "max", "axes": [1], "keepdims": True}, None),
    (npuir.BinaryOp, [t(4, 1), t(3)], t(4, 3), {"kind": "pow"}, None),
    (npuir.CompareOp, [t(4, 1), t(3)], t(4, 3, elt=i1), {"kind": "ge"}, None),
    (npuir.SelectOp, [t(4, 1, elt=i1), t(3), t(1)], t(4, 3), {}, None),
    (npuir.ReshapeOp, [t(2, 3)], t(3, 2), {}, None),
    (npuir.ConvertOp, [t(2, 3)], t(2, 3, elt=i64), {}, None),
    (npuir.BroadcastOp, [t(3, 1)], t(2, 3, 5), {}, None),
    (npuir.LayerNormOp, [t(2, 3, 4), t(3, 4), t(3, 4)], t(2, 3, 4), {"axis": 1, "eps": 1e-5}, None),
    (npuir.RmsNormOp, [t(2, 4), t(2)], t(2, 4), {"axis": 1, "eps": 1e-6},
     r"weight shape \[2\] does not match normalized shape \[4\]"),
]


@pytest.mark.parametrize("cls, ins, out, raw, message", CHECK_CASES)
def test_check(cls, ins, out, raw, message):
    params = Params(cls, npuir.make_params(cls, **raw))
    if message is None:
        cls.check(ins, out, params)
    else:
        with pytest.raises(VerifyException, match=message):
            cls.check(ins, out, params)


def test_op_verifier_names_the_op():
    block = _block(t(2, 64), t(32, 4))
    op = MatmulOp.make(list(block.args), t(2, 4), "npu", 0)
    block.add_op(op)
    with pytest.raises(
        VerifyException, match="^npuir.matmul: contraction dims differ: lhs K=64, rhs K=32\n"
    ):
        op.verify()


def test_negative_vreg():
    block = _block(t(4))
    op = npuir.SoftmaxOp.make(list(block.args), t(4), "npu", -3, axis=0)
    block.add_op(op)
    with pytest.raises(VerifyException, match="npuir.softmax: vreg -3 is negative"):
        op.verify()


def test_non_finite_scale_round_trips_and_fails_verification():
    text = PROGRAM.replace("scale = 0.5", "scale = 0x7FF0000000000000 : f64")
    module = parse(text)
    sdpa = next(op for op in module.walk() if isinstance(op, SdpaOp))
    assert sdpa.scale is not None and math.isinf(sdpa.scale.value.data)
    assert "scale = 0x7ff0000000000000 : f64" in show(sdpa).lower()
    assert parse(show(module)).is_structurally_equivalent(module)
    with pytest.raises(VerifyException, match="scale inf is not finite"):
        sdpa.verify()


def test_built_module_verifies():
    block = _block(t(1, 4, 8), t(16, 8))
    x, w = block.args
    lin = LinearOp.make([x, w], t(1, 4, 16), "npu", 0, activation="silu")
    block.add_ops([lin, ReturnOp(lin.result)])
    func = FuncOp("f", ([t(1, 4, 8), t(16, 8)], [t(1, 4, 16)]), Region(block))
    ModuleOp([func]).verify()


def test_invalid_property_values_still_round_trip():
    """IR that breaks a property constraint prints those values in generic form, so a
    diagnostic dump in custom syntax reads back to the same IR."""
    generic = """
    %x = "test.op"() : () -> tensor<4xf32>
    %0 = "npuir.softmax"(%x) <{axis = "last", device = #npuir<device npu>, vreg = 0 : i64}> \
: (tensor<4xf32>) -> tensor<4xf32>
    %1 = "npuir.binary"(%x, %x) <{kind = #npuir<unary_kind neg>, device = #npuir<device npu>, vreg = 3 : i32}> \
: (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = "npuir.transpose"(%x) <{perm = array<i32: 0>, device = #npuir<device npu>, vreg = 2 : i64}> \
: (tensor<4xf32>) -> tensor<4xf32>
    """
    ctx = make_context(allow_unregistered=True)
    module = Parser(ctx, generic).parse_module()
    text = show(module)
    assert '{axis = "last", vreg = 0}' in text
    assert "{kind = #npuir<unary_kind neg>, vreg = 3 : i32}" in text
    assert "{perm = array<i32: 0>, vreg = 2}" in text
    assert Parser(ctx, text).parse_module().is_structurally_equivalent(module)
    with pytest.raises(VerifyException):
        module.verify()
