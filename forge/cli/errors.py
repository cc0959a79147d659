"""forge-opt's errors and how they reach the user: exit codes, error types, and `report`.

A user error (a parse error, IR that does not verify, a bad pipeline, a pass failing with a
diagnostic, a pass that changed the results under --verify-semantics, an exception raised by a
plug-in's own code, a Python value where an op wants an attribute) is one mlir-opt style
diagnostic with exit code 1, never a traceback (`--show-traceback` prints it; the reproducer file
keeps it); an internal error (a bug in Forge's own code, see forge/cli/blame.py) prints the
traceback, then a diagnostic at the op it was about, and exits 70.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException, ParseError

from forge.cli.blame import UserFault, format_traceback, non_attribute_message, non_attribute_property, user_fault
from forge.diagnostics import (
    Diagnostic,
    SourceManager,
    attached_op,
    find_failing_op,
    one_line,
    op_diagnostic,
    parse_error_diagnostic,
)
from forge.pipeline import PassFailure

PROG = "forge-opt"
EXIT_ERROR = 1
EXIT_INTERNAL = 70


class ForgeOptError(Exception):
    """A user error found by the driver itself (not in the IR): one line, exit code 1."""

    def __init__(
        self,
        message: str,
        notes: Sequence[str] = (),
        context: Sequence[str] = (),
        prefix: str = PROG,
    ):
        super().__init__(message)
        self.message = message
        self.notes = list(notes)
        self.context = list(context)
        self.prefix = prefix
        """Where the error is (`plugin.py:3`), else the program name."""


class OutputVerifyError(Exception):
    """The IR did not verify after the pipeline (it did before)."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class PassRunError(Exception):
    """A pass failed; carries the pipeline's `PassFailure` and the reproducer written for it."""

    def __init__(
        self,
        failure: PassFailure,
        reproducer: str | None = None,
        command: str | None = None,
        reproducer_error: str | None = None,
    ):
        super().__init__(str(failure))
        self.failure = failure
        self.error = failure.error
        self.reproducer = reproducer
        self.command = command
        self.reproducer_error = reproducer_error

    def reduce_command(self) -> str:
        """The forge-reduce command that shrinks the reproducer while it fails the same way."""
        from forge.cli.reduce import reduce_command  # the reducer's module is only needed for a failure

        return reduce_command(self.reproducer, self.failure.kind, self.failure.name, self.command)

    def reproducer_notes(self) -> list[str]:
        """Where the reproducer is and how to run it, or why there is none."""
        if self.reproducer is not None:
            return [
                f"reproducer (the IR before this pass) written to {self.reproducer}",
                f"reproduce with: {self.command}",
                f"reduce with: {self.reduce_command()}",
            ]
        if self.reproducer_error is not None:
            return [f"could not write a reproducer: {self.reproducer_error}"]
        return []


@dataclass
class Diagnosis:
    """How forge-opt reports an error: the diagnostic, the exit code, and a traceback to print first
    (an internal error, or `--show-traceback`)."""

    diagnostic: Diagnostic
    code: int
    traceback: str = ""


def diagnose(
    error: BaseException,
    *,
    module: ModuleOp | None,
    input_name: str,
    n_passes: int,
    show_traceback: bool = False,
) -> Diagnosis:
    """The diagnostic for `error`, raised while forge-opt processed `module`."""
    if isinstance(error, ForgeOptError):
        return Diagnosis(Diagnostic(error.message, prefix=error.prefix, notes=error.notes, context=error.context),
                         EXIT_ERROR)
    if isinstance(error, ParseError):
        return Diagnosis(parse_error_diagnostic(error), EXIT_ERROR)
    diag = _semantics_diagnostic(error, n_passes, input_name)
    if diag is not None:
        return Diagnosis(diag, EXIT_ERROR)
    cause, op, notes = _cause(error, module, n_passes)
    shown = ""
    if isinstance(cause, DiagnosticException):
        diag, code = op_diagnostic(str(cause), op, fallback=input_name), EXIT_ERROR
    elif (user := _user_error(cause, op, module, error, input_name)) is not None:
        if show_traceback:
            shown = format_traceback(cause)
        diag, code = user, EXIT_ERROR
        if not show_traceback:
            notes.append("rerun with --show-traceback to print the Python traceback" + (
                " (the reproducer has it)" if isinstance(error, PassRunError) and error.reproducer else ""))
    else:  # an internal error: show where it happened
        shown = "".join(traceback.format_exception(cause))
        diag, code = _internal_error(cause, op), EXIT_INTERNAL
    diag.notes += notes
    return Diagnosis(diag, code, shown)


