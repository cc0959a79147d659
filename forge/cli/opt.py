"""`forge-opt`: xDSL's `xdsl-opt` driver with Forge's dialects and passes.

Everything `xdsl-opt` accepts still works (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-between-passes`, `--print-op-generic`, `-o`, ...). On top of that:

- user errors (parse errors, IR that does not verify, unknown passes or pass options, a
  missing input file, a pass failing with a diagnostic) are reported as one mlir-opt style
  diagnostic (`file.mlir:3:5: error: ...` plus the source line) with exit code 1, never with
  a traceback;
- an internal error (a bug in a pass, in Forge or in xDSL) prints the traceback and exits 70;
- `--help` lists every available pass with its one-line description.

Exit codes: 0 success, 1 error in the input or pipeline, 2 bad command line, 70 internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from forge.context import get_all_dialects, get_all_passes
from forge.diagnostics import (
    Diagnostic,
    LocatingParser,
    SourceManager,
    attached_op,
    find_failing_op,
    one_line,
    op_diagnostic,
    parse_error_diagnostic,
)

PROG = "forge-opt"
EXIT_ERROR = 1
EXIT_INTERNAL = 70

TEST_PASSES_ENV = "FORGE_TEST_PASSES"
"""Set to 1 to register Forge's test-only passes (`forge.testing.passes`)."""


def _forge_version() -> str:
    try:
        return version("forge-compiler")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


class ForgeOptError(Exception):
    """A user error found by the driver itself (not in the IR): one line, exit code 1."""

    def __init__(
        self, message: str, notes: Sequence[str] = (), context: Sequence[str] = ()
    ):
        super().__init__(message)
        self.message = message
        self.notes = list(notes)
        self.context = list(context)


class OutputVerifyError(Exception):
    """The IR did not verify after the pipeline (it did before)."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


class PassRunError(Exception):
    """Wraps an exception raised while running (or verifying after) a pass."""

    def __init__(self, pass_: ModulePass, index: int, error: BaseException):
        super().__init__(str(error))
        self.pass_ = pass_
        self.index = index
        self.error = error


def pass_description(pass_cls: type[ModulePass], width: int = 100) -> str:
    """First sentence of a pass's docstring, on one line ('' if it has none)."""
    doc = pass_cls.__doc__ or ""
    # dataclasses invent `Name(field: type = ...)` when a class has no docstring.
    if doc.startswith(f"{pass_cls.__name__}("):
        return ""
    paragraph = one_line(doc.strip().split("\n\n")[0])
    if (end := paragraph.find(". ")) != -1:
        paragraph = paragraph[: end + 1]
    return paragraph if len(paragraph) <= width else paragraph[: width - 3] + "..."


