"""CompiledNPUExecutor (backends/nnfactory/executor.py): CPU kernels, buffer binding, the
no-allocation guarantee, and parity with eager torch on the zoo models.

Allocation is measured, not assumed: torch's profiler with `profile_memory=True` attributes
every CPU allocation to the op that made it (temporaries freed again inside the call too), and
tracemalloc's numpy domain records every numpy array buffer. A run of a program whose CPU ops
are allocation-free kinds may allocate exactly its output copies.
"""

from __future__ import annotations

import functools
import tracemalloc
from collections.abc import Callable, Sequence

import numpy as np
import pytest
import torch
from torch.profiler import ProfilerActivity, profile
from xdsl.context import Context

from backends.nnfactory.emitter import emit
from backends.nnfactory.executor import CompiledNPUExecutor, ExecutorInputError, RunCpu, RunSegment, Transfer
from forge.interpreter import interpret
from forge.pass_runner import PipelineRunner
from forge.pipelines import CHECKED_LOWERING_PIPELINE, DEFAULT_PIPELINE
from forge.testing.check import working_copy
from forge.transforms import PASSES
from lowering import PASSES as LOWERING_PASSES
from tests.backends.test_emitter import (
    KIND_CASES,
    RUNTIMES,
    BufferIR,
    assert_same,
    case_inputs,
    random_input,
    random_weights,
    runtime_or_skip,
    single_op_ir,
    two_segment_ir,
)
from tests.conftest import ZOO_CASES, imported_small_model

# ======================================================================== measurement


def measure(fn: Callable[[], object]) -> tuple[object, list[tuple[str, int]], int]:
    """Run `fn` once; return (its result, torch allocations as (op, bytes), numpy bytes
    allocated and still held). Torch temporaries that are freed again are counted too."""
    flt = [tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]
    # numpy is traced inside the profiler only: its first start and stop in a process import numpy.random
    # (16 bytes held), which a test run alone (`-k`) counted against the first kernel measured
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot().filter_traces(flt)
            result = fn()
            after = tracemalloc.take_snapshot().filter_traces(flt)
        finally:
            tracemalloc.stop()
    numpy_bytes = sum(max(0, s.size_diff) for s in after.compare_to(before, "filename"))
    allocs = [(e.name, e.self_cpu_memory_usage) for e in prof.events() if e.self_cpu_memory_usage > 0]
    return result, allocs, numpy_bytes


def test_the_measurement_sees_torch_and_numpy_allocations():
    a = torch.randn(16, 16)
    _, allocs, _ = measure(lambda: torch.nn.functional.layer_norm(a, (16,)) + 0)
    assert sum(b for _, b in allocs) >= 2 * 16 * 16 * 4
    kept, _, numpy_bytes = measure(lambda: np.empty(1000))
    assert numpy_bytes >= 8000 and kept is not None


# ========================================================================= cpu kernels

CPU_CASES = [
    *KIND_CASES,
    ("cumsum", "cumsum", "{axis = 1}", ["2x5xf32"], "2x5xf32", None),
    ("cumsum-i64", "cumsum", "{axis = 0}", ["3x2xi64"], "3x2xi64", None),
    *[
        (f"binary-{k}-i64", "binary", f"{{kind = {k}}}", ["2x3xi64", "3xi64"], "2x3xi64", None)
        for k in ("add", "sub", "mul", "max", "and", "or")
    ],
    ("binary-div-i64-truncates", "binary", "{kind = div}", ["2x3xi64", "3xi64"], "2x3xi64", ["normal", "nonzero"]),
    *[(f"unary-{k}-i64", "unary", f"{{kind = {k}}}", ["2x3xi64"], "2x3xi64", None) for k in ("neg", "abs", "relu")],
    ("compare-le-i64", "compare", "{kind = le}", ["1x1x4x1xi64", "1x1x1x4xi64"], "1x1x4x4xi1", None),
    ("reduce-sum-i64", "reduce", "{kind = sum, axes = [1]}", ["2x3xi64"], "2xi64", None),
    ("reduce-no-axes", "reduce", "{kind = sum, axes = []}", ["2x3xf32"], "2x3xf32", None),
    ("transpose-2d", "transpose", "{perm = [1, 0]}", ["3x4xf32"], "4x3xf32", None),
    ("slice-2d", "slice", "{starts = [1, 0], ends = [3, 4], steps = [1, 1]}", ["3x4xf32"], "2x4xf32", None),
    ("gather-i64", "gather", "{axis = 0}", ["6xi64", "2x2xi64"], "2x2xi64", [None, "index6"]),
    (
        "aten-gather",
        "aten",
        '{op = "aten.gather", attrs = {dim = 1 : i64}}',
        ["2x5xf32", "2x3xi64"],
        "2x3xf32",
        [None, "index5"],
    ),
    (
        "sdpa-bool-mask",
        "sdpa",
        "",
        ["1x2x5x8xf32", "1x2x5x8xf32", "1x2x5x8xf32", "5x5xi1"],
        "1x2x5x8xf32",
        [None, None, None, "keep"],
    ),
]


