"""A heuristic cost model: estimated µs for a lowered (npuir) graph, split by device and by cause.

Why npuir (after `lower-aten-to-npuir`, optionally `schedule-device-affinity`) and not aten + the
affinity policy: npuir is what the backend runs. Every op there has its final kind (a fused linear
*is* one `npuir.linear`), its device, and the no-op views/copies the lowering drops are gone, so
the model scores exactly the graph that gets compiled instead of guessing what lowering will do.

The model (one linear walk, additive over ops and over cross-device edges):

    cost(op on device d) = dispatch[d]                              one kernel launch per op
                         + bytes(op) / bandwidth[d]                  operands (weights included)
                                                                     + result, read/written once
                         + flops(op) / throughput[d]
    cost(transfer)       = transfer_latency + bytes(value) / transfer_bandwidth
                           for each (non-source value, device) where the value is used on a device
                           other than the one that produced it (graph inputs live on the cpu;
                           function results are read by the cpu)
    total                = Σ op costs + Σ transfer costs

Compute and memory time are *added*, not overlapped (a roofline would take the max): pessimistic,
but it keeps the breakdown additive, so `total == Σ parts` and the score of a graph is the sum of
the scores of its ops, which is what lets the autotuner re-score device placements cheaply.
Sources (`npuir.input/weight/constant`) cost nothing themselves: weights are resident on every
device that reads them (uploaded at compile time); reading them is charged to their consumer.
Pure views (`reshape`, `KindSpec.view`) move no bytes. The op order does not enter the score, so scheduling does
not change it: device transitions are charged by the data they move.

FLOPs by kind come from the kind table (`forge.kinds`, `KindSpec.flops`): matrix products
2·M·N·K (+ epilogue per output element), attention the two products plus softmax, norms/softmax a
few per element, elementwise one (transcendentals more), reductions one per input element, data
movement none. `npuir.aten` (host fallback) is charged one FLOP per output element on top of its
bytes.

The constants are order-of-magnitude public figures, not measurements of this machine (see
`DEVICES`); the model ranks graphs, it does not predict latency.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue

from dialects import npuir as N
from forge.kinds import kind_spec


@dataclass(frozen=True)
class DeviceSpec:
    dispatch_us: float
    """Fixed cost of launching one kernel."""
    gbytes_per_s: float
    """Sustained memory bandwidth the device sees."""
    gflops_per_s: float
    """Sustained arithmetic throughput (fp16 on the NPU, fp32 SIMD on the CPU)."""


DEVICES: dict[str, DeviceSpec] = {
    # Intel NPU 3720 (Core Ultra "Meteor Lake"): Intel quotes ~11 TOPS int8, i.e. ~5.5 TFLOPS fp16
    # peak; transformer layers sustain roughly a third of that. It shares LPDDR5x (~120 GB/s peak)
    # with the CPU and sees ~60 GB/s. A layer dispatch through the driver's command queue is
    # ~10 µs (OpenVINO NPU plugin per-layer overheads reported in Intel's NPU tuning guide).
    "npu": DeviceSpec(dispatch_us=10.0, gbytes_per_s=60.0, gflops_per_s=2000.0),
    # The host CPU through OpenVINO's CPU plugin: 6P+8E cores with AVX2/VNNI reach ~1 TFLOPS fp32
    # peak, ~200 GFLOPS sustained on these shapes; same DRAM (~50 GB/s achievable); per-node
    # overhead of the plugin's graph executor ~2 µs.
    "cpu": DeviceSpec(dispatch_us=2.0, gbytes_per_s=50.0, gflops_per_s=200.0),
}

TRANSFER_LATENCY_US = 30.0
"""Handing a tensor between CPU and NPU: end one infer request, flush/sync the shared buffer and
start the next (a segment boundary); ~tens of µs in the NPU plugin."""

TRANSFER_GBYTES_PER_S = 20.0
"""Copy bandwidth between host and NPU buffers (a DMA through shared DRAM, below raw DRAM speed)."""

PARTS = ("dispatch", "memory", "compute")


@dataclass(frozen=True)
class OpCost:
    dispatch: float
    memory: float
    compute: float

    @property
    def total(self) -> float:
        return self.dispatch + self.memory + self.compute


@dataclass
class CostReport:
    """Estimated µs by device and cause; `total_us == Σ devices' parts + transfer_us`."""

    by_device: dict[str, dict[str, float]] = field(
        default_factory=lambda: {d: dict.fromkeys(PARTS, 0.0) for d in DEVICES}
    )
    transfer_us: float = 0.0
    dispatches: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DEVICES, 0))
    transfers: int = 0
    bytes_moved: int = 0
    flops: float = 0.0

    @property
    def total_us(self) -> float:
        return sum(sum(parts.values()) for parts in self.by_device.values()) + self.transfer_us

    @property
    def total_dispatches(self) -> int:
        return sum(self.dispatches.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "total_us": round(self.total_us, 3),
            "by_device": {d: {k: round(v, 3) for k, v in parts.items()} for d, parts in self.by_device.items()},
            "transfer_us": round(self.transfer_us, 3),
            "dispatches": dict(self.dispatches),
            "transfers": self.transfers,
            "bytes_moved": self.bytes_moved,
            "gflops": round(self.flops / 1e9, 3),
        }


# --- per-op quantities -----------------------------------------------------------------------------


def op_flops(op: Operation) -> float:
    """Arithmetic of one npuir op: its kind's FLOPs rule in the kind table (`KindSpec.flops`)."""
    assert isinstance(op, N.NpuirOp), f"{op.name} is not an npuir op"
    spec = kind_spec(op.mnemonic())
    return spec.flops(N.Params.of(op), [o.type for o in op.operands], op.results[0].type)


