"""`forge-opt --verify-diagnostics`: mlir-opt's check of emitted diagnostics against the input's
`expected-*` annotations.

An annotation is a line (usually a comment) holding

    expected-<severity>[-re] [@+N | @-N | @above | @below | @unknown] {{message}}

with <severity> one of error, warning, note, remark. It expects a diagnostic of that severity whose
message contains `message` on a line of the input: its own line by default, N lines below or above
it, the nearest line above or below that holds no annotation (`@above`, `@below`), or a diagnostic
with no location in the input (`@unknown`). With `-re`, the parts of `message` written `{{...}}` are
Python regular expressions and the rest is literal text.

After each chunk (`--split-input-file`) every emitted diagnostic must match one annotation of its
line and every annotation one diagnostic. A mismatch is an error at the diagnostic (`unexpected
error: ...`) or at the annotation (`expected error "..." was not produced`); forge-opt goes on with
the next chunk and exits 1 at the end. A line that starts an annotation (`expected-error @` or
`expected-error {`) but does not follow the syntax is an error too: a test with a mistyped
annotation would otherwise pass without checking anything.

xdsl-opt's `--verify-diagnostics` (print the first error of each chunk to stdout, exit 0, for
FileCheck) is `--xdsl-verify-diagnostics` (forge/cli/opt.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from forge.diagnostics import Diagnostic, SourceLoc

SEVERITIES = ("error", "warning", "note", "remark")

_ANNOTATION = re.compile(
    r"expected-(?P<severity>error|warning|note|remark)(?P<regex>-re)?[ \t]*"
    r"(?:@(?P<where>[+-][0-9]+|above|below|unknown))?[ \t]*\{\{(?P<text>.*)\}\}[ \t]*$"
)
_ATTEMPT = re.compile(r"expected-(?:error|warning|note|remark)(?:-re)?[ \t]*[@{]")
"""What starts an annotation: if a line has this but not a whole `_ANNOTATION`, it is malformed."""

SYNTAX = "expected-<error|warning|note|remark>[-re] [@+N|@-N|@above|@below|@unknown] {{message}}"


@dataclass
class Expected:
    """One annotation: a diagnostic the input expects."""

    severity: str
    line: int | None
    """The input line the diagnostic must be on (None: `@unknown`, no location in the input)."""
    text: str
    pattern: re.Pattern[str] | None
    """With `-re`: the message as a regular expression."""
    at: SourceLoc
    """Where the annotation is written."""
    matched: bool = False

    def matches(self, message: str) -> bool:
        if self.pattern is not None:
            return self.pattern.search(message) is not None
        return self.text in message


def _regex(text: str) -> re.Pattern[str]:
    """`-re` text: `{{...}}` parts are regular expressions, the rest is literal."""
    parts = re.split(r"\{\{(.*?)\}\}", text)
    return re.compile("".join(part if i % 2 else re.escape(part) for i, part in enumerate(parts)))


def read_expectations(text: str, file: str, line_offset: int = 0) -> tuple[list[Expected], list[Diagnostic]]:
    """The annotations of `text` (a chunk of `file` starting after `line_offset` lines), and an error
    for each malformed one."""
    expected: list[Expected] = []
    errors: list[Diagnostic] = []
    below: list[Expected] = []
    last_plain = line_offset  # line number of the last line without an annotation (0: none)
    for index, line in enumerate(text.split("\n")):
        number = line_offset + index + 1
        found = _ANNOTATION.search(line)
        if found is None:
            if (attempt := _ATTEMPT.search(line)) is not None:
                errors.append(Diagnostic(f"malformed diagnostic annotation; write {SYNTAX}",
                                         SourceLoc(file, number, attempt.start() + 1), length=len(attempt.group())))
                continue
            for pending in below:
                pending.line = number
            below = []
            last_plain = number
            continue
        at = SourceLoc(file, number, found.start() + 1)
        text_ = found.group("text")
        try:
            pattern = _regex(text_) if found.group("regex") else None
        except re.error as e:
            errors.append(Diagnostic(f"invalid regular expression in annotation: {e}", at,
                                     length=len(found.group())))
            continue
        where = found.group("where")
        entry = Expected(found.group("severity"), number, text_, pattern, at)
        if where == "unknown":
            entry.line = None
        elif where == "above":
            entry.line = last_plain if last_plain > line_offset else None
            if entry.line is None:
                errors.append(Diagnostic("'@above' annotation on the first line: there is no line above", at))
                continue
        elif where == "below":
            below.append(entry)
        elif where is not None:
            entry.line = number + int(where)
        expected.append(entry)
    for pending in below:
        errors.append(Diagnostic("'@below' annotation with no line below it", pending.at))
        expected.remove(pending)
    return expected, errors


def check(expected: Sequence[Expected], emitted: Iterable[Diagnostic], file: str) -> list[Diagnostic]:
    """Match the diagnostics emitted for one chunk of `file` with its annotations; an error for each
    unexpected diagnostic, each severity mismatch and each annotation left unmatched."""
    problems: list[Diagnostic] = []
    for diag in emitted:
        line = diag.loc.line if diag.loc is not None and diag.loc.file == file else None
        candidates = [e for e in expected if not e.matched and e.line == line and e.matches(diag.message)]
        same = next((e for e in candidates if e.severity == diag.severity), None)
        if same is not None:
            same.matched = True
        elif candidates:
            candidates[0].matched = True
            problems.append(Diagnostic(
                f"'{diag.severity}' diagnostic emitted when expecting a '{candidates[0].severity}': {diag.message}",
                diag.loc, length=diag.length, prefix=None if line is not None else "<unknown location>"))
        else:
            problems.append(Diagnostic(f"unexpected {diag.severity}: {diag.message}", diag.loc, length=diag.length,
                                       prefix="<unknown location>"))
    for e in expected:
        if not e.matched:
            where = "" if e.line is None or e.line == e.at.line else f" on line {e.line}"
            where = " at an unknown location" if e.line is None else where
            problems.append(Diagnostic(f'expected {e.severity} "{e.text}" was not produced{where}', e.at,
                                       length=len(e.severity) + len("expected-")))
    return problems
