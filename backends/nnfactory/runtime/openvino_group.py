"""Graphs compiled as one OpenVINO program, so the CPU plugin prepares their shared weights once.

OpenVINO's CPU plugin repacks every matmul weight into its own layout when it compiles a model, and keeps the
repacked copy in a cache that belongs to that compiled model: two compiled models reading the same weights
(a generator's prefill and decode graphs, a dynamic model's buckets) hold two repacked copies. Inside one
compiled model the cache is shared, keyed by the weight's memory, so graphs whose constants point to the same
arrays share one copy, nested ``If`` bodies included.

:class:`OpenVINOGraphGroup` therefore compiles its graphs as the bodies of ``If`` ops in one model, side by
side: a selector input (``i32``) equal to a graph's index in the group runs that graph's body; every other
``If`` returns a one-element zero per output (of the output's rank: the CPU plugin refuses an ``If`` output of
dynamic rank). Each graph's inputs and outputs are inputs and outputs of the joint model. One ``InferRequest``
runs them all, one call at a time (the group's lock): a call binds its own arrays (shared memory, as for a
graph compiled alone) and the outputs of the other graphs to scratch arrays, so one graph never writes into
another's buffers. (A balanced tree of ``If`` ops sharing outputs among graphs copied each output once per
level: 12% slower at GPT-2's shortest bucket, and 30 MiB more for five buckets.)

What stays twice: a weight that two graphs' shapes send to different CPU kernels is packed once per kernel (the
builder keeps GELU and SiLU off the matmuls so that every matmul stays on MLAS at any row count: fused, GPT-2's
12 MLP matmuls ran as 1x1 convolutions in the prefill chunk and brgemm in the decode step, about 110 MiB
twice), and each graph keeps its own activations. An output is held three times: in its body's memory, in the
`If`'s own output memory (a dynamic shape: the other body returns one element) and in the array bound to it. A
group of two bodies each ending in a [1, L, 50257] f32 matmul grew by 3.0x the output's bytes at each body's first
call, the same model compiled alone by 1.0x (the bound array): for GPT-2 12L's five buckets, about 95 MiB of
logits more than a static compile holds. Five buckets added 811 MiB of resident memory against 578 MiB for one
static compile at 128 (1.40x; fresh processes, after one call of each graph): 121 MiB more at the graphs' first
calls (mostly those logits), 45 MiB more in ``compile_model`` (five bodies' own buffers: the weights are packed once)
and 68 MiB more before it (the dynamic facade's export and padding probes; the buckets' IR is not it).

What it costs: the CPU plugin's ``If`` copies the body's inputs into the body's own memory on every call. A
decode step's inputs include its whole KV cache: GPT-2 12L at 192 positions copies 14 MB a step, measured
about 1.3 ms of a 21 ms step (in-process A/B against the two graphs compiled alone, which copy nothing).
Hence the `top` graph (a group's ``top=``): its nodes are the joint model's own, outside any ``If``, so its
inputs are never copied, but it runs on every call, a call of another graph included (its outputs then go to
scratch arrays, and its inputs are zeros until its own first call binds them). A generator puts its decode step
there where the `If`'s copies of its cache would cost more than what each prefill call then also pays, a
decode step (`forge.driver.generation.weight_sharing`). Measured in one process, 15 interleaved rounds, ms per
call (decode alone / decode in an ``If`` / decode on top; prefill alone / in an ``If`` / with the decode on top):

| generator | decode | prefill |
|---|---|---|
| GPT-2 12L int8 | 7.32 / 8.64 / 7.59 | 161.6 / 167.0 / 172.7 |
| zoo Llama int8 | 9.46 / 10.16 / 9.86 | 240.7 / 232.3 / 252.2 |
| GPT-2 12L f32 | 18.32 / 17.91 / 17.14 | 144.5 / 144.3 / 160.9 |
| zoo Llama f32 | 21.15 / 21.77 / 21.38 | 216.5 / 217.4 / 238.6 |

and GPT-2 int8's two graphs added 339 MiB of resident memory compiled alone, 229 MiB as ``If`` bodies, 226 MiB
with the decode on top. In a real generator (one request switching between the graphs, 8 rounds) a prefill call
of GPT-2 12L f32 took 200-210 ms with the decode on top against 176-184 ms compiled alone, more than the 19 ms
decode step it adds; with int8 weights 196-217 against 204-216 ms, within the noise.

The other ways to one copy, measured (same machine, f32): the cache as OpenVINO variables (ReadValue/Assign)
instead of inputs. The CPU plugin accepts a variable in one ``If`` body only (a second body reading the same
variable fails to run: "ReadValue ... doesn't have sibling output"), and an update by ScatterUpdate into Assign
writes the whole state every call: 24 caches of GPT-2 12L's shape at 192 positions and one new row each took
4.85 ms a call, against 1.45 ms bound as inputs and 2.33 ms as inputs of an ``If`` body. One graph with a
dynamic token dimension copies nothing but pays the plugin's dynamic-shape work on every call:
``bench/weight_copies.py --timing`` measures it (GPT-2 12L at one row: 6-19% slower than the static compile
over four processes; at 128 rows within 3%).

Measured here (AMD EPYC, 2 cores, f32 pinned), two graphs over 1 GiB of f32 weights at sequence 128 and 1:
compiled alone they add 2,114 MiB of resident memory, as one group 1,097 MiB; the selection costs about
0.5 ms a call against 29 ms for the decode-shaped graph. GPT-2 12L's five buckets (8..128) run at the
shortest as fast as a static compile of that length (20.4 against 20.5 ms).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as opset1
import openvino.opset8 as opset8

from backends.nnfactory.runtime import CompiledGraph, GraphGroup, Runtime

from .graph_values import Node, TensorSpec

__all__ = ["OpenVINOBranchGraph", "OpenVINOGraphGroup", "bind_inputs", "joint_model"]


@dataclass(frozen=True)
class Body:
    """One graph of a group as OpenVINO nodes: its parameters and the outputs it returns, in order."""

    parameters: tuple[ov.Node, ...]
    outputs: tuple[ov.Output, ...]


@dataclass(frozen=True)
class JointLayout:
    """Where each graph's inputs and outputs are in the joint model: graph `g`'s input `i` is the joint input
    `inputs[g][i]`, its output `i` the joint output `outputs[g][i]` (input 0 is the selector when `selects`);
    `placeholders` are the shape and dtype of each joint output when its graph is not the one selected (the
    `top` graph's are its own shapes: it runs on every call)."""

    selects: bool
    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]
    placeholders: tuple[tuple[tuple[int, ...], np.dtype], ...]
    top: int | None = None


