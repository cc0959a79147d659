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
twice), and each graph keeps its own activations. An output of an ``If`` is held twice by the plugin: in its
body's memory and in the `If`'s own output memory (a dynamic shape: the other body returns one element), besides
the array bound to it. So a large output made by a matmul with a constant weight (an LM head's logits: see
`hoisted_matmul`) is computed after the ``If``s: the body returns the matmul's activation (no rows when another
graph is selected) and the joint model itself applies the matmul, one for all the bodies over that weight
(`_SharedMatmul`), whose output memory, as long as the longest, is the only copy (a test pins 2.0x the outputs'
bytes inside the bodies, 0.68x shared). GPT-2 12L's five buckets: the graphs' first calls added 126 MiB inside,
58 shared; the buckets run as fast (8..128 tokens within 1-3%, faster as often as slower, one process, in runs of
one length and alternating) and give the same logits bitwise, f32, int8 and int4 weights.
Five buckets then add 677 MiB of anonymous resident memory against 571 MiB for one static compile at 128 (1.19x;
fresh processes, after one call of each graph, heap trimmed): 58 MiB at the graphs' first calls against 28, 35
MiB for the buckets' Python side (IR, executors; the first bucket's 15 include lazy imports), and the dynamic
facade's export and padding probes 43 MiB before them (a static compile's own export holds about 30 of them too);
the device compile of five bodies adds about 45 MiB more than one static graph's (their own buffers: the weights
are packed once).

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

Tried and left out: running the top graph's weight-heavy ops only on its own calls, each stage between two cache
reads (a layer's projections and MLP) in an ``If`` of its own on a gate input, so that a prefill call pays only
the decode step's attention. One process, 8 interleaved rounds, prefill ms gated / not: GPT-2 12L f32 153.8 /
167.0, int8 168.2 / 176.6, zoo Llama f32 220.6 / 248.2, int8 250.0 / 263.2; but every decode step paid its 13
(GPT-2) ``If``s, +1.6% (0.27 ms f32, 0.14 int8, averaged over both compile orders), about what the prefill saved
over a request of 64 new tokens. And the CPU plugin once misrouted such an ``If``'s outputs (a stage holding a
small Llama's mask arithmetic: a later op read its [1,1,1,16] output for the [1,1,1,32] one; a shape error
there, silent where the shapes agree), so the gates would need a check no test can give. Gating each matmul
alone (49 ``If``s) cost decode 2.5-3%; only the LM head saved 2-3 ms of prefill.

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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import openvino as ov
import openvino.opset1 as opset1
import openvino.opset8 as opset8

from backends.nnfactory.runtime import CompiledGraph, GraphGroup, Runtime
from forge.mapped_pages import trim_heap

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
    bodies: Sequence[Body], name: str = "forge_group", top: int | None = None, hoist: bool = True
) -> tuple[ov.Model, JointLayout]:
    """One model running any one of `bodies`, picked by its first input (the body's index), and its layout.
    One body is returned as it is (no selector). `top`: the index of a body placed in the model itself rather
    than in an `If`, so that it runs on every call and its inputs are never copied. A large matmul output is
    computed after the `If`s (`hoisted_matmul`, unless not `hoist`), one matmul and one output for the bodies
    that apply the same weight (`_SharedMatmul`)."""
    if len(bodies) == 1:
        (body,) = bodies
        model = ov.Model([ov.op.Result(o) for o in body.outputs], list(body.parameters), name)
        return model, JointLayout(False, (tuple(range(len(body.parameters))),), (tuple(range(len(body.outputs))),), ())
    sel = ov.op.Parameter(ov.Type.i32, ov.PartialShape([]))
    params: list[ov.Node] = [sel]
    results: list[ov.Node | None] = []
    specs: list[tuple[tuple[int, ...], np.dtype]] = []
    shared: dict[tuple[Any, ...], _SharedMatmul] = {}
    inputs, outputs = [], []
    for g, body in enumerate(bodies):
        if g == top:
            inputs.append(tuple(range(len(params), len(params) + len(body.parameters))))
            params += body.parameters
            outputs.append(tuple(range(len(results), len(results) + len(body.outputs))))
            results += [ov.op.Result(o) for o in body.outputs]
            specs += [_static_spec(o) for o in body.outputs]  # it runs on every call: its own shapes
            continue
        branch = opset8.if_op(opset1.equal(sel, ov.op.Constant(np.array(g, dtype=np.int32))).output(0))
        hoisted = [hoisted_matmul(o) if hoist else None for o in body.outputs]
        returned = [o if h is None else h.activation for o, h in zip(body.outputs, hoisted, strict=True)]
        branch.set_then_body(ov.Model([ov.op.Result(o) for o in returned], list(body.parameters), f"{name}_{g}"))
        branch.set_else_body(ov.Model([ov.op.Result(_placeholder(o, h is not None))
                                       for o, h in zip(returned, hoisted, strict=True)], [], f"{name}_{g}_off"))
        mine = []
        for p in body.parameters:  # both bodies set before any input: OpenVINO crashes otherwise
            outer = ov.op.Parameter(p.get_element_type(), p.get_partial_shape())
            branch.set_input(outer.output(0), p, None)
            mine.append(len(params))
            params.append(outer)
        inputs.append(tuple(mine))
        then_results, else_results = branch.get_then_body().get_results(), branch.get_else_body().get_results()
        slots, occurrences = [], Counter[tuple[Any, ...]]()
        for t, e, h in zip(then_results, else_results, hoisted, strict=True):
            out = branch.set_output(t, e)
            if h is None:
                slots.append(len(results))
                results.append(ov.op.Result(out))
                specs.append(_placeholder_spec(results[-1].output(0)))
                continue
            weight = h.key()
            key = (*weight, occurrences[weight])  # a body's second output on that weight gets its own
            occurrences[weight] += 1
            if key not in shared:
                shared[key] = _SharedMatmul(h, len(results))
                results.append(None)  # made once every body has given its activation
                specs.append(((), np.dtype(np.float32)))
            shared[key].activations.append(out)
            slots.append(shared[key].slot)
        outputs.append(tuple(slots))
    for matmul in shared.values():
        results[matmul.slot] = ov.op.Result(matmul.output())
        specs[matmul.slot] = _placeholder_spec(results[matmul.slot].output(0), rows_only=True)
    joint = ov.Model([r for r in results if r is not None], params, name)
    return joint, JointLayout(True, tuple(inputs), tuple(outputs), tuple(specs), top)


