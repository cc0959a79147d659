"""The openvino runtime builds the nodes OpenVINO's own opset functions build.

Its hooks create nodes through a cached NodeFactory (`openvino_runtime._make`) instead of the
`openvino.opsetN` functions (which create a factory per call): each hook here is compared with the
opset function it replaces, node by node: op type and version, attributes, output type and shape,
and every input (constants by dtype, shape and bytes, parameters by position).
"""

from __future__ import annotations

import math

import numpy as np
import openvino as ov
import openvino.opset1 as opset1
import openvino.opset8 as opset8
import openvino.opset16 as ops
import pytest

from backends.nnfactory.runtime import get_runtime


def describe(output: ov.Output, params: list[ov.Node]) -> tuple:
    """The node behind `output` and, recursively, its inputs, as comparable values."""
    node = output.get_node()
    info = node.get_type_info()
    if info.name == "Parameter":
        return ("Parameter", [p.get_friendly_name() for p in params].index(node.get_friendly_name()))
    if info.name == "Constant":
        data = node.get_data()
        return ("Constant", str(node.get_element_type()), tuple(data.shape), data.tobytes())
    attrs = tuple(sorted((k, repr(v)) for k, v in node.get_attributes().items()))
    inputs = tuple(describe(i.get_source_output(), params) for i in node.inputs())
    return (info.name, info.version_id, attrs, str(output.get_element_type()), str(output.get_partial_shape()), inputs)


def i64(values):
    return ops.constant(np.asarray(values, dtype=np.int64))