def _inputs(in_types: Sequence[str], gens: Sequence[str | None] | None, seed: int = 0) -> list[torch.Tensor]:
    out = []
    for i, t in enumerate(in_types):
        gen = (gens or [None] * len(in_types))[i] or "normal"
        if gen.startswith("index"):
            shape = tuple(int(d) for d in t.split("x")[:-1])
            out.append(torch.randint(0, int(gen[5:]), shape, generator=torch.Generator().manual_seed(seed + i)))
        elif gen == "nonzero":
            x = random_input(t, seed + 11 * i)
            out.append(torch.where(x == 0, torch.ones_like(x), x))
        elif gen == "keep":
            x = random_input(t, seed + 11 * i)
            x[..., 0] = True
            out.append(x)
        else:
            out.append(case_inputs([t], [gen], seed + 11 * i)[0])
    return out


@functools.cache
def _cpu_program(case_id: str):
    case = next(c for c in CPU_CASES if c[0] == case_id)
    _, kind, params, in_types, out_type, gens = case
    module = single_op_ir("cpu", kind, params, in_types, out_type).module()
    program = emit(module, None)
    return module, program, _inputs(in_types, gens)


@pytest.mark.parametrize("case_id", [c[0] for c in CPU_CASES])
def test_cpu_kernels_match_the_interpreter(case_id):
    module, program, inputs = _cpu_program(case_id)
    assert not program.segments
    want = list(interpret(module, None, *inputs))
    ex = program.executor()
    assert_same(ex(*inputs), want)
    assert_same(ex(*inputs), want)


@pytest.mark.parametrize("case_id", [c[0] for c in CPU_CASES])
def test_allocation_free_cpu_kernels_allocate_nothing(case_id):
    _, program, inputs = _cpu_program(case_id)
    ex = program.executor()
    (instr,) = ex.instructions
    assert isinstance(instr, RunCpu)
    out = [torch.empty_like(ex.env[ex._output_slots[0]])]
    ex.run(*inputs, out=out)  # warm up (lazy torch initialisation)
    _, allocs, numpy_bytes = measure(lambda: ex.run(*inputs, out=out))
    if instr.allocation_free:
        assert allocs == [] and numpy_bytes == 0, f"{case_id} claims to be allocation-free: {allocs}"
    else:  # the reference path computes a temporary: the measurement shows it
        assert allocs, f"{case_id}: expected the temporary of the reference path"


def test_the_main_cpu_kinds_are_allocation_free():
    free = {c[0]: _cpu_program(c[0])[1].executor().instructions[0].allocation_free for c in CPU_CASES}
    allocating = {c for c, f in free.items() if not f}
    # the reference path (a temporary, copied into the view): norms, attention, mean, integer
    # sums (torch widens them), the aten fallback, convolutions, topk (a stable sort)
    assert allocating == {
        "layer_norm", "layer_norm-2-axes", "layer_norm-plain", "rms_norm", "rms_norm-plain",
        "sdpa-gqa-causal", "sdpa-float-mask-scale", "sdpa-bool-mask", "cached_sdpa-gqa-float-mask",
        "cached_sdpa-no-mask-repeated-index", "cached_sdpa-decode-step", "cached_sdpa-keep-mask", "reduce-mean",
        "reduce-sum-i64", "aten-gather", "topk-largest", "topk-smallest-axis0-i32",
        "conv-depthwise", "conv-transposed-1d",
        "pool-max-dilated-1d-unbatched", "pool-avg-ceil-exclude-pad", "pool-avg-asymmetric",
        "resize-nearest", "resize-linear-1d",
    }  # fmt: skip


# ============================================================================ buffers


