"""The npuir kind table (`forge.kinds`): every compute kind of the dialect has an entry, and each
entry's example runs through every consumer of the table and agrees with the interpreter.

For each kind of `N.npuir_kinds()` (sources excluded): the table has an entry (a missing entry
fails naming the kind); the interpreter runs the example on an npuir function; the executor's CPU
kernel writes the same values into a preallocated output; the torch source pyemit writes
evaluates to the same values; if the NPU can run the example, the emitter builds it on both
runtimes (`openvino`, `nnfactory` when installed: `FORGE_REQUIRE_NNFACTORY=1` makes its absence a
failure) and the compiled graph matches; the affinity policy gives a device; the cost model
gives a cost.
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region
from xdsl.printer import Printer

from backends.nnfactory.emitter import emit, npu_kinds
from backends.nnfactory.pyemit import _HELPERS, cpu_expr
from dialects import npuir as N
from dialects.torch_types import tensor_type
from forge.driver import cost_model as cm
from forge.interpreter import interpret
from forge.kinds import KINDS, Example, KindSpec, UnknownKindError, kind_spec
from lowering.affinity import AffinityPolicy
from tests.backends.test_emitter import (
    _ELT_DTYPE,
    RUNTIMES,
    assert_same,
    dims,
    random_input,
    runtime_or_skip,
    single_op_ir,
)

COMPUTE_KINDS = [kind for kind, cls in N.npuir_kinds().items() if not issubclass(cls, N.SourceOp)]


def spec_of(kind: str) -> KindSpec:
    """The kind's entry; a failure naming the kind when the table has none."""
    if kind not in KINDS:
        pytest.fail(f"npuir kind '{kind}' has no entry in the kind table (forge/kinds)")
    return KINDS[kind]


# ================================================================ building the example


def tensor_of(ty: str) -> TensorType:
    shape, elt = dims(ty)
    return tensor_type(shape, _ELT_DTYPE[elt])


def example_inputs(example: Example, seed: int = 0) -> list[torch.Tensor]:
    """Seeded inputs drawn as the example says (`normal` unless stated)."""
    out = []
    for i, ty in enumerate(example.ins):
        draw = example.inputs[i] if i < len(example.inputs) else "normal"
        if draw.startswith("index"):
            shape, elt = dims(ty)
            g = torch.Generator().manual_seed(seed + i)
            out.append(torch.randint(0, int(draw[5:]), shape, generator=g, dtype=_ELT_DTYPE[elt]))
            continue
        x = random_input(ty, seed + 11 * i, draw if draw in ("positive", "ints") else "normal")
        if draw == "nonzero":
            x = torch.where(x == 0, torch.ones_like(x), x)
        elif draw == "keep":
            x[..., 0] = True
        out.append(x)
    return out


