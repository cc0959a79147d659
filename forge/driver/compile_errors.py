"""The model compiler's user-facing errors: what `forge.compile`, `forge.compile_meta` and `forge.load`
raise for bad input, each with a message naming what failed and where (the CLI prints it, no traceback)."""

from __future__ import annotations


class CompileError(Exception):
    """A user-facing compilation failure, naming the stage that failed."""


class LoadError(Exception):
    """A saved model directory that cannot be loaded (missing or corrupt files), with the path."""
