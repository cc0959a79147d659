"""The importer's user-facing errors (one module so every importer stage can raise them)."""

from __future__ import annotations


class FrontendError(Exception):
    """Base of the importer's user-facing errors."""


class UnsupportedOpsError(FrontendError):
    """The graph uses ATen ops that the `aten` dialect does not have (all of them are listed)."""

    def __init__(self, unsupported: dict[str, tuple[int, str]]):
        self.unsupported = unsupported
        lines = [f"  {name}  x{count}  (first at {where})" for name, (count, where) in sorted(unsupported.items())]
        super().__init__(
            f"{len(unsupported)} unsupported ATen op(s) in the exported graph:\n" + "\n".join(lines)
        )


class InputMutationError(FrontendError):
    """The program mutates a tensor it does not own (a user input, parameter or buffer)."""


class DataDependentShapeError(FrontendError):
    """A result's shape depends on tensor values (an unbacked SymInt): Forge compiles static shapes."""

    def __init__(self, op: str, where: str, node: str, why: str):
        self.op, self.where, self.node = op, where, node
        super().__init__(f"{where}: {node}: {op}: result shape depends on tensor values: {why}")