def op_bytes(op: Operation) -> int:
    """Bytes one npuir op reads and writes: every operand (weights included) and its result;
    none for a view (`KindSpec.view`)."""
    return kind_bytes(op.name.removeprefix("npuir."), [o.type for o in op.operands], op.results[0].type)


def kind_bytes(kind: str, in_types: Sequence[Attribute], out_type: Attribute) -> int:
    """Bytes an op of `kind` reads and writes (none for a view)."""
    if kind_spec(kind).view:
        return 0
    return sum(N.tensor_bytes(t) for t in in_types) + N.tensor_bytes(out_type)


def exec_cost(op: Operation) -> tuple[str, OpCost]:
    """The device of a `buffer.exec` step and its cost there (what the compile report splits by
    device: the same rules as an npuir op of its kind)."""
    kind = op.kind.data
    in_types = [v.type for v in op.ins]
    out_type = op.result.type
    flops = kind_spec(kind).flops(op.param_view(), in_types, out_type)
    device = op.device.data.value
    return device, cost_on(device, kind_bytes(kind, in_types, out_type), flops)


def op_cost(op: Operation, device: str) -> OpCost:
    """The cost of running `op` on `device` ("npu" or "cpu")."""
    return cost_on(device, op_bytes(op), op_flops(op))


def cost_on(device: str, nbytes: int, flops: float) -> OpCost:
    spec = DEVICES[device]
    return OpCost(
        dispatch=spec.dispatch_us,
        memory=nbytes / (spec.gbytes_per_s * 1e3),  # bytes / (GB/s) in µs
        compute=flops / (spec.gflops_per_s * 1e3),
    )


def transfer_cost(nbytes: int) -> float:
    return TRANSFER_LATENCY_US + nbytes / (TRANSFER_GBYTES_PER_S * 1e3)


# --- the graph walk ----------------------------------------------------------------------------------


def _body(module: ModuleOp) -> Iterator[tuple[Operation, list[Operation]]]:
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and fn.body.blocks:
            yield fn, list(fn.body.block.ops)


def _device_of(op: Operation) -> str:
    return op.properties["device"].data.value


def is_source(op: Operation) -> bool:
    return isinstance(op, N.SourceOp)


