"""`forge-opt`: xDSL's `xdsl-opt` driver with Forge's dialects and passes.

Everything `xdsl-opt` accepts still works (`-p`, `--split-input-file`, `--verify-diagnostics`,
`--print-between-passes`, `--print-op-generic`, `-o`, ...). On top of that:

- user errors (parse errors, IR that does not verify, unknown passes or pass options, a
  missing input file, a pass failing with a diagnostic) are reported as one mlir-opt style
  diagnostic (`file.mlir:3:5: error: ...` plus the source line) with exit code 1, never with
  a traceback;
- an internal error (a bug in a pass, in Forge or in xDSL) prints the traceback and exits 70;
- `--help` lists every available pass with its one-line description;
- mlir-opt's debugging flags (all reports go to stderr): `--timing`, `--print-ir-before=PASS`,
  `--print-ir-before-all`, `--print-ir-after=PASS`, `--print-ir-after-all`,
  `--print-ir-after-change`, `--ir-dump-dir DIR`, `--verify-each`, and for patterns
  `--debug-patterns` and `--explain-pattern NAME`;
- a crash reproducer: when a pass fails, the IR it was given is written to a file and the
  exact `forge-opt FILE -p PASS` command that reproduces the failure is printed;
- `--verify-semantics`: interpret the IR on seeded random inputs before and after each pass
  and stop at the first pass that changes the results (forge/testing/semantics.py), with
  the same reproducer;
- `--load-pass-plugin=FILE` (repeatable): import a Python file whose passes register with
  `forge.context.register_pass` (forge/plugins.py).

Exit codes: 0 success, 1 error in the input or pipeline, 2 bad command line, 70 internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import re
import shlex
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.xdsl_opt_main import xDSLOptMain

from forge.analysis.dominance import verify_module
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
from forge.pipeline import PassFailure, PassRecord, PipelineObserver, PipelineRunner
from forge.pipeline import format_timing
from forge.testing.semantics import SemanticChecker, SemanticMismatch, SemanticsError

PROG = "forge-opt"
EXIT_ERROR = 1
EXIT_INTERNAL = 70

TEST_PASSES_ENV = "FORGE_TEST_PASSES"
"""Set to 1 to register Forge's test-only passes (`forge.testing.passes`)."""

REPRODUCER_NAME = "forge-opt-reproducer.mlir"


