"""Source locations and user-facing diagnostics.

Everything here exists so that an error in IR a user wrote (or a pass produced) is reported
the way mlir-opt reports it: one line `file.mlir:3:5: error: message`, followed by the source
line and a caret, and never a Python traceback.

- `LocatingParser` is xDSL's `Parser` that attaches `loc("file.mlir":line:col)` (a builtin
  `FileLineColLoc`) to every parsed operation, pointing at the op name, as MLIR's parser does.
  Explicit `loc(...)` in the text wins. Locations are printed only with `--print-debuginfo`.
- `op_location(op)` reads a `FileLineColLoc` out of any location attribute.
- `with_op(exc, op)` / `attached_op(exc)` tie an exception to the op it is about. Passes can
  raise `pass_failure(op, "message")`; `ForgePattern` attaches the matched op to whatever a
  pattern raises.
- `find_failing_op(root, exc)` finds the op a `VerifyException` from `root.verify()` is about
  (xDSL does not record it).
- `Diagnostic` + `SourceManager` format the message with its source context.
- `emit_warning(op, "message")` / `emit_remark(op, "message")`: a pass reports something that is
  not an error; forge-opt prints it at the op's location (or, with `--verify-diagnostics`, checks it
  against the input's `expected-warning` / `expected-remark` annotations).
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import (
    CallSiteLoc,
    FileLineColLoc,
    FusedLoc,
    IntAttr,
    ModuleOp,
    NameLoc,
    StringAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import (
    DiagnosticException,
    ParseError,
    PassFailedException,
    VerifyException,
)

_OP_ATTR = "_forge_op"


# --------------------------------------------------------------------------- locations


@dataclass(frozen=True)
class SourceLoc:
    """A resolved `file:line:col` position (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        # Column 0 means "no column" (e.g. locations of Python source lines).
        if self.col <= 0:
            return f"{self.file}:{self.line}"
        return f"{self.file}:{self.line}:{self.col}"


def location_of(loc: Attribute | None) -> SourceLoc | None:
    """The file position inside a location attribute, if there is one."""
    match loc:
        case FileLineColLoc():
            return SourceLoc(loc.filename.data, loc.line.data, loc.column.data)
        case NameLoc():
            return location_of(loc.location)
        case CallSiteLoc():
            return location_of(loc.caller)
        case FusedLoc():
            for inner in loc.locations:
                if (found := location_of(inner)) is not None:
                    return found
            return None
        case _:
            return None


def op_location(op: Operation | None) -> SourceLoc | None:
    """The source position of `op`, or None if it has none (e.g. created by a pass)."""
    return None if op is None else location_of(op.location)


def describe_op(op: Operation) -> str:
    """`arith.addi at f.mlir:3:8` or just `arith.addi` when the op has no location."""
    loc = op_location(op)
    return op.name if loc is None else f"{op.name} at {loc}"


class LocatingParser(Parser):
    """xDSL's MLIR parser, plus a `FileLineColLoc` on every operation it parses.

    `line_offset` shifts reported lines (used for chunks of `--split-input-file`).
    Also turns a `VerifyException` raised while parsing (an attribute or type whose
    parameters do not verify) into a `ParseError` at the current position.
    """

    def __init__(
        self, ctx: Context, text: str, name: str = "<stdin>", line_offset: int = 0
    ):
        super().__init__(ctx, text, name)
        self._loc_text = text
        self._loc_file = StringAttr(name)
        self._loc_line_offset = line_offset
        self._loc_newlines: list[int] | None = None

    def _loc_at(self, pos: int) -> FileLineColLoc:
        if self._loc_newlines is None:
            self._loc_newlines = [m.start() for m in re.finditer("\n", self._loc_text)]
        line_index = bisect.bisect_left(self._loc_newlines, pos)
        line_start = self._loc_newlines[line_index - 1] + 1 if line_index else 0
        return FileLineColLoc(
            self._loc_file,
            IntAttr(line_index + 1 + self._loc_line_offset),
            IntAttr(pos - line_start + 1),
        )

    def parse_operation(self) -> Operation:
        start = self._current_token.span.start
        op = super().parse_operation()
        if isinstance(op.location, UnknownLoc):
            text = self._loc_text
            # Point at the op name, past `%a, %b:2 = `, as MLIR does.
            if text.startswith("%", start) and (eq := text.find("=", start)) != -1:
                start = eq + 1
                while start < len(text) and text[start] in " \t\r\n":
                    start += 1
            op.location = self._loc_at(start)
        return op

    def parse_module(self, allow_implicit_module: bool = True) -> ModuleOp:
        try:
            return super().parse_module(allow_implicit_module)
        except VerifyException as e:
            raise ParseError(self._current_token.span, one_line(str(e))) from e


def parse_with_locations(
    ctx: Context,
    text: str,
    name: str = "<stdin>",
    *,
    line_offset: int = 0,
    allow_implicit_module: bool = True,
) -> ModuleOp:
    """Parse MLIR text into a module whose ops carry `FileLineColLoc`s."""
    return LocatingParser(ctx, text, name, line_offset).parse_module(
        allow_implicit_module
    )


# --------------------------------------------------------------------------- op <-> error


def with_op(exc: BaseException, op: Operation) -> BaseException:
    """Record that `exc` is about `op` (keeps the innermost op if already set)."""
    if getattr(exc, _OP_ATTR, None) is None:
        try:
            setattr(exc, _OP_ATTR, op)
        except AttributeError:  # exceptions with __slots__
            pass
    return exc


def attached_op(exc: BaseException) -> Operation | None:
    """The op recorded with `with_op`, if any."""
    return getattr(exc, _OP_ATTR, None)


def pass_failure(op: Operation, message: str) -> PassFailedException:
    """A `PassFailedException` that forge-opt reports at `op`'s location.

    Usage in a pass or pattern: `raise pass_failure(op, "cannot lower dynamic shapes")`.
    """
    exc = PassFailedException(message)
    with_op(exc, op)
    return exc


def find_failing_op(root: Operation, exc: BaseException) -> Operation | None:
    """The op under `root` that raised `exc` during `root.verify()`.

    xDSL's verifier does not record the failing op, so verify each op on its own (only on
    the error path) and pick the one failing with the same message.
    """
    if (op := attached_op(exc)) is not None:
        return op
    wanted = str(exc)
    first: Operation | None = None
    for op in root.walk():
        try:
            op.verify(verify_nested_ops=False)
        except DiagnosticException as e:
            if str(e) == wanted:
                return op
            if first is None:
                first = op
        except Exception:
            continue
    # Raised by a block or region check (e.g. a missing terminator): the deepest op whose
    # full verification raises it. Quadratic in nesting depth; error path only.
    deepest: Operation | None = None
    for op in root.walk():
        try:
            op.verify()
        except DiagnosticException as e:
            if str(e) == wanted:
                deepest = op
        except Exception:
            continue
    return deepest if deepest is not None else first


# --------------------------------------------------------------------------- formatting


def one_line(message: str) -> str:
    """Collapse a multi-line xDSL message into one line."""
    return " ".join(part.strip() for part in message.splitlines() if part.strip())


@dataclass
class SourceManager:
    """Source text of the inputs, by file name and (global) line number."""

    _lines: dict[str, dict[int, str]] = field(default_factory=dict)

    def add(self, name: str, text: str, line_offset: int = 0) -> None:
        lines = self._lines.setdefault(name, {})
        for i, line in enumerate(text.split("\n")):
            lines[line_offset + i + 1] = line.rstrip("\r")

    def line(self, loc: SourceLoc) -> str | None:
        return self._lines.get(loc.file, {}).get(loc.line)


@dataclass
class Diagnostic:
    """One error (or note) with an optional location and source snippet."""

    message: str
    loc: SourceLoc | None = None
    severity: str = "error"
    length: int = 1
    prefix: str | None = None
    """Shown instead of the location when there is none (e.g. `forge-opt`)."""
    notes: list[str] = field(default_factory=list[str])
    """Driver notes without a location (`while running pass 'p'`): commentary, never verified."""
    context: list[str] = field(default_factory=list[str])
    """Lines shown verbatim under the message (used when there is no source line)."""
    related: list[Diagnostic] = field(default_factory=list["Diagnostic"])
    """Notes at a location of their own (`originally declared here`), printed after the message as
    `file:line:col: note: ...` and checked by `--verify-diagnostics` like any diagnostic."""

    def format(self, sources: SourceManager | None = None) -> str:
        where = str(self.loc) if self.loc is not None else self.prefix
        head = f"{where}: " if where else ""
        out = [f"{head}{self.severity}: {self.message}"]
        if self.loc is not None and sources is not None:
            line = sources.line(self.loc)
            if line is not None:
                col = max(self.loc.col - 1, 0)
                width = max(1, min(self.length, len(line) - col))
                out.append(line)
                out.append(" " * col + "^" + "~" * (width - 1))
        out.extend(self.context)
        out.extend(note.format(sources) for note in self.related)
        out.extend(f"note: {note}" for note in self.notes)
        return "\n".join(out)

    def all(self) -> list[Diagnostic]:
        """This diagnostic and its located notes: what `--verify-diagnostics` checks."""
        return [self, *self.related]


def parse_error_diagnostic(e: ParseError) -> Diagnostic:
    """A `ParseError` (location in its span) as a diagnostic."""
    span = e.span
    loc = span.get_location()
    diag = Diagnostic(
        one_line(e.msg),
        SourceLoc(loc.file, loc.line, int(loc.col)),
        length=max(1, min(span.end - span.start, 80)),
    )
    refs = getattr(e, "refs", None) or []
    ref_text = one_line(getattr(e, "ref_text", None) or "").rstrip(":")
    for ref_span, ref_msg in refs:
        ref_loc = ref_span.get_location()
        text = one_line(ref_msg or "") or ref_text or "see here"
        diag.related.append(Diagnostic(text, SourceLoc(ref_loc.file, ref_loc.line, int(ref_loc.col)),
                                       severity="note", length=max(1, ref_span.end - ref_span.start)))
    return diag


def op_diagnostic(
    message: str, op: Operation | None, *, fallback: str | None = None
) -> Diagnostic:
    """A diagnostic about `op`: `file:l:c: error: 'name' op message`."""
    if op is None:
        return Diagnostic(one_line(message), prefix=fallback)
    text = one_line(message).removeprefix("Operation does not verify: ")
    text = text.removeprefix(f"Operation {op.name} ")
    return Diagnostic(
        f"'{op.name}' op {text}",
        op_location(op),
        length=len(op.name),
        prefix=fallback,
    )


# --------------------------------------------------------------------------- warnings and remarks

DiagnosticSink = Callable[[Diagnostic], None]

_SINK: ContextVar[DiagnosticSink | None] = ContextVar("forge_diagnostic_sink", default=None)


def emit_diagnostic(op: Operation | None, message: str, severity: str = "warning") -> None:
    """Report `message` at `op` (None: no location) with `severity` ("warning", "remark" or "note").

    The diagnostic goes to the sink of the innermost `collect_diagnostics` block (forge-opt installs
    one per input chunk), or to stderr when nobody collects. An error is not emitted: raise
    `pass_failure(op, message)`, which stops the pass.
    """
    if severity not in ("warning", "remark", "note"):
        raise ValueError(f"severity must be 'warning', 'remark' or 'note', not {severity!r} "
                         "(raise pass_failure(op, message) for an error)")
    diag = Diagnostic(one_line(message), op_location(op), severity=severity,
                      length=len(op.name) if op is not None else 1)
    sink = _SINK.get()
    if sink is None:
        print(diag.format(), file=sys.stderr)
    else:
        sink(diag)


def emit_warning(op: Operation | None, message: str) -> None:
    """`emit_diagnostic(op, message, "warning")`."""
    emit_diagnostic(op, message, "warning")


def emit_remark(op: Operation | None, message: str) -> None:
    """`emit_diagnostic(op, message, "remark")`."""
    emit_diagnostic(op, message, "remark")


@contextmanager
def collect_diagnostics(sink: DiagnosticSink) -> Iterator[DiagnosticSink]:
    """Send the diagnostics emitted inside the block to `sink`."""
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)
