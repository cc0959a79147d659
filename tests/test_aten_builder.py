"""dialects/aten_builder.py: aten ops from SSA values and Python values (the inverse of op.arg())."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Block

from dialects import aten
from dialects.aten_builder import build


@pytest.fixture
def xy():
    block = Block(arg_types=[TensorType(f32, [2, 8]), TensorType(f32, [2, 8])])
    return block.args


def test_python_values_round_trip_through_arg(xy):
    x, y = xy
    softmax = build(aten.SoftmaxIntOp, x, dim=-1)
    assert softmax.arg("dim") == -1 and softmax.result.type == x.type
    norm = build(aten.LayerNormOp, x, [8], eps=1e-3)
    assert norm.arg("normalized_shape") == [8] and norm.arg("eps") == pytest.approx(1e-3)
    assert "eps" in norm.properties and "cudnn_enable" not in norm.properties  # defaults are left out
    assert build(aten.AddTensorOp, x, y, alpha=2).arg("alpha") == 2
    amax = build(aten.AmaxOp, x, [-1], True)
    assert amax.result.type == TensorType(f32, [2, 1])  # inferred
    amax.verify()


def test_wrong_arguments_name_the_op_and_argument(xy):
    x, _ = xy
    with pytest.raises(TypeError, match="aten.softmax.int: missing argument 'dim'"):
        build(aten.SoftmaxIntOp, x)
    with pytest.raises(TypeError, match="aten.softmax.int: property 'dim' \\(int\\) cannot hold 'a'"):
        build(aten.SoftmaxIntOp, x, dim="a")
    with pytest.raises(TypeError, match="no argument 'dimm'"):
        build(aten.SoftmaxIntOp, x, dimm=1)
    with pytest.raises(TypeError, match="tensor argument 'self' must be an SSA value, not int"):
        build(aten.SoftmaxIntOp, 3, dim=1)
    with pytest.raises(TypeError, match="cannot infer the result types"):
        build(aten.MmOp, x, x)  # 2x8 @ 2x8