def joint_model(
    bodies: Sequence[Body], name: str = "forge_group", top: int | None = None
) -> tuple[ov.Model, JointLayout]:
    """One model running any one of `bodies`, picked by its first input (the body's index), and its layout.
    One body is returned as it is (no selector). `top`: the index of a body placed in the model itself rather
    than in an `If`, so that it runs on every call and its inputs are never copied."""
    if len(bodies) == 1:
        (body,) = bodies
        model = ov.Model([ov.op.Result(o) for o in body.outputs], list(body.parameters), name)
        return model, JointLayout(False, (tuple(range(len(body.parameters))),), (tuple(range(len(body.outputs))),), ())
    sel = ov.op.Parameter(ov.Type.i32, ov.PartialShape([]))
    params: list[ov.Node] = [sel]
    results: list[ov.Node] = []
    inputs, outputs = [], []
    for g, body in enumerate(bodies):
        if g == top:
            inputs.append(tuple(range(len(params), len(params) + len(body.parameters))))
            params += body.parameters
            outputs.append(tuple(range(len(results), len(results) + len(body.outputs))))
            results += [ov.op.Result(o) for o in body.outputs]
            continue
        branch = opset8.if_op(opset1.equal(sel, ov.op.Constant(np.array(g, dtype=np.int32))).output(0))
        branch.set_then_body(ov.Model([ov.op.Result(o) for o in body.outputs], list(body.parameters), f"{name}_{g}"))
        branch.set_else_body(ov.Model([ov.op.Result(_placeholder(o)) for o in body.outputs], [], f"{name}_{g}_off"))
        mine = []
        for p in body.parameters:  # both bodies set before any input: OpenVINO crashes otherwise
            outer = ov.op.Parameter(p.get_element_type(), p.get_partial_shape())
            branch.set_input(outer.output(0), p, None)
            mine.append(len(params))
            params.append(outer)
        inputs.append(tuple(mine))
        then_results, else_results = branch.get_then_body().get_results(), branch.get_else_body().get_results()
        outputs.append(tuple(range(len(results), len(results) + len(then_results))))
        results += [ov.op.Result(branch.set_output(t, e)) for t, e in zip(then_results, else_results, strict=True)]
    placeholders = tuple(_placeholder_spec(r.output(0)) for r in results)
    if top is not None:  # the top body's outputs keep their shapes whichever graph is selected
        own = set(outputs[top])
        placeholders = tuple(_static_spec(results[i].output(0)) if i in own else spec
                             for i, spec in enumerate(placeholders))
    return ov.Model(results, params, name), JointLayout(True, tuple(inputs), tuple(outputs), placeholders, top)


