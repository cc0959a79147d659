"""forge-opt's own command-line flags, as data: one table per `--help` group, in `--help` order.

xDSL's flags (`-p`, `-o`, `--split-input-file`, ...) come from `xDSLOptMain`; `add_forge_flags` adds
Forge's after them, and mlir-opt's spellings of both (`--mlir-timing`, `--mlir-print-ir-after-all`,
`--mlir-print-op-generic`, `--pass-pipeline`, ...) as second names of the same flags. The modules
that act on a flag read it from the parsed namespace (debug_output.py, reproducer.py,
verify_semantics.py, companion_weights.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from forge.cli.reproducer import REPRODUCER_NAME

Names = str | tuple[str, ...]
Flag = tuple[tuple[str, ...], dict[str, Any]]


def _names(name: Names) -> tuple[str, ...]:
    return (name,) if isinstance(name, str) else name


def _switch(name: Names, help: str) -> Flag:
    return _names(name), {"action": "store_true", "help": help}


def _value(name: Names, metavar: str, help: str, **options: Any) -> Flag:
    return _names(name), {"metavar": metavar, "help": help, **options}


def _repeated(name: Names, metavar: str, help: str) -> Flag:
    return _value(name, metavar, help, action="append", default=[])


DEBUG_FLAGS: tuple[Flag, ...] = (
    _switch(
        ("--timing", "--mlir-timing"),
        "print a table of wall time per phase (start-up, plug-ins, parse, weights, verify, each pass, output) "
        "adding up to the run's wall clock, op counts before -> after and the patterns that fired most",
    ),
    _repeated(("--print-ir-before", "--mlir-print-ir-before"), "PASS",
              "print the IR before each run of PASS (repeatable, or comma-separated)"),
    _switch(("--print-ir-before-all", "--mlir-print-ir-before-all"), "print the IR before every pass"),
    _repeated(("--print-ir-after", "--mlir-print-ir-after"), "PASS",
              "print the IR after each run of PASS (repeatable, or comma-separated)"),
    _switch(("--print-ir-after-all", "--mlir-print-ir-after-all"), "print the IR after every pass"),
    _switch(
        ("--print-ir-after-change", "--mlir-print-ir-after-change"),
        "print the IR after a pass only if the pass changed it (compares the printed IR); combines with the "
        "other --print-ir-after flags",
    ),
    _value(
        "--ir-dump-dir",
        "DIR",
        "write the input to DIR/00-input.mlir and, after each pass that changed the IR, DIR/NN-<pass>.mlir "
        "(NN: position of the pass in the pipeline)",
    ),
    _switch("--verify-each", "verify the IR after every pass (default: after parsing and at the end)"),
    _switch("--mlir-disable-threading", "accepted for mlir-opt's command lines: forge-opt runs passes on one thread"),
    _value(
        "--reproducer-dir",
        "DIR",
        f"when a pass fails, write the IR it was given to DIR/{REPRODUCER_NAME} (default: a new "
        "forge-opt-reproducer-*.mlir in the system temp directory)",
    ),
    _switch("--no-reproducer", "do not keep a copy of the IR before each pass, nor write reproducers"),
    _switch(
        "--show-traceback",
        "print the Python traceback of an exception raised by a plug-in's pass or pattern (reported as one "
        "diagnostic at the op otherwise; the reproducer file keeps the traceback)",
    ),
    _switch(
        "--xdsl-verify-diagnostics",
        "xdsl-opt's --verify-diagnostics: print each chunk's first error to stdout instead of failing, exit 0 "
        "(for FileCheck); --verify-diagnostics checks them against expected-* annotations, as mlir-opt does",
    ),
    _value("--help-pass", "NAME", "show pass NAME in full (its description, options with types and defaults) and exit"),
    _switch("--debug-patterns", "print every ForgePattern rewrite: pattern, op and its location"),
    _value(
        "--explain-pattern",
        "NAME",
        "print where the ForgePattern class NAME fired and why it did not match elsewhere (the reasons its "
        "self.fail(...) calls gave)",
    ),
)

SEMANTICS_FLAGS: tuple[Flag, ...] = (
    _switch(
        "--verify-semantics",
        "run the reference interpreter on seeded random inputs before the pipeline and after every pass; stop "
        "at the first pass whose results differ, print the difference and write a reproducer (weights: the "
        "companion .safetensors, else generated from their types)",
    ),
    _value(
        "--verify-semantics-seed",
        "N",
        "seed of the inputs (and generated weights) of --verify-semantics (default 0)",
        type=int,
        default=0,
    ),
    _value(
        "--verify-semantics-atol",
        "X",
        "absolute tolerance for float outputs (default per dtype: 1e-4 for f32)",
        type=float,
    ),
    _value(
        "--verify-semantics-rtol",
        "X",
        "relative tolerance for float outputs (default per dtype: 1e-4 for f32)",
        type=float,
    ),
    _repeated(
        "--load-pass-plugin",
        "FILE",
        "import the Python file FILE, whose passes register with forge.context.register_pass (repeatable; "
        "mlir-opt's --load-pass-plugin)",
    ),
)

VIEW_FLAGS: tuple[Flag, ...] = (
    _switch(
        "--view-op-graph",
        "write the module after the pipeline as a Graphviz DOT graph to stderr (mlir-opt's -view-op-graph): "
        "ops coloured by device, fused ops double-bordered, data-flow edges, a legend; render with `dot -Tsvg`",
    ),
    _value(
        "--view-op-graph-output",
        "FILE",
        "write the --view-op-graph DOT graph to FILE instead of stderr (implies --view-op-graph; with "
        "--split-input-file, one digraph per chunk)",
    ),
)

FLAG_GROUPS: tuple[tuple[str, tuple[Flag, ...]], ...] = (
    ("Forge debugging flags (reports go to stderr)", DEBUG_FLAGS),
    ("Forge semantic checking and plug-ins", SEMANTICS_FLAGS),
    ("Forge pictures", VIEW_FLAGS),
)

PASSES_HELP = (
    "comma-separated pass pipeline, e.g. 'cse,canonicalize' or 'pass{option=value other=1}'; mlir-opt's "
    "nesting is accepted where it means the same: 'builtin.module(func.func(cse,canonicalize))' (passes are "
    "listed below)"
)
"""Replaces xDSL's help of `-p`, which lists every pass name on one line."""

