"""The emitter's trace hooks and caches: op comments are built only for a trace that reads them
(`GraphTrace.comments`; pyemit's recorder does), the graph is the same either way, and the cached
torch -> numpy dtype table answers as torch's own conversion."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from backends.nnfactory.analysis import analyze, describe_op
from backends.nnfactory.emitter import GraphTrace, _Sources, build_segment
from backends.nnfactory.runtime import get_runtime
from backends.nnfactory.runtime.graph_values import to_numpy_dtype
from tests.backends.test_emitter import BufferIR, random_weights
from tests.conftest import require_runtime


class _Recorder(GraphTrace):
    def __init__(self, comments: bool):
        self.comments = comments
        self.seen: list[tuple[str, str]] = []
        self.nodes: list[tuple[tuple[int, ...], str]] = []

    def begin(self, name: str, comment: str = "") -> None:
        self.seen.append((name, comment))

    def end(self, node) -> None:
        self.nodes.append((node.shape, node.dtype.name))


def _segment_ir():
    ir = BufferIR("1x8x16xf32")
    x = ir.transfer(ir.input(0), "npu")
    h = ir.exec("npu", "linear", [x, ir.weight("w", "16x16xf32"), ir.weight("b", "16xf32")], "1x8x16xf32")
    y = ir.exec("npu", "unary", [h], "1x8x16xf32", "{kind = exp}")
    ir.ret(ir.transfer(y, "cpu"))
    return ir.module()


def _segment():
    """The module, its analysis, its one NPU segment and the OpenVINO runtime to build it with."""
    require_runtime("openvino")
    module = _segment_ir()
    analysis = analyze(module)
    (seg,) = analysis.segments
    return module, analysis, seg, get_runtime("openvino", "CPU")


@pytest.mark.parametrize("comments", [False, True])
def test_op_comments_only_for_a_trace_that_reads_them(comments):
    module, analysis, seg, rt = _segment()
    trace = _Recorder(comments)
    build_segment(rt, seg, analysis.refs, _Sources(random_weights(module), analysis.constants), trace=trace,
                  compile=False)
    op_names = {analysis.refs[op.result].name: op for op in seg.ops}
    got = {name: comment for name, comment in trace.seen if name in op_names}
    assert set(got) == set(op_names)
    want = {name: describe_op(op, analysis.refs) if comments else "" for name, op in op_names.items()}
    assert got == want
    if comments:
        assert all(text.startswith(f"%{name} = npu ") for name, text in got.items())


def test_graph_is_the_same_with_and_without_comments():
    module, analysis, seg, rt = _segment()
    weights = random_weights(module)
    built = []
    for comments in (False, True):
        trace = _Recorder(comments)
        build_segment(rt, seg, analysis.refs, _Sources(weights, analysis.constants), trace=trace, compile=False)
        built.append(trace.nodes)
    assert built[0] == built[1] and built[0]


def test_sources_convert_each_weight_once_and_keep_its_expression():
    module = _segment_ir()
    analysis = analyze(module)
    sources = _Sources(random_weights(module), analysis.constants)
    ref = next(r for r in analysis.refs.values() if r.source == "weight")
    (a1, e1), (a2, e2) = sources(ref), sources(ref)
    assert a1 is a2 and e1 == e2 == f"W[{str(ref.key)!r}]"


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
                                   torch.int64, torch.uint8, torch.bool])
def test_cached_torch_dtype_matches_torch(dtype):
    want = torch.empty((), dtype=dtype).numpy().dtype
    assert to_numpy_dtype(dtype) == want and to_numpy_dtype(dtype) == want  # the second answer is the cached one
    assert isinstance(to_numpy_dtype(dtype), np.dtype)


def test_bfloat16_still_refused():
    with pytest.raises(TypeError, match="bfloat16"):
        to_numpy_dtype(torch.bfloat16)


@pytest.mark.parametrize("ty, size, fits", [("4xf32", 16, True), ("4xf32", 15, False), ("3xf16", 6, True),
                                            ("3xf16", 5, False), ("5xi1", 5, True), ("2xi64", 15, False)])
def test_a_value_larger_than_its_buffer_is_refused(ty, size, fits):
    """The size check counts dtype bytes (no tensor per op); parsed unverified, as the verifier refuses it too."""
    from xdsl.parser import Parser

    from backends.nnfactory.program import EmitError
    from forge.driver.registry import make_context

    ir = BufferIR(ty)
    x = ir.transfer(ir.input(0), "npu", into=ir.alloc("npu", size))
    ir.ret(ir.transfer(x, "cpu"))
    module = Parser(make_context(), ir.text()).parse_module()
    if fits:
        analyze(module)
    else:
        with pytest.raises(EmitError, match=f"does not fit buffer 0 \\({size} bytes\\)"):
            analyze(module)