def _placeholder(out: ov.Output) -> ov.Output:
    """What an `If` not selected returns for `out`: a zero of its dtype and rank (the CPU plugin refuses an
    `If` output of dynamic rank), one element."""
    shape, _ = _placeholder_spec(out)
    return ov.op.Constant(out.get_element_type(), ov.Shape(list(shape)), [0]).output(0)


def _placeholder_spec(out: ov.Output) -> tuple[tuple[int, ...], np.dtype]:
    return (1,) * out.get_partial_shape().rank.get_length(), np.dtype(out.get_element_type().to_dtype())


def _static_spec(out: ov.Output) -> tuple[tuple[int, ...], np.dtype]:
    return tuple(d.get_length() for d in out.get_partial_shape()), np.dtype(out.get_element_type().to_dtype())


def run_request(request: ov.InferRequest) -> None:
    """One synchronous call on the bound tensors. `start_async` + `wait` rather than `infer`: `infer` wraps every
    output in a new numpy array and a dict per call, which nobody reads here (the outputs are bound arrays). On a
    GPT-2 int8 decode step (25 outputs) that was 0.14 ms of 7.8 ms (one process, interleaved)."""
    request.start_async()
    request.wait()


def bind_inputs(request: ov.InferRequest, bound: list[Any], ports: Sequence[int], arrays: Sequence[np.ndarray]) -> None:
    """Bind each array to its input port as shared memory, unless that very array is bound there already
    (`bound`: what each port holds; a planned buffer stays bound across calls)."""
    for port, array in zip(ports, arrays, strict=True):
        if bound[port] is not array:
            request.set_input_tensor(port, ov.Tensor(array, shared_memory=True))
            bound[port] = array


class _Joint:
    """The compiled joint model and its one request; what is bound to each of its inputs and outputs."""

    def __init__(self, compiled: ov.CompiledModel, layout: JointLayout):
        self.compiled_model = compiled
        self.layout = layout
        self.request = compiled.create_infer_request()
        self.inputs: list[np.ndarray | None] = [None] * len(compiled.inputs)
        self.outputs: list[np.ndarray | None] = [None] * len(compiled.outputs)
        self.scratch = [np.zeros(shape, dtype) for shape, dtype in layout.placeholders]
        self.selected: int | None = None
        if layout.top is not None:  # it runs on every call: zeros until its own first call binds its inputs
            zeros = [np.zeros(*_static_spec(compiled.inputs[i])) for i in layout.inputs[layout.top]]
            bind_inputs(self.request, self.inputs, layout.inputs[layout.top], zeros)

    def bind_output(self, slot: int, array: np.ndarray) -> None:
        if self.outputs[slot] is not array:
            self.request.set_output_tensor(slot, ov.Tensor(array, shared_memory=True))
            self.outputs[slot] = array

    def select(self, graph: int) -> None:
        """Make `graph` the one the next call runs (the `top` graph runs too, whichever is selected; selecting it
        turns every `If` off); the outputs it does not produce go to scratch arrays."""
        if self.selected == graph:
            return
        if self.layout.selects:
            self.request.set_input_tensor(0, ov.Tensor(np.array(graph, dtype=np.int32)))
        mine = set(self.layout.outputs[graph])
        for slot, scratch in enumerate(self.scratch):
            if slot not in mine:
                self.bind_output(slot, scratch)
        self.selected = graph

    def run(self, graph: int, inputs: list[np.ndarray]) -> None:
        self.select(graph)
        bind_inputs(self.request, self.inputs, self.layout.inputs[graph], inputs)
        run_request(self.request)