def _forge_version() -> str:
    try:
        return version("forge-compiler")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "unknown"


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

    def __init__(
        self, args: Sequence[str] | None = None, *, stderr: IO[str] | None = None
    ):
        self._argv = list(sys.argv[1:] if args is None else args)
        self.err = stderr if stderr is not None else sys.stderr
        self.phase_ms: list[tuple[str, float]] = []
        self.records: list[PassRecord] = []
        self.chunk_index = -1
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
        # xDSL's registry includes Forge's own `xdsl.universe` entry (forge/universe.py), which
        # offers the clashing passes to xdsl-opt as `forge-dce`/`forge-cse`; here they are `dce`/`cse`.
        from forge.universe import xdsl_passes

        for alias in set(xdsl_passes()) - set(get_all_passes()):
            self.available_passes.pop(alias, None)
        self.load_pass_plugins()
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

    def load_pass_plugins(self) -> None:
        """--load-pass-plugin=FILE: import each file before the pass table is built (the
        command line is not parsed yet, so the flag is read from argv here)."""
        from forge.plugins import PluginError, load_pass_plugin

        self.plugin_files = _plugin_files(self._argv)
        for path in self.plugin_files:
            try:
                load_pass_plugin(path)
            except PluginError as e:
                raise ForgeOptError(e.message, prefix=e.location()) from None

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.prog = PROG
        super().register_all_arguments(arg_parser)
        for action in arg_parser._actions:  # xDSL's -p help lists all names on one line
            if "--passes" in action.option_strings:
                action.help = (
                    "comma-separated pass pipeline, e.g. 'cse,canonicalize' or "
                    "'pass{option=value other=1}' (passes are listed below)"
                )
        self.register_debug_arguments(arg_parser)
        self.register_semantics_arguments(arg_parser)
        self.register_view_arguments(arg_parser)
        if any(a in ("-h", "--help") for a in self._argv):
            # Listing passes loads every pass module: only do it when help is asked for.
            arg_parser.formatter_class = argparse.RawDescriptionHelpFormatter
            arg_parser.epilog = self.format_pass_list()

    def register_debug_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        g = arg_parser.add_argument_group(
            "Forge debugging flags (mlir-opt names; reports go to stderr)"
        )
        g.add_argument(
            "--timing",
            action="store_true",
            help="print a table of wall time per pass and phase, op counts before -> "
            "after and the patterns that fired most",
        )
        g.add_argument(
            "--print-ir-before",
            action="append",
            default=[],
            metavar="PASS",
            help="print the IR before each run of PASS (repeatable, or comma-separated)",
        )
        g.add_argument(
            "--print-ir-before-all", action="store_true", help="print the IR before every pass"
        )
        g.add_argument(
            "--print-ir-after",
            action="append",
            default=[],
            metavar="PASS",
            help="print the IR after each run of PASS (repeatable, or comma-separated)",
        )
        g.add_argument(
            "--print-ir-after-all", action="store_true", help="print the IR after every pass"
        )
        g.add_argument(
            "--print-ir-after-change",
            action="store_true",
            help="print the IR after a pass only if the pass changed it (compares the "
            "printed IR); combines with the other --print-ir-after flags",
        )
        g.add_argument(
            "--ir-dump-dir",
            metavar="DIR",
            help="write the input to DIR/00-input.mlir and, after each pass that changed "
            "the IR, DIR/NN-<pass>.mlir (NN: position of the pass in the pipeline)",
        )
        g.add_argument(
            "--verify-each",
            action="store_true",
            help="verify the IR after every pass (default: after parsing and at the end)",
        )
        g.add_argument(
            "--reproducer-dir",
            metavar="DIR",
            help=f"when a pass fails, write the IR it was given to DIR/{REPRODUCER_NAME} "
            "(default: a new forge-opt-reproducer-*.mlir in the system temp directory)",
        )
        g.add_argument(
            "--no-reproducer",
            action="store_true",
            help="do not keep a copy of the IR before each pass, nor write reproducers",
        )
        g.add_argument(
            "--debug-patterns",
            action="store_true",
            help="print every ForgePattern rewrite: pattern, op and its location",
        )
        g.add_argument(
            "--explain-pattern",
            metavar="NAME",
            help="print where the ForgePattern class NAME fired and why it did not match "
            "elsewhere (the reasons its self.fail(...) calls gave)",
        )

    def register_view_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        g = arg_parser.add_argument_group("Forge pictures")
        g.add_argument(
            "--view-op-graph",
            action="store_true",
            help="write the module after the pipeline as a Graphviz DOT graph to stderr "
            "(mlir-opt's -view-op-graph): ops coloured by device, fused ops double-bordered, "
            "data-flow edges, a legend; render with `dot -Tsvg`",
        )
        g.add_argument(
            "--view-op-graph-output",
            metavar="FILE",
            help="write the --view-op-graph DOT graph to FILE instead of stderr (implies "
            "--view-op-graph; with --split-input-file, one digraph per chunk)",
        )

    def register_semantics_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        g = arg_parser.add_argument_group("Forge semantic checking and plug-ins")
        g.add_argument(
            "--verify-semantics",
            action="store_true",
            help="run the reference interpreter on seeded random inputs before the pipeline "
            "and after every pass; stop at the first pass whose results differ, print the "
            "difference and write a reproducer (weights: the companion .safetensors, else "
            "generated from their types)",
        )
        g.add_argument(
            "--verify-semantics-seed",
            type=int,
            default=0,
            metavar="N",
            help="seed of the inputs (and generated weights) of --verify-semantics (default 0)",
        )
        g.add_argument(
            "--verify-semantics-atol",
            type=float,
            metavar="X",
            help="absolute tolerance for float outputs (default per dtype: 1e-4 for f32)",
        )
        g.add_argument(
            "--verify-semantics-rtol",
            type=float,
            metavar="X",
            help="relative tolerance for float outputs (default per dtype: 1e-4 for f32)",
        )
        g.add_argument(
            "--load-pass-plugin",
            action="append",
            default=[],
            metavar="FILE",
            help="import the Python file FILE, whose passes register with "
            "forge.context.register_pass (repeatable; mlir-opt's --load-pass-plugin)",
        )

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
        lines += [
            "",
            f"{TEST_PASSES_ENV}=1 in the environment also registers the test-only passes of "
            "forge/testing/passes.py.",
            "Exit codes: 0 success, 1 error in the input or pipeline, 2 bad command line, "
            "70 internal error.",
        ]
        return "\n".join(lines)

    # ------------------------------------------------------------------ pipeline

    def setup_pipeline(self) -> None:
        """Parse `-p` into pass instances, with a clean error for each way it can fail."""
        try:
            specs = list(parse_pipeline(self.args.passes))
        except ArgSpecParseError as e:
            raise _pipeline_syntax_error(str(e), self.args.passes) from None
        self.pass_list = tuple(self.instantiate_pass(spec) for spec in specs)
        # Each pass as written on the command line (aliases such as `xdsl-cse` kept).
        self.pass_specs = tuple(str(spec) for spec in specs)
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
        start = time.perf_counter()
        self.module = parser.parse_module(not self.args.no_implicit_module)
        self.phase_ms.append(("parse", (time.perf_counter() - start) * 1e3))
        return self.module

    # ------------------------------------------------------------------ running

    def verify(self, module: ModuleOp) -> None:
        if not self.args.disable_verify:
            start = time.perf_counter()
            verify_module(module)
            self.phase_ms.append(("verify", (time.perf_counter() - start) * 1e3))

    def format_ir(self, module: ModuleOp) -> str:
        """The module as forge-opt prints it (honours --print-op-generic/-debuginfo)."""
        from io import StringIO

        out = StringIO()
        Printer(
            stream=out,
            print_generic_format=self.args.print_op_generic,
            print_debuginfo=self.args.print_debuginfo,
        ).print_op(module)
        return out.getvalue() + "\n"

    def dump_dir(self) -> str | None:
        """Directory for --ir-dump-dir files of the current chunk (created on demand)."""
        if not self.args.ir_dump_dir:
            return None
        path = self.args.ir_dump_dir
        if self.args.split_input_file:
            path = os.path.join(path, f"chunk-{self.chunk_index}")
        os.makedirs(path, exist_ok=True)
        return path

    def apply_passes(self, prog: ModuleOp) -> None:
        self.module = prog
        self.records = []
        self.chunk_index += 1
        self.attach_companion_weights(prog)
        self.verify(prog)  # the input must be valid before any pass sees it
        if (directory := self.dump_dir()) is not None:
            with open(os.path.join(directory, "00-input.mlir"), "w") as f:
                f.write(self.format_ir(prog))
        args = self.args
        checker = self.semantic_checker(prog)
        runner = PipelineRunner(
            self.ctx,
            self.pass_list,
            names=self.pass_specs,
            # --verify-semantics interprets the IR after each pass: it must be valid first.
            verify_each=(args.verify_each or args.verify_semantics) and not args.disable_verify,
            snapshot_before=not args.no_reproducer and not args.verify_diagnostics,
            changes="text" if args.print_ir_after_change or args.ir_dump_dir else "cheap",
            debug_patterns=args.debug_patterns,
            explain_pattern=args.explain_pattern,
            observers=[_DebugOutput(self), *([checker] if checker else [])],
        )
        try:
            self.records = runner.run(prog)
        except SemanticMismatch as mismatch:
            raise self.write_reproducer(self.semantic_failure(mismatch, runner)) from None
        except PassFailure as failure:
            if args.verify_diagnostics and isinstance(failure.error, DiagnosticException):
                raise failure.error from None  # expected output: xDSL's run() prints it
            self.print_events(failure.name, failure.events)
            raise self.write_reproducer(failure) from failure.error
        self.explain_summary()
        if checker is not None:
            self.phase_ms.append(("verify-semantics", checker.elapsed_ms))
            print(checker.summary(), file=self.err)
        if self.pass_list:
            try:
                self.verify(prog)
            except DiagnosticException as e:
                if args.verify_diagnostics:
                    raise
                raise OutputVerifyError(e) from e

    def semantic_checker(self, prog: ModuleOp) -> SemanticChecker | None:
        """--verify-semantics: the observer comparing results before and after each pass."""
        if not self.args.verify_semantics or not self.pass_list:
            return None
        from forge.weights import weights_of

        args = self.args
        return SemanticChecker(
            prog,
            weights_of(prog),
            seed=args.verify_semantics_seed,
            atol=args.verify_semantics_atol,
            rtol=args.verify_semantics_rtol,
        )

    def semantic_failure(self, mismatch: SemanticMismatch, runner: PipelineRunner) -> PassFailure:
        """A --verify-semantics mismatch as a pipeline failure (for the reproducer)."""
        return PassFailure(
            name=mismatch.name,
            index=mismatch.index,
            pass_=self.pass_list[mismatch.index],
            error=mismatch,
            kind="semantics",
            before=mismatch.before,
            records=list(runner.records),
            remaining=self.pass_specs[mismatch.index :],
            events=[],
        )

    def output_resulting_program(self, prog: ModuleOp) -> str:
        start = time.perf_counter()
        text = super().output_resulting_program(prog)
        self.phase_ms.append(("output", (time.perf_counter() - start) * 1e3))
        self.save_companion_weights(prog)
        self.write_op_graph(prog)
        if self.args.timing:
            print(format_timing(self.records, self.merged_phases()), file=self.err)
        self.phase_ms = []
        return text

    def merged_phases(self) -> list[tuple[str, float]]:
        merged: dict[str, float] = {}
        for name, ms in self.phase_ms:
            merged[name] = merged.get(name, 0.0) + ms
        return list(merged.items())

    def write_op_graph(self, prog: ModuleOp) -> None:
        """--view-op-graph: the module as DOT (forge.analysis.op_graph), to stderr or a file."""
        path = self.args.view_op_graph_output
        if not (self.args.view_op_graph or path):
            return
        from forge.analysis.op_graph import op_graph

        dot = op_graph(prog, name=os.path.basename(self.get_input_name()))
        if not path:
            print(dot, file=self.err, end="")
            return
        try:  # chunks after the first (--split-input-file) append their digraph
            with open(path, "a" if self.chunk_index > 0 else "w") as f:
                f.write(dot)
        except OSError as e:
            raise ForgeOptError(f"cannot write op graph to '{path}': {e.strerror}") from None

    # ------------------------------------------------------------------ weights

    def attach_companion_weights(self, prog: ModuleOp) -> None:
        """`model.mlir` comes with `model.safetensors`: give passes its WeightStore."""
        if not self.args.input_file:
            return
        # forge.weights.WEIGHTS_SUFFIX; importing forge.weights loads torch (seconds), so
        # only import it when there is a weights file.
        path = os.path.splitext(self.args.input_file)[0] + ".safetensors"
        if not os.path.exists(path):
            return
        from forge.weights import WeightsError, WeightStore, attach_weights

        try:
            attach_weights(prog, WeightStore.load(path))
        except WeightsError as e:
            raise ForgeOptError(one_line(str(e))) from None

    def save_companion_weights(self, prog: ModuleOp) -> None:
        """With `-o out.mlir`, write the module's WeightStore (if any) to out.safetensors."""
        if not self.args.output_file or "forge.weights" not in sys.modules:
            return
        from forge.weights import companion_weights_path, weights_of

        if (store := weights_of(prog)) is not None:
            store.save(companion_weights_path(self.args.output_file))

    # ------------------------------------------------------------------ pattern reports

    def print_events(self, pass_name: str, events: Sequence[str]) -> None:
        for event in events:
            print(f"[{pass_name}] {event}", file=self.err)

    def explain_summary(self) -> None:
        name = self.args.explain_pattern
        if not name:
            return
        attempts = sum(r.explain_attempts for r in self.records)
        if attempts == 0:
            print(
                f"note: pattern '{name}' was not run by any pass of this pipeline "
                "(NAME is a ForgePattern class name)",
                file=self.err,
            )
        elif not any(r.events for r in self.records):
            print(
                f"note: pattern '{name}' was run on {attempts} ops, never fired and "
                "gave no reason (self.fail) for not matching",
                file=self.err,
            )

    # ------------------------------------------------------------------ reproducers

    def reproduce_command(self, path: str, failure: PassFailure) -> str:
        env = ""
        if failure.name.split("{", 1)[0] in _test_pass_names():
            env = f"{TEST_PASSES_ENV}=1 "
        flags = []
        for plugin in getattr(self, "plugin_files", ()):
            flags += ["--load-pass-plugin", shlex.quote(os.path.abspath(plugin))]
        if self.args.allow_unregistered_dialect:
            flags.append("--allow-unregistered-dialect")
        if failure.kind == "verify":
            flags.append("--verify-each")
        if failure.kind == "semantics":
            flags += _semantics_flags(self.args)
        pipeline = shlex.quote(failure.name)
        return " ".join([f"{env}{PROG}", shlex.quote(path), *flags, "-p", pipeline])

    def write_reproducer(self, failure: PassFailure) -> PassRunError:
        """Write the IR the failing pass was given; return the error to report."""
        if failure.before is None:
            return PassRunError(failure)
        try:
            if self.args.reproducer_dir:
                os.makedirs(self.args.reproducer_dir, exist_ok=True)
                path = os.path.join(self.args.reproducer_dir, REPRODUCER_NAME)
            else:
                fd, path = tempfile.mkstemp(prefix="forge-opt-reproducer-", suffix=".mlir")
                os.close(fd)
            path = os.path.abspath(path)
            command = self.reproduce_command(path, failure)
            rest = ",".join(failure.remaining)
            what = {
                "raised": "raised",
                "verify": "left IR that does not verify",
                "semantics": "changed the results (--verify-semantics)",
            }[failure.kind]
            header = [
                f"// forge-opt crash reproducer: the IR given to pass #{failure.index + 1} "
                f"'{failure.name}', which {what}:",
                f"//   {one_line(str(failure.error))}",
                f"// Reproduce with: {command}",
                f"// The rest of the pipeline was: -p {shlex.quote(rest)}",
            ]
            printer_text = _generic_text(failure.before)
            with open(path, "w") as f:
                f.write("\n".join(header) + "\n" + printer_text)
            store = _weights_of(self.module)
            if store is not None:
                from forge.weights import companion_weights_path

                store.save(companion_weights_path(path))
        except OSError as e:
            return PassRunError(failure, reproducer_error=f"{e.strerror}: {e.filename}")
        return PassRunError(failure, path, command)

    # ------------------------------------------------------------------ reporting

    def report(self, error: BaseException, stderr: IO[str]) -> int:
        """Print `error` as a diagnostic; return the exit code."""
        notes: list[str] = []
        op = None
        if isinstance(error, SemanticsError):
            diag = op_diagnostic(
                f"--verify-semantics: {error.message}", error.op, fallback=self.get_input_name()
            )
            print(diag.format(self.sources), file=stderr)
            return EXIT_ERROR
        if isinstance(error, PassRunError):
            failure = error.failure
            position = f"#{failure.index + 1} of {len(self.pass_list)}"
            if failure.kind == "semantics":
                assert isinstance(error.error, SemanticMismatch)
                diag = error.error.diagnostic(len(self.pass_list), self.get_input_name())
                diag.notes += _reproducer_notes(error)
                print(diag.format(self.sources), file=stderr)
                return EXIT_ERROR
            if failure.kind == "verify":
                notes.append(
                    f"the IR does not verify after pass '{failure.name}' ({position})"
                )
                if self.module is not None:
                    op = find_failing_op(self.module, failure.error)
            else:
                notes.append(f"while running pass '{failure.name}' ({position})")
                op = attached_op(failure.error)
            if error.reproducer is not None:
                notes.append(
                    f"reproducer (the IR before this pass) written to {error.reproducer}"
                )
                notes.append(f"reproduce with: {error.command}")
            elif error.reproducer_error is not None:
                notes.append(f"could not write a reproducer: {error.reproducer_error}")
            error = error.error
        elif isinstance(error, OutputVerifyError):
            notes.append(
                "the input verified, so a pass in the pipeline produced invalid IR; "
                "rerun with --verify-each to find it"
            )
            error = error.error
            if self.module is not None:
                op = find_failing_op(self.module, error)
        elif isinstance(error, DiagnosticException) and self.module is not None:
            op = find_failing_op(self.module, error)
        if isinstance(error, DiagnosticException):
            diag = op_diagnostic(str(error), op, fallback=self.get_input_name())
            diag.notes += notes
            print(diag.format(self.sources), file=stderr)
            return EXIT_ERROR
        # An internal error: show where it happened.
        traceback.print_exception(error, file=stderr)
        diag = op_diagnostic(
            f"internal error: {type(error).__name__}: {one_line(str(error))}",
            op,
            fallback=PROG,
        )
        if op is not None:  # `'op' op internal error` reads badly
            diag.message = f"internal error at '{op.name}': {type(error).__name__}: " + (
                one_line(str(error))
            )
        diag.notes += notes
        print(diag.format(self.sources), file=stderr)
        return EXIT_INTERNAL