def test_values_are_views_of_their_buffer_and_buffers_are_allocated_once():
    module = two_segment_ir().module()
    program = emit(module, random_weights(module))
    ex = program.executor()
    assert set(ex.buffers) == set(program.buffers)
    for bid, buf in ex.buffers.items():
        assert buf.numel() == program.buffers[bid].nbytes and buf.dtype == torch.uint8
    for ref, slot in ex._slots.items():
        if ref.source == "buffer":
            view = ex.env[slot]
            assert view.data_ptr() == ex.buffers[ref.key].data_ptr()
            assert tuple(view.shape) == ref.shape and view.dtype == ref.dtype
    for instr in ex.instructions:
        if isinstance(instr, RunSegment):
            pointers = {b.data_ptr() for b in ex.buffers.values()}
            for array in instr.input_buffers + instr.output_buffers:
                assert array.ctypes.data in pointers
    before = ex.buffer_pointers()
    x = random_input("1x8x16xf32", 1)
    ex(x)
    ex(x)
    assert ex.buffer_pointers() == before


ARENA_NPUIR = """
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<4x8xf32>
  %r = npuir.reduce npu %x0 {kind = sum, axes = [1], vreg = 1} : (tensor<4x8xf32>) -> tensor<4xf32>
  %y = npuir.broadcast npu %r {vreg = 2} : (tensor<4xf32>) -> tensor<4x4xf32>
  %z = npuir.unary npu %y {kind = exp, vreg = 3} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %z : tensor<4x4xf32>
}
"""


