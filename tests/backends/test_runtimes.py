"""The NNFactory runtimes (backends/nnfactory): every graph is built, compiled and run on
each runtime and compared with torch in fp32.

``openvino`` always runs. ``nnfactory`` (Intel's own NNFactory) runs when installed by
``scripts/install_nnfactory.sh`` and is skipped with the reason otherwise; set
``FORGE_REQUIRE_NNFACTORY=1`` to turn that skip into a failure (CI after the install).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from backends.nnfactory.runtime import (
    RuntimeInputError,
    RuntimeUnavailable,
    available_runtimes,
    get_runtime,
    intel_runtime,
)
from backends.nnfactory.runtime.graph_values import GraphBuildError

RUNTIMES = ["openvino", "nnfactory"]
TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.fixture(params=RUNTIMES)
def rt(request):
    name = request.param
    if name not in available_runtimes():
        reason = f"{name} runtime not installed: {intel_runtime._missing()}; run scripts/install_nnfactory.sh"
        if os.environ.get("FORGE_REQUIRE_NNFACTORY") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return get_runtime(name, "CPU")


def gen(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed + 17 * len(shape) + sum(shape))
    return torch.randn(*shape, generator=g, dtype=torch.float32).to(dtype)


def run_graph(rt, inputs, build):
    """Parameters for ``inputs``, ``build(g, *params)`` -> node(s), compile, run."""
    g = rt.builder()
    params = [g.parameter(t.shape, t.dtype) for t in inputs]
    outs = build(g, *params)
    for node in outs if isinstance(outs, (list, tuple)) else [outs]:
        g.result(node)
    return g.compile().run(inputs)


def check(got, expected, **tol):
    assert len(got) == len(expected)
    for i, (a, e) in enumerate(zip(got, expected, strict=True)):
        e = e.numpy() if isinstance(e, torch.Tensor) else np.asarray(e)
        assert a.shape == e.shape and a.dtype == e.dtype, f"output #{i}: {a.dtype}{a.shape} vs {e.dtype}{e.shape}"
        np.testing.assert_allclose(a, e, err_msg=f"output #{i}", **(tol or TOL))


# ----------------------------------------------------------------------- registry


def test_available_runtimes_lists_openvino_first():
    names = available_runtimes()
    assert names[0] == "openvino"
    assert set(names) <= set(RUNTIMES)


def test_unknown_runtime_is_a_value_error():
    with pytest.raises(ValueError, match="unknown runtime 'tpu'"):
        get_runtime("tpu")


def test_missing_nnfactory_names_the_install_script(monkeypatch):
    monkeypatch.setattr(intel_runtime, "_missing", lambda: "it is not installed")
    monkeypatch.setattr(intel_runtime, "load_backend", intel_runtime.load_backend.__wrapped__)
    assert "nnfactory" not in available_runtimes()
    with pytest.raises(RuntimeUnavailable, match="scripts/install_nnfactory.sh"):
        get_runtime("nnfactory")


def test_unavailable_openvino_device_raises():
    from backends.nnfactory.runtime.openvino_runtime import core

    if "NPU" in core().available_devices:
        pytest.skip("this machine has an NPU")
    with pytest.raises(RuntimeUnavailable, match="'NPU' is not available"):
        get_runtime("openvino", "NPU")


def test_native_op_tables():
    from backends.nnfactory.runtime.intel_runtime import IntelNNFactoryRuntime
    from backends.nnfactory.runtime.openvino_runtime import OpenVINORuntime

    ov_native, intel_native = OpenVINORuntime.native_ops(), IntelNNFactoryRuntime.native_ops()
    core_ops = {"matmul", "scaled_dot_product_attention", "softmax", "gelu", "reduce_mean", "gather", "slice"}
    assert core_ops <= ov_native and core_ops <= intel_native
    # NNFactory has no subtract/select/comparison/broadcast/maximum: compositions there
    for op in ("eltwise_sub", "select", "less", "broadcast", "maximum"):
        assert op in ov_native and op not in intel_native
    for op in ("layer_norm", "rms_norm", "linear"):
        assert op not in ov_native and op not in intel_native


# ----------------------------------------------------------------------- numerics


def test_linear_gelu(rt):
    x, w, b = gen(2, 5, 32), gen(16, 32, seed=1), gen(16, seed=2)

    def build(g, x):
        y = g.linear(x, g.constant(w), g.constant(b))
        return [g.gelu(y), g.gelu_erf(y), g.linear(x, g.constant(w))]

    y = x @ w.T + b
    check(run_graph(rt, [x], build), [F.gelu(y, approximate="tanh"), F.gelu(y), x @ w.T])


def test_matmul_transposes(rt):
    a, b, c = gen(3, 4, 8), gen(3, 6, 8, seed=1), gen(8, 4, seed=2)
    got = run_graph(
        rt,
        [a, b, c],
        lambda g, a, b, c: [g.matmul(a, b, trB=True), g.matmul(c, a, trA=True, trB=True), g.matmul(b, c)],
    )
    check(got, [a @ b.transpose(-1, -2), c.T @ a.transpose(-1, -2), b @ c])


def test_sdpa_causal(rt):
    q, k, v = gen(2, 4, 8, 16), gen(2, 4, 8, 16, seed=1), gen(2, 4, 8, 16, seed=2)
    got = run_graph(rt, [q, k, v], lambda g, q, k, v: g.scaled_dot_product_attention(q, k, v, is_causal=True))
    check(got, [F.scaled_dot_product_attention(q, k, v, is_causal=True)])


def test_sdpa_causal_more_keys_than_queries(rt):
    q, k, v = gen(1, 2, 3, 8), gen(1, 2, 5, 8, seed=1), gen(1, 2, 5, 8, seed=2)
    got = run_graph(rt, [q, k, v], lambda g, q, k, v: g.scaled_dot_product_attention(q, k, v, is_causal=True))
    check(got, [F.scaled_dot_product_attention(q, k, v, is_causal=True)])


def test_sdpa_float_mask_and_scale(rt):
    q, k, v = gen(2, 4, 6, 16), gen(2, 4, 10, 16, seed=1), gen(2, 4, 10, 8, seed=2)
    mask = gen(2, 1, 6, 10, seed=3)
    mask[..., 7:] = -torch.inf  # padded keys

    def build(g, q, k, v, m):
        return [
            g.scaled_dot_product_attention(q, k, v, mask=m),
            g.scaled_dot_product_attention(q, k, v, mask=m, scale=0.3),
            g.scaled_dot_product_attention(q, k, v, mask=mask[0, 0].numpy()),  # constant mask
        ]

    check(
        run_graph(rt, [q, k, v, mask], build),
        [
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3),
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0, 0]),
        ],
    )


def test_sdpa_bool_mask(rt):
    q = gen(1, 2, 4, 8)
    keep = torch.tensor([[True, True, False, True]]).expand(4, 4).contiguous()
    got = run_graph(rt, [q], lambda g, q: g.scaled_dot_product_attention(q, q, q, mask=keep.numpy()))
    check(got, [F.scaled_dot_product_attention(q, q, q, attn_mask=keep)])


def test_sdpa_grouped_query_attention(rt):
    q, k, v = gen(2, 8, 6, 16), gen(2, 2, 6, 16, seed=1), gen(2, 2, 6, 16, seed=2)

    def build(g, q, k, v):
        return [
            g.scaled_dot_product_attention(q, k, v, is_causal=True),
            g.scaled_dot_product_attention(q, k, v, scale=0.25),
        ]

    check(
        run_graph(rt, [q, k, v], build),
        [
            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True),
            F.scaled_dot_product_attention(q, k, v, scale=0.25, enable_gqa=True),
        ],
    )


def test_softmax(rt):
    x = gen(2, 3, 7) * 4
    got = run_graph(rt, [x], lambda g, x: [g.softmax(x, -1), g.softmax(x, axis=1), g.log_softmax(x, -1)])
    check(got, [x.softmax(-1), x.softmax(1), x.log_softmax(-1)])


def test_layer_norm_and_rms_norm(rt):
    x, w, b = gen(2, 5, 32) * 3 + 1, gen(32, seed=1), gen(32, seed=2)

    def build(g, x):
        wc, bc = g.constant(w), g.constant(b)
        return [
            g.layer_norm(x, wc, bc, eps=1e-5),
            g.layer_norm(x, axes=(-2, -1), eps=1e-6),
            g.rms_norm(x, wc, eps=1e-6),
            g.rms_norm(x, eps=1e-5),
        ]

    check(
        run_graph(rt, [x], build),
        [
            F.layer_norm(x, (32,), w, b, eps=1e-5),
            F.layer_norm(x, (5, 32), eps=1e-6),
            F.rms_norm(x, (32,), w, eps=1e-6),
            F.rms_norm(x, (32,), eps=1e-5),
        ],
    )


def test_data_movement(rt):
    x = gen(2, 3, 4, 5)

    def build(g, x):
        return [
            g.reshape(x, (6, -1)),
            g.transpose(x, (0, 2, 1, 3)),
            g.slice(x, [0, 1, 0, -3], [2, 3, 4, 2**62], [1, 1, 2, 1]),
            g.slice(x, [1], [2]),
            g.concat([x, g.eltwise_mul(x, 2.0), x], axis=1),
            g.gather(x, [2, 0], axis=2),
            g.gather(x, [[1, -1]], axis=-1),
            g.broadcast(g.slice(x, [0, 0, 0, 0], [1, 3, 1, 1]), (2, 2, 3, 4, 5)),
            g.unsqueeze(x, 1),
            g.squeeze(g.slice(x, [0], [1]), 0),
        ]

    check(
        run_graph(rt, [x], build),
        [
            x.reshape(6, -1),
            x.permute(0, 2, 1, 3),
            x[:, 1:3, ::2, -3:],
            x[1:2],
            torch.cat([x, x * 2, x], 1),
            x[:, :, [2, 0]],
            x[..., [[1, -1]]],
            x[:1, :, :1, :1].expand(2, 2, 3, 4, 5),
            x.unsqueeze(1),
            x[0],
        ],
    )


def test_embedding_gather_with_index_input(rt):
    table, ids = gen(10, 8), torch.tensor([[3, 0, 9], [1, 1, 2]])
    got = run_graph(rt, [ids], lambda g, ids: g.gather(g.constant(table), ids, axis=0))
    check(got, [F.embedding(ids, table)])


def test_reductions(rt):
    x = gen(2, 3, 4, 5)

    def build(g, x):
        return [
            g.reduce_sum(x, [1, 3], keep_dims=True),
            g.reduce_mean(x, -1),
            g.reduce_max(x, 0),
            g.reduce_min(x, (1, 2), keep_dims=True),
            g.reduce_prod(x, 3),
            g.reduce_sum(x),
        ]

    check(
        run_graph(rt, [x], build),
        [
            x.sum((1, 3), keepdim=True),
            x.mean(-1),
            x.amax(0),
            x.amin((1, 2), keepdim=True),
            x.prod(3),
            x.sum(),
        ],
    )


def test_convert(rt):
    x, i = gen(3, 4) * 5, torch.arange(-6, 6).reshape(3, 4)

    def build(g, x, i):
        return [g.convert(x, np.int32), g.convert(i, "f32"), g.convert(x, torch.float16), g.to(i, np.int32)]

    got = run_graph(rt, [x, i], build)
    check(got, [x.to(torch.int32), i.float(), x.half(), i.int()], rtol=1e-3, atol=0)


def test_unary(rt):
    x = gen(4, 9) * 2

    def build(g, x):
        pos = g.eltwise_add(g.abs(x), 0.1)
        return [
            g.relu(x), g.sigmoid(x), g.swish(x), g.tanh(x), g.exp(x), g.log(pos), g.sqrt(pos),
            g.rsqrt(pos), g.negative(x), g.abs(x), g.sign(x), g.erf(x), g.sin(x), g.cos(x),
            g.clamp(x, -0.5, 1.0),
        ]  # fmt: skip

    p = x.abs() + 0.1
    check(
        run_graph(rt, [x], build),
        [
            x.relu(), x.sigmoid(), F.silu(x), x.tanh(), x.exp(), p.log(), p.sqrt(), p.rsqrt(),
            -x, x.abs(), x.sign(), x.erf(), x.sin(), x.cos(), x.clamp(-0.5, 1.0),
        ],  # fmt: skip
    )


def test_binary_broadcasting_and_scalars(rt):
    a, b = gen(3, 4), gen(4, seed=1)

    def build(g, a, b):
        pa = g.eltwise_add(g.abs(a), 0.5)
        return [
            g.eltwise_add(a, b), g.eltwise_sub(a, b), g.eltwise_mul(a, b), g.eltwise_div(a, b),
            g.eltwise_sub(1.0, a), g.power(pa, 2.0), g.power(pa, g.abs(b)),
            g.maximum(a, b), g.minimum(a, 0.0),
        ]  # fmt: skip

    pa = a.abs() + 0.5
    check(
        run_graph(rt, [a, b], build),
        [
            a + b, a - b, a * b, a / b, 1 - a, pa**2, pa ** b.abs(),
            torch.maximum(a, b), torch.minimum(a, torch.tensor(0.0)),
        ],  # fmt: skip
    )


def test_comparisons_and_select(rt):
    a = torch.tensor([[-1.5, 0.0, 2.0, 3.0], [1e30, -1e30, 7.0, -0.0]])
    b = torch.tensor([[-1.5, 1.0, 1.0, 3.0], [-1e30, 1e30, 7.0, 0.0]])
    i, j = torch.tensor([3, -2, 5, 0]), torch.tensor([3, 4, -5, 0])
    neg_inf = torch.full((2, 4), -torch.inf)

    def build(g, a, b, i, j):
        cmp = [
            g.equal(a, b), g.not_equal(a, b), g.less(a, b), g.less_equal(a, b), g.greater(a, b), g.greater_equal(a, b)
        ]
        return [
            *cmp,
            g.less(i, j), g.equal(i, j),
            g.select(g.greater(a, b), a, -np.inf),  # -inf must survive exactly
            g.select(g.less(i, j), i, j),
            g.select(g.constant(np.array([1.0, 0.0, 2.5, -1.0], np.float32)), a, b),
        ]  # fmt: skip

    f = lambda t: t.to(torch.float32)  # noqa: E731
    expected = [f(a == b), f(a != b), f(a < b), f(a <= b), f(a > b), f(a >= b)]
    expected += [(i < j).long(), (i == j).long(), torch.where(a > b, a, neg_inf), torch.where(i < j, i, j)]
    expected += [torch.where(torch.tensor([True, False, True, True]), a, b)]
    check(run_graph(rt, [a, b, i, j], build), expected, rtol=0, atol=0)


def test_constants_scalars_and_parameter_outputs(rt):
    x = gen(3)

    def build(g, x):
        c = g.constant(2.5)
        return [g.eltwise_mul(x, c), c, x, g.constant(np.arange(6, dtype=np.int64).reshape(2, 3))]

    check(run_graph(rt, [x], build), [x * 2.5, torch.tensor(2.5), x, torch.arange(6).reshape(2, 3)])


def test_graph_without_inputs_and_repeated_results(rt):
    g = rt.builder()
    y = g.exp(g.constant(np.arange(4, dtype=np.float32)))
    g.result(y)
    g.result(y)
    prog = g.compile()
    assert prog.input_specs == ()
    check(prog.run([]), [torch.arange(4.0).exp()] * 2)


# ----------------------------------------------------------------------- running


def _mlp(rt):
    w = gen(6, 8, seed=5)
    g = rt.builder()
    x = g.parameter((3, 8))
    h = g.matmul(x, g.constant(w), trB=True)
    g.result(g.relu(h))
    g.result(g.reduce_sum(h, -1))
    return g.compile(), w


def test_run_writes_into_preallocated_outputs(rt):
    prog, w = _mlp(rt)
    assert [tuple(s.shape) for s in prog.output_specs] == [(3, 6), (3,)]
    assert prog.input_specs[0].shape == (3, 8) and prog.input_specs[0].dtype == np.float32
    outs = [np.full(s.shape, np.nan, s.dtype) for s in prog.output_specs]
    pointers = [o.ctypes.data for o in outs]
    for seed in range(3):
        x = gen(3, 8, seed=seed)
        result = prog.run([x.numpy()], outputs=outs)
        assert len(result) == 2 and all(r is o for r, o in zip(result, outs, strict=True))
        assert [o.ctypes.data for o in outs] == pointers
        check(outs, [(x @ w.T).relu(), (x @ w.T).sum(-1)])

    # run() without buffers returns fresh arrays and leaves the caller's alone
    kept = [o.copy() for o in outs]
    fresh = prog.run([gen(3, 8, seed=9)])
    assert all(not np.shares_memory(f, o) for f, o in zip(fresh, outs, strict=True))
    assert all(np.array_equal(k, o) for k, o in zip(kept, outs, strict=True))
    again = prog.run([gen(3, 8, seed=9)])
    assert all(not np.shares_memory(a, f) for a, f in zip(again, fresh, strict=True))

    # a different buffer set is rebound
    other = [np.empty(s.shape, s.dtype) for s in prog.output_specs]
    x = gen(3, 8, seed=4)
    prog.run([x], outputs=other)
    check(other, [(x @ w.T).relu(), (x @ w.T).sum(-1)])
    assert all(np.array_equal(k, o) for k, o in zip(kept, outs, strict=True))


def test_a_run_into_preallocated_outputs_copies_no_output(rt):
    """The request writes into the bound arrays and nothing else: no copy of an output is made per call
    (OpenVINO's Python `infer()` returns a copy of every output unless `share_outputs`; on GPT-2 that was
    the 25.7 MB logits, allocated and copied per call). Measured: traced memory peak of one run."""
    import tracemalloc

    g = rt.builder()
    x = g.parameter((256, 1024))
    g.result(g.relu(x))
    prog = g.compile()
    inp = gen(256, 1024, seed=1).numpy()
    out = [np.empty((256, 1024), np.float32)]
    prog.run([inp], outputs=out)  # binds the arrays
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        prog.run([inp], outputs=out)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert peak < out[0].nbytes // 8, f"a run allocated {peak} bytes (the output is {out[0].nbytes})"
    check(out, [np.maximum(inp, 0)])


def test_run_accepts_tensors_and_noncontiguous_inputs(rt):
    prog, w = _mlp(rt)
    x = gen(8, 3).T  # non-contiguous view
    check(prog.run([x]), [(x @ w.T).relu(), (x @ w.T).sum(-1)])
    check(prog([x.numpy()]), [(x @ w.T).relu(), (x @ w.T).sum(-1)])


def test_run_rejects_mismatched_inputs_and_buffers(rt):
    prog, _ = _mlp(rt)
    with pytest.raises(RuntimeInputError, match=r"input #0: expected f32\[3, 8\], got f64\[3, 8\]"):
        prog.run([np.zeros((3, 8))])
    with pytest.raises(RuntimeInputError, match="expected 1 inputs, got 2"):
        prog.run([np.zeros((3, 8), np.float32)] * 2)
    with pytest.raises(RuntimeInputError, match=r"output #1: expected f32\[3\]"):
        prog.run([np.zeros((3, 8), np.float32)], outputs=[np.empty((3, 6), np.float32), np.empty(4, np.float32)])
    with pytest.raises(RuntimeInputError, match="C-contiguous"):
        prog.run([np.zeros((3, 8), np.float32)], outputs=[np.empty((6, 3), np.float32).T, np.empty(3, np.float32)])


# ----------------------------------------------------------------------- errors


def test_matmul_shape_mismatch_names_the_op(rt):
    g = rt.builder()
    a, b = g.parameter((2, 3)), g.parameter((4, 5))
    with pytest.raises(GraphBuildError, match=r"^matmul\(f32\[2, 3\], f32\[4, 5\]\): .*dimension") as info:
        g.matmul(a, b)
    assert info.value.op == "matmul"
    # the builder stays usable (on nnfactory: nothing reached the C++ side)
    g.result(g.matmul(a, g.parameter((3, 5))))
    assert g.compile().output_specs[0].shape == (2, 5)


def test_errors_in_compositions_name_every_level(rt):
    g = rt.builder()
    x = g.parameter((2, 8))
    with pytest.raises(GraphBuildError, match=r"^layer_norm\(f32\[2, 8\], f32\[5\].*eltwise_mul\("):
        g.layer_norm(x, g.constant(np.ones(5, np.float32)))


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda g, x: g.eltwise_add(x, g.parameter((3, 2))), r"eltwise_add\(f32\[2, 8\], f32\[3, 2\]\): .*broadcast"),
        (lambda g, x: g.reshape(x, (3, -1)), r"reshape\(f32\[2, 8\], \(3, -1\)\): cannot reshape"),
        (lambda g, x: g.transpose(x, (0, 0)), r"transpose.*not a permutation"),
        (lambda g, x: g.slice(x, [0, 9], [2, 12]), r"slice.*empty slice"),
        (lambda g, x: g.softmax(x, 2), r"softmax.*axis 2 out of range"),
        (lambda g, x: g.concat([x, g.parameter((3, 3))], 0), r"concat.*do not match"),
        (lambda g, x: g.eltwise_add(x, g.parameter((2, 8), np.int32)), r"eltwise_add.*dtypes differ"),
        (
            lambda g, x: g.scaled_dot_product_attention(x, x, x, mask=x, is_causal=True),
            r"scaled_dot_product_attention.*not both",
        ),
    ],
)
def test_invalid_ops_raise_build_errors(rt, build, message):
    g = rt.builder()
    with pytest.raises(GraphBuildError, match=message):
        build(g, g.parameter((2, 8)))


def test_nodes_of_another_builder_and_closed_builders(rt):
    g1, g2 = rt.builder(), rt.builder()
    x = g1.parameter((2,))
    with pytest.raises(GraphBuildError, match="another graph builder"):
        g2.relu(x)
    g1.result(g1.relu(x))
    g1.compile()
    with pytest.raises(GraphBuildError, match="already compiled"):
        g1.relu(x)
    with pytest.raises(GraphBuildError, match="no results"):
        g2.compile()


def test_boolean_tensors(rt):
    g = rt.builder()
    if rt.name == "nnfactory":
        with pytest.raises(GraphBuildError, match="bool is not supported by the nnfactory runtime"):
            g.parameter((3,), np.bool_)
        return
    m = g.parameter((3,), np.bool_)
    g.result(g.select(m, g.constant(np.float32(1)), -1.0))
    out = g.compile().run([np.array([True, False, True])])
    np.testing.assert_array_equal(out[0], [1, -1, 1])


def test_run_prepared_runs_what_check_arrays_accepts_and_check_arrays_refuses_the_rest(rt):
    """The executor's path: arrays checked once (`check_arrays`), then run on every call without the checks
    (`run_prepared`), the same values as `run`; what `run` refuses, `check_arrays` refuses too, and a
    non-contiguous input (which `run` copies) as well, since `run_prepared` would not copy it."""
    prog, w = _mlp(rt)
    x = gen(3, 8, seed=5).numpy()
    outs = [np.full(s.shape, np.nan, s.dtype) for s in prog.output_specs]
    prog.check_arrays([x], outs)
    prog.run_prepared([x], outs)
    check(outs, [np.maximum(x @ w.numpy().T, 0), (x @ w.numpy().T).sum(-1)])
    good_outs = [np.empty(s.shape, s.dtype) for s in prog.output_specs]
    with pytest.raises(RuntimeInputError, match=r"input #0: expected f32\[3, 8\], got f64\[3, 8\]"):
        prog.check_arrays([np.zeros((3, 8))], good_outs)
    with pytest.raises(RuntimeInputError, match="C-contiguous"):
        prog.check_arrays([np.zeros((8, 3), np.float32).T], good_outs)
    with pytest.raises(RuntimeInputError, match=r"output #1: expected f32\[3\]"):
        prog.check_arrays([x], [good_outs[0], np.empty(4, np.float32)])


def test_a_segment_checks_its_planned_arrays_once_and_a_calls_own_array_every_call(rt):
    """`RunSegment` checks its planned arrays when it is made (a mismatch is an error then, not a wrong value at
    a call) and, on every call, the call's own arrays put in their place (a direct output's): the right one
    is written, one of another shape or dtype is refused naming both."""
    from backends.nnfactory.executor import RunSegment

    g = rt.builder()
    g.result(g.relu(g.parameter((2, 4))))
    graph = g.compile()
    x = gen(2, 4, seed=3).numpy()
    planned = np.empty((2, 4), np.float32)
    with pytest.raises(RuntimeInputError, match=r"output #0: expected f32\[2, 4\]"):
        RunSegment(0, graph, [x], [np.empty((4, 2), np.float32)])
    segment = RunSegment(0, graph, [x], [planned], text="segment 0", direct_outputs=((0, 0),))
    mine = np.full((2, 4), np.nan, np.float32)
    segment([mine])
    check([mine], [np.maximum(x, 0)])
    for wrong in (np.empty((4, 2), np.float32), np.empty((2, 4), np.float64)):
        with pytest.raises(TypeError, match=r"segment 0: a call's array is .* reads and writes float32\[2, 4\]"):
            segment([wrong])
