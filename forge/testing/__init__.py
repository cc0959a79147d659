"""Test support for passes and patterns, shipped with the package so that users can test their own.

    from forge.testing import check_pattern
    check_pattern(MyPattern(), motifs=["attention"])   # hypothesis property: IR verifies, outputs unchanged

- `check_pattern` (and `check_case`, `assert_preserves_semantics`, `apply_rewrite`, `copy_weights`,
  `working_copy`)
  live in `forge.testing.check` and are importable from here; hypothesis, a dev extra, is imported
  only when a property runs, so importing `forge.testing` or `forge.testing.check` never needs it.
- `forge.testing.strategies` generates well-typed `aten` graphs (it is built on hypothesis).
- `forge.testing.debug_passes` holds passes registered in forge-opt only when the environment variable
  `FORGE_TEST_PASSES=1` is set (lit tests of the driver's debugging flags use them).

Seeded inputs for a function (`random_inputs`) belong to the product's semantic checker,
`forge.driver.semantics`.
"""

from __future__ import annotations

from typing import Any

_CHECK_NAMES = (
    "apply_rewrite", "assert_preserves_semantics", "check_case", "check_pattern", "copy_weights", "working_copy",
)

__all__ = list(_CHECK_NAMES)


def __getattr__(name: str) -> Any:
    """`forge.testing.check_pattern` and friends, imported on first use.

    Lazy for start-up cost: forge-opt imports `forge.testing.debug_passes` (FORGE_TEST_PASSES=1), which
    must not load torch and the interpreter through `forge.testing.check`.
    """
    if name in _CHECK_NAMES:
        from forge.testing import check

        return getattr(check, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
