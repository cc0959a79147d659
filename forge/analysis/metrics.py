"""Numbers the compiler report prints, read off the IR at any level (aten, npuir, buffer).

- `count_ops(module)`: ops inside functions (terminators excluded); `op_histogram` by name.
- `count_vregs(module)`: virtual registers. npuir: one per op (sources included);
  buffer: the planned logical values (exec and transfer results).
- `count_buffers(module)`: physical buffers (`buffer.alloc`).
- `peak_bytes_naive(module)`: bytes if every planned value had its own buffer (npuir: every
  non-source op; buffer: every exec/transfer result).
- `peak_bytes_planned(module)`: the memory the plan allocates (buffer IR): its arenas
  (`buffer.arena`) plus the buffers of their own (`dialects.buffer.planned_bytes`).
- `device_transitions(module)`: device changes along the op order, over ops with a device
  (npuir compute ops or `buffer.exec`; sources and transfers do not count).
- `segments(module, device="npu")`: the maximal runs of ops on `device` (what becomes one
  compiled NPU subgraph), each a list of ops.
- `report(module)`: all of the above in one dict, plus what the passes recorded
  (`npuir.schedule`, `buffer.plan`) when present.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp
from xdsl.ir import Operation

from dialects import buffer as B
from dialects import npuir as N

_SOURCES = frozenset(cls for cls in N.npuir_kinds().values() if issubclass(cls, N.SourceOp))


def _body_ops(module: ModuleOp) -> Iterator[Operation]:
    for fn in module.ops:
        if isinstance(fn, func.FuncOp) and fn.body.blocks:
            for op in fn.body.block.ops:
                if op.name != "func.return":
                    yield op


def count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in _body_ops(module))


def op_histogram(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in _body_ops(module))


def _is_npuir(op: Operation) -> bool:
    return op.name.startswith("npuir.")


def count_vregs(module: ModuleOp) -> int:
    n = 0
    for op in _body_ops(module):
        if _is_npuir(op) or isinstance(op, B.WriteOp):
            n += 1
    return n


def count_buffers(module: ModuleOp) -> int:
    return sum(1 for op in _body_ops(module) if isinstance(op, B.AllocOp))


def peak_bytes_naive(module: ModuleOp) -> int:
    total = 0
    for op in _body_ops(module):
        if isinstance(op, B.WriteOp) or (_is_npuir(op) and type(op) not in _SOURCES):
            total += N.tensor_bytes(op.results[0].type)
    return total


def peak_bytes_planned(module: ModuleOp, device: str | None = None) -> int:
    return B.planned_bytes(module, device)


def _device(op: Operation) -> str | None:
    """The device an op runs on (None for sources, transfers, allocs and non-Forge ops)."""
    if type(op) in _SOURCES:
        return None
    if _is_npuir(op) or isinstance(op, B.ExecOp):
        return op.properties["device"].data.value
    return None


def device_sequence(module: ModuleOp) -> list[tuple[Operation, str]]:
    return [(op, d) for op in _body_ops(module) if (d := _device(op)) is not None]


def device_transitions(module: ModuleOp) -> int:
    count, last = 0, None
    for _, d in device_sequence(module):
        if last is not None and d != last:
            count += 1
        last = d
    return count


def segments(module: ModuleOp, device: str = "npu") -> list[list[Operation]]:
    runs: list[list[Operation]] = []
    last = None
    for op, d in device_sequence(module):
        if d == device:
            if last != device:
                runs.append([])
            runs[-1].append(op)
        last = d
    return runs


def _recorded(module: ModuleOp, key: str) -> dict[str, int]:
    attr = module.attributes.get(key)
    if not isinstance(attr, DictionaryAttr):
        return {}
    return {k: v.value.data for k, v in attr.data.items() if isinstance(v, IntegerAttr)}


def report(module: ModuleOp) -> dict[str, Any]:
    """Every metric of `module`, plus the pass records (`schedule`, `plan`) when present."""
    return {
        "ops": count_ops(module),
        "vregs": count_vregs(module),
        "buffers": count_buffers(module),
        "peak_bytes_naive": peak_bytes_naive(module),
        "peak_bytes_planned": peak_bytes_planned(module),
        "transitions": device_transitions(module),
        "npu_segments": len(segments(module, "npu")),
        "schedule": _recorded(module, "npuir.schedule"),
        "plan": _recorded(module, "buffer.plan"),
    }
