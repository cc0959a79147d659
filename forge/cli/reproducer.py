"""Reproducers: when a pass fails, forge-opt writes the IR the pass was given to a file.

The file's header says what failed (a crash, IR that does not verify, wrong results), names the
failing pass, what went wrong, the exact `forge-opt FILE -p PASS` command that fails the same way
(with the plug-ins and checking flags of this run, and relative paths in pass options made
absolute, so it runs from any directory), the rest of the pipeline and, for an exception, the
Python traceback; the module's weights, if it has any, go beside it. The error forge-opt prints then
notes where the reproducer is and the command (`PassRunError.reproducer_notes`).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException

from forge.cli.blame import format_traceback
from forge.cli.companion_weights import save_companion_weights
from forge.cli.opt_errors import PROG, PassRunError
from forge.cli.opt_passes import TEST_PASSES_ENV
from forge.cli.verify_semantics import semantics_flags
from forge.diagnostics import one_line
from forge.pass_runner import PassFailure

REPRODUCER_NAME = "forge-opt-reproducer.mlir"

_WHAT_FAILED = {
    "raised": "raised",
    "verify": "left IR that does not verify",
    "semantics": "changed the results (--verify-semantics)",
}
"""How the header says what the pass did, by `PassFailure.kind`."""


@dataclass(frozen=True)
class Reproducer:
    """How this forge-opt run writes reproducers and the commands that replay them."""

    directory: str | None
    """--reproducer-dir; None: a new file in the system temp directory."""
    flags: tuple[str, ...]
    """Flags every reproduce command repeats: the plug-ins and --allow-unregistered-dialect."""
    semantics_flags: tuple[str, ...]
    """The --verify-semantics flags, repeated for a pass that changed the results."""
    test_passes: Collection[str]
    """Test-only passes of this run: replaying them needs FORGE_TEST_PASSES=1."""

    @classmethod
    def for_run(cls, args: argparse.Namespace, plugin_files: list[str], test_passes: Collection[str]) -> Reproducer:
        flags: list[str] = []
        for plugin in plugin_files:
            flags += ["--load-pass-plugin", shlex.quote(os.path.abspath(plugin))]
        if args.allow_unregistered_dialect:
            flags.append("--allow-unregistered-dialect")
        return cls(args.reproducer_dir, tuple(flags), tuple(semantics_flags(args)), test_passes)

    def command(self, path: str, failure: PassFailure) -> str:
        """The forge-opt command that runs just the failing pass on the reproducer at `path`."""
        env = f"{TEST_PASSES_ENV}=1 " if failure.name.split("{", 1)[0] in self.test_passes else ""
        flags = list(self.flags)
        if failure.kind == "verify":
            flags.append("--verify-each")
        if failure.kind == "semantics":
            flags += self.semantics_flags
        return " ".join([f"{env}{PROG}", shlex.quote(path), *flags, "-p", shlex.quote(absolute_paths(failure.name))])

    def write(self, failure: PassFailure, module: ModuleOp | None) -> PassRunError:
        """Write the IR the failing pass was given (and `module`'s weights); return the error to report."""
        if failure.before is None:
            return PassRunError(failure)
        try:
            path = self._new_path()
            command = self.command(path, failure)
            text = "\n".join(_header(failure, command, path)) + "\n" + _generic_text(failure.before)
            with open(path, "w") as f:
                f.write(text)
            if module is not None:
                save_companion_weights(path, module)
        except OSError as e:
            return PassRunError(failure, reproducer_error=f"{e.strerror}: {e.filename}")
        return PassRunError(failure, path, command)

    def _new_path(self) -> str:
        if self.directory:
            os.makedirs(self.directory, exist_ok=True)
            return os.path.abspath(os.path.join(self.directory, REPRODUCER_NAME))
        fd, path = tempfile.mkstemp(prefix="forge-opt-reproducer-", suffix=".mlir")
        os.close(fd)
        return os.path.abspath(path)


_TITLE = {
    "raised": "crash reproducer",
    "verify": "invalid-IR reproducer",
    "semantics": "wrong-results reproducer",
}
"""What the header calls the file, by `PassFailure.kind`: say what failed."""


_OPTION_VALUE = re.compile(r"(?<=[{ =,\[])([^\s{}=,\[\]\"']+)(?=[\s},\]])")


def absolute_paths(spec: str) -> str:
    """`pass{file=out/x.json}` with each option value that names an existing path made absolute, so
    the reproduce command works from any directory."""
    def fix(m: re.Match[str]) -> str:
        value = m.group(1)
        names_path = os.path.exists(value) and ("/" in value or "." in value.strip("."))
        names_path = names_path or ("/" in value and os.path.isdir(os.path.dirname(value)))
        if names_path and not os.path.isabs(value):
            return os.path.abspath(value)
        return value

    return _OPTION_VALUE.sub(fix, spec) if "{" in spec else spec


def _header(failure: PassFailure, command: str, path: str) -> list[str]:
    from forge.cli.reduce import reduce_command  # the reducer's module (subprocess, ...) only for a failure

    rest = ",".join(failure.remaining)
    title = _TITLE[failure.kind]
    if failure.kind == "raised" and isinstance(failure.error, DiagnosticException):
        title = "pass-failure reproducer"
    lines = [
        f"// forge-opt {title}: the IR given to pass #{failure.index + 1} '{failure.name}', "
        f"which {_WHAT_FAILED[failure.kind]}:",
        f"//   {one_line(str(failure.error))}",
        f"// Reproduce with: {command}",
        f"// Reduce with: {reduce_command(path, failure.kind, failure.name, command)}",
        f"// The rest of the pipeline was: -p {shlex.quote(rest)}",
    ]
    if failure.kind == "raised" and not isinstance(failure.error, DiagnosticException):
        lines.append("// Python traceback of the exception:")
        lines += [f"//   {line}".rstrip() for line in format_traceback(failure.error).splitlines()]
    return lines


def _generic_text(module: ModuleOp) -> str:
    """The module in generic syntax (robust against custom printers of a broken pass)."""
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue() + "\n"
