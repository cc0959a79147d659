"""Dialect-to-dialect conversions (aten -> npuir -> buffer) and memory planning, one per module.

`PASSES` maps each conversion's pass name to a lazy loader (importing this package imports
nothing else). The pipelines that run them are named in `forge.pipelines`.
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass


def _lazy(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(import_module(f"lowering.{module}"), cls)


PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "lower-aten-to-npuir": _lazy("aten_to_npuir", "LowerAtenToNpuirPass"),
    "cached-attention": _lazy("cached_attention", "CachedAttentionPass"),
    "schedule-device-affinity": _lazy("schedule_device_affinity", "ScheduleDeviceAffinityPass"),
    "lower-npuir-to-buffer": _lazy("npuir_to_buffer", "LowerNpuirToBufferPass"),
    "check-buffer-allocation": _lazy("check_allocation", "CheckBufferAllocationPass"),
}
