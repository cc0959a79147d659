"""The named pass pipelines, each defined once: tuples of pass names, nothing else (no imports).

The model compiler (`forge.compile`) runs `DEFAULT_PIPELINE` on the aten module, then
`LOWER_TO_NPUIR` and `PLAN_MEMORY` (together `LOWERING_PIPELINE`) as two timed stages. Every
other caller (tests, bench/, the Makefile's demo) names the sequence it runs here instead of
slicing a longer one by position, so changing a pipeline changes it everywhere at once.
A name is a pass spelling for `forge-opt -p` / `forge.driver.pass_stages.run_passes`; options may be added
by a caller (e.g. `lower-aten-to-npuir{cpu-ops=gather}` in place of `LOWER_ATEN`).
"""

SIMPLIFY = ("dce", "cse", "fold")
"""Dead code, common subexpressions and constants: what runs before any fusion."""

OPTIMIZATION_PASSES = (*SIMPLIFY, "fuse-attention", "fuse-ops", "layout")
"""Every optimization pass once, in order ("the six passes"), without the cleanup after fusion."""

CLEANUP = ("dce", "cse")
"""Run again after fusion and layout: they leave dead and duplicated ops behind."""

DEFAULT_PIPELINE = (*OPTIMIZATION_PASSES, *CLEANUP)
"""The optimization pipeline the model compiler runs on the aten module."""

LOWER_ATEN = "lower-aten-to-npuir"
"""aten -> npuir; its options set the device policy, so callers may swap in a spelling with options."""

SCHEDULE_DEVICES = ("schedule-device-affinity",)
"""Group the npuir ops of each device together (fewer device transitions)."""

CACHED_ATTENTION = ("cached-attention",)
"""Attention over a written KV cache reads the cache before the write (the write leaves the device's path)."""

LOWER_TO_NPUIR = (LOWER_ATEN, *CACHED_ATTENTION, *SCHEDULE_DEVICES)
"""aten -> npuir (device affinity, virtual registers), attention over KV caches in place, then the
device-affinity schedule."""

PLAN_MEMORY = ("lower-npuir-to-buffer",)
"""npuir -> buffer: liveness, explicit transfers, linear-scan buffer allocation."""

LOWERING_PIPELINE = (*LOWER_TO_NPUIR, *PLAN_MEMORY)
"""aten -> npuir -> buffer, as the model compiler runs it (two stages: `LOWER_TO_NPUIR`, `PLAN_MEMORY`)."""

CHECKED_LOWERING_PIPELINE = (*LOWERING_PIPELINE, "check-buffer-allocation")
"""`LOWERING_PIPELINE`, then the allocation checker (tests; the model compiler does not run it)."""