class _DebugOutput(PipelineObserver):
    """forge-opt's reports around each pass (the --print-ir-* family, dumps, patterns)."""

    def __init__(self, opt: ForgeOptMain):
        self.opt = opt
        args = opt.args
        self.before = _pass_set(args.print_ir_before)
        self.after = _pass_set(args.print_ir_after)
        self.n_passes = len(opt.pass_list)

    def before_pass(self, index: int, name: str, module: ModuleOp) -> None:
        args = self.opt.args
        if args.print_ir_before_all or name.split("{", 1)[0] in self.before:
            self.dump("Before", name, module)

    def after_pass(self, record: PassRecord, module: ModuleOp) -> None:
        opt, args = self.opt, self.opt.args
        opt.print_events(record.name, record.events)
        if args.time_passes:  # xDSL's flag, xDSL's format
            print(f"Pass {record.pass_name} took {record.wall_ms / 1e3} seconds")
        wanted = args.print_ir_after_all or record.pass_name in self.after
        if args.print_ir_after_change:
            # Alone, it prints after every pass that changed the IR; with the other
            # --print-ir-after flags, it narrows them to passes that changed it.
            wanted = (wanted or not (args.print_ir_after_all or self.after)) and bool(
                record.changed
            )
        if wanted:
            self.dump("After", record.name, module)
        if record.changed and (directory := opt.dump_dir()) is not None:
            path = os.path.join(directory, f"{record.index + 1:02d}-{record.pass_name}.mlir")
            with open(path, "w") as f:
                f.write(opt.format_ir(module))
        if args.print_between_passes and record.index + 1 < self.n_passes:
            print(f"IR after {record.pass_name}:")
            print(opt.format_ir(module), end="")
            print("\n\n")

    def dump(self, when: str, name: str, module: ModuleOp) -> None:
        err = self.opt.err
        print(f"// -----// IR Dump {when} {name} //----- //", file=err)
        print(self.opt.format_ir(module), file=err, end="")
        print(file=err)


