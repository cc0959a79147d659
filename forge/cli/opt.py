"""`forge-opt`: xDSL's `xdsl-opt` driver with Forge's dialects and passes.

Everything `xdsl-opt` accepts still works (`-p`, `--split-input-file`, `--print-between-passes`,
`--print-op-generic`, `-o`, ...), except that `--verify-diagnostics` is mlir-opt's: the emitted
diagnostics are checked against the input's `expected-error` annotations
(forge/cli/verify_diagnostics.py); xdsl-opt's (print them for FileCheck) is
`--xdsl-verify-diagnostics`. mlir-opt's spellings work too (`--mlir-timing`,
`--mlir-print-ir-after-all`, `--pass-pipeline='builtin.module(func.func(...))'`, `-` for stdin,
single-dash long flags: forge/cli/flags.py). Every `--split-input-file` chunk runs, failing or not.
On top of that:

- user errors (parse errors, IR that does not verify, unknown passes or pass options, a
  missing input file, a pass failing with a diagnostic) are reported as one mlir-opt style
  diagnostic (`file.mlir:3:5: error: ...` plus the source line) with exit code 1, never with
  a traceback; an internal error prints the traceback and exits 70 (forge/cli/errors.py);
- `--help` lists every available pass once, with its first sentence and its options (type,
  default, one line); `--help-pass NAME` shows one pass in full (forge/cli/passes.py);
- an exception raised by a plug-in's own pattern or pass is the user's error: one diagnostic at
  the op, naming the pattern and pass, exit 1 (`--show-traceback` prints the traceback;
  forge/cli/blame.py decides whose code raised);
- mlir-opt's debugging flags (all reports go to stderr): `--timing` (rows adding up to the wall
  clock: forge/cli/timing.py), `--print-ir-before=PASS`,
  `--print-ir-before-all`, `--print-ir-after=PASS`, `--print-ir-after-all`,
  `--print-ir-after-change`, `--ir-dump-dir DIR`, `--verify-each`, and for patterns
  `--debug-patterns` and `--explain-pattern NAME` (forge/cli/debug_output.py);
- a reproducer: when a pass fails, the IR it was given is written to a file and the
  exact `forge-opt FILE -p PASS` command that reproduces the failure is printed
  (forge/cli/reproducer.py);
- `--verify-semantics`: interpret the IR on seeded random inputs before and after each pass
  and stop at the first pass that changes the results (forge/semantics.py, wired in by
  forge/cli/verify_semantics.py), with the same reproducer;
- `--load-pass-plugin=FILE` (repeatable): import a Python file whose passes register with
  `forge.context.register_pass` (forge/plugins.py);
- `model.mlir` comes with its weights, `model.safetensors` (forge/cli/companion_weights.py).

This module is the driver itself: arguments, pipeline set-up and running. Exit codes: 0 success,
1 error in the input or pipeline, 2 bad command line, 70 internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.utils.exceptions import DiagnosticException, ParseError, ShrinkException, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from forge.analysis.dominance import verify_dominance, verify_module
from forge.cli.blame import verifier_crash
from forge.cli.companion_weights import attach_companion_weights, companion_of, save_companion_weights
from forge.cli.debug_output import DebugOutput, write_op_graph
from forge.cli.errors import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    PROG,
    ForgeOptError,
    OutputVerifyError,
    PassRunError,
    diagnose,
    report,
)
from forge.cli.flags import add_forge_flags, long_options, normalize_argv, usage_error
from forge.cli.passes import (
    check_pattern_name,
    format_pass_help,
    format_pass_list,
    load_pass_plugins,
    parse_pass_pipeline,
    plugin_files,
    registered_test_passes,
)
from forge.cli.reproducer import Reproducer
from forge.cli.timing import RunTiming
from forge.cli.verify_diagnostics import check, read_expectations
from forge.cli.verify_semantics import semantic_checker, semantic_failure
from forge.context import ForgeContext, PassFactory, PassTable, get_all_dialects, get_all_passes
from forge.diagnostics import (
    Diagnostic,
    LocatingParser,
    SourceManager,
    collect_diagnostics,
    emit_warning,
    one_line,
)
from forge.pipeline import PassFailure, PassRecord, PipelineObserver, PipelineRunner
from forge.universe import xdsl_passes


def _forge_version() -> str:
    try:
        return version("forge-compiler")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


class _VersionFormat(str):
    """`--version`'s format string, with Forge's version read only when it is printed: reading a
    package's metadata costs ~10 ms, and xDSL formats the string only for `--version`."""

    def format(self, *args: object, **kwargs: object) -> str:
        return f"{PROG} {_forge_version()} (Forge) on xDSL {{xdsl_version}}".format(*args, **kwargs)


