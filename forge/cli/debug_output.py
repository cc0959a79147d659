"""forge-opt's debugging output around the pipeline, as mlir-opt users know it.

`DebugOutput` is the pipeline observer for the --print-ir-before/after family, --ir-dump-dir, the
pattern reports of --debug-patterns and --explain-pattern, and xDSL's --print-between-passes and
--time-passes. `write_op_graph` draws the result for --view-op-graph. Reports go to stderr (xDSL's
two flags keep printing to stdout, as in xdsl-opt); dumps and graphs go to files when asked.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from io import StringIO
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from forge.cli.opt_errors import ForgeOptError
from forge.pass_runner import PassRecord, PipelineObserver


def format_ir(module: ModuleOp, args: argparse.Namespace) -> str:
    """The module as forge-opt prints it (honours --print-op-generic/-debuginfo)."""
    out = StringIO()
    Printer(
        stream=out,
        print_generic_format=args.print_op_generic,
        print_debuginfo=args.print_debuginfo,
    ).print_op(module)
    return out.getvalue() + "\n"


class DebugOutput(PipelineObserver):
    """forge-opt's reports around each pass of one input chunk."""

    def __init__(self, args: argparse.Namespace, err: IO[str], n_passes: int, chunk_index: int):
        self.args = args
        self.err = err
        self.n_passes = n_passes
        self.chunk_index = chunk_index
        """Which --split-input-file chunk this is (for --ir-dump-dir)."""
        self.before = _pass_set(args.print_ir_before)
        self.after = _pass_set(args.print_ir_after)

    def dump_dir(self) -> str | None:
        """Directory for the --ir-dump-dir files of this chunk (created on demand)."""
        if not self.args.ir_dump_dir:
            return None
        path = self.args.ir_dump_dir
        if self.args.split_input_file:
            path = os.path.join(path, f"chunk-{self.chunk_index}")
        os.makedirs(path, exist_ok=True)
        return path

    def dump_input(self, module: ModuleOp) -> None:
        """--ir-dump-dir: the input, as 00-input.mlir."""
        self._write_dump("00-input.mlir", module)

    def before_pass(self, index: int, name: str, module: ModuleOp) -> None:
        if self.args.print_ir_before_all or name.split("{", 1)[0] in self.before:
            self.dump("Before", name, module)

    def after_pass(self, record: PassRecord, module: ModuleOp) -> None:
        args = self.args
        self.print_events(record.name, record.events)
        if args.time_passes:  # xDSL's flag, xDSL's format
            print(f"Pass {record.pass_name} took {record.wall_ms / 1e3} seconds")
        if self._print_after(record):
            self.dump("After", record.name, module)
        if record.changed:
            self._write_dump(f"{record.index + 1:02d}-{record.pass_name}.mlir", module)
        if args.print_between_passes and record.index + 1 < self.n_passes:
            print(f"IR after {record.pass_name}:")
            print(format_ir(module, args), end="")
            print("\n\n")

    def _print_after(self, record: PassRecord) -> bool:
        args = self.args
        wanted = args.print_ir_after_all or record.pass_name in self.after
        if args.print_ir_after_change:
            # Alone, it prints after every pass that changed the IR; with the other
            # --print-ir-after flags, it narrows them to passes that changed it.
            wanted = (wanted or not (args.print_ir_after_all or self.after)) and bool(record.changed)
        return wanted

    def _write_dump(self, file_name: str, module: ModuleOp) -> None:
        if (directory := self.dump_dir()) is not None:
            with open(os.path.join(directory, file_name), "w") as f:
                f.write(format_ir(module, self.args))

    def dump(self, when: str, name: str, module: ModuleOp) -> None:
        print(f"// -----// IR Dump {when} {name} //----- //", file=self.err)
        print(format_ir(module, self.args), file=self.err, end="")
        print(file=self.err)

    def print_events(self, pass_name: str, events: Sequence[str]) -> None:
        """--debug-patterns / --explain-pattern lines recorded during a pass."""
        for event in events:
            print(f"[{pass_name}] {event}", file=self.err)

    def explain_summary(self, records: Sequence[PassRecord]) -> None:
        """--explain-pattern: say so when the pattern never ran, or ran and gave no reason."""
        name = self.args.explain_pattern
        if not name:
            return
        attempts = sum(r.explain_attempts for r in records)
        if attempts == 0:
            print(
                f"note: pattern '{name}' was not run by any pass of this pipeline "
                "(NAME is a ForgePattern class name)",
                file=self.err,
            )
        elif not any(r.events for r in records):
            print(
                f"note: pattern '{name}' was run on {attempts} ops, never fired and "
                "gave no reason (self.fail) for not matching",
                file=self.err,
            )


def write_op_graph(
    module: ModuleOp, args: argparse.Namespace, input_name: str, chunk_index: int, err: IO[str]
) -> None:
    """--view-op-graph: the module as DOT (forge.driver.op_graph), to stderr or a file."""
    path = args.view_op_graph_output
    if not (args.view_op_graph or path):
        return
    from forge.driver.op_graph import op_graph  # lazy: start-up cost, only this flag needs it

    dot = op_graph(module, name=os.path.basename(input_name))
    if not path:
        print(dot, file=err, end="")
        return
    try:  # chunks after the first (--split-input-file) append their digraph
        with open(path, "a" if chunk_index > 0 else "w") as f:
            f.write(dot)
    except OSError as e:
        raise ForgeOptError(f"cannot write op graph to '{path}': {e.strerror}") from None


def _pass_set(values: Sequence[str]) -> set[str]:
    """Pass names given to --print-ir-before/after (repeated or comma-separated; options dropped)."""
    return {v.strip().split("{", 1)[0] for item in values for v in item.split(",") if v.strip()}