# Hand-placed: the segment's output %z lies in bytes [64, 128) of its input %xn (dead inside the
# segment, after %r): a valid plan, but the graph could write %z while still reading %xn.
ARENA_OVERLAP = """
func.func @forward(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
  %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128> in !buffer.arena<0, npu, 192>
  %b1 = buffer.alloc %arena0[128] : !buffer.buf<1, npu, 64> in !buffer.arena<0, npu, 192>
  %b2 = buffer.alloc %arena0[64] : !buffer.buf<2, npu, 64> in !buffer.arena<0, npu, 192>
  %x0 = buffer.input 0 : tensor<4x8xf32>
  %xn = buffer.transfer %x0 into %b0 : tensor<4x8xf32> in !buffer.buf<0, npu, 128>
  %r = buffer.exec npu reduce(%xn) into %b1 {kind = sum, axes = [1]}
    : (tensor<4x8xf32>) -> tensor<4xf32> in !buffer.buf<1, npu, 64>
  %y = buffer.exec npu broadcast(%r) into %b0 : (tensor<4xf32>) -> tensor<4x4xf32> in !buffer.buf<0, npu, 128>
  %z = buffer.exec npu unary(%y) into %b2 {kind = exp} : (tensor<4x4xf32>) -> tensor<4x4xf32> in !buffer.buf<2, npu, 64>
  func.return %z : tensor<4x4xf32>
}
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("case", ["planned", "hand-placed"])
def test_buffers_are_views_of_one_arena_and_overlapping_outputs_are_staged(runtime: str, case: str):
    """The executor allocates one tensor per arena and every buffer is a slice of it at its offset.
    The planner keeps a segment's inputs live to its end, so no output takes an input's bytes (no
    staging); in the hand-placed plan the output does and goes through a staging array. Results
    match the interpreter's (which simulates the same overlapping memory) and torch's."""
    from xdsl.parser import Parser

    from dialects import buffer as B
    from forge.driver.registry import make_context
    from lowering.check_allocation import check_allocation
    from lowering.npuir_to_buffer import LowerNpuirToBufferPass

    runtime_or_skip(runtime)
    module = Parser(make_context(), ARENA_NPUIR if case == "planned" else ARENA_OVERLAP).parse_module()
    if case == "planned":
        LowerNpuirToBufferPass().apply(make_context(), module)
    check_allocation(module)
    allocs = {op.buffer.type.buffer_id: op for op in module.walk() if isinstance(op, B.AllocOp)}
    assert all(op.arena is not None for op in allocs.values())
    program = emit(module, None, runtime=runtime)
    assert program.segments[0].staged == ((case == "hand-placed"),)
    ex = program.executor()
    (arena,) = ex.arenas.values()
    assert arena.numel() == B.planned_bytes(module) == program.planned_bytes
    (z,) = ex.direct  # bound to the call's tensor: its buffer is never filled nor written
    assert ex.untouched == {z.ref.key}
    alone = case == "planned"  # the hand-placed %z shares its bytes with %xn's buffer, which is used
    assert ex.planned_bytes == arena.numel() - (program.buffers[z.ref.key].nbytes if alone else 0)
    for bid, buf in ex.buffers.items():
        assert buf.data_ptr() == arena.data_ptr() + allocs[bid].byte_offset
        assert buf.data_ptr() % B.ALIGNMENT == 0
    x = random_input("4x8xf32", 3)
    assert_same(ex(x), list(interpret(module, None, x)))
    assert_same(ex(x), [torch.exp(x.sum(1).expand(4, 4))])


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_arena_bytes_only_a_direct_output_holds_are_never_filled_nor_written(runtime: str, monkeypatch):
    """The planned %z is returned (a direct output: each call binds its own tensor) and its arena bytes hold
    nothing else: the executor zero-fills the rest of the arena but leaves those bytes unwritten (fresh memory
    here is all-ones bytes, a NaN in every f32 lane, and stays so), and no call writes them (on GPT-2 the
    logits are 98% of the arena, never resident)."""
    from xdsl.parser import Parser

    from forge.driver.registry import make_context
    from lowering.npuir_to_buffer import LowerNpuirToBufferPass

    runtime_or_skip(runtime)
    module = Parser(make_context(), ARENA_NPUIR).parse_module()
    LowerNpuirToBufferPass().apply(make_context(), module)
    program = emit(module, None, runtime=runtime)
    empty = torch.empty
    with monkeypatch.context() as m:
        m.setattr(torch, "empty", lambda *a, **k: empty(*a, **k).fill_(0xFF if k.get("dtype") is torch.uint8 else 0))
        ex = program.executor()
    (arena,) = ex.arenas.values()
    (z,) = ex.direct
    start = ex.buffers[z.ref.key].data_ptr() - arena.data_ptr()
    end = start + program.buffers[z.ref.key].nbytes
    used = torch.cat([arena[:start], arena[end:]])
    assert used.numel() == ex.planned_bytes > 0 and not used.any()  # the bytes the calls use: zero-filled
    assert bool((arena[start:end] == 0xFF).all())  # never filled
    x = random_input("4x8xf32", 4)
    assert_same(ex(x), [torch.exp(x.sum(1).expand(4, 4))])
    assert_same(ex.run(x, out=[torch.empty(4, 4)]), [torch.exp(x.sum(1).expand(4, 4))])
    assert bool((arena[start:end] == 0xFF).all())


def test_one_buffer_holds_values_of_different_dtypes_over_time():
    """f32 values and an i1 value share buffer 1 at different times (same bytes)."""
    ir = BufferIR("2x4xf32")
    x = ir.transfer(ir.input(0), "npu")
    b = list(ir.buffers)[-1]
    y = ir.exec("npu", "unary", [x], "2x4xf32", "{kind = exp}")
    m = ir.exec("npu", "compare", [y, y], "2x4xi1", "{kind = ge}", into=b)  # x is dead
    s = ir.exec("npu", "select", [m, y, y], "2x4xf32")
    mc = ir.transfer(m, "cpu")
    z = ir.exec("cpu", "convert", [mc], "2x4xf32")
    ir.ret(ir.transfer(s, "cpu"), z)
    module = ir.module()
    inputs = [random_input("2x4xf32", 3)]
    program = emit(module, None)
    assert_same(program(*inputs), list(interpret(module, None, *inputs)))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_call_allocates_only_its_outputs(runtime):
    """Segments, transfers and allocation-free CPU ops: measured over several calls, the only
    allocations are the output copies (none with out=), and no numpy array is created."""
    rt = runtime_or_skip(runtime)
    ir = BufferIR("1x8x16xf32", "1x8xi64")
    x = ir.transfer(ir.input(0), "npu")
    h = ir.exec(
        "npu",
        "linear",
        [x, ir.weight("w1", "32x16xf32"), ir.weight("b1", "32xf32")],
        "1x8x32xf32",
        "{activation = gelu}",
    )
    hc = ir.transfer(h, "cpu")
    g = ir.exec("cpu", "gather", [ir.weight("emb", "10x32xf32"), ir.input(1)], "1x8x32xf32", "{axis = 0}")
    s = ir.exec("cpu", "binary", [hc, g], "1x8x32xf32", "{kind = add}")
    t = ir.exec("cpu", "softmax", [s], "1x8x32xf32", "{axis = 2}")
    tn = ir.transfer(t, "npu")
    y = ir.exec("npu", "linear", [tn, ir.weight("w2", "16x32xf32")], "1x8x16xf32")
    y = ir.exec("npu", "binary", [y, x], "1x8x16xf32", "{kind = add}")
    yc = ir.transfer(y, "cpu")
    z = ir.exec("cpu", "transpose", [yc], "1x16x8xf32", "{perm = [0, 2, 1]}")
    ir.ret(z, yc)
    module = ir.module()
    weights = random_weights(module)
    program = emit(module, weights, runtime=rt)
    assert len(program.segments) == 2 and len(program.cpu_steps()) == 4
    ex = program.executor()
    assert all(i.allocation_free for i in ex.instructions if isinstance(i, RunCpu))
    inputs = [random_input("1x8x16xf32", 4), torch.randint(-10, 10, (1, 8))]
    want = list(interpret(module, weights, *inputs))
    assert_same(ex(*inputs), want)  # warm up
    pointers = ex.buffer_pointers()
    out_bytes = sorted(int(w.numel() * w.element_size()) for w in want)
    for _ in range(3):
        got, allocs, numpy_bytes = measure(lambda: ex(*inputs))
        assert_same(got, want)
        assert sorted(b for _, b in allocs) == out_bytes, allocs
        assert numpy_bytes == 0
    out = [torch.empty_like(w) for w in want]
    got, allocs, numpy_bytes = measure(lambda: ex.run(*inputs, out=out))
    assert allocs == [] and numpy_bytes == 0
    assert_same(got, want)
    assert ex.buffer_pointers() == pointers


def test_the_allocation_check_can_fail():
    """The same measurement on a program with an allocating CPU op (layer_norm) fails."""
    ir = BufferIR("4x16xf32")
    n = ir.exec("cpu", "layer_norm", [ir.input(0)], "4x16xf32", "{axis = 1, eps = 1.0e-05}")
    ir.ret(n)
    ex = emit(ir.module(), None).executor()
    x = random_input("4x16xf32", 0)
    out = [torch.empty(4, 16)]
    ex.run(x, out=out)
    _, allocs, _ = measure(lambda: ex.run(x, out=out))
    assert sum(b for _, b in allocs) >= 4 * 16 * 4


# ============================================================================= calling


def test_inputs_are_checked():
    module = two_segment_ir().module()
    ex = emit(module, random_weights(module)).executor()
    with pytest.raises(ExecutorInputError, match="expected 1 inputs, got 0"):
        ex()
    with pytest.raises(
        ExecutorInputError,
        match=r"input 0 \(%arg0\): expected torch.float32\[1, 8, 16\], got torch.float64\[1, 8, 16\]",
    ):
        ex(torch.zeros(1, 8, 16, dtype=torch.float64))
    with pytest.raises(ExecutorInputError, match=r"got torch.float32\[8, 16\]"):
        ex(torch.zeros(8, 16))


def test_outputs_are_copies_and_numpy_inputs_work():
    module = two_segment_ir().module()
    ex = emit(module, random_weights(module)).executor()
    x = random_input("1x8x16xf32", 9)
    first = ex(x)[0]
    keep = first.clone()
    first.zero_()
    torch.testing.assert_close(ex(x.numpy())[0], keep, rtol=0, atol=0)
    assert "segment 0(" in ex.describe() and "cpu layer_norm(" in ex.describe()
    kinds = [type(i) for i in ex.instructions]
    assert kinds == [Transfer, RunSegment, Transfer, RunCpu, Transfer, RunSegment, Transfer]
    assert isinstance(ex, CompiledNPUExecutor)


def test_a_non_contiguous_input_is_read_correctly():
    ir = BufferIR("4x6xf32")
    ir.ret(ir.transfer(ir.exec("npu", "unary", [ir.transfer(ir.input(0), "npu")], "4x6xf32", "{kind = neg}"), "cpu"))
    program = emit(ir.module(), None)
    x = torch.randn(6, 4).t()
    torch.testing.assert_close(program(x)[0], -x)


# ============================================================================ zoo parity

MAX_ABS = 2.1e-5
MAX_KL = 8.4e-9


@functools.cache
def lowered_small_model(name: str, attn: str, policy: str):
    """A small zoo model after DEFAULT_PIPELINE and the lowering (buffer IR), its weights,
    inputs and eager output. `policy` is `default`, `pinned` or `cpu-only`."""
    imported, inputs, expected = imported_small_model(name, attn)
    module, weights = working_copy(imported.module, imported.weights)
    options = {
        "default": {},
        "pinned": {"cpu_ops": ("gather", "layer_norm", "rms_norm", "softmax"), "pin_final_norm": True},
        "cpu-only": {"policy": "cpu-only"},
    }[policy]
    passes = [PASSES[n]()() for n in DEFAULT_PIPELINE]
    for n in CHECKED_LOWERING_PIPELINE:
        cls = LOWERING_PASSES[n]()
        passes.append(cls(**options) if n == "lower-aten-to-npuir" else cls())
    runner = PipelineRunner(Context(), passes, names=[*DEFAULT_PIPELINE, *CHECKED_LOWERING_PIPELINE])
    runner.run(module)
    return module, weights, inputs, expected


def parity(got: torch.Tensor, expected: torch.Tensor) -> tuple[float, float]:
    """(max |diff|, mean KL(softmax(expected) || softmax(got)) over the last dim)."""
    diff = (got - expected).abs().max().item()
    p = torch.log_softmax(expected.double(), -1)
    q = torch.log_softmax(got.double(), -1)
    kl = (p.exp() * (p - q)).sum(-1).mean().item()
    return diff, kl


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_models_match_eager(name, attn, runtime):
    rt = runtime_or_skip(runtime)
    module, weights, inputs, expected = lowered_small_model(name, attn, "default")
    program = emit(module, weights, runtime=rt)
    assert program.segments and all(s.stats.compile_ms > 0 for s in program.segments)
    (got,) = program(*inputs)
    diff, kl = parity(got, expected)
    assert diff <= MAX_ABS and kl <= MAX_KL, f"{name}-{attn} on {runtime}: max|diff| {diff:.3g}, KL {kl:.3g}"


@pytest.mark.parametrize("policy", ["pinned", "cpu-only"])
@pytest.mark.parametrize(
    "name,attn", [("gpt2", "eager"), ("llama", "sdpa"), ("bert", "sdpa")], ids=["gpt2-eager", "llama-sdpa", "bert-sdpa"]
)
def test_zoo_models_with_cpu_ops_between_segments(name, attn, policy):
    """Pinned ops make many segments with CPU kernels between them; cpu-only has none."""
    module, weights, inputs, expected = lowered_small_model(name, attn, policy)
    program = emit(module, weights)
    if policy == "pinned":
        assert len(program.segments) >= 3 and program.cpu_steps()
    else:
        assert not program.segments
    (got,) = program(*inputs)
    diff, kl = parity(got, expected)
    assert diff <= MAX_ABS and kl <= MAX_KL, f"{name}-{attn} ({policy}): max|diff| {diff:.3g}, KL {kl:.3g}"
    # and the executor agrees with the buffer-IR interpreter on the same IR
    (ref,) = interpret(module, weights, *inputs)
    torch.testing.assert_close(got, ref, rtol=2e-5, atol=2e-5)


# ===================================================================== standalone program


@pytest.mark.parametrize("case_id", [c[0] for c in CPU_CASES])
def test_generated_cpu_code_matches_the_interpreter(case_id):
    """pyemit writes each cpu op as a torch expression: evaluate it on the case's inputs."""
    from backends.nnfactory.pyemit import _HELPERS, cpu_expr

    module, program, inputs = _cpu_program(case_id)
    (step,) = program.cpu_steps()
    scope: dict = {"torch": torch, "F": torch.nn.functional, "np": np, "math": __import__("math")}
    exec(_HELPERS, scope)
    names = [f"in_{i}" for i in range(len(inputs))]
    scope.update(zip(names, inputs, strict=True))
    got = eval(cpu_expr(step, names), scope)
    assert_same([got], list(interpret(module, None, *inputs)))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_standalone_program_of_a_zoo_model(runtime, tmp_path):
    """GPT-2 with pinned CPU ops (several segments): the written program reproduces the
    executor's logits."""
    from backends.nnfactory.pyemit import emit_python
    from tests.backends.test_emitter import run_standalone

    rt = runtime_or_skip(runtime)
    module, weights, inputs, expected = lowered_small_model("gpt2", "sdpa", "pinned")
    path = emit_python(module, weights, tmp_path / "gpt2.py", runtime=runtime)
    want = emit(module, weights, runtime=rt)(*inputs)
    got = run_standalone(path, inputs, tmp_path)
    assert_same(got, want, tol=1e-6)
    diff, kl = parity(got[0], expected)
    assert diff <= MAX_ABS and kl <= MAX_KL


