"""The coverage harness: does every graph torch.export produces compile, run and match PyTorch?

For each entry of PyTorch's OpInfo database (`op_db`, float32, CPU) the first sample input is
wrapped in an `nn.Module` whose `forward` takes the sample's tensors and bakes in its other
arguments, then run through every stage, each checked against eager PyTorch:

    export (torch.export) -> import (aten IR) -> interpret (the reference interpreter on that IR)
                          -> compile (forge.compile's passes, lowering, OpenVINO CPU) -> run

Outcomes (`OpResult.status`):

* `pass` -- the interpreter's and the compiled program's outputs match eager: same count, shapes
  and dtypes, values within `torch.allclose(atol=rtol=1e-5)` or the OpInfo's own looser float32
  tolerance; integers and booleans exactly;
* `fail` -- one stage failed, with a classified reason (`unsupported aten op X`, `data-dependent
  shape: ...`, `dtype: ...`, `crash: ...`, or `wrong value: ...`, which is always a bug);
* `not_exportable` -- torch.export itself refused the sample (reason kept); not in the pass rate;
* `random` -- the graph has seeded random ops (OpInfo seeds eager, the graph cannot replay it);
* `skipped` -- no float32 CPU sample, or eager itself is not deterministic (uninitialized output).

The pass rate is passed / (passed + failed). `run_isolated` runs the entries in worker processes so
a native crash fails one op, not the run. `python -m forge.coverage` runs it all and writes the
page docs/coverage.md (ops, and the model zoo: forge.models); `--failures` writes the failure list.

Modules: `opinfo` (one entry through the stages), `isolated` (worker processes), `zoo` (the model
families), `page` (the page, the failure list and the test suite's expectations file).
"""

from forge.coverage.isolated import run_isolated
from forge.coverage.opinfo import (
    FAIL,
    NOT_EXPORTABLE,
    PASS,
    RANDOM,
    SKIPPED,
    OpResult,
    op_database,
    op_id,
    run_op,
    summary,
)

__all__ = [
    "FAIL", "NOT_EXPORTABLE", "PASS", "RANDOM", "SKIPPED", "OpResult", "op_database", "op_id", "run_isolated",
    "run_op", "summary",
]
