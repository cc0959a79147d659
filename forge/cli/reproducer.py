"""Crash reproducers: when a pass fails, forge-opt writes the IR the pass was given to a file.

The file's header names the failing pass, what went wrong, the exact `forge-opt FILE -p PASS`
command that fails the same way (with the plug-ins and checking flags of this run) and the rest of
the pipeline; the module's weights, if it has any, go beside it. The error forge-opt prints then
notes where the reproducer is and the command (`PassRunError.reproducer_notes`).
"""

from __future__ import annotations

import argparse
import os
import shlex
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from io import StringIO

from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from forge.cli.companion_weights import save_companion_weights
from forge.cli.errors import PROG, PassRunError
from forge.cli.passes import TEST_PASSES_ENV
from forge.cli.verify_semantics import semantics_flags
from forge.diagnostics import one_line
from forge.pipeline import PassFailure

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
        return " ".join([f"{env}{PROG}", shlex.quote(path), *flags, "-p", shlex.quote(failure.name)])

    def write(self, failure: PassFailure, module: ModuleOp | None) -> PassRunError:
        """Write the IR the failing pass was given (and `module`'s weights); return the error to report."""
        if failure.before is None:
            return PassRunError(failure)
        try:
            path = self._new_path()
            command = self.command(path, failure)
            text = "\n".join(_header(failure, command)) + "\n" + _generic_text(failure.before)
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


def _header(failure: PassFailure, command: str) -> list[str]:
    rest = ",".join(failure.remaining)
    return [
        f"// forge-opt crash reproducer: the IR given to pass #{failure.index + 1} '{failure.name}', "
        f"which {_WHAT_FAILED[failure.kind]}:",
        f"//   {one_line(str(failure.error))}",
        f"// Reproduce with: {command}",
        f"// The rest of the pipeline was: -p {shlex.quote(rest)}",
    ]


def _generic_text(module: ModuleOp) -> str:
    """The module in generic syntax (robust against custom printers of a broken pass)."""
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue() + "\n"
