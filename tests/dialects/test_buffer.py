"""The buffer dialect: syntax round trips, exec built from npuir ops, helpers, verifier messages."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import DictionaryAttr, StringAttr, TensorType, i64
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from dialects import buffer, npuir
from dialects.buffer import (
    AllocOp,
    Buffer,
    BufType,
    ExecOp,
    TransferOp,
    buffer_table,
    exec_kinds,
    value_buffer,
    value_device,
)
from dialects.npuir import Device
from tests.dialects.ir_util import parse, show, t

PROGRAM = """
func.func @f() -> tensor<1x4x8xf32> {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 128>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 512>
  %b2 = buffer.alloc : !buffer.buf<2, npu, 128>
  %ids = buffer.input 0 : tensor<1x4xi64>
  %wte = buffer.weight "wte" : tensor<16x8xf32>
  %w = buffer.weight "fc" : tensor<32x8xf32>
  %c = buffer.constant dense<0.5> : tensor<32xf32>
  %emb = buffer.exec cpu gather(%wte, %ids) into %b0 {axis = 0} : (tensor<16x8xf32>, tensor<1x4xi64>) \
-> tensor<1x4x8xf32> in !buffer.buf<0, cpu, 128>
  %x = buffer.transfer %emb into %b2 : tensor<1x4x8xf32> in !buffer.buf<2, npu, 128>
  %h = buffer.exec npu linear(%x, %w, %c) into %b1 {activation = silu} \
: (tensor<1x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<1x4x32xf32> in !buffer.buf<1, npu, 512>
  %s = buffer.exec npu slice(%h) into %b2 {starts = [0, 0, 0], ends = [1, 4, 32], steps = [1, 1, 4]} \
: (tensor<1x4x32xf32>) -> tensor<1x4x8xf32> in !buffer.buf<2, npu, 128>
  %out = buffer.transfer %s into %b0 : tensor<1x4x8xf32> in !buffer.buf<0, cpu, 128>
  func.return %out : tensor<1x4x8xf32>
}
"""


def test_custom_and_generic_forms_round_trip():
    module = parse(PROGRAM)
    module.verify()
    custom, generic = show(module), show(module, generic=True)
    assert "buffer.exec npu linear(%x, %w, %c) into %b1 {activation = silu} : " in custom
    assert 'kind = "linear", params = {activation = #npuir<activation silu>' in generic
    for text in (custom, generic):
        again = parse(text)
        assert show(again) == custom
        assert again.is_structurally_equivalent(module)


def test_parse_fills_parameter_defaults():
    module = parse(PROGRAM)
    lin = next(op for op in module.walk() if isinstance(op, ExecOp) and op.kind.data == "linear")
    assert lin.params.data["transpose_w"] == npuir.TRUE
    assert lin.param_view().get_str("activation") == "silu"
    assert lin.npuir_class() is npuir.LinearOp


def test_dialect_and_kinds():
    assert Buffer.name == "buffer"
    kinds = exec_kinds()
    assert "linear" in kinds and "sdpa" in kinds
    assert not {"input", "weight", "constant"} & set(kinds)
    assert len(kinds) == len(npuir.npuir_kinds()) - 3


def test_buf_type():
    buf = BufType(3, "npu", 393216)
    assert (buf.buffer_id, buf.on, buf.nbytes) == (3, Device.NPU, 393216)
    assert str(buf) == "!buffer.buf<3, npu, 393216>"
    assert BufType(3, Device.NPU, 393216) == buf


def test_value_homes_and_buffer_table():
    module = parse(PROGRAM)
    values = {op.results[0].name_hint: op.results[0] for op in module.walk() if op.results}
    assert value_buffer(values["h"]) == BufType(1, "npu", 512)
    assert value_device(values["x"]) is Device.NPU
    assert value_device(values["ids"]) is Device.CPU
    assert value_buffer(values["ids"]) is None
    assert value_device(values["wte"]) is None  # weights are device-neutral
    table = buffer_table(module)
    assert list(table) == [0, 1, 2] and table[1].nbytes == 512


def test_buffer_table_rejects_duplicate_ids():
    module = parse(PROGRAM.replace("!buffer.buf<2, npu, 128>", "!buffer.buf<1, npu, 128>"))
    with pytest.raises(VerifyException, match="buffer id 1 is allocated twice"):
        buffer_table(module)


def test_exec_of_npuir_op():
    block = Block(arg_types=[t(2, 3, 4)])
    (x,) = block.args
    tr = npuir.TransposeOp.make([x], t(4, 2, 3), "npu", 7, perm=[2, 0, 1])
    alloc = AllocOp(BufType(0, "npu", 96))
    ex = ExecOp.of(tr, [x], alloc.buffer)
    block.add_ops([tr, alloc, ex])
    ex.verify()
    assert ex.kind == StringAttr("transpose") and ex.device == tr.device
    assert ex.result.type == tr.result.type
    assert "= buffer.exec npu transpose(%1) into %2 {perm = [2, 0, 1]} : " in show(ex)


def _exec(kind: str, ins, out: BufType, result: TensorType, device="npu", **params) -> ExecOp:
    block = Block(arg_types=[*ins])
    alloc = AllocOp(out)
    cls = npuir.op_class(kind)
    op = ExecOp.create(
        operands=[*block.args, alloc.buffer],
        result_types=[result],
        properties={
            "device": npuir.DeviceAttr(Device(device)),
            "kind": StringAttr(kind),
            "params": DictionaryAttr(npuir.make_params(cls, **params) if cls else {}),
        },
    )
    block.add_ops([alloc, op])
    return op


EXEC_ERRORS = [
    (dict(kind="softmax", ins=[t(4)], out=BufType(0, "npu", 16), result=t(4), axis=0), None),
    (dict(kind="sdpa", ins=[t(2, 4, 8)] * 3, out=BufType(0, "npu", 256), result=t(2, 4, 8)), None),
    (dict(kind="softmax", ins=[t(4)], out=BufType(0, "npu", 8), result=t(4), axis=0),
     "buffer.exec softmax: buffer 0 holds 8 bytes but tensor<4xf32> needs 16"),
    (dict(kind="softmax", ins=[t(4)], out=BufType(0, "cpu", 16), result=t(4), axis=0),
     "buffer.exec softmax: runs on npu but writes buffer 0 on cpu"),
    (dict(kind="softmax", ins=[t(4)], out=BufType(0, "npu", 16), result=t(4), axis=1),
     "buffer.exec softmax: axis 1 out of range for rank 1"),
    (dict(kind="concat", ins=[], out=BufType(0, "npu", 16), result=t(4), axis=0),
     "buffer.exec concat: expects at least one input"),
    (dict(kind="select", ins=[t(4)] * 2, out=BufType(0, "npu", 16), result=t(4)),
     "buffer.exec select: expects 3 inputs, got 2"),
    (dict(kind="constant", ins=[], out=BufType(0, "npu", 16), result=t(4)),
     "'constant' is a source, not an executable kind; use buffer.constant"),
    (dict(kind="conv2d", ins=[t(4)], out=BufType(0, "npu", 16), result=t(4)),
     "buffer.exec: unknown npuir kind 'conv2d'"),
]


@pytest.mark.parametrize("args, message", EXEC_ERRORS)
def test_exec_verifier(args, message):
    op = _exec(**args)
    if message is None:
        op.verify()
    else:
        with pytest.raises(VerifyException, match=message):
            op.verify()


def test_unknown_kind_keeps_its_params_readable():
    generic = """
    %b = "buffer.alloc"() : () -> !buffer.buf<0, npu, 16>
    %x = "buffer.input"() <{index = 0 : i64}> : () -> tensor<4xf32>
    %y = "buffer.exec"(%x, %b) <{device = #npuir<device npu>, kind = "conv2d", params = {stride = 2 : i64}}> \
: (tensor<4xf32>, !buffer.buf<0, npu, 16>) -> tensor<4xf32>
    """
    module = parse(generic)
    text = show(module)
    assert "buffer.exec npu conv2d(%x) into %b {params = {stride = 2 : i64}} : " in text
    assert parse(text).is_structurally_equivalent(module)
    with pytest.raises(VerifyException, match="unknown npuir kind 'conv2d'"):
        module.verify()
    # An unknown parameter of a known kind also stays a parameter through the custom syntax.
    module = parse(generic.replace('"conv2d"', '"softmax"').replace("stride", "axis = 0 : i64, dim"))
    text = show(module)
    assert "softmax(%x) into %b {params = {axis = 0 : i64, dim = 2 : i64}} : " in text
    assert parse(text).is_structurally_equivalent(module)
    with pytest.raises(VerifyException, match="unknown parameter 'dim' for softmax"):
        module.verify()


def test_transfer_builder_and_verifier():
    block = Block()
    inp = buffer.InputOp.create(properties={"index": _i64(0)}, result_types=[t(4)])
    cpu = AllocOp(BufType(0, "cpu", 16))
    npu = AllocOp(BufType(1, "npu", 8))
    bad_device = TransferOp(inp.result, cpu.buffer)
    too_small = TransferOp(inp.result, npu.buffer)
    block.add_ops([inp, cpu, npu, bad_device, too_small])
    assert too_small.result.type == t(4)
    with pytest.raises(VerifyException, match="source is already on cpu"):
        bad_device.verify()
    with pytest.raises(VerifyException, match="buffer 1 holds 8 bytes but tensor<4xf32> needs 16"):
        too_small.verify()


def _i64(v: int):
    from xdsl.dialects.builtin import IntegerAttr

    return IntegerAttr(v, i64)