class ForgeOptMain(xDSLOptMain):
    """xDSLOptMain with Forge's dialects, passes, diagnostics and debugging flags."""

    version_format = f"{PROG} {_forge_version()} (Forge) on xDSL {{xdsl_version}}"

    forge_pass_names: set[str]
    sources: SourceManager
    module: ModuleOp | None
    """The module being processed (for diagnostics)."""
    pass_list: tuple[ModulePass, ...]
    pass_specs: tuple[str, ...]

    def __init__(self, args: Sequence[str] | None = None):
        self._argv = list(sys.argv[1:] if args is None else args)
        self.forge_pass_names = set()
        self.sources = SourceManager()
        self.module = None
        self.pass_list = ()
        self.pass_specs = ()
        super().__init__(
            description="Forge modular optimizer driver (xdsl-opt with Forge's "
            "dialects and passes).",
            args=args,
        )

    # ------------------------------------------------------------------ registration

    def register_all_dialects(self) -> None:
        super().register_all_dialects()
        registered = set(self.ctx.registered_dialect_names)
        for name, factory in get_all_dialects().items():
            if name not in registered:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        forge_passes: dict[str, Callable[[], type[ModulePass]]] = dict(get_all_passes())
        if os.environ.get(TEST_PASSES_ENV) == "1":
            from forge.testing.passes import TEST_PASSES

            forge_passes.update(TEST_PASSES)
        for name, factory in forge_passes.items():
            if name in self.available_passes:
                # Forge wins a name clash; xDSL's pass stays reachable as `xdsl-<name>`.
                self.register_pass(f"xdsl-{name}", self.available_passes[name])
            self.register_pass(name, factory)
        self.forge_pass_names = set(forge_passes)

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.prog = PROG
        super().register_all_arguments(arg_parser)
        for action in arg_parser._actions:  # xDSL's -p help lists all names on one line
            if "--passes" in action.option_strings:
                action.help = (
                    "comma-separated pass pipeline, e.g. 'cse,canonicalize' or "
                    "'pass{option=value other=1}' (passes are listed below)"
                )
        if any(a in ("-h", "--help") for a in self._argv):
            # Listing passes loads every pass module: only do it when help is asked for.
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
            arg_parser.epilog = self.format_pass_list()

    def format_pass_list(self) -> str:
        """Every registered pass with its one-line description, Forge's first."""

        def rows(names: list[str]) -> list[str]:
            out: list[str] = []
            width = max((len(n) for n in names), default=0)
            for name in sorted(names):
                try:
                    desc = pass_description(self.available_passes[name]())
                except Exception as e:  # a plug-in that fails to import
                    desc = f"(failed to load: {type(e).__name__}: {e})"
                out.append(f"  {name.ljust(width)}  {desc}".rstrip())
            return out

        forge = [n for n in self.available_passes if n in self.forge_pass_names]
        xdsl = [n for n in self.available_passes if n not in self.forge_pass_names]
        lines = ["Forge passes:"]
        lines += rows(forge) if forge else ["  (none registered yet)"]
        lines += ["", "xDSL passes:", *rows(xdsl)]
        return "\n".join(lines)

    # ------------------------------------------------------------------ pipeline

    def setup_pipeline(self) -> None:
        """Parse `-p` into pass instances, with a clean error for each way it can fail."""
        try:
            specs = list(parse_pipeline(self.args.passes))
        except ArgSpecParseError as e:
            raise _pipeline_syntax_error(str(e), self.args.passes) from None
        self.pass_list = tuple(self.instantiate_pass(spec) for spec in specs)
        # How each pass is spelled on the command line (aliases such as `xdsl-cse` kept).
        self.pass_specs = tuple(
            str(ArgSpec(spec.name, p.spec().parameters))
            for spec, p in zip(specs, self.pass_list, strict=True)
        )
        self.pipeline = PassPipeline(self.pass_list)

    def instantiate_pass(self, spec: ArgSpec) -> ModulePass:
        if spec.name not in self.available_passes:
            close = difflib.get_close_matches(spec.name, self.available_passes, n=3)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            hint = hint or " (`forge-opt --help` lists the available passes)"
            raise ForgeOptError(f"unknown pass '{spec.name}'{hint}")
        pass_cls = self.available_passes[spec.name]()
        fields = [
            f.name for f in dataclasses.fields(pass_cls) if f.init and f.name != "name"
        ]
        given = spec.normalize_parameter_names().parameters
        unknown = [k for k in given if k not in fields]
        if unknown:
            options = ", ".join(f.replace("_", "-") for f in fields)
            takes = f"its options are: {options}" if fields else "it takes no options"
            bad = ", ".join(repr(k.replace("_", "-")) for k in unknown)
            raise ForgeOptError(
                f"pass '{spec.name}' has no option {bad}; {takes}"
            )
        try:
            # `xdsl-cse` is registered under an alias of its class's own name.
            return pass_cls.from_spec(ArgSpec(pass_cls.name, spec.parameters))
        except (ValueError, TypeError) as e:
            raise ForgeOptError(
                f"invalid options for pass '{spec.name}': {one_line(str(e))}"
            ) from None

    # ------------------------------------------------------------------ input / output

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        try:
            return super().get_input_stream()
        except OSError as e:
            raise ForgeOptError(
                f"cannot open input file '{self.args.input_file}': {e.strerror}"
            ) from None

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except ValueError as e:
            raise ForgeOptError(
                f"{one_line(str(e))}; name the file *.mlir or pass -f mlir"
            ) from None

    def prepare_output(self) -> IO[str]:
        try:
            return super().prepare_output()
        except OSError as e:
            raise ForgeOptError(
                f"cannot open output file '{self.args.output_file}': {e.strerror}"
            ) from None

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        """Parse MLIR with source locations on every op; other frontends as xDSL does."""
        self.module = None
        frontend = self.args.frontend or file_extension
        if frontend != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        data = chunk.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ForgeOptError(
                f"{self.get_input_name()}: input is not valid UTF-8 ({e.reason} at "
                f"byte {e.start})"
            ) from None
        name = self.get_input_name()
        self.sources.add(name, text, start_offset)
        # Lines are shifted by xDSL's run() for ParseErrors; locations on ops by us.
        parser = LocatingParser(self.ctx, text, name, start_offset)
        self.module = parser.parse_module(not self.args.no_implicit_module)
        return self.module

    # ------------------------------------------------------------------ running

    def verify(self, module: ModuleOp) -> None:
        if not self.args.disable_verify:
            module.verify()

    def apply_passes(self, prog: ModuleOp) -> None:
        self.module = prog
        self.verify(prog)  # the input must be valid before any pass sees it
        for index, p in enumerate(self.pass_list):
            try:
                p.apply(self.ctx, prog)
            except Exception as e:
                if self.args.verify_diagnostics and isinstance(e, DiagnosticException):
                    raise  # expected output: xDSL's run() prints it, per chunk
                raise PassRunError(p, index, e) from e
            if self.args.print_between_passes and index + 1 < len(self.pass_list):
                print(f"IR after {p.name}:")
                print(prog)
                print("\n\n")
        if self.pass_list:
            try:
                self.verify(prog)
            except DiagnosticException as e:
                if self.args.verify_diagnostics:
                    raise
                raise OutputVerifyError(e) from e

    # ------------------------------------------------------------------ reporting

    def report(self, error: BaseException, stderr: IO[str]) -> int:
        """Print `error` as a diagnostic; return the exit code."""
        notes: list[str] = []
        in_pass = False
        if isinstance(error, PassRunError):
            in_pass = True
            notes.append(
                f"while running pass '{self.pass_specs[error.index]}' "
                f"(#{error.index + 1} of {len(self.pass_list)})"
            )
            error = error.error
        elif isinstance(error, OutputVerifyError):
            notes.append(
                "the input verified, so a pass in the pipeline produced invalid IR"
            )
            error = error.error
        if isinstance(error, DiagnosticException):
            op = attached_op(error)
            if op is None and not in_pass and self.module is not None:
                op = find_failing_op(self.module, error)
            diag = op_diagnostic(str(error), op, fallback=self.get_input_name())
            diag.notes += notes
            print(diag.format(self.sources), file=stderr)
            return EXIT_ERROR
        # An internal error: show where it happened.
        traceback.print_exception(error, file=stderr)
        diag = Diagnostic(
            f"internal error: {type(error).__name__}: {one_line(str(error))}",
            prefix=PROG,
            notes=notes,
        )
        print(diag.format(), file=stderr)
        return EXIT_INTERNAL