def report(
    error: BaseException,
    stderr: IO[str],
    *,
    sources: SourceManager,
    module: ModuleOp | None,
    input_name: str,
    n_passes: int,
    show_traceback: bool = False,
) -> int:
    """Print `error`, raised while forge-opt processed `module`, as a diagnostic; return the exit code."""
    diagnosis = diagnose(error, module=module, input_name=input_name, n_passes=n_passes,
                         show_traceback=show_traceback)
    print(diagnosis.traceback, file=stderr, end="")
    print(diagnosis.diagnostic.format(sources), file=stderr)
    return diagnosis.code


def _user_error(
    cause: BaseException, op: Operation | None, module: ModuleOp | None, error: BaseException, input_name: str
) -> Diagnostic | None:
    """The diagnostic for an exception that is the user's fault (see forge/cli/blame.py), else None."""
    if module is not None and (bad := non_attribute_property(module)) is not None:
        bad_op, kind, name, value = bad
        return op_diagnostic(non_attribute_message(bad_op, kind, name, value), bad_op, fallback=input_name)
    fault = user_fault(cause)
    if fault is None:
        return None
    op = op if op is not None else fault.op
    diag = op_diagnostic(f"{_who(fault, error)} raised {type(cause).__name__}: {one_line(str(cause))}",
                         op, fallback=input_name)
    diag.notes.append(f"raised at {fault.where()} (in {fault.function})")
    return diag


def _who(fault: UserFault, error: BaseException) -> str:
    """`pattern 'P' of pass 'p'` / `pass 'p'` / `plug-in code`."""
    name = error.failure.name if isinstance(error, PassRunError) else None
    pass_text = f"pass '{name}'" if name else ""
    if fault.pattern:
        return f"pattern '{fault.pattern}'" + (f" of {pass_text}" if pass_text else "")
    return pass_text or "plug-in code"


def _semantics_diagnostic(error: BaseException, n_passes: int, input_name: str) -> Diagnostic | None:
    """--verify-semantics errors: an input it cannot check, or a pass that changed the results."""
    if "forge.semantics" not in sys.modules:  # then no error can come from it: do not import it to ask
        return None
    from forge.semantics import SemanticMismatch, SemanticsError  # lazy: xDSL's interpreter

    if isinstance(error, SemanticsError):
        return op_diagnostic(f"--verify-semantics: {error.message}", error.op, fallback=input_name)
    if isinstance(error, PassRunError) and isinstance(error.error, SemanticMismatch):
        diag = error.error.diagnostic(n_passes, input_name)
        diag.notes += error.reproducer_notes()
        return diag
    return None


def _cause(
    error: BaseException, module: ModuleOp | None, n_passes: int
) -> tuple[BaseException, Operation | None, list[str]]:
    """The error to report, the op it is about and notes on where in the pipeline it happened."""
    if isinstance(error, PassRunError):
        failure = error.failure
        position = f"#{failure.index + 1} of {n_passes}"
        if failure.kind == "verify":
            note = f"the IR does not verify after pass '{failure.name}' ({position})"
            op = find_failing_op(module, failure.error) if module is not None else None
        else:
            note = f"while running pass '{failure.name}' ({position})"
            op = attached_op(failure.error)
        return error.error, op, [note, *error.reproducer_notes()]
    if isinstance(error, OutputVerifyError):
        note = (
            "the input verified, so a pass in the pipeline produced invalid IR; "
            "rerun with --verify-each to find it"
        )
        op = find_failing_op(module, error.error) if module is not None else None
        return error.error, op, [note]
    if isinstance(error, DiagnosticException) and module is not None:
        return error, find_failing_op(module, error), []
    return error, None, []


def _internal_error(error: BaseException, op: Operation | None) -> Diagnostic:
    message = f"{type(error).__name__}: {one_line(str(error))}"
    diag = op_diagnostic(f"internal error: {message}", op, fallback=PROG)
    if op is not None:  # `'op' op internal error` reads badly
        diag.message = f"internal error at '{op.name}': {message}"
    return diag