def _plugin_files(argv: Sequence[str]) -> list[str]:
    """The --load-pass-plugin files named on a command line (before it is parsed)."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--load-pass-plugin", action="append", default=[])
    known, _ = parser.parse_known_args(list(argv))
    return known.load_pass_plugin


def _semantics_flags(args: argparse.Namespace) -> list[str]:
    """The --verify-semantics flags of this run, for a reproducer command line."""
    flags = ["--verify-semantics"]
    if args.verify_semantics_seed != 0:
        flags.append(f"--verify-semantics-seed={args.verify_semantics_seed}")
    if args.verify_semantics_atol is not None:
        flags.append(f"--verify-semantics-atol={args.verify_semantics_atol}")
    if args.verify_semantics_rtol is not None:
        flags.append(f"--verify-semantics-rtol={args.verify_semantics_rtol}")
    return flags


def _reproducer_notes(error: PassRunError) -> list[str]:
    if error.reproducer is not None:
        return [
            f"reproducer (the IR before this pass) written to {error.reproducer}",
            f"reproduce with: {error.command}",
        ]
    if error.reproducer_error is not None:
        return [f"could not write a reproducer: {error.reproducer_error}"]
    return []


def _pass_set(values: Sequence[str]) -> set[str]:
    return {v.strip().split("{", 1)[0] for item in values for v in item.split(",") if v.strip()}


def _test_pass_names() -> set[str]:
    from forge.testing.passes import TEST_PASSES

    return set(TEST_PASSES)


def _weights_of(module: ModuleOp | None):
    if module is None or "forge.weights" not in sys.modules:
        return None
    from forge.weights import weights_of

    return weights_of(module)


def _generic_text(module: ModuleOp) -> str:
    """The module in generic syntax (robust against custom printers of a broken pass)."""
    from io import StringIO

    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue() + "\n"


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
        opt = ForgeOptMain(args=argv, stderr=err)
        opt.run()
    except SystemExit as e:  # argparse (--help, usage errors) and xDSL's --shrink
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_ERROR)
    except ForgeOptError as e:
        diag = Diagnostic(e.message, prefix=e.prefix, notes=e.notes, context=e.context)
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