def npuir_function(kind: str, example: Example) -> tuple[ModuleOp, N.NpuirOp]:
    """`@forward`: the example's operands as graph inputs, one op of `kind` on the cpu."""
    cls = N.op_class(kind)
    assert cls is not None
    in_types = [tensor_of(t) for t in example.ins]
    out_type = tensor_of(example.out)
    block = Block(arg_types=in_types)
    inputs = [N.InputOp.make([], t, "cpu", i, index=i) for i, t in enumerate(in_types)]
    op = cls.make([i.result for i in inputs], out_type, "cpu", len(inputs), **example.params)
    block.add_ops([*inputs, op, func.ReturnOp(op.result)])
    fn = func.FuncOp("forward", (in_types, [out_type]), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module, op


def params_text(kind: str, example: Example) -> str:
    """The example's parameters as `buffer.exec` prints them (`{kind = add}`)."""
    cls = N.op_class(kind)
    assert cls is not None
    stream = io.StringIO()
    N.print_params(Printer(stream=stream), cls, N.make_params(cls, **example.params))
    return stream.getvalue().strip()


def buffer_program(kind: str, device: str):
    example = spec_of(kind).example
    ir = single_op_ir(device, kind, params_text(kind, example), example.ins, example.out)
    return ir.module()


def reference(kind: str) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The example's inputs and the interpreter's value of the npuir op."""
    example = spec_of(kind).example
    module, _ = npuir_function(kind, example)
    inputs = example_inputs(example)
    (want,) = interpret(module, None, *inputs)
    return inputs, want


# ======================================================================== the checks


@pytest.mark.parametrize("kind", COMPUTE_KINDS)
def test_every_kind_has_an_entry(kind):
    spec = spec_of(kind)
    assert spec.name == kind
    assert spec.op_class is N.op_class(kind)


def test_every_entry_is_an_npuir_compute_kind():
    assert set(KINDS) <= set(COMPUTE_KINDS)
    with pytest.raises(UnknownKindError, match="no entry for kind 'no_such_kind'"):
        kind_spec("no_such_kind")


@pytest.mark.parametrize("kind", COMPUTE_KINDS)
def test_the_interpreter_runs_the_example(kind):
    example = spec_of(kind).example
    _, want = reference(kind)
    assert tuple(want.shape) == dims(example.out)[0]
    assert want.dtype == _ELT_DTYPE[dims(example.out)[1]]


@pytest.mark.parametrize("kind", COMPUTE_KINDS)
def test_the_cpu_kernel_writes_the_reference_into_a_preallocated_output(kind):
    inputs, want = reference(kind)
    program = emit(buffer_program(kind, "cpu"), None)
    ex = program.executor()
    out = torch.empty_like(want)
    assert ex.run(*inputs, out=[out])[0] is out
    assert_same([out], [want])
    assert_same([out], [want])  # buffers are reused
    assert_same(ex.run(*inputs, out=[out]), [want])


@pytest.mark.parametrize("kind", COMPUTE_KINDS)
def test_the_torch_source_computes_the_reference(kind):
    inputs, want = reference(kind)
    (step,) = emit(buffer_program(kind, "cpu"), None).cpu_steps()
    scope: dict = {"torch": torch, "F": torch.nn.functional, "np": np, "math": math}
    exec(_HELPERS, scope)
    names = [f"in_{i}" for i in range(len(inputs))]
    scope.update(zip(names, inputs, strict=True))
    assert_same([eval(cpu_expr(step, names), scope)], [want])


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("kind", COMPUTE_KINDS)
def test_the_npu_graph_matches_the_reference(kind, runtime):
    spec = spec_of(kind)
    example = spec.example
    reason = AffinityPolicy.of().npu_reason(kind, [tensor_of(t) for t in example.ins], tensor_of(example.out))
    if reason is not None:  # a cpu-only kind (or types the npu refuses): the emitter has no graph for it
        assert not spec.npu or "element type" in reason, reason
        assert spec.npu == (kind in npu_kinds())
        return
    rt = runtime_or_skip(runtime)
    inputs, want = reference(kind)
    program = emit(buffer_program(kind, "npu"), None, runtime=rt)
    assert [s.stats.kinds for s in program.segments] == [{kind: 1}]
    assert_same(program(*inputs), [want])


@pytest.mark.parametrize("kind", COMPUTE_KINDS)
def test_affinity_gives_a_device(kind):
    example = spec_of(kind).example
    in_types = [tensor_of(t) for t in example.ins]
    out_type = tensor_of(example.out)
    device = AffinityPolicy.of().device(kind, in_types, out_type)
    assert device in (N.Device.NPU, N.Device.CPU)
    assert (device is N.Device.NPU) == (AffinityPolicy.of().npu_reason(kind, in_types, out_type) is None)
    assert AffinityPolicy.of("cpu-only").device(kind, in_types, out_type) is N.Device.CPU


@pytest.mark.parametrize("kind", COMPUTE_KINDS)
def test_the_cost_model_gives_a_cost(kind):
    spec = spec_of(kind)
    module, op = npuir_function(kind, spec.example)
    flops, nbytes = cm.op_flops(op), cm.op_bytes(op)
    assert math.isfinite(flops) and flops >= 0 and nbytes >= 0
    assert (flops == 0) == spec.moves_data
    assert (nbytes == 0) == spec.view
    for device in cm.DEVICES:
        assert cm.op_cost(op, device).total > 0
    assert cm.estimate(module).total_us > 0



CHECKS = [
    test_every_kind_has_an_entry,
    test_the_interpreter_runs_the_example,
    test_the_cpu_kernel_writes_the_reference_into_a_preallocated_output,
    test_the_torch_source_computes_the_reference,
    test_affinity_gives_a_device,
    test_the_cost_model_gives_a_cost,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda f: f.__name__.removeprefix("test_"))
def test_a_kind_deleted_from_the_table_fails_every_check_by_name(check, monkeypatch):
    """What a contributor sees after adding an op class but no table entry (here: cumsum removed)."""
    monkeypatch.delitem(KINDS, "cumsum")
    with pytest.raises(pytest.fail.Exception, match="npuir kind 'cumsum' has no entry in the kind table"):
        check("cumsum")