F32 = np.float32
# (name, input shapes, how the builder builds it, how OpenVINO's opset functions build it)
CASES = [
    ("matmul", [(2, 3, 4), (5, 4)], lambda g, a, b: g.matmul(a, b, trB=True),
     lambda a, b: ops.matmul(a, b, False, True)),
    ("sdpa-mask-scale", [(1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8), (1, 1, 4, 4)],
     lambda g, q, k, v, m: g.scaled_dot_product_attention(q, k, v, m, scale=0.5),
     lambda q, k, v, m: ops.scaled_dot_product_attention(q, k, v, attention_mask=m, scale=ops.constant(
         np.asarray(0.5, F32)), causal=False)),
    ("sdpa-causal-scale", [(1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)],
     lambda g, q, k, v: g.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25),
     lambda q, k, v: ops.scaled_dot_product_attention(q, k, v, scale=ops.constant(np.asarray(0.25, F32)),
                                                      causal=True)),
    ("softmax", [(2, 5)], lambda g, x: g.softmax(x, -1), lambda x: ops.softmax(x, 1)),
    ("log_softmax", [(2, 5)], lambda g, x: g.log_softmax(x, 0), lambda x: ops.log_softmax(x, 0)),
    ("gelu", [(2, 5)], lambda g, x: g.gelu(x), lambda x: ops.multiply(x, ops.sigmoid(ops.multiply(ops.add(
        x, ops.multiply(ops.multiply(ops.multiply(x, x), x), ops.constant(np.asarray(0.044715, F32)))),
        ops.constant(np.asarray(2 * math.sqrt(2 / math.pi), F32)))))),  # tanh GELU kept off the matmul
    ("gelu_erf", [(2, 5)], lambda g, x: g.gelu_erf(x), lambda x: ops.gelu(x, "erf")),
    ("swish", [(2, 5)], lambda g, x: g.swish(x), lambda x: ops.multiply(x, ops.divide(  # SiLU kept off the matmul
        ops.constant(np.asarray(1, F32)), ops.add(ops.exp(ops.negative(x)), ops.constant(np.asarray(1, F32)))))),
    *[(name, [(3,)], lambda g, x, name=name: getattr(g, name)(x), lambda x, name=name: getattr(ops, name)(x))
      for name in ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "negative", "abs", "sign", "erf", "sin", "cos")],
    ("clamp", [(3,)], lambda g, x: g.clamp(x, -1.0, 2.0), lambda x: ops.clamp(x, -1.0, 2.0)),
    *[(name, [(2, 3), (3,)], lambda g, a, b, name=name: getattr(g, name)(a, b),
       lambda a, b, fn=fn: getattr(ops, fn)(a, b))
      for name, fn in (("eltwise_add", "add"), ("eltwise_sub", "subtract"), ("eltwise_mul", "multiply"),
                       ("eltwise_div", "divide"), ("power", "power"), ("maximum", "maximum"),
                       ("minimum", "minimum"))],
    *[(name, [(2, 3), (2, 3)], lambda g, a, b, name=name: getattr(g, name)(a, b),
       lambda a, b, name=name: ops.convert(getattr(ops, name)(a, b), ov.Type.f32))
      for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")],
    ("select", [(2, 3), (2, 3), (2, 3)], lambda g, c, a, b: g.select(c, a, b),
     lambda c, a, b: ops.select(ops.convert(c, ov.Type.boolean), a, b)),
    *[(name, [(2, 3, 4)], lambda g, x, name=name: getattr(g, name)(x, [1, 2], keep_dims=True),
       lambda x, name=name: getattr(ops, name)(x, i64([1, 2]), True))
      for name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")],
    ("reshape", [(2, 6)], lambda g, x: g.reshape(x, (3, 4)), lambda x: ops.reshape(x, i64((3, 4)), special_zero=False)),
    ("reshape-0d", [(1, 1)], lambda g, x: g.reshape(x, ()), lambda x: ops.squeeze(x, i64([0, 1]))),
    ("transpose", [(2, 3, 4)], lambda g, x: g.transpose(x, [2, 0, 1]), lambda x: ops.transpose(x, i64([2, 0, 1]))),
    ("broadcast", [(1, 3)], lambda g, x: g.broadcast(x, (4, 3)), lambda x: ops.broadcast(x, i64((4, 3)))),
    ("slice", [(4, 6)], lambda g, x: g.slice(x, [1, 0], [3, 6], [1, 2]),
     lambda x: opset1.strided_slice(x, i64([1, 0]), i64([3, 6]), i64([1, 2]), [0, 0], [0, 0])),
    ("concat", [(2, 3), (2, 5)], lambda g, a, b: g.concat([a, b], 1), lambda a, b: ops.concat([a, b], 1)),
    ("gather", [(5, 3)], lambda g, x: g.gather(x, [4, 0], axis=0),
     lambda x: opset8.gather(x, i64([4, 0]), i64(0), 0)),
    ("pad", [(2, 3)], lambda g, x: g.pad(x, [0, 1], [1, 0], 0.5),
     lambda x: ops.pad(x, i64([0, 1]), i64([1, 0]), "constant", ops.constant(np.asarray(0.5, F32)))),
    ("convert", [(3,)], lambda g, x: g.convert(x, np.int32), lambda x: ops.convert(x, ov.Type.i32)),
]


@pytest.mark.parametrize("name, shapes, build, reference", CASES, ids=[c[0] for c in CASES])
def test_hook_builds_the_opset_functions_node(name, shapes, build, reference):
    g = get_runtime("openvino", "CPU").builder()
    nodes = [g.parameter(shape, F32) for shape in shapes]
    got = build(g, *nodes).handle
    params = g._parameters
    expected = reference(*(p.output(0) for p in params)).output(0)
    assert describe(got, params) == describe(expected, params)


def test_int4_constant_is_an_i4_constant_converted_to_f32():
    g = get_runtime("openvino", "CPU").builder()
    packed = np.arange(8, dtype=np.uint8)
    got = g.int4_constant(packed, (4, 4)).handle
    expected = ops.convert(ops.constant(ov.Tensor(packed, [4, 4], ov.Type.i4)), ov.Type.f32).output(0)
    assert describe(got, []) == describe(expected, [])


@pytest.mark.parametrize("activation", ["gelu", "swish"])
@pytest.mark.parametrize("rows", [1, 32])
def test_an_activation_leaves_its_matmul_on_the_plain_kernel(activation, rows):
    """The CPU plugin runs a matmul followed by our GELU (tanh) or SiLU with the kernel of a matmul followed by
    nothing: the activation is not fused into it. Fused, the matmul left MLAS for a kernel of its own (brgemm
    at one row, a 1x1 convolution at 8+), slower at one row and packing its own copy of the weights, so a
    generator's prefill and decode graphs held two (the hooks' docstrings). The values stay torch's."""
    rng = np.random.default_rng(0)
    w1, w2 = (rng.standard_normal((64, 64), dtype=np.float32) * 0.1 for _ in range(2))
    b = rng.standard_normal(64, dtype=np.float32)
    x = rng.standard_normal((rows, 64), dtype=np.float32) * 3
    g = get_runtime("openvino", "CPU").builder()
    inp = g.parameter(x.shape, F32)
    hidden = g.linear(inp, g.constant(w1), g.constant(b))
    g.result(getattr(g, activation)(hidden))
    g.result(g.linear(inp, g.constant(w2), g.constant(b)))
    compiled = g.compile()
    got, plain = compiled.run([x])
    kernels = {
        str(op.get_rt_info()["primitiveType"].astype(str))
        for op in compiled.compiled_model.get_runtime_model().get_ops()
        if op.get_rt_info()["layerType"].astype(str) == "FullyConnected"
    }
    assert len(kernels) == 1, kernels
    import torch

    h = torch.from_numpy(x) @ torch.from_numpy(w1).T + torch.from_numpy(b)
    want = torch.nn.functional.gelu(h, approximate="tanh") if activation == "gelu" else torch.nn.functional.silu(h)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)


SPECIAL = [math.nan, math.inf, -math.inf, -0.0, 0.0, -1e13, 1e13, -100.0, -20.0, -10.0, -3.0, -1e-30, 1e-30,
           0.5, 3.0, 20.0, 100.0]


@pytest.mark.parametrize("activation", ["gelu", "swish"])
def test_rewritten_activations_equal_torch_on_special_values(activation):
    """The GELU (tanh) and SiLU forms the builder emits against torch's own kernels on NaN, ±inf, ±0, overflowing
    cubes and saturating tails: NaN where torch gives NaN, the same infinities, and the sign of torch's zeros."""
    import torch

    x = np.array(SPECIAL, dtype=F32)
    g = get_runtime("openvino", "CPU").builder()
    g.result(getattr(g, activation)(g.parameter(x.shape, F32)))
    (got,) = g.compile().run([x])
    t = torch.from_numpy(x)
    want = (torch.nn.functional.gelu(t, approximate="tanh") if activation == "gelu"
            else torch.nn.functional.silu(t)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    zeros = want == 0
    assert (np.signbit(got[zeros]) == np.signbit(want[zeros])).all(), (x[zeros], got[zeros], want[zeros])