class _PassLookup(Mapping[str, PassFactory]):
    """The driver's pass table as `-p` and `--help-pass` read it: a name that is not one of Forge's
    own or test passes (an xDSL pass a plug-in may override, a plug-in's, a typo) first loads the
    plug-ins' passes (`ForgeOptMain.load_plugin_passes`), so the answer is the eager table's."""

    def __init__(self, main: ForgeOptMain):
        self._main = main

    def _passes(self, name: object = None) -> dict[str, PassFactory]:
        if name is None or name not in self._main.forge_pass_names:
            self._main.load_plugin_passes()
        return self._main.available_passes

    def __getitem__(self, name: str) -> PassFactory:
        return self._passes(name)[name]

    def __contains__(self, name: object) -> bool:
        return name in self._passes(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._passes())

    def __len__(self) -> int:
        return len(self._passes())


class ForgeOptMain(xDSLOptMain):
    """xDSLOptMain with Forge's dialects, passes, diagnostics and debugging flags."""

    version_format = _VersionFormat("forge-opt (Forge) on xDSL {xdsl_version}")

    forge_pass_names: set[str]
    pass_table: PassTable
    plugins_loaded: bool
    test_pass_names: set[str]
    plugin_files: list[str]
    sources: SourceManager
    module: ModuleOp | None
    """The module being processed (for diagnostics)."""
    pass_list: tuple[ModulePass, ...]
    pass_specs: tuple[str, ...]
    """Each pass as written on the command line."""

    def __init__(self, args: Sequence[str] | None = None, *, stderr: IO[str] | None = None,
                 timing: RunTiming | None = None):
        start = time.perf_counter()
        self._argv = list(sys.argv[1:] if args is None else args)
        self.err = stderr if stderr is not None else sys.stderr
        self.timing = timing if timing is not None else RunTiming(start, None)
        """Where the wall clock goes, for --timing (forge/cli/timing.py)."""
        self.timing.add(SETUP_ROW, 0.0)  # first among the rows; its time is known at the end of __init__
        self.plugin_ms = 0.0
        self.records: list[PassRecord] = []
        self.current_pass: int | None = None
        """The index of the pass running now (for --timing's account of weights read during a pass)."""
        self.loads_in_passes: list[tuple[str, int, float]] = []
        self.chunk_index = -1
        self.forge_pass_names = set()
        self.test_pass_names = set()
        self.plugin_files = []
        self.sources = SourceManager()
        self.module = None
        self.pass_list = ()
        self.pass_specs = ()
        self.exit_code = 0
        """The worst exit code of the chunks processed so far (--split-input-file goes on after a failure)."""
        self.chunk_text: str | None = None
        super().__init__(
            description="Forge modular optimizer driver (xdsl-opt with Forge's dialects and passes).",
            args=args,
        )
        self.timing.add(SETUP_ROW, (time.perf_counter() - start) * 1e3 - self.plugin_ms)

    # ------------------------------------------------------------------ registration

    def register_all_dialects(self) -> None:
        self.ctx = ForgeContext()  # aten ops are defined when first parsed, not all 426 at start-up
        super().register_all_dialects()
        registered = set(self.ctx.registered_dialect_names)
        for name, factory in get_all_dialects().items():
            if name not in registered:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        # --load-pass-plugin is read from argv: the pass table is built before the command line is parsed.
        self.plugin_files = plugin_files(self._argv)
        for path in self.plugin_files:
            start = time.perf_counter()
            load_pass_plugins([path])
            ms = (time.perf_counter() - start) * 1e3
            self.plugin_ms += ms
            self.timing.add(f"plug-in {os.path.basename(path)}", ms)
        test_passes = registered_test_passes()
        # Forge's own, the registered and the test passes now; the plug-ins' entry points (a scan of
        # every installed package) only when a name is not among them or the list is shown.
        self.pass_table = get_all_passes()
        forge_passes = {**self.pass_table.known, **test_passes}
        # xDSL's registry includes Forge's own `xdsl.universe` entry (forge/universe.py), which
        # offers Forge's passes to xdsl-opt (the clashing ones as `forge-dce`/`forge-cse`): they are
        # not xDSL's, so they get no `xdsl-` alias, and here `dce`/`cse` are Forge's.
        self.forge_universe_names = set(xdsl_passes())
        for name in self.forge_universe_names:
            self.available_passes.pop(name, None)
        self._register_forge_passes(forge_passes)
        self.test_pass_names = set(test_passes)
        self.plugins_loaded = False

    def _register_forge_passes(self, passes: Mapping[str, PassFactory]) -> None:
        for name, factory in passes.items():
            if name in self.available_passes and name not in self.forge_pass_names:
                # Forge wins a name clash; xDSL's pass stays reachable as `xdsl-<name>`.
                self.register_pass(f"xdsl-{name}", self.available_passes[name])
            self.register_pass(name, factory)
        self.forge_pass_names |= set(passes)

    def load_plugin_passes(self) -> None:
        """Register the passes of the `forge.passes` entry points (once), below Forge's own and the
        test passes, as `get_all_passes` ranks them."""
        if self.plugins_loaded:
            return
        self.plugins_loaded = True
        self._register_forge_passes({n: f for n, f in self.pass_table.items() if n not in self.forge_pass_names})

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.prog = PROG
        listing = any(a in ("-h", "--help") for a in self._argv)
        if listing:
            self.load_plugin_passes()  # xDSL's `-p` help names every pass
        super().register_all_arguments(arg_parser)
        add_forge_flags(arg_parser)
        # mlir-opt's single-dash spellings, and one-line usage errors (xDSLOptMain owns the parser).
        known = long_options(arg_parser)
        argv = normalize_argv(self._argv, set(known))
        parse = arg_parser.parse_args
        arg_parser.parse_args = lambda args=None, namespace=None: parse(argv, namespace)  # type: ignore[method-assign]
        arg_parser.error = lambda message: self._usage_error(message, known)  # type: ignore[method-assign]
        if listing:
            # Listing passes loads every pass module: only do it when help is asked for.
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
            arg_parser.epilog = format_pass_list(self.available_passes, self.forge_pass_names)

    def _usage_error(self, message: str, known: list[str]) -> None:
        print(f"{PROG}: error: {usage_error(message, known)}", file=self.err)
        raise SystemExit(2)

    # ------------------------------------------------------------------ pipeline

    def setup_pipeline(self) -> None:
        """Parse `-p` into pass instances, with a clean error for each way it can fail."""
        self.pass_list, self.pass_specs = parse_pass_pipeline(self.args.passes, _PassLookup(self))
        self.pipeline = PassPipeline(self.pass_list)
        if self.args.explain_pattern:
            check_pattern_name(self.args.explain_pattern)

    def run(self) -> None:
        """Process every chunk of the input (one without --split-input-file); a chunk that fails is
        reported and the next one still runs; `exit_code` is the worst chunk's."""
        if self.args.help_pass:
            print(format_pass_help(self.args.help_pass, _PassLookup(self)))
            return
        chunks, file_extension = self.prepare_input()
        output = self.prepare_output()
        try:
            for i, (chunk, offset) in enumerate(chunks):
                try:
                    if i > 0:
                        output.write("// -----\n")
                    self.process_chunk(chunk, file_extension, offset, output)
                finally:
                    chunk.close()
        except ShrinkException:  # xDSL's --shrink protocol (shrinkray)
            print("Success, can shrink")
            raise SystemExit(0) from None
        finally:
            if output is not sys.stdout:
                output.close()
        if self.args.timing:
            print(self.timing.report(), file=self.err)
        if self.args.shrink:
            print("Failure, can't shrink")
            raise SystemExit(1)

    @property
    def diagnostics_mode(self) -> str | None:
        """"mlir" (--verify-diagnostics: check the expected-* annotations), "xdsl"
        (--xdsl-verify-diagnostics: print the diagnostics to stdout, as xdsl-opt does) or None."""
        if self.args.xdsl_verify_diagnostics:
            return "xdsl"
        return "mlir" if self.args.verify_diagnostics else None

    def process_chunk(self, chunk: IO[bytes], file_extension: str, offset: int, output: IO[str]) -> None:
        """Parse, run the pipeline on and print one chunk; report (or with --verify-diagnostics,
        check) its diagnostics."""
        mode = self.diagnostics_mode
        emitted: list[Diagnostic] = []
        self.chunk_text = None
        with collect_diagnostics(emitted.append if mode == "mlir" else self.print_diagnostic):
            try:
                module = self.parse_chunk(chunk, file_extension, offset)
                if module is not None:
                    self.apply_passes(module)
                    with self.timing.phase("output", after_passes=True):
                        output.write(self.output_resulting_program(module))
                        output.flush()
            except ShrinkException:
                raise
            except ParseError as e:
                if self.args.parsing_diagnostics:
                    e.span = dataclasses.replace(e.span, line_offset=offset)
                    print(e)  # xdsl-opt's behaviour (which leaves the lines of `refs` chunk-relative)
                else:
                    _shift_lines(e, offset)
                    self.chunk_failed(e, emitted)
            except DiagnosticException as e:
                if mode == "xdsl":
                    print(e)
                    for note in getattr(e, "__notes__", ()):
                        print(note)
                else:
                    self.chunk_failed(e, emitted)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as e:
                self.chunk_failed(e, emitted)
        if mode == "mlir" and self.chunk_text is not None:
            self.verify_chunk_diagnostics(emitted, offset)

    def chunk_failed(self, error: BaseException, emitted: list[Diagnostic]) -> None:
        """Report the error that stopped a chunk (with --verify-diagnostics: keep it to be checked)."""
        diagnosis = diagnose(error, module=self.module, input_name=self.get_input_name(),
                             n_passes=len(self.pass_list), show_traceback=getattr(self.args, "show_traceback", False))
        if self.diagnostics_mode == "mlir" and diagnosis.code == EXIT_ERROR:
            emitted.extend(diagnosis.diagnostic.all())
            return
        print(diagnosis.traceback, file=self.err, end="")
        self.print_diagnostic(diagnosis.diagnostic)
        self.exit_code = max(self.exit_code, diagnosis.code)

    def print_diagnostic(self, diag: Diagnostic) -> None:
        if diag.loc is None and diag.prefix is None:
            diag = dataclasses.replace(diag, prefix=PROG)
        print(diag.format(self.sources), file=self.err)

    def verify_chunk_diagnostics(self, emitted: list[Diagnostic], offset: int) -> None:
        """--verify-diagnostics: the chunk's diagnostics against its expected-* annotations."""
        name = self.get_input_name()
        expected, problems = read_expectations(self.chunk_text or "", name, offset)
        problems += check(expected, emitted, name)
        for problem in problems:
            self.print_diagnostic(problem)
        if problems:
            self.exit_code = max(self.exit_code, EXIT_ERROR)

    # ------------------------------------------------------------------ input / output

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        if self.args.input_file == "-":  # mlir-opt's name for stdin
            self.args.input_file = None
        try:
            return super().get_input_stream()
        except OSError as e:
            raise ForgeOptError(f"cannot open input file '{self.args.input_file}': {e.strerror}") from None

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except ValueError as e:
            raise ForgeOptError(f"{one_line(str(e))}; name the file *.mlir or pass -f mlir") from None

    def prepare_output(self) -> IO[str]:
        try:
            return super().prepare_output()
        except OSError as e:
            raise ForgeOptError(f"cannot open output file '{self.args.output_file}': {e.strerror}") from None

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0) -> ModuleOp | None:
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
                f"{self.get_input_name()}: input is not valid UTF-8 ({e.reason} at byte {e.start})"
            ) from None
        name = self.get_input_name()
        self.chunk_text = text
        self.sources.add(name, text, start_offset)
        # Lines are shifted by process_chunk for ParseErrors; locations on ops by us.
        parser = LocatingParser(self.ctx, text, name, start_offset)
        start = time.perf_counter()
        try:
            self.module = parser.parse_module(not self.args.no_implicit_module)
        except ParseError as e:
            if self.diagnostics_mode == "xdsl" and isinstance(e.__cause__, VerifyException):
                raise e.__cause__ from None  # printed by process_chunk, as xdsl-opt does
            raise
        self.timing.add("parse", (time.perf_counter() - start) * 1e3)
        return self.module

    def output_resulting_program(self, prog: ModuleOp) -> str:
        text = super().output_resulting_program(prog)
        if self.args.output_file:
            save_companion_weights(self.args.output_file, prog)
        write_op_graph(prog, self.args, self.get_input_name(), self.chunk_index, self.err)
        return text

    # ------------------------------------------------------------------ running

    def verify(self, module: ModuleOp) -> None:
        if not self.args.disable_verify:
            start = time.perf_counter()
            try:
                verify_module(module)
            except DiagnosticException:
                raise
            except Exception as e:  # a verifier that crashed on a malformed op: the op's error
                raise verifier_crash(module, e) from e
            self.timing.add("verify", (time.perf_counter() - start) * 1e3)

    def apply_passes(self, prog: ModuleOp) -> None:
        self.module = prog
        self.records = []
        self.loads_in_passes = []
        self.chunk_index += 1
        args = self.args
        if (weights := companion_of(args.input_file)) is not None:
            with self.timing.phase(f"weights {os.path.basename(weights)} (header)"):
                attach_companion_weights(args.input_file, prog, self.weights_loaded)
        self.verify(prog)  # the input must be valid before any pass sees it
        debug = DebugOutput(args, self.err, len(self.pass_list), self.chunk_index)
        debug.dump_input(prog)
        checker = semantic_checker(args, prog, len(self.pass_list))
        runner = PipelineRunner(
            self.ctx,
            self.pass_list,
            names=self.pass_specs,
            # --verify-semantics interprets the IR after each pass: it must be valid first.
            verify_each=(args.verify_each or args.verify_semantics) and not args.disable_verify,
            snapshot_before=not args.no_reproducer and self.diagnostics_mode is None,
            changes="text" if args.print_ir_after_change or args.ir_dump_dir else "cheap",
            debug_patterns=args.debug_patterns,
            explain_pattern=args.explain_pattern,
            observers=[_PassTracker(self), debug, *([checker] if checker else [])],
        )
        mismatch_error: type[Exception] | tuple[()] = ()  # only a checked run can raise one
        if checker is not None:
            from forge.semantics import SemanticMismatch as mismatch_error
        start = time.perf_counter()
        try:
            self.records = runner.run(prog)
        except mismatch_error as mismatch:
            failure = semantic_failure(mismatch, runner)
            if args.no_reproducer:  # the checker's own copy of the IR is not written either
                raise PassRunError(failure) from None
            raise self.reproducer().write(failure, self.module) from None
        except PassFailure as failure:
            if self.diagnostics_mode == "xdsl" and isinstance(failure.error, DiagnosticException):
                raise failure.error from None  # expected output: process_chunk prints it
            debug.print_events(failure.name, failure.events)
            raise self.reproducer().write(failure, self.module) from failure.error
        finally:
            self.current_pass = None
        self.timing.add_pipeline(self.records, (time.perf_counter() - start) * 1e3,
                                 checker_ms=checker.elapsed_ms if checker is not None else 0.0,
                                 loads=self.loads_in_passes)
        debug.explain_summary(self.records)
        if checker is not None:
            print(checker.summary(), file=self.err)
        if self.pass_list:
            self.verify_output(prog)

    def verify_output(self, prog: ModuleOp) -> None:
        """Verify the pipeline's result: a failure here is a pass's fault (the input verified).

        xdsl-opt checks no dominance: when only xDSL's own passes ran, a dominance violation they
        produced is a warning (xDSL's defect, e.g. lower-csl-stencil), not an error."""
        if self.args.disable_verify:
            return
        if not {p.name for p in self.pass_list} & self.forge_pass_names:
            prog.verify()
            try:
                verify_dominance(prog)
            except VerifyException as e:
                emit_warning(None, f"xDSL's passes produced IR that breaks SSA dominance: {one_line(str(e))}")
            return
        try:
            self.verify(prog)
        except DiagnosticException as e:
            if self.diagnostics_mode == "xdsl":
                raise
            raise OutputVerifyError(e) from e

    def weights_loaded(self, path: str, ms: float) -> None:
        """The tensors of the companion weights were read (torch): a row of --timing of their own, taken
        out of the pass that asked for them."""
        row = f"weights {os.path.basename(path)} (tensors, torch)"
        if self.current_pass is None:
            self.timing.add(row, ms)
        else:
            self.loads_in_passes.append((row, self.current_pass, ms))

    def reproducer(self) -> Reproducer:
        return Reproducer.for_run(self.args, self.plugin_files, self.test_pass_names)

    def report(self, error: BaseException, stderr: IO[str]) -> int:
        """Print `error` as a diagnostic; return the exit code."""
        return report(
            error,
            stderr,
            sources=self.sources,
            module=self.module,
            input_name=self.get_input_name(),
            n_passes=len(self.pass_list),
            show_traceback=getattr(self.args, "show_traceback", False),
        )


