"""forge-opt's `--verify-semantics`: the glue between its flags and `forge.driver.semantics.SemanticChecker`.

The checker is an observer of the pipeline; when a pass changes the results it raises a
`SemanticMismatch`, which forge-opt turns into a pipeline failure (`semantic_failure`) so that the
failing pass gets a reproducer like any other, replayed with the same checking flags
(`semantics_flags`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from forge.pass_runner import PassFailure, PipelineRunner

if TYPE_CHECKING:  # forge.driver.semantics imports xDSL's interpreter: only a checked run needs it
    from forge.driver.semantics import SemanticChecker, SemanticMismatch


def semantic_checker(args: argparse.Namespace, module: ModuleOp, n_passes: int) -> SemanticChecker | None:
    """The observer comparing results before and after each pass, when --verify-semantics asks for it."""
    if not args.verify_semantics or not n_passes:
        return None
    from forge.driver.semantics import SemanticChecker
    from forge.weights import weights_of  # lazy: start-up cost (torch), needed by the check anyway

    return SemanticChecker(
        module,
        weights_of(module),
        seed=args.verify_semantics_seed,
        atol=args.verify_semantics_atol,
        rtol=args.verify_semantics_rtol,
    )


def semantic_failure(mismatch: SemanticMismatch, runner: PipelineRunner) -> PassFailure:
    """A --verify-semantics mismatch as a failure of the pipeline `runner` ran (for the reproducer)."""
    return PassFailure(
        name=mismatch.name,
        index=mismatch.index,
        pass_=runner.passes[mismatch.index],
        error=mismatch,
        kind="semantics",
        before=mismatch.before,
        records=list(runner.records),
        remaining=runner.names[mismatch.index :],
        events=[],
    )


def semantics_flags(args: argparse.Namespace) -> list[str]:
    """The --verify-semantics flags of this run, for a reproducer command line."""
    flags = ["--verify-semantics"]
    if args.verify_semantics_seed != 0:
        flags.append(f"--verify-semantics-seed={args.verify_semantics_seed}")
    if args.verify_semantics_atol is not None:
        flags.append(f"--verify-semantics-atol={args.verify_semantics_atol}")
    if args.verify_semantics_rtol is not None:
        flags.append(f"--verify-semantics-rtol={args.verify_semantics_rtol}")
    return flags