class _IndexPut:
    """What `_numpy_row_writer` reads of an `aten.index_put` op: which indices are present, `accumulate`."""

    def __init__(self, indices, accumulate=False):
        self.mask, self.accumulate = [int(i is not None) for i in indices], accumulate

    def present_mask(self):
        return self.mask

    def arg(self, name):
        assert name == "accumulate"
        return self.accumulate


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
@pytest.mark.parametrize(
    "indices, values_shape, rows",
    [
        ((None, None, [3, 0, 7]), (2, 2, 3, 4), True),  # whole rows on one dim (a KV cache update)
        ((None, [1]), (2, 1, 8, 4), True),  # one row
        (([1, 0],), (2, 2, 8, 4), True),  # a leading dim
        ((None, None, [2, -1]), (2, 2, 2, 4), "negative"),  # numpy wraps as index_put_ does; index_copy_ cannot
        ((None, None, [-1]), (2, 2, 1, 4), "negative"),  # one row (a decode step's): a slice, wrapped the same
        ((None, None, [1, 2]), (1, 1, 2, 4), True),  # broadcast values (size-1 dims)
        ((None, None, [1, 2]), (2, 2, 4), True),  # broadcast values (a leading dim left out, as lowered)
        ((None, [0], [1]), (2, 1, 4), False),  # two indices: index_put_ itself
    ],
)
def test_index_put_rows_fast_paths_write_what_index_put_writes(indices, values_shape, rows, dtype):
    """A state's `index_put_` of whole rows runs as one numpy assignment decided from the types (a dtype numpy
    has), else as `index_copy_` (no negative index), else as `index_put_` itself: the same bits, NaN and -0.0
    included."""
    from backends.nnfactory.executor import _index_copy, _numpy_row_writer
    from dialects.torch_types import tensor_type

    gen = torch.Generator().manual_seed(0)
    target = torch.randn(2, 2, 8, 4, generator=gen).to(dtype)
    values = torch.randn(values_shape, generator=gen)
    if dtype.is_floating_point:
        values.view(-1)[:2] = torch.tensor([float("nan"), -0.0])
    values = values.to(dtype)
    idx = [None if i is None else torch.tensor(i) for i in indices]
    expected = torch.ops.aten.index_put_(target.clone(), idx, values)
    present = [i for i in idx if i is not None]
    types = [tensor_type(tuple(t.shape), t.dtype) for t in (target, *present, values)]
    writer = _numpy_row_writer(_IndexPut(idx), types)
    assert (writer is not None) is (rows is not False and dtype != torch.bfloat16)
    got = target.clone()
    if writer is not None:
        writer(got, *present, values, got)
    elif not _index_copy(got, idx, values):
        assert rows is not True or dtype != torch.bfloat16, "a bf16 row write must take index_copy_"
        torch.ops.aten.index_put_(got, idx, values)
    assert torch.equal(got.view(torch.uint8), expected.view(torch.uint8))
    assert _numpy_row_writer(_IndexPut(idx, accumulate=True), types) is None  # accumulation: index_put_ itself


def test_the_clock_sums_the_device_calls_of_every_segment(monkeypatch):
    """`executor.clock` adds up the time of each segment's device call (a 10 ms delay put into each of the two
    segments' calls: at least 20 ms a call) and nothing else (at most the call's own time)."""
    import time

    import backends.nnfactory.runtime.openvino_runtime as openvino_runtime

    module = two_segment_ir().module()
    ex = emit(module, random_weights(module)).executor()
    x = random_input("1x8x16xf32", 2)
    ex(x)
    real = openvino_runtime.run_request

    def slow(request):
        time.sleep(0.01)
        real(request)

    monkeypatch.setattr(openvino_runtime, "run_request", slow)
    before, start = ex.clock.ns, time.perf_counter_ns()
    ex(x)
    took = time.perf_counter_ns() - start
    assert 20e6 <= ex.clock.ns - before <= took