def _pipeline_syntax_error(text: str, pipeline: str) -> ForgeOptError:
    """Turn xDSL's multi-line ArgSpecParseError text into one line with a column."""
    m = re.search(r"pass-pipeline:(\d+):(\d+)", text)
    msg = text.strip().splitlines()[-1].strip() if text.strip() else "syntax error"
    if m is None:
        return ForgeOptError(f"invalid pass pipeline '{pipeline}': {msg}")
    col = int(m.group(2))
    return ForgeOptError(
        f"invalid pass pipeline at column {col}: {msg[:1].lower()}{msg[1:]}",
        context=[f"  {pipeline}", "  " + " " * (col - 1) + "^"],
    )


def main(argv: Sequence[str] | None = None, *, stderr: IO[str] | None = None) -> int:
    """Run forge-opt on `argv` (default: sys.argv[1:]); return the exit code."""
    err = stderr if stderr is not None else sys.stderr
    opt: ForgeOptMain | None = None
    try:
        opt = ForgeOptMain(args=argv)
        opt.run()
    except SystemExit as e:  # argparse (--help, usage errors) and xDSL's --shrink
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_ERROR)
    except ForgeOptError as e:
        diag = Diagnostic(e.message, prefix=PROG, notes=e.notes, context=e.context)
        print(diag.format(), file=err)
        return EXIT_ERROR
    except ParseError as e:
        sources = opt.sources if opt is not None else None
        print(parse_error_diagnostic(e).format(sources), file=err)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        if opt is None:
            traceback.print_exception(e, file=err)
            return EXIT_INTERNAL
        return opt.report(e, err)
    finally:
        err.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
