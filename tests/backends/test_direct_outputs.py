"""Direct outputs (backends/nnfactory/program.py `direct_outputs`, executor.py): a program output a
segment produces is written straight into the call's output tensor (new per call, or the caller's
`out=` tensor), not into its planned buffer and then copied out.

What must hold: every call returns new tensors that later calls do not touch; the same value
returned twice is two tensors; later steps reading the value (a transfer to a CPU op, a second
segment) read the call's tensor; `out=` tensors are written in place unless they cannot be (wrong
layout, sharing memory with an input); staged outputs need no staging copy; results are those of
the copy-out path (`direct_outputs=False`) bit for bit, and of eager PyTorch on a small GPT-2. The
soundness rules themselves are checked on hand-built programs (no runtime needed).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from backends.nnfactory.emitter import emit
from backends.nnfactory.executor import CompiledNPUExecutor, RunSegment
from backends.nnfactory.program import (
    BufferSpec,
    CpuStep,
    Program,
    Segment,
    SegmentStats,
    SegmentStep,
    TransferStep,
    ValueRef,
    direct_outputs,
)
from forge.interpreter import interpret
from tests.backends.test_emitter import RUNTIMES, BufferIR, assert_same, random_input, runtime_or_skip
from tests.backends.test_executor import ARENA_OVERLAP, MAX_ABS, MAX_KL, lowered_small_model, parity


def _both(module, weights=None, runtime=None):
    """The direct executor and the copy-out one of one program."""
    program = emit(module, weights, runtime=runtime)
    return CompiledNPUExecutor(program), CompiledNPUExecutor(program, direct_outputs=False)


def _arena_ranges(ex: CompiledNPUExecutor) -> list[tuple[int, int]]:
    return [(a.data_ptr(), a.data_ptr() + a.numel()) for a in ex.arenas.values()]


def _outside(t: torch.Tensor, ranges: list[tuple[int, int]]) -> bool:
    lo, hi = t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()
    return all(hi <= a or b <= lo for a, b in ranges)


def multi_output_ir() -> BufferIR:
    """One segment, two outputs (`y` returned twice)."""
    ir = BufferIR("4x8xf32")
    x = ir.transfer(ir.input(0), "npu")
    y = ir.exec("npu", "unary", [x], "4x8xf32", "{kind = exp}")
    z = ir.exec("npu", "binary", [y, x], "4x8xf32", "{kind = add}")
    ir.ret(y, z, y)
    return ir


def later_readers_ir() -> BufferIR:
    """`y` (returned) is read after its segment by a transfer to a CPU op and by a second segment;
    a CPU op reads the graph input after the first segment."""
    ir = BufferIR("4x8xf32")
    inp = ir.input(0)
    x = ir.transfer(inp, "npu")
    y = ir.exec("npu", "unary", [x], "4x8xf32", "{kind = exp}")
    yc = ir.transfer(y, "cpu")
    s = ir.exec("cpu", "softmax", [yc], "4x8xf32", "{axis = 1}")
    g = ir.exec("cpu", "binary", [s, inp], "4x8xf32", "{kind = add}")
    gn = ir.transfer(g, "npu")
    z = ir.exec("npu", "binary", [gn, y], "4x8xf32", "{kind = mul}")
    ir.ret(y, z)
    return ir


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_outputs_are_new_per_call_and_later_calls_do_not_touch_them(runtime):
    rt = runtime_or_skip(runtime)
    module = multi_output_ir().module()
    ex, copy = _both(module, runtime=rt)
    assert [d.ref.name for d in ex.direct] == [r.name for r in ex.program.outputs[:2]]
    x1, x2 = random_input("4x8xf32", 1), random_input("4x8xf32", 2)
    first = ex(x1)
    kept = [t.clone() for t in first]
    second = ex(x2)
    assert_same(first, kept, tol=0)  # the second call wrote elsewhere
    assert_same(first, copy(x1), tol=0) and assert_same(second, copy(x2), tol=0)
    assert_same(second, list(interpret(module, None, x2)))
    pointers = [t.data_ptr() for t in first + second]
    assert len(set(pointers)) == 6  # y twice is two tensors, and no tensor is reused across calls
    assert all(_outside(t, _arena_ranges(ex)) for t in first + second)
    assert "(direct)" in ex.describe() and "(direct)" not in copy.describe()


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_buffer_of_its_own_holding_only_direct_outputs_is_never_touched(runtime):
    """`y` and `z` have buffers of their own (no arena) and are direct outputs: the executor allocates those
    buffers without filling them (`untouched`, not counted in `planned_bytes`), and no call reads or writes
    them (a NaN sentinel written into them survives, the results are the copy-out path's bit for bit). The
    copy-out path allocates and uses them as before."""
    rt = runtime_or_skip(runtime)
    module = multi_output_ir().module()
    ex, copy = _both(module, runtime=rt)
    own = {d.ref.key for d in ex.direct}
    assert all(ex.program.buffers[b].arena is None for b in own)
    assert ex.untouched == own and copy.untouched == frozenset()
    untouched_bytes = sum(ex.program.buffers[b].nbytes for b in own)
    assert ex.planned_bytes == copy.planned_bytes - untouched_bytes > 0
    for b in own:
        ex.buffers[b].fill_(0xFF)  # all-ones bytes: a NaN in every f32 lane
    for seed in (1, 2):
        x = random_input("4x8xf32", seed)
        assert_same(ex(x), copy(x), tol=0)
    assert all(bool((ex.buffers[b] == 0xFF).all()) for b in own)
    out = [torch.empty(4, 8) for _ in range(3)]
    x = random_input("4x8xf32", 3)
    assert_same(ex.run(x, out=out), copy(x), tol=0)
    assert all(bool((ex.buffers[b] == 0xFF).all()) for b in own)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_later_steps_read_the_calls_tensor(runtime):
    """The transfer and the second segment read `y` from the call's tensor (its planned buffer is
    not written): the results are the copy-out path's, bit for bit."""
    rt = runtime_or_skip(runtime)
    module = later_readers_ir().module()
    ex, copy = _both(module, runtime=rt)
    (d_y, d_z) = ex.direct
    assert [type(ex.instructions[s]).__name__ for s, _ in d_y.readers] == ["Transfer", "RunSegment"]
    second = ex.instructions[d_y.readers[1][0]]
    assert isinstance(second, RunSegment) and second.direct_inputs
    for seed in (3, 4):
        x = random_input("4x8xf32", seed)
        got = ex(x)
        assert_same(got, copy(x), tol=0)
        assert_same(got, list(interpret(module, None, x)))
    assert ex.env[ex._direct_slots[0][1]] is None  # the call's arrays are not kept in the env


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_out_tensors_are_written_in_place(runtime):
    """Usable `out=` tensors are bound as the segments' outputs (no copy; the same tensors again: no rebinding); a
    non-contiguous one, or one sharing memory with an input, is filled after the run instead."""
    rt = runtime_or_skip(runtime)
    module = later_readers_ir().module()
    ex, copy = _both(module, runtime=rt)
    x = random_input("4x8xf32", 5)
    want = copy(x)
    out = [torch.empty(4, 8), torch.empty(4, 8)]
    ex.run(x, out=out)
    got = ex.run(x, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    assert_same(got, want, tol=0)
    for d, t in zip(ex.direct, out, strict=True):  # each segment wrote the caller's tensor, bound once
        writer = ex.instructions[d.step]
        assert isinstance(writer, RunSegment)
        assert writer.graph._bound[d.position].ctypes.data == t.data_ptr()
        assert writer.graph._bound[d.position] is ex._last_out[ex.direct.index(d)][1]
    strided = torch.empty(8, 4).t()
    got = ex.run(x, out=[strided, torch.empty(4, 8)])
    assert got[0] is strided
    assert_same(got, want, tol=0)
    alias = x.clone()  # out[0] is the input the CPU op reads after the first segment
    assert_same(ex.run(alias, out=[alias, torch.empty(4, 8)]), want, tol=0)


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_staged_output_is_written_directly_without_its_staging_copy(runtime):
    from xdsl.parser import Parser

    from forge.driver.registry import make_context

    rt = runtime_or_skip(runtime)
    module = Parser(make_context(), ARENA_OVERLAP).parse_module()
    ex, copy = _both(module, runtime=rt)
    assert ex.program.segments[0].staged == (True,)
    (seg,) = [i for i in ex.instructions if isinstance(i, RunSegment)]
    (old,) = [i for i in copy.instructions if isinstance(i, RunSegment)]
    assert seg.copies == [] and len(old.copies) == 1
    x = random_input("4x8xf32", 6)
    assert_same(ex(x), [torch.exp(x.sum(1).expand(4, 4))])
    assert_same(ex(x), copy(x), tol=0)


@pytest.mark.parametrize("policy", ["default", "pinned"])
def test_gpt2_parity_with_direct_outputs(policy):
    """Small GPT-2, one segment (default) or several with CPU ops between them (pinned)."""
    module, weights, inputs, expected = lowered_small_model("gpt2", "eager", policy)
    program = emit(module, weights)
    ex, copy = CompiledNPUExecutor(program), CompiledNPUExecutor(program, direct_outputs=False)
    assert [d.ref for d in ex.direct] == list(program.outputs)
    (got,) = ex(*inputs)
    (again,) = ex(*inputs)
    assert got.data_ptr() != again.data_ptr()
    assert torch.equal(got, copy(*inputs)[0]) and torch.equal(got, again)
    diff, kl = parity(got, expected)
    assert diff <= MAX_ABS and kl <= MAX_KL


# ============================================================ the rules, on hand-built programs


def _ref(name: str, buffer: int, shape=(4,), dtype=torch.float32, source="buffer") -> ValueRef:
    return ValueRef(source, buffer, shape, dtype, name)


def _segment(index: int, ins: tuple[ValueRef, ...], outs: tuple[ValueRef, ...]) -> Segment:
    np_dtype = {torch.float32: np.float32, torch.bool: np.int8, torch.bfloat16: np.float32}
    return Segment(index, None, ins, outs, tuple(np.dtype(np_dtype[r.dtype]) for r in ins),  # type: ignore[arg-type]
                   tuple(np.dtype(np_dtype[r.dtype]) for r in outs), (False,) * len(outs), (),
                   SegmentStats(0, {}, 0, 0, 0, 0, 0.0, 0.0))


def _program(steps, segments, outputs, states=None) -> Program:
    buffers = {i: BufferSpec(i, "npu", 64) for i in range(4)}
    return Program(None, "f", buffers, (), tuple(outputs), tuple(steps), tuple(segments), None, {},  # type: ignore[arg-type]
                   np.dtype(np.int8), states=states or {})


def _cpu(ins, out) -> CpuStep:
    return CpuStep("unary", None, tuple(ins), out, (), None)  # type: ignore[arg-type]


def test_the_rules_refuse_what_would_change_the_result():
    x, y, y_alias, w = _ref("x", 0), _ref("y", 1), _ref("y2", 1, (2, 2)), _ref("w", 2)
    seg = _segment(0, (x,), (y,))
    simple = [TransferStep(_ref("in", 0, source="input"), x), SegmentStep(0)]
    assert [d.ref for d in direct_outputs(_program(simple, [seg], [y]))] == [y]
    assert direct_outputs(_program(simple, [seg], [y, y]))[0].ref == y  # one entry for a value returned twice
    cases = {  # why: (steps, outputs, the output that must not be direct)
        "a later step writes its bytes": (simple + [_cpu([x], y_alias)], [y], y),
        "a later step reads another value on its bytes": (simple + [_cpu([y_alias], w)], [y], y),
        "another output shares its bytes": (simple, [y, y_alias], y),
        "a cpu op produces it": (simple + [_cpu([x], w)], [w], w),
        "a transfer produces it": (simple + [TransferStep(y, w)], [w], w),
        "two steps write it": (simple + [SegmentStep(0)], [y], y),
    }
    for why, (steps, outputs, refused) in cases.items():
        found = [d.ref for d in direct_outputs(_program(steps, [seg], outputs))]
        assert refused not in found, why
    assert direct_outputs(_program(simple, [seg], [y], states={"kv": 1})) == ()  # a state's buffer
    b = _ref("b", 1, dtype=torch.bfloat16)  # numpy has no bfloat16
    assert direct_outputs(_program(simple[:1] + [SegmentStep(0)], [_segment(0, (x,), (b,))], [b])) == ()


def test_the_rules_redirect_later_reads_of_the_value():
    x, y, z, w = _ref("x", 0), _ref("y", 1), _ref("z", 2), _ref("w", 3)
    steps = [SegmentStep(0), _cpu([y], w), SegmentStep(1)]
    segs = [_segment(0, (x,), (y,)), _segment(1, (w, y), (z,))]
    (dy, dz) = direct_outputs(_program(steps, segs, [y, z]))
    assert (dy.ref, dy.step, dy.position, dy.readers) == (y, 0, 0, ((1, 0), (2, 1)))
    assert (dz.ref, dz.step, dz.readers) == (z, 2, ())
    m = _ref("m", 1, dtype=torch.bool)
    bool_segs = [_segment(0, (x,), (m,)), _segment(1, (w, m), (z,))]
    (dm, _) = direct_outputs(_program(steps[:1] + [_cpu([m], w)] + steps[2:], bool_segs, [m, z]))
    assert dm.ref == m  # an i1 value in its int8 carrier