SETUP_ROW = "set-up (flags, dialects, pass registry)"


class _PassTracker(PipelineObserver):
    """Keeps `ForgeOptMain.current_pass` up to date."""

    def __init__(self, main: ForgeOptMain):
        self.main = main

    def before_pass(self, index: int, name: str, module: ModuleOp) -> None:
        self.main.current_pass = index

    def after_pass(self, record: PassRecord, module: ModuleOp) -> None:
        self.main.current_pass = None


def _shift_lines(error: ParseError, offset: int) -> None:
    """Line numbers of a chunk's parse error (and of the spans it refers to) in the whole file."""
    error.span = dataclasses.replace(error.span, line_offset=offset)
    if refs := getattr(error, "refs", None):
        error.refs = [(dataclasses.replace(span, line_offset=offset), msg) for span, msg in refs]


def process_age_ms() -> float | None:
    """Milliseconds since this process started (Linux /proc; None elsewhere): the interpreter's
    start-up and the imports before main, which --timing reports as its start-up row."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, (uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")) * 1e3)
    except (OSError, ValueError, IndexError):
        return None


def main(argv: Sequence[str] | None = None, *, stderr: IO[str] | None = None) -> int:
    """Run forge-opt on `argv` (default: sys.argv[1:]); return the exit code."""
    started = time.perf_counter()
    startup_ms = process_age_ms() if argv is None else None  # in-process callers started long ago
    err = stderr if stderr is not None else sys.stderr
    if argv is None:  # the program (not a caller's test): show DeprecationWarnings as xdsl-opt does
        warnings.filterwarnings("default", category=DeprecationWarning)
    opt: ForgeOptMain | None = None
    try:
        opt = ForgeOptMain(args=argv, stderr=err, timing=RunTiming(started, startup_ms))
        opt.run()
    except SystemExit as e:  # argparse (--help, usage errors) and xDSL's --shrink
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_ERROR)
    except ForgeOptError as e:
        diag = Diagnostic(e.message, prefix=e.prefix, notes=e.notes, context=e.context)
        print(diag.format(), file=err)
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
    if argv is None:
        _exit_now(opt.exit_code)
    return opt.exit_code


def _exit_now(code: int) -> None:
    """End the program without the interpreter's teardown, as mlir-opt skips freeing its IR at exit:
    once torch is loaded, Python's finalization takes ~0.6 s (measured here) that no --timing row could
    show. Everything forge-opt writes is flushed or closed by now."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