class OpenVINOBranchGraph(CompiledGraph):
    """One graph of an :class:`OpenVINOGraphGroup`: it runs as its body of the group's joint model (the
    group compiles first if graphs were added since its last compile)."""

    def __init__(self, group: OpenVINOGraphGroup, index: int, inputs: list[TensorSpec], outputs: list[TensorSpec]):
        super().__init__(group.runtime, inputs, outputs)
        self.group = group
        self.index = index

    @property
    def compiled_model(self) -> ov.CompiledModel:
        return self.group.joint().compiled_model

    @property
    def _request(self) -> ov.InferRequest:
        return self.group.joint().request

    def run(self, inputs: Sequence[Any], outputs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        with self.group.lock:  # one request for the group: a call binds and runs it whole, one at a time
            return super().run(inputs, outputs)

    __call__ = run

    def _bind_outputs(self, outs: list[np.ndarray]) -> None:
        joint = self.group.joint()
        joint.select(self.index)
        for slot, out in zip(joint.layout.outputs[self.index], outs, strict=True):
            joint.bind_output(slot, out)

    def _bind_output(self, index: int, array: np.ndarray) -> None:
        joint = self.group.joint()
        joint.bind_output(joint.layout.outputs[self.index][index], array)

    def _execute(self, inputs: list[np.ndarray]) -> None:
        self.group.joint().run(self.index, inputs)


class OpenVINOGraphGroup(GraphGroup):
    """Graphs compiled as one OpenVINO model (the module docstring says how and why)."""

    shares_weights = True

    def __init__(self, runtime: Runtime, top: int | None = None):
        super().__init__(runtime)
        self.top = top
        """The index of the graph run at the top level of the joint model (outside any `If`), if any."""
        self._bodies: list[Body] = []
        self._graphs: list[OpenVINOBranchGraph] = []
        self._shared_arrays: list[np.ndarray] = []
        self._joint: _Joint | None = None
        self._compiled = 0
        self.lock = threading.RLock()

    def join(self, builder: Any, params: list[Node], results: list[Node]) -> OpenVINOBranchGraph:
        self.graphs += 1
        self._bodies.append(Body(tuple(builder._parameters), tuple(r.handle for r in results)))
        self._shared_arrays += builder._shared_arrays  # the constants' memory, alive while the group is
        graph = OpenVINOBranchGraph(self, len(self._graphs), [p.spec for p in params], [r.spec for r in results])
        self._graphs.append(graph)
        return graph

    @property
    def pending(self) -> bool:
        return self._compiled < len(self._bodies)

    def compile(self) -> None:
        with self.lock:
            if self.pending:
                self._compile()

    def _compile(self) -> None:
        start = time.perf_counter()
        top = self.top if self.top is not None and self.top < len(self._bodies) else None  # until it joins
        model, layout = joint_model(self._bodies, top=top)
        self._joint = None  # the previous compile's memory goes before the next one's comes
        compiled = self.runtime.compile_model(model)  # an OpenVINORuntime's
        self._joint = _Joint(compiled, layout)
        self._compiled = len(self._bodies)
        self.compile_ms += (time.perf_counter() - start) * 1e3

    def report(self) -> dict[str, Any]:
        return {**super().report(), **({"top": self.top} if self.top is not None else {})}

    def joint(self) -> _Joint:
        if self.pending or self._joint is None:
            self.compile()
        assert self._joint is not None
        return self._joint