XDSL_ALIASES = {
    "--passes": "--pass-pipeline",
    "--print-op-generic": "--mlir-print-op-generic",
    "--print-debuginfo": "--mlir-print-debuginfo",
}
"""mlir-opt's names for xDSL's flags."""


def add_forge_flags(parser: argparse.ArgumentParser) -> None:
    """Add Forge's flag groups, and mlir-opt's names of xDSL's flags, to a parser that has xDSL's flags."""
    for action in parser._actions:
        if "--passes" in action.option_strings:
            action.help = PASSES_HELP
        for flag, alias in XDSL_ALIASES.items():
            if flag in action.option_strings:
                action.option_strings.append(alias)
                parser._option_string_actions[alias] = action
    for title, flags in FLAG_GROUPS:
        group = parser.add_argument_group(title)
        for names, options in flags:
            group.add_argument(*names, **options)


def long_options(parser: argparse.ArgumentParser) -> list[str]:
    """Every `--name` the parser knows."""
    return [s for action in parser._actions for s in action.option_strings if s.startswith("--")]


def normalize_argv(argv: list[str], known: set[str]) -> list[str]:
    """mlir-opt's single-dash long flags (`-allow-unregistered-dialect`, `-mlir-timing`,
    `-pass-pipeline=...`) with two dashes, when that names a known flag; everything else as given."""
    out = []
    for arg in argv:
        name = arg.split("=", 1)[0]
        if len(name) > 2 and name[0] == "-" and name[1].isalpha() and "-" + name in known:
            arg = "-" + arg
        out.append(arg)
    return out


def usage_error(message: str, known: list[str]) -> str:
    """argparse's complaint as one line, with the closest flag for an unknown one."""
    import difflib  # only on a bad command line

    unknown = message.removeprefix("unrecognized arguments: ")
    if unknown != message:
        first = unknown.split()[0]
        if not first.startswith("-"):
            return f"unexpected argument '{first}': forge-opt reads one input file (or '-' for stdin)"
        close = difflib.get_close_matches(first.split("=", 1)[0], known, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        more = f" (and {len(unknown.split()) - 1} more)" if len(unknown.split()) > 1 else ""
        return f"unknown flag '{first}'{more}{hint} (forge-opt --help lists the flags)"
    return f"{message} (forge-opt --help lists the flags)"