@dataclass
class CostRow:
    """One compute op of the graph, costed on both devices (what re-scoring placements needs)."""

    op: Operation
    kind: str
    device: str
    cost: dict[str, OpCost]
    flops: float
    nbytes: int
    result_bytes: int
    producers: tuple[int, ...]
    """Indices (into the table's rows) of the compute ops whose results this op reads."""
    inputs: tuple[int, ...]
    """Indices (into the table's `input_bytes`) of the graph inputs it reads (they live on the cpu)."""
    returned: bool


class CostTable:
    """Every compute op of an npuir module with its cost on each device, built in one walk.

    `score()` sums it under the recorded devices; `score(devices)` under another placement
    (one device per row), which is how the autotuner tries affinity knobs without lowering again.
    """

    def __init__(self, module: ModuleOp):
        self.rows: list[CostRow] = []
        self.input_bytes: list[int] = []
        for _, ops in _body(module):
            self._add_function(ops)

    def _add_function(self, ops: list[Operation]) -> None:
        index: dict[SSAValue, int] = {}
        input_index: dict[SSAValue, int] = {}
        returned: set[SSAValue] = set()
        for op in ops:
            if isinstance(op, func.ReturnOp):
                returned.update(op.operands)
        for op in ops:
            if isinstance(op, N.InputOp):
                input_index[op.results[0]] = len(self.input_bytes)
                self.input_bytes.append(N.tensor_bytes(op.results[0].type))
            if is_source(op) or not op.name.startswith("npuir."):
                continue
            producers = tuple(sorted({index[o] for o in op.operands if o in index}))
            inputs = tuple(sorted({input_index[o] for o in op.operands if o in input_index}))
            index[op.results[0]] = len(self.rows)
            flops, nbytes = op_flops(op), op_bytes(op)
            self.rows.append(CostRow(
                op=op,
                kind=op.name.removeprefix("npuir."),
                device=_device_of(op),
                cost={d: cost_on(d, nbytes, flops) for d in DEVICES},
                flops=flops,
                nbytes=nbytes,
                result_bytes=N.tensor_bytes(op.results[0].type),
                producers=producers,
                inputs=inputs,
                returned=op.results[0] in returned,
            ))

    def devices(self) -> list[str]:
        return [row.device for row in self.rows]

    def score(self, devices: Iterable[str] | None = None) -> CostReport:
        """The cost under `devices` (default: the devices the ops carry)."""
        placement = self.devices() if devices is None else list(devices)
        report = CostReport()
        consumers: list[set[str]] = [set() for _ in self.rows]
        input_users: list[set[str]] = [set() for _ in self.input_bytes]
        for i, row in enumerate(self.rows):
            d = placement[i]
            parts, c = report.by_device[d], row.cost[d]
            parts["dispatch"] += c.dispatch
            parts["memory"] += c.memory
            parts["compute"] += c.compute
            report.dispatches[d] += 1
            report.bytes_moved += row.nbytes
            report.flops += row.flops
            for p in row.producers:
                consumers[p].add(d)
            for k in row.inputs:
                input_users[k].add(d)
            if row.returned:
                consumers[i].add("cpu")
        for i, row in enumerate(self.rows):
            for d in consumers[i]:
                if d != placement[i]:
                    report.transfer_us += transfer_cost(row.result_bytes)
                    report.transfers += 1
        for nbytes, users in zip(self.input_bytes, input_users, strict=True):
            if users - {"cpu"}:
                report.transfer_us += transfer_cost(nbytes)
                report.transfers += 1
        return report


def estimate(module: ModuleOp) -> CostReport:
    """The cost of an npuir module as placed (see the module docstring)."""
    return CostTable(module).score()


def dispatch_count(module: ModuleOp) -> int:
    """Kernel launches the model charges: one per compute op (sources excluded)."""
    return sum(1 for _, ops in _body(module) for op in ops
               if op.name.startswith("npuir.") and not is_source(op))
