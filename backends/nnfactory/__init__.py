"""The NNFactory backend: buffer IR -> one compiled graph per NPU segment, CPU ops in between.

    from backends.nnfactory import emit, emit_python

    program = emit(buffer_module, weights, runtime="openvino", device="CPU")   # Program
    outputs = program(*inputs)                   # or program.executor(): CompiledNPUExecutor
    print(program.summary())                     # segments, ops, build/compile ms
    emit_python(buffer_module, weights, "model.py")   # standalone program + model.safetensors

Modules: `runtime` (the runtime interface: `Runtime`, `CompiledGraph`, `get_runtime`,
`available_runtimes`), `graph_builder` (`GraphBuilder`, the NNFactory-shaped graph API; its spatial
ops in `spatial_ops`) and
`graph_values` (its nodes, dtypes and build errors), `openvino_runtime` / `intel_runtime` (the two
implementations),
`program` (the data model: `Program`, `ValueRef`, steps, `EmitError`), `analysis` (segments,
cpu steps and transfers of a buffer function), `emitter` (`emit`: the graphs), `executor`
(`CompiledNPUExecutor`), `pyemit` (`emit_python`). What each npuir kind computes and how it is
built comes from the kind table, `forge.kinds`. The command lines are `forge.cli.emit` and
`forge.cli.pyemit`.
Names are imported lazily: importing the package (e.g. for the runtimes) loads nothing else.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "emit": "emitter",
    "EmitError": "program",
    "Program": "program",
    "Segment": "program",
    "SegmentStats": "program",
    "ValueRef": "program",
    "CompiledNPUExecutor": "executor",
    "ExecutorInputError": "executor",
    "emit_python": "pyemit",
    "get_runtime": "runtime",
    "available_runtimes": "runtime",
    "RuntimeUnavailable": "runtime",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