@dataclass
class _SharedMatmul:
    """The hoisted matmuls of several bodies over one weight, as one: their `If`s' activations (all but the
    selected body's without rows) concatenated by rows, one matmul, one joint output (`slot`). Why one: a
    matmul outside the `If`s keeps its output in memory of its own (a dynamic shape: not the caller's array), so
    five buckets' logits took five such buffers (47.5 MiB for GPT-2 12L), one matmul takes the longest's."""

    hoisted: HoistedMatmul
    slot: int
    activations: list[ov.Output] = field(default_factory=list)

    def output(self) -> ov.Output:
        rows = self.activations[0]
        if len(self.activations) > 1:
            rank = rows.get_partial_shape().rank.get_length()
            rows = opset1.concat(self.activations, rank - 2).output(0)
        return self.hoisted.applied_to(rows)


def _placeholder(out: ov.Output, rows_only: bool = False) -> ov.Output:
    """What an `If` not selected returns for `out`: a zero of its dtype and rank (the CPU plugin refuses an
    `If` output of dynamic rank), one element; `rows_only`, a hoisted matmul's activation: no rows (`[1, .., 0,
    K]`), so that the matmul outside the `If` computes nothing."""
    if rows_only:
        return ov.op.Constant(out.get_element_type(), ov.Shape(list(_no_rows(out))), []).output(0)
    shape, _ = _placeholder_spec(out)
    return ov.op.Constant(out.get_element_type(), ov.Shape(list(shape)), [0]).output(0)


