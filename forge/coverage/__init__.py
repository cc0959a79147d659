"""The coverage harness: does every graph torch.export produces compile, run and match PyTorch?

For each entry of PyTorch's OpInfo database (`op_db`, CPU) every float32 sample input is run -- not
only the first: a `div` whose divisor is a tensor can pass while `div` by a Python number is wrong.
All samples of one entry are one batch module (the fuzzer's, forge.testing.fuzz.run): a sample's
tensors are the module's inputs, its other arguments (Python numbers, shapes, dtypes) are baked into
the call as they are. The batch goes through every stage once, and each sample's outputs are judged
against eager on their own, by the fuzzer's rules (forge.testing.fuzz.compare) with the OpInfo's
tolerance:

    export (torch.export) -> import (aten IR) -> interpret (the reference interpreter on that IR)
    forge.compile for each runtime (openvino, nnfactory) -> run

A stage that fails for the whole batch splits it until the failing samples stand alone. Each sample
ends in one class (`opinfo.STATUSES`): `pass`; `wrong` (a wrong value, dtype or shape: always a bug);
`deviation` (a difference listed in forge.testing.fuzz.deviations); `refused` (Forge names why it
cannot: an unsupported op, a data-dependent shape, a dtype); `error` (a crash); `not_exportable`
(torch.export refuses it); `random` (its values change with the seed, which the graph cannot replay);
`skipped` (nothing deterministic to compare: no dense tensor output, an uninitialized output, eager
itself fails or differs between two runs). An entry's status is its worst sample's.

The pass rate is pass / (pass + wrong + deviation + refused + error), in samples and in entries.
`run_isolated` runs the entries in worker processes so a native crash fails one entry, not the run.
`python -m forge.coverage` runs it all and writes the page docs/coverage.md (ops, and the model zoo:
forge.models); `--failures` writes the failure list.

Modules: `opinfo` (one entry through the stages), `isolated` (worker processes), `zoo` (the model
families), `page` (the page, the failure list and the test suite's expectations file).
"""

from forge.coverage.isolated import run_isolated
from forge.coverage.opinfo import (
    DEVIATION,
    ERROR,
    NOT_EXPORTABLE,
    PASS,
    RANDOM,
    REFUSED,
    SKIPPED,
    WRONG,
    OpResult,
    SampleResult,
    op_database,
    op_id,
    run_op,
    summary,
)

__all__ = [
    "DEVIATION",
    "ERROR",
    "NOT_EXPORTABLE",
    "PASS",
    "RANDOM",
    "REFUSED",
    "SKIPPED",
    "WRONG",
    "OpResult",
    "SampleResult",
    "op_database",
    "op_id",
    "run_isolated",
    "run_op",
    "summary",
]
