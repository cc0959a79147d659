"""The NNFactory emitter (backends/nnfactory/emitter.py) on hand-written buffer IR.

Every program is checked against the buffer-IR interpreter (`forge.interpreter.interpret`, the
reference semantics with simulated memory) on each runtime: `openvino` always, `nnfactory`
when installed (skipped otherwise; `FORGE_REQUIRE_NNFACTORY=1` turns the skip into a failure).
`BufferIR` writes buffer IR the way the lowering does (also used by test_executor.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from backends.nnfactory.analysis import analyze
from backends.nnfactory.emitter import bool_carrier, emit, npu_kinds
from backends.nnfactory.program import CpuStep, EmitError, SegmentStep, TransferStep
from backends.nnfactory.runtime import get_runtime
from forge.driver.registry import make_context
from forge.interpreter import interpret
from forge.weights import WeightStore, attach_weights
from lowering.affinity import NPU_KINDS
from tests.conftest import require_runtime

RUNTIMES = ["openvino", "nnfactory"]
TOL = 1e-5


def runtime_or_skip(name: str):
    require_runtime(name)
    return get_runtime(name, "CPU")


@pytest.fixture(params=RUNTIMES)
def rt(request):
    return runtime_or_skip(request.param)


# ================================================================= writing buffer IR


_ELT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "i64": 8, "i32": 4, "i8": 1, "i1": 1}
_ELT_DTYPE = {
    "f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "i64": torch.int64,
    "i32": torch.int32, "i8": torch.int8, "i1": torch.bool,
}  # fmt: skip


def dims(ty: str) -> tuple[tuple[int, ...], str]:
    """`"2x3xf32"` -> ((2, 3), "f32"); `"f32"` is rank 0."""
    *ds, elt = ty.split("x")
    return tuple(int(d) for d in ds), elt


def nbytes(ty: str) -> int:
    shape, elt = dims(ty)
    return math.prod(shape) * _ELT_BYTES[elt]


class BufferIR:
    """Writes one buffer-dialect function: `x = ir.exec("npu", "linear", [a, w], "4x8xf32")`.

    Each write gets a new buffer of exactly its size unless `into=` names one to reuse.
    """

    def __init__(self, *arg_types: str, name: str = "forward"):
        self.name = name
        self.arg_types = arg_types
        self.allocs: list[str] = []
        self.lines: list[str] = []
        self.types: dict[str, str] = {}
        self.buffers: dict[str, str] = {}  # %bN -> its type
        self.results: list[str] = []
        self._n = 0

    def _fresh(self, hint: str) -> str:
        self._n += 1
        return f"%{hint}{self._n}"

    def alloc(self, device: str, size: int) -> str:
        bid = len(self.buffers)
        name = f"%b{bid}"
        self.buffers[name] = f"!buffer.buf<{bid}, {device}, {size}>"
        self.allocs.append(f"  {name} = buffer.alloc : {self.buffers[name]}")
        return name

    def input(self, index: int) -> str:
        v = self._fresh("in")
        self.types[v] = self.arg_types[index]
        self.lines.append(f"  {v} = buffer.input {index} : tensor<{self.arg_types[index]}>")
        return v

    def weight(self, name: str, ty: str) -> str:
        v = self._fresh("w")
        self.types[v] = ty
        self.lines.append(f'  {v} = buffer.weight "{name}" : tensor<{ty}>')
        return v

    def constant(self, dense: str, ty: str) -> str:
        v = self._fresh("c")
        self.types[v] = ty
        self.lines.append(f"  {v} = buffer.constant {dense} : tensor<{ty}>")
        return v

    def _into(self, device: str, ty: str, into: str | None) -> str:
        return into if into is not None else self.alloc(device, nbytes(ty))

    def transfer(self, v: str, device: str, into: str | None = None) -> str:
        ty = self.types[v]
        buf = self._into(device, ty, into)
        out = self._fresh("t")
        self.types[out] = ty
        self.lines.append(f"  {out} = buffer.transfer {v} into {buf} : tensor<{ty}> in {self.buffers[buf]}")
        return out

    def exec(
        self, device: str, kind: str, ins: Sequence[str], out_ty: str, params: str = "", into: str | None = None
    ) -> str:
        buf = self._into(device, out_ty, into)
        out = self._fresh(kind.replace("_", ""))
        self.types[out] = out_ty
        in_types = ", ".join(f"tensor<{self.types[v]}>" for v in ins)
        params = f" {params}" if params else ""
        self.lines.append(
            f"  {out} = buffer.exec {device} {kind}({', '.join(ins)}) into {buf}{params} : "
            f"({in_types}) -> tensor<{out_ty}> in {self.buffers[buf]}"
        )
        return out

    def ret(self, *values: str) -> None:
        self.results = list(values)

    def text(self) -> str:
        args = ", ".join(f"%arg{i}: tensor<{t}>" for i, t in enumerate(self.arg_types))
        outs = ", ".join(f"tensor<{self.types[v]}>" for v in self.results)
        ret = f"  func.return {', '.join(self.results)} : {outs}" if self.results else "  func.return"
        return "\n".join(
            [f"func.func @{self.name}({args}) -> ({outs}) {{", *self.allocs, *self.lines, ret, "}"]
        )

    def module(self) -> ModuleOp:
        return parse(self.text())


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def random_input(ty: str, seed: int, kind: str = "normal") -> torch.Tensor:
    shape, elt = dims(ty)
    g = torch.Generator().manual_seed(seed)
    dtype = _ELT_DTYPE[elt]
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.6
    if not dtype.is_floating_point:
        return torch.randint(-4, 5, shape, generator=g, dtype=dtype)
    if kind == "positive":
        return (torch.rand(shape, generator=g) + 0.1).to(dtype)
    if kind == "ints":
        return torch.randint(-2, 3, shape, generator=g).to(dtype)
    return torch.randn(shape, generator=g).to(dtype)


def assert_same(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor], tol: float = TOL) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, (
            f"output {i}: {g.dtype}{list(g.shape)} vs {w.dtype}{list(w.shape)}"
        )
        if w.dtype.is_floating_point:
            torch.testing.assert_close(g, w, rtol=tol, atol=tol, equal_nan=True, msg=lambda m, i=i: f"output {i}: {m}")
        else:
            assert torch.equal(g, w), f"output {i}: {g} != {w}"


def check_program(module: ModuleOp, weights: WeightStore | None, inputs: Sequence[torch.Tensor], runtime, **kw):
    """Emit, run twice (buffers are reused), compare with the buffer interpreter."""
    program = emit(module, weights, runtime=runtime, **kw)
    want = list(interpret(module, weights, *inputs, func_name=program.function))
    ex = program.executor()
    assert_same(ex(*inputs), want)
    assert_same(ex(*inputs), want)
    return program


# ============================================================== two segments, weights


def attention_block(ir: BufferIR, x: str, *, q_heads: int = 4, kv_heads: int = 2, causal: bool = True) -> str:
    """GQA self-attention on npu values x[1, 8, 16]: projections, heads, sdpa, output proj."""
    head = 4
    q = ir.exec("npu", "linear", [x, ir.weight("wq", f"{q_heads * head}x16xf32")], f"1x8x{q_heads * head}xf32")
    k = ir.exec("npu", "linear", [x, ir.weight("wk", f"{kv_heads * head}x16xf32")], f"1x8x{kv_heads * head}xf32")
    v = ir.exec("npu", "linear", [x, ir.weight("wv", f"{kv_heads * head}x16xf32")], f"1x8x{kv_heads * head}xf32")
    heads = []
    for t, h in ((q, q_heads), (k, kv_heads), (v, kv_heads)):
        r = ir.exec("npu", "reshape", [t], f"1x8x{h}x{head}xf32")
        heads.append(ir.exec("npu", "transpose", [r], f"1x{h}x8x{head}xf32", "{perm = [0, 2, 1, 3]}"))
    flags = "{is_causal = true}" if causal else ""
    att = ir.exec("npu", "sdpa", heads, f"1x{q_heads}x8x{head}xf32", flags)
    att = ir.exec("npu", "transpose", [att], f"1x8x{q_heads}x{head}xf32", "{perm = [0, 2, 1, 3]}")
    att = ir.exec("npu", "reshape", [att], f"1x8x{q_heads * head}xf32")
    return ir.exec("npu", "linear", [att, ir.weight("wo", f"16x{q_heads * head}xf32")], "1x8x16xf32")


def two_segment_ir() -> BufferIR:
    """seg 0: attention + a square linear; cpu: layer_norm; seg 1: the same linear + gelu."""
    ir = BufferIR("1x8x16xf32")
    x = ir.transfer(ir.input(0), "npu")
    a = attention_block(ir, x)
    w_sq = ir.weight("w_sq", "16x16xf32")
    h = ir.exec("npu", "linear", [a, w_sq, ir.weight("b_sq", "16xf32")], "1x8x16xf32")
    h = ir.exec("npu", "binary", [h, x], "1x8x16xf32", "{kind = add}")
    hc = ir.transfer(h, "cpu")
    n = ir.exec(
        "cpu",
        "layer_norm",
        [hc, ir.weight("ln_w", "16xf32"), ir.weight("ln_b", "16xf32")],
        "1x8x16xf32",
        "{axis = 2, eps = 1.0e-05}",
    )
    y = ir.exec("npu", "linear", [ir.transfer(n, "npu"), w_sq], "1x8x16xf32", "{activation = gelu}")
    ir.ret(ir.transfer(y, "cpu"))
    return ir


def random_weights(module: ModuleOp, seed: int = 0) -> WeightStore:
    """A WeightStore with a seeded random tensor for every buffer.weight of `module`."""
    from dialects import buffer as B
    from dialects.torch_types import dtype_of, shape_of

    store = WeightStore()
    g = torch.Generator().manual_seed(seed)
    for op in module.walk():
        if isinstance(op, B.WeightOp) and op.weight_name.data not in store:
            t = op.result.type
            store.add(op.weight_name.data, (torch.randn(shape_of(t), generator=g) * 0.3).to(dtype_of(t)))
    return store


def test_two_segments_with_a_cpu_op_between(rt):
    module = two_segment_ir().module()
    weights = random_weights(module)
    x = random_input("1x8x16xf32", 1)
    program = check_program(module, weights, [x], rt)
    kinds = [type(s).__name__ for s in program.steps]
    assert kinds == [
        "TransferStep", "SegmentStep", "TransferStep", "CpuStep", "TransferStep", "SegmentStep", "TransferStep"
    ]
    seg0, seg1 = program.segments
    assert seg0.stats.ops == 15 and seg1.stats.ops == 1
    assert seg0.stats.kinds["linear"] == 5 and seg0.stats.kinds["sdpa"] == 1
    # Inputs: the transferred x (segment 0), the transferred norm (segment 1); one output each.
    assert [r.source for r in seg0.inputs] == ["buffer"] and len(seg0.outputs) == 1
    assert [r.source for r in seg1.inputs] == ["buffer"] and len(seg1.outputs) == 1
    (cpu,) = program.cpu_steps()
    assert cpu.kind == "layer_norm" and [r.source for r in cpu.ins] == ["buffer", "weight", "weight"]
    for seg in program.segments:
        assert seg.stats.build_ms > 0 and seg.stats.compile_ms > 0
    assert program.emit_ms >= program.build_ms + program.compile_ms


def test_weights_become_constants_of_every_segment_that_reads_them(rt):
    module = two_segment_ir().module()
    weights = random_weights(module)
    program = emit(module, weights, runtime=rt)
    seg0, seg1 = program.segments
    assert set(seg0.weights) == {"wq", "wk", "wv", "wo", "w_sq", "b_sq"}
    assert seg1.weights == ("w_sq",)
    # Weights are graph constants, never parameters: one parameter per segment (the activation).
    assert seg0.graph.input_specs[0].shape == (1, 8, 16) and len(seg0.graph.input_specs) == 1
    assert seg0.stats.constants == 6 and seg1.stats.constants == 1
    assert seg1.stats.constant_bytes == 16 * 16 * 4
    # A weight read by two segments is embedded in each, and the program says so.
    assert program.shared_weights == {"w_sq": (0, 1)}
    assert "w_sq [0, 1]" in program.summary()


@pytest.mark.parametrize("also_elementwise", [False, True], ids=["matmul-only", "also-elementwise"])
def test_a_weight_stored_transposed_is_embedded_in_its_own_layout(rt, also_elementwise):
    """The layout pass stores GPT-2's Conv1D weights as transposed views. A segment that reads
    such a weight only as a matmul-like weight gets the contiguous base (shared, not copied)
    with the transpose flag flipped; any other use gets a contiguous copy."""
    ir = BufferIR("2x3x8xf32", "8x6xf32")
    x, y = ir.transfer(ir.input(0), "npu"), ir.transfer(ir.input(1), "npu")
    w = ir.weight("w_t", "6x8xf32")
    h = ir.exec("npu", "linear", [x, w], "2x3x6xf32")
    m = ir.exec("npu", "matmul", [w, y], "6x6xf32")
    outs = [h, m]
    if also_elementwise:
        outs.append(ir.exec("npu", "unary", [w], "6x8xf32", "{kind = neg}"))
    ir.ret(*[ir.transfer(o, "cpu") for o in outs])
    module = ir.module()
    base = torch.randn(8, 6)
    weights = WeightStore()
    weights.add("w_t", base.t())
    assert not weights["w_t"].is_contiguous()
    program = check_program(module, weights, [random_input("2x3x8xf32", 1), random_input("8x6xf32", 2)], rt)
    (seg,) = program.segments
    stats = seg.stats
    assert stats.constants == 1 and stats.ops == (3 if also_elementwise else 2)
    assert stats.relayout_bytes == (6 * 8 * 4 if also_elementwise else 0)


@pytest.mark.parametrize(
    "q_heads,kv_heads,causal",
    [(4, 2, True), (4, 1, False), (4, 4, True)],
    ids=["gqa2-causal", "mqa", "mha-causal"],
)
def test_gqa_sdpa(rt, q_heads, kv_heads, causal):
    ir = BufferIR("1x8x16xf32")
    x = ir.transfer(ir.input(0), "npu")
    ir.ret(ir.transfer(attention_block(ir, x, q_heads=q_heads, kv_heads=kv_heads, causal=causal), "cpu"))
    module = ir.module()
    weights = random_weights(module, seed=3)
    program = check_program(module, weights, [random_input("1x8x16xf32", 4)], rt)
    assert program.segments[0].stats.kinds["sdpa"] == 1


def test_sdpa_with_boolean_mask_from_a_cpu_comparison(rt):
    """A keep-mask built on the cpu (integer compare), transferred as i1 and used by sdpa."""
    ir = BufferIR("1x2x6x4xf32", "1x1x6x6xi64")
    q = ir.transfer(ir.input(0), "npu")
    pos = ir.input(1)
    limit = ir.constant("dense<2>", "i64")
    keep = ir.exec("cpu", "compare", [pos, limit], "1x1x6x6xi1", "{kind = le}")
    keep = ir.transfer(keep, "npu")
    att = ir.exec("npu", "sdpa", [q, q, q, keep], "1x2x6x4xf32", "{scale = 0.25}")
    also = ir.exec("npu", "unary", [keep], "1x1x6x6xi1", "{kind = not}")
    ir.ret(ir.transfer(att, "cpu"), ir.transfer(also, "cpu"))
    pos = torch.randint(0, 4, (1, 1, 6, 6))
    pos[..., 0] = 0  # every query keeps at least one key
    check_program(ir.module(), None, [random_input("1x2x6x4xf32", 5), pos], rt)


def test_i1_values_cross_segment_boundaries_in_the_carrier_dtype(rt):
    ir = BufferIR("2x5xf32", "2x5xf32")
    a, b = ir.transfer(ir.input(0), "npu"), ir.transfer(ir.input(1), "npu")
    gt = ir.exec("npu", "compare", [a, b], "2x5xi1", "{kind = gt}")
    gt_cpu = ir.transfer(gt, "cpu")
    flipped = ir.exec("cpu", "unary", [gt_cpu], "2x5xi1", "{kind = not}")
    back = ir.transfer(flipped, "npu")
    both = ir.exec("npu", "binary", [gt, back], "2x5xi1", "{kind = or}")
    picked = ir.exec("npu", "select", [back, a, b], "2x5xf32")
    ir.ret(ir.transfer(both, "cpu"), ir.transfer(picked, "cpu"), gt_cpu)
    program = check_program(ir.module(), None, [random_input("2x5xf32", 6), random_input("2x5xf32", 7)], rt)
    carrier = bool_carrier(rt)
    seg0, seg1 = program.segments
    assert seg0.output_dtypes == (carrier,)
    assert carrier in seg1.input_dtypes
    assert carrier == (np.bool_ if rt.name == "openvino" else np.int8)


def test_a_segment_output_sharing_a_buffer_with_its_input_is_staged(rt):
    """Buffer reuse inside a segment: %y overwrites the buffer %x came in (x is dead after
    its last read), and %y is read after the segment. The graph must not write the buffer
    while it still reads %x, so the output is staged and copied after the run."""
    ir = BufferIR("4x8xf32")
    x = ir.transfer(ir.input(0), "npu")
    buf_x = [b for b in ir.buffers][-1]
    h = ir.exec("npu", "unary", [x], "4x8xf32", "{kind = exp}")
    y = ir.exec("npu", "binary", [h, x], "4x8xf32", "{kind = mul}", into=buf_x)
    ir.ret(ir.transfer(y, "cpu"))
    program = check_program(ir.module(), None, [random_input("4x8xf32", 8)], rt)
    (seg,) = program.segments
    assert seg.staged == (True,)
    assert seg.inputs[0].key == seg.outputs[0].key


# ======================================================================= every npu kind


def _unary(kind: str, gen: str = "normal"):
    return (f"unary-{kind}", "unary", f"{{kind = {kind}}}", ["2x3xf32"], "2x3xf32", [gen])


KIND_CASES = [
    ("matmul", "matmul", "", ["2x3x4xf32", "4x5xf32"], "2x3x5xf32", None),
    ("matmul-transposed", "matmul", "{transpose_a = true, transpose_b = true}", ["2x4x3xf32", "1x5x4xf32"], "2x3x5xf32",
     None),
    ("linear", "linear", "", ["2x3x8xf32", "6x8xf32", "6xf32"], "2x3x6xf32", None),
    ("linear-kn-gelu", "linear", "{activation = gelu, transpose_w = false}", ["3x8xf32", "8x6xf32", "6xf32"], "3x6xf32",
     None),
    ("linear-gelu_tanh", "linear", "{activation = gelu_tanh}", ["3x8xf32", "6x8xf32"], "3x6xf32", None),
    ("linear-relu", "linear", "{activation = relu}", ["3x8xf32", "6x8xf32"], "3x6xf32", None),
    ("linear-silu", "linear", "{activation = silu}", ["3x8xf32", "6x8xf32", "6xf32"], "3x6xf32", None),
    ("linear-sigmoid", "linear", "{activation = sigmoid}", ["3x8xf32", "6x8xf32"], "3x6xf32", None),
    ("gated_mlp", "gated_mlp", "", ["1x3x8xf32", "6x8xf32", "6x8xf32"], "1x3x6xf32", None),
    ("gated_mlp-kn-gelu", "gated_mlp", "{activation = gelu, transpose_w = false}", ["3x8xf32", "8x6xf32", "8x6xf32"],
     "3x6xf32", None),
    ("sdpa-gqa-causal", "sdpa", "{is_causal = true}", ["1x4x5x8xf32", "1x2x5x8xf32", "1x2x5x8xf32"], "1x4x5x8xf32",
     None),
    ("sdpa-float-mask-scale", "sdpa", "{scale = 0.3}",
     ["1x2x5x8xf32", "1x2x6x8xf32", "1x2x6x8xf32", "1x1x5x6xf32"], "1x2x5x8xf32", None),
    ("cached_sdpa-gqa-float-mask", "cached_sdpa", "{scale = 0.3}",
     ["1x4x2x8xf32", "1x2x6x8xf32", "1x2x6x8xf32", "2xi64", "1x2x2x8xf32", "1x2x2x8xf32", "1x1x2x6xf32"],
     "1x4x2x8xf32", ["normal", "normal", "normal", "index6", "normal", "normal", "normal"]),
    ("cached_sdpa-no-mask-repeated-index", "cached_sdpa", "",
     ["2x3x3x8xf32", "2x3x5x8xf32", "2x3x5x8xf32", "3xi64", "2x3x3x8xf32", "2x3x3x8xf32"],
     "2x3x3x8xf32", ["normal", "normal", "normal", "index2", "normal", "normal"]),
    ("cached_sdpa-decode-step", "cached_sdpa", "{scale = 0.3}",  # one query row per head: products and sums
     ["1x2x1x8xf32", "1x2x6x8xf32", "1x2x6x8xf32", "1xi64", "1x2x1x8xf32", "1x2x1x8xf32", "1x1x1x6xf32"],
     "1x2x1x8xf32", ["normal", "normal", "normal", "index6", "normal", "normal", "normal"]),
    ("cached_sdpa-keep-mask", "cached_sdpa", "",
     ["1x2x3x4xf32", "1x2x6x4xf32", "1x2x6x4xf32", "1xi64", "1x2x1x4xf32", "1x2x1x4xf32", "1x1x3x6xi1"],
     "1x2x3x4xf32", ["normal", "normal", "normal", "index6", "normal", "normal", "keep"]),
    ("softmax", "softmax", "{axis = 1}", ["2x5x3xf32"], "2x5x3xf32", None),
    ("layer_norm", "layer_norm", "{axis = 2, eps = 1.0e-05}", ["2x3x8xf32", "8xf32", "8xf32"], "2x3x8xf32", None),
    ("layer_norm-2-axes", "layer_norm", "{axis = 1, eps = 1.0e-05}", ["2x3x8xf32", "3x8xf32"], "2x3x8xf32", None),
    ("layer_norm-plain", "layer_norm", "{axis = 1, eps = 1.0e-03}", ["2x8xf32"], "2x8xf32", None),
    ("rms_norm", "rms_norm", "{axis = 2, eps = 1.0e-06}", ["2x3x8xf32", "8xf32"], "2x3x8xf32", None),
    ("rms_norm-plain", "rms_norm", "{axis = 1, eps = 1.0e-06}", ["2x8xf32"], "2x8xf32", None),
    *[_unary(k)
      for k in ("neg", "exp", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "sin", "cos", "abs", "erf",
                "log1p")],
    *[_unary(k, "positive") for k in ("log", "sqrt", "rsqrt", "reciprocal")],
    ("unary-not", "unary", "{kind = not}", ["2x3xi1"], "2x3xi1", None),
    *[(f"binary-{k}", "binary", f"{{kind = {k}}}", ["2x3xf32", "3xf32"], "2x3xf32", None)
      for k in ("add", "sub", "mul", "div", "max", "min")],
    ("binary-pow", "binary", "{kind = pow}", ["2x3xf32", "3xf32"], "2x3xf32", ["positive", "normal"]),
    *[(f"binary-{k}-i1", "binary", f"{{kind = {k}}}", ["2x3xi1", "1x3xi1"], "2x3xi1", None)
      for k in ("and", "or", "max", "min")],
    *[(f"compare-{k}", "compare", f"{{kind = {k}}}", ["2x3xf32", "1x3xf32"], "2x3xi1", ["ints", "ints"])
      for k in ("eq", "ne", "lt", "le", "gt", "ge")],
    ("compare-eq-i1", "compare", "{kind = eq}", ["2x3xi1", "2x3xi1"], "2x3xi1", None),
    ("select", "select", "", ["2x3xi1", "2x3xf32", "3xf32"], "2x3xf32", None),
    ("select-i1", "select", "", ["2x3xi1", "2x3xi1", "1x3xi1"], "2x3xi1", None),
    *[(f"reduce-{k}", "reduce", f"{{kind = {k}, axes = [0, 2]}}", ["2x3x4xf32"], "3xf32", None)
      for k in ("sum", "mean", "max", "min")],
    ("reduce-keepdims", "reduce", "{kind = max, axes = [1], keepdims = true}", ["2x3x4xf32"], "2x1x4xf32", None),
    ("reshape", "reshape", "", ["2x3x4xf32"], "6x4xf32", None),
    ("transpose", "transpose", "{perm = [2, 0, 1]}", ["2x3x4xf32"], "4x2x3xf32", None),
    ("broadcast", "broadcast", "", ["3x1xf32"], "2x3x4xf32", None),
    ("slice", "slice", "{starts = [0, 1], ends = [2, 7], steps = [1, 2]}", ["2x8xf32"], "2x3xf32", None),
    ("concat", "concat", "{axis = 1}", ["2x1xf32", "2x3xf32", "2x2xf32"], "2x6xf32", None),
    ("concat-i1", "concat", "{axis = 0}", ["1x3xi1", "2x3xi1"], "3x3xi1", None),
    ("gather-negative-indices", "gather", "{axis = 1}", ["3x5x2xf32", "2x2xi64"], "3x2x2x2xf32", None),
    ("gather-embedding", "gather", "{axis = 0}", ["7x4xf32", "1x3xi64"], "1x3x4xf32", None),
    ("conv-transposed-1d", "conv",
     "{stride = [2], pads_begin = [1], pads_end = [0], dilation = [2], groups = 2, transposed = true, "
     "output_padding = [1]}", ["1x4x5xf32", "4x3x3xf32", "6xf32"], "1x6x13xf32", None),
    ("conv-depthwise", "conv",
     "{stride = [1, 2], pads_begin = [1, 1], pads_end = [1, 1], dilation = [1, 1], groups = 3}",
     ["2x3x5x6xf32", "3x1x3x3xf32"], "2x3x5x3xf32", None),
    ("pad-crop", "pad", "{pads_begin = [0, 2, -1], pads_end = [1, -1, 0], value = -1.5}", ["2x3x4xf32"], "3x4x3xf32",
     None),
    ("pool-max-dilated-1d-unbatched", "pool",
     '{kind = "max", kernel = [2], strides = [1], pads_begin = [1], pads_end = [0], dilations = [2]}',
     ["3x9xf32"], "3x8xf32", None),
    ("pool-avg-ceil-exclude-pad", "pool",
     '{kind = "avg", kernel = [3, 3], strides = [2, 2], pads_begin = [1, 1], pads_end = [1, 1], ceil_mode = true, '
     'count_include_pad = false}',
     ["1x2x8x7xf32"], "1x2x5x4xf32", None),
    ("pool-avg-asymmetric", "pool",
     '{kind = "avg", kernel = [2, 3], strides = [1, 2], pads_begin = [0, 1], pads_end = [1, 0]}',
     ["2x2x5x6xf32"], "2x2x5x3xf32", None),
    ("resize-nearest", "resize", '{mode = "nearest"}', ["1x2x3x4xf32"], "1x2x7x5xf32", None),
    ("resize-linear-1d", "resize", '{mode = "linear"}', ["2x3x5xf32"], "2x3x12xf32", None),
    ("gather_elements-negative-indices", "gather_elements", "{axis = 1}", ["3x5x2xf32", "2x3x2xi64"], "2x3x2xf32",
     None),
    ("gather_elements-last-axis-i32", "gather_elements", "{axis = 2}", ["2x3x6xf32", "2x3x4xi32"], "2x3x4xf32", None),
    ("gather_elements-i1", "gather_elements", "{axis = 0}", ["5x3xi1", "2x3xi64"], "2x3xi1", None),
    ("topk-largest", "topk", "{k = 3, axis = 1}", ["4x7xf32"], "4x3xi64", None),
    ("topk-smallest-axis0-i32", "topk", "{k = 2, axis = 0, largest = false}", ["5x3xf32"], "2x3xi32", None),
    ("reshape-i64", "reshape", "", ["2x3xi64"], "6xi64", None),
    ("transpose-i32", "transpose", "{perm = [1, 0]}", ["2x3xi32"], "3x2xi32", None),
    ("convert-i1-i64", "convert", "", ["2x3xi1"], "2x3xi64", None),
    ("convert-f32-i64", "convert", "", ["2x3xf32"], "2x3xi64", None),
    ("convert-i1-f32", "convert", "", ["2x3xi1"], "2x3xf32", None),
    ("convert-f32-i1", "convert", "", ["2x3xf32"], "2x3xi1", ["ints"]),
]


def single_op_ir(device: str, kind: str, params: str, in_types: Sequence[str], out_type: str) -> BufferIR:
    """Inputs arrive on the cpu, move to `device`, one exec, the result comes back."""
    ir = BufferIR(*in_types)
    ins = [ir.input(i) for i in range(len(in_types))]
    if device == "npu":
        ins = [ir.transfer(v, "npu") for v in ins]
    out = ir.exec(device, kind, ins, out_type, params)
    ir.ret(ir.transfer(out, "cpu") if device == "npu" else out)
    return ir


def case_inputs(in_types: Sequence[str], gens: Sequence[str] | None, seed: int = 0) -> list[torch.Tensor]:
    gens = gens or ["normal"] * len(in_types)
    return [random_input(t, seed + 11 * i, g) for i, (t, g) in enumerate(zip(in_types, gens, strict=True))]


@pytest.mark.parametrize("case", KIND_CASES, ids=[c[0] for c in KIND_CASES])
def test_every_npu_kind_matches_the_interpreter(rt, case):
    _, kind, params, in_types, out_type, gens = case
    module = single_op_ir("npu", kind, params, in_types, out_type).module()
    program = check_program(module, None, case_inputs(in_types, gens), rt)
    assert [s.stats.ops for s in program.segments] == [1]


def test_the_cases_cover_every_npu_kind():
    assert {c[1] for c in KIND_CASES} == set(npu_kinds())
    assert npu_kinds() == NPU_KINDS, "the emitter and the affinity policy disagree on npu kinds"


# ============================================================================== errors


@pytest.mark.parametrize(
    "kind,params,in_types,out_type,reason",
    [
        ("cumsum", "{axis = 1}", ["2x3xf32"], "2x3xf32", "the npu has no 'cumsum' op"),
        ("binary", "{kind = div}", ["2x3xi64", "2x3xi64"], "2x3xi64", "integer division"),
        ("binary", "{kind = and}", ["2x3xi64", "2x3xi64"], "2x3xi64", "bitwise and"),
    ],
)
def test_a_kind_the_runtime_cannot_express_is_an_error_naming_the_op(kind, params, in_types, out_type, reason):
    module = single_op_ir("npu", kind, params, in_types, out_type).module()
    with pytest.raises(EmitError) as err:
        emit(module, None)
    message = str(err.value)
    assert f"buffer.exec npu {kind} (%{kind.replace('_', '')}" in message
    assert reason in message and "affinity policy should place it on the cpu" in message


def test_a_missing_weight_is_an_error_naming_it():
    module = two_segment_ir().module()
    weights = WeightStore()
    for name, tensor in random_weights(module).items():
        if name != "wq":
            weights.add(name, tensor)
    with pytest.raises(EmitError, match=r'weight "wq" \(%w\d+\) is not in the WeightStore'):
        emit(module, weights)


def test_emit_uses_the_weights_attached_to_the_module():
    module = two_segment_ir().module()
    weights = random_weights(module)
    attach_weights(module, weights)
    program = emit(module)
    assert program.weights is weights


def test_a_weight_with_the_wrong_shape_is_an_error():
    module = two_segment_ir().module()
    weights = WeightStore()
    weights.add("wq", torch.zeros(3, 3))
    for name, tensor in random_weights(module).items():
        if name != "wq":
            weights.add(name, tensor)
    with pytest.raises(
        EmitError, match=r'weight "wq" is torch.float32\[3, 3\] but the IR reads it as torch.float32\[16, 16\]'
    ):
        emit(module, weights)


# ============================================================================ analysis


def test_analysis_splits_at_cpu_ops_and_transfers_only():
    ir = BufferIR("4xf32")
    x = ir.transfer(ir.input(0), "npu")
    a = ir.exec("npu", "unary", [x], "4xf32", "{kind = exp}")
    ir.weight("unused", "4xf32")  # declarations do not end a segment
    ir.constant("dense<1.0>", "4xf32")
    b = ir.exec("npu", "unary", [a], "4xf32", "{kind = neg}")
    ir.ret(ir.transfer(b, "cpu"), ir.transfer(a, "cpu"))
    analysis = analyze(ir.module())
    (seg,) = analysis.segments
    assert len(seg.ops) == 2 and len(seg.params) == 1
    assert [v.name_hint for v in seg.results] == [a[1:], b[1:]]  # both read after the segment
    assert [type(i).__name__ for i in analysis.items] == ["TransferStep", "SegmentPlan", "TransferStep", "TransferStep"]


def test_value_names_are_unique_like_the_printer():
    ir = BufferIR("4xf32")
    x = ir.transfer(ir.input(0), "npu")
    a = ir.exec("npu", "unary", [x], "4xf32", "{kind = exp}")
    b = ir.exec("npu", "unary", [a], "4xf32", "{kind = neg}")
    ir.ret(ir.transfer(b, "cpu"))
    module = ir.module()
    analysis = analyze(module)
    ops = analysis.segments[0].ops
    for op in ops:  # the lowering creates values with equal hints (the printer adds _1, _2)
        op.result.name_hint = "u"
    names = [analyze(module).refs[op.result].name for op in ops]
    assert names == ["u", "u_1"]


def test_stats_are_json_ready():
    module = two_segment_ir().module()
    program = emit(module, random_weights(module))
    stats = json.loads(json.dumps(program.stats()))
    assert stats["segments"] == 2 and stats["cpu_ops"] == 1 and stats["transfers"] == 4
    assert [s["ops"] for s in stats["per_segment"]] == [15, 1]
    assert stats["emit_ms"] > 0 and all(s["compile_ms"] > 0 for s in stats["per_segment"])
    summary = program.summary()
    assert "segment 0: 15 ops" in summary and "cpu layer_norm(" in summary


def test_step_types_are_exported():
    module = two_segment_ir().module()
    program = emit(module, random_weights(module))
    assert {type(s) for s in program.steps} == {SegmentStep, CpuStep, TransferStep}


# ====================================================================== standalone program


def run_standalone(path, inputs: Sequence[torch.Tensor], tmp_path) -> list[torch.Tensor]:
    """`python path --inputs x.npz --out y.npz` in a subprocess; the outputs it wrote."""
    import subprocess
    import sys

    x = tmp_path / "inputs.npz"
    y = tmp_path / "outputs.npz"
    np.savez(x, *[t.numpy() for t in inputs])
    proc = subprocess.run(
        [sys.executable, str(path), "--inputs", str(x), "--out", str(y)],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "built and compiled" in proc.stdout and "wrote" in proc.stdout
    with np.load(y) as out:
        return [torch.from_numpy(out[f"output_{i}"]) for i in range(len(out.files))]


def i1_crossing_ir() -> BufferIR:
    ir = BufferIR("2x5xf32", "2x5xf32")
    a, b = ir.transfer(ir.input(0), "npu"), ir.transfer(ir.input(1), "npu")
    gt = ir.exec("npu", "compare", [a, b], "2x5xi1", "{kind = gt}")
    flipped = ir.exec("cpu", "unary", [ir.transfer(gt, "cpu")], "2x5xi1", "{kind = not}")
    picked = ir.exec("npu", "select", [ir.transfer(flipped, "npu"), a, ir.constant("dense<0.5>", "2x5xf32")], "2x5xf32")
    ir.ret(ir.transfer(picked, "cpu"), flipped)
    return ir


@pytest.mark.parametrize("which", ["two-segments", "i1-crossing"])
def test_standalone_program_reproduces_the_executor(rt, which, tmp_path):
    from backends.nnfactory.pyemit import emit_python

    if which == "two-segments":
        module = two_segment_ir().module()
        weights = random_weights(module)
        inputs = [random_input("1x8x16xf32", 1)]
    else:
        module, weights = i1_crossing_ir().module(), None
        inputs = [random_input("2x5xf32", 2), random_input("2x5xf32", 3)]
    path = emit_python(module, weights, tmp_path / "prog.py", runtime=rt.name)
    assert path == tmp_path / "prog.py" and (tmp_path / "prog.safetensors").exists()
    text = path.read_text()
    compile(text, str(path), "exec")
    assert text.count("\ndef segment_") == 2
    if rt.name == "nnfactory":  # Intel's own calls, compositions expanded
        assert "f = NNFactory(" in text and "compile_factory(f)" in text and "g.builder" not in text
    else:
        assert "g = rt.builder()" in text
    want = emit(module, weights, runtime=rt)(*inputs)
    assert_same(run_standalone(path, inputs, tmp_path), want, tol=1e-6)


def test_standalone_program_runs_on_random_inputs(tmp_path):
    import subprocess
    import sys

    from backends.nnfactory.pyemit import emit_python

    module = two_segment_ir().module()
    path = emit_python(module, random_weights(module), tmp_path / "prog.py")
    proc = subprocess.run([sys.executable, str(path), "--seed", "1"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "output_0 %t30: float32[1, 8, 16] mean" in proc.stdout


def test_package_exports():
    import backends.nnfactory as nnf
    from backends.nnfactory.executor import CompiledNPUExecutor
    from backends.nnfactory.pyemit import emit_python

    assert nnf.emit is emit and nnf.emit_python is emit_python
    assert nnf.CompiledNPUExecutor is CompiledNPUExecutor
    with pytest.raises(AttributeError):
        nnf.no_such_name  # noqa: B018