def _placeholder_spec(out: ov.Output, rows_only: bool = False) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype of joint output `out` when its graph is not selected: one element of its rank, or
    `rows_only` (a hoisted matmul's output) no rows."""
    dtype = np.dtype(out.get_element_type().to_dtype())
    return (_no_rows(out) if rows_only else (1,) * out.get_partial_shape().rank.get_length()), dtype


def _no_rows(out: ov.Output) -> tuple[int, ...]:
    """The shape of `out` (static but for its rows, the second to last dimension) with no rows: what a hoisted
    matmul's activation and output are when their graph is not selected (a batch's leading dimensions kept, so
    that the bodies' activations concatenate)."""
    dims = list(out.get_partial_shape())
    return (*(d.get_length() for d in dims[:-2]), 0, dims[-1].get_length())


SHARED_CONSTANT_BYTES = 1 << 16
"""Constants at least this large share the caller's memory instead of being copied (`OpenVINOGraphBuilder`):
GPT-2's weights are ~500 MB, and a copy doubled emission time."""

HOIST_FROM_BYTES = 1 << 20
HOIST_FROM_RATIO = 8
"""A body's output made by a matmul with a constant weight, of at least `HOIST_FROM_BYTES` and `HOIST_FROM_RATIO`
times the elements of the matmul's activation (an LM head's logits: 65x for GPT-2), is computed outside the `If`."""


@dataclass(frozen=True)
class HoistedMatmul:
    """A body output `activation @ weight` computed outside the body's `If`: the `If` returns the activation
    (no rows when not selected) and `applied_to` makes the matmul in the joint model itself. Why: the CPU
    plugin's `If` keeps its body's output in the body's memory and again in the `If`'s own output memory, twice
    the logits of every bucket of an LM (GPT-2 12L's five buckets: 2 x 47.5 MiB); a matmul outside it holds its
    output once. The weight's nodes move with it, so the matmul packs the same memory as before (held once)."""

    activation: ov.Output
    weight: ov.Output
    transpose_b: bool

    def applied_to(self, activation: ov.Output) -> ov.Output:
        return opset1.matmul(activation, self.weight, False, self.transpose_b).output(0)

    def key(self) -> tuple[Any, ...]:
        """Equal for two matmuls over the same weight (the same memory, decompressed the same way) whose
        activations concatenate by rows (the same other dimensions)."""
        return _no_rows(self.activation), self.transpose_b, _constant_key(self.weight)


def hoisted_matmul(out: ov.Output) -> HoistedMatmul | None:
    """`out` as a `HoistedMatmul` when it is one to hoist (see `HOIST_FROM_BYTES`), else None."""
    node = out.get_node()
    if node.get_type_name() != "MatMul" or out.get_partial_shape().is_dynamic:
        return None
    activation, weight = node.input_values()
    attributes = node.get_attributes()
    shape, weight_shape = activation.get_partial_shape(), weight.get_partial_shape()
    if attributes["transpose_a"] or shape.is_dynamic or shape.rank.get_length() < 2:
        return None
    if weight_shape.rank.get_length() != 2 or not _constant(weight.get_node()):
        return None
    elements = int(np.prod([d.get_length() for d in out.get_partial_shape()]))
    size = elements * np.dtype(out.get_element_type().to_dtype()).itemsize
    if size < HOIST_FROM_BYTES or elements < HOIST_FROM_RATIO * int(np.prod([d.get_length() for d in shape])):
        return None
    return HoistedMatmul(activation, weight, bool(attributes["transpose_b"]))


def _constant_key(out: ov.Output) -> tuple[Any, ...]:
    """What `out`, computed from constants only, is: each node's type, attributes and inputs; a constant's
    address when the builder shares its memory (from `SHARED_CONSTANT_BYTES`: one address, one content), else
    its bytes (two bodies' copies of one small scale are equal)."""
    node = out.get_node()
    if node.get_type_name() == "Constant":
        data = node.get_data()
        held = data.ctypes.data if data.nbytes >= SHARED_CONSTANT_BYTES else data.tobytes()
        return "Constant", node.get_element_type().get_type_name(), str(node.get_output_partial_shape(0)), held
    attributes = tuple(sorted((k, str(v)) for k, v in node.get_attributes().items()))
    return node.get_type_name(), out.get_index(), attributes, tuple(_constant_key(i) for i in node.input_values())


def _constant(node: ov.Node, limit: int = 32) -> bool:
    """Whether `node` computes from constants only (a weight, or its int8/int4 decompression: a few nodes), looked
    at iteratively and at most `limit` nodes deep into its inputs (a body's activation chain is not walked)."""
    pending, seen = [node], set()
    while pending:
        current = pending.pop()
        if current.get_instance_id() in seen:
            continue
        seen.add(current.get_instance_id())
        inputs = current.input_values()
        if len(seen) > limit or (current.get_type_name() != "Constant" and not inputs):
            return False  # a Parameter (or any node with no inputs but a Constant), or too large to be a weight
        pending += [i.get_node() for i in inputs]
    return True


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
        self.called: set[int] = set()
        """The graphs called since this compile (`run` trims the heap after each one's first call)."""
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
        """One call of `graph`; after its first, the heap it freed goes back to the OS: the plugin allocates a
        graph's memory at its first call and frees what that replaces (a `_SharedMatmul` grows its output to
        the longest graph called yet), which glibc would keep resident (GPT-2 12L's five buckets, shortest
        first: 48 MiB). Once per graph and compile, 1.5-3 ms."""
        self.select(graph)
        bind_inputs(self.request, self.inputs, self.layout.inputs[graph], inputs)
        run_request(self.request)
        if graph not in self.called:
            self.called.add(graph)
            trim_heap()


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

    def run_prepared(self, inputs: list[np.ndarray], outputs: list[np.ndarray]) -> None:
        with self.group.lock:
            super().run_prepared(inputs, outputs)

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
        # the hoisting answers the CPU plugin's `If` (measured there); other devices get the bodies as they are
        model, layout = joint_model(self._bodies, top=top, hoist=self.runtime.device.upper().startswith("CPU"))
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
