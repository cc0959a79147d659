"""`forge.compile`'s stage list for static shapes, ending with the parity check that bisects a mismatch.

Apart from forge/driver/stages.py because the check runs the bisector (forge/driver/bisect.py), which itself
runs those stages one by one.
"""

from __future__ import annotations

from typing import Any

from forge.driver.compilation import Compilation, Stage
from forge.driver.stages import ACCURACY, EXPORT_IMPORT, IMPORTED, INPUTS
from forge.mapped_pages import return_freed_heap


def _check(c: Compilation) -> None:
    """Parity against eager, judged by the bound of what ran; a mismatch is bisected to its first divergent op
    (`report["parity"]["first_divergence"]`, forge/driver/bisect.py)."""
    from forge.driver.parity import check_parity
    from forge.precision import bounds

    runs_as = c.report["runtime_config"].get("runs_as", c.options.precision)
    bound = bounds(runs_as, c.options.weights, c.options.activations).max_abs
    parity = check_parity(c.exported_model, c.result, c.args, c.kwargs, bound)
    if not parity["ok"]:
        from forge.driver.bisect import bisect

        found = bisect(c.exported_model, c.export_args, c.export_kwargs, options=c.options)
        parity["first_divergence"] = found.first.to_json() if found.first else None
        parity["bisect"] = found.summary()
    c.report["parity"] = parity


CHECK = Stage("parity vs eager", _check, clock="check_ms")


def compile_stages(options: Any) -> tuple[Stage, ...]:
    """`forge.compile`'s list: the model to a checked CompiledModel (accuracy and parity when asked)."""
    stages = (INPUTS, EXPORT_IMPORT, *IMPORTED)
    if options.accuracy:
        stages += (ACCURACY,)
    if options.check:
        stages += (CHECK,)
    return stages


def compile_static(
    model: Any, args: Any, kwargs: dict[str, Any] | None = None, *, options: Any, group: Any = None
) -> Any:
    """`forge.compile` for the static shapes of (args, kwargs): `compile_stages(options)` over one Compilation;
    the dynamic-shape facade compiles each bucket with it (`group`: the GraphGroup its graphs join)."""
    c = Compilation(options, model=model, args=args, kwargs=kwargs or {})
    c.extras["graph_group"] = group
    c.run(compile_stages(options))
    c.account_wall_clock()
    return_freed_heap()
    return c.result
