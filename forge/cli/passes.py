"""The passes forge-opt offers, how `--help` lists them, and how `-p` becomes pass instances.

forge-opt offers xDSL's passes, Forge's (`forge.context.get_all_passes`: its own, entry-point
plug-ins and files loaded with `--load-pass-plugin`, see forge/plugins.py) and, when the environment
has FORGE_TEST_PASSES=1, the test-only passes of forge/testing/passes.py. Forge wins a name clash;
xDSL's pass then stays reachable as `xdsl-<name>`.

A pipeline that cannot be built (bad syntax, an unknown pass or option, a plug-in that fails to
load) is a `ForgeOptError` with a hint, not a traceback.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import inspect
import os
import re
import textwrap
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from forge.cli.errors import ForgeOptError
from forge.diagnostics import one_line
from forge.patterns import ForgePattern
from forge.pipeline import option_default_text
from forge.plugins import PluginError, load_pass_plugin

PassFactory = Callable[[], type[ModulePass]]

TEST_PASSES_ENV = "FORGE_TEST_PASSES"
"""Set to 1 to register Forge's test-only passes (`forge.testing.passes`)."""


def registered_test_passes() -> dict[str, PassFactory]:
    """The test-only passes when FORGE_TEST_PASSES=1, else none."""
    if os.environ.get(TEST_PASSES_ENV) != "1":
        return {}
    from forge.testing.passes import TEST_PASSES  # lazy: test-only, loaded only when asked for

    return dict(TEST_PASSES)


def plugin_files(argv: Sequence[str]) -> list[str]:
    """The --load-pass-plugin files named on a command line (before it is parsed)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--load-pass-plugin", "-load-pass-plugin", action="append", default=[])
    known, _ = parser.parse_known_args(list(argv))
    return known.load_pass_plugin


def load_pass_plugins(files: Sequence[str]) -> None:
    """Import each plug-in file, so that its passes are registered; ForgeOptError if one fails."""
    for path in files:
        try:
            load_pass_plugin(path)
        except PluginError as e:
            raise ForgeOptError(e.message, prefix=e.location()) from None


# --- --help -----------------------------------------------------------------------------------------


def pass_description(pass_cls: type[ModulePass]) -> str:
    """First sentence of a pass's docstring, on one line ('' if it has none)."""
    doc = pass_cls.__doc__ or ""
    # dataclasses invent `Name(field: type = ...)` when a class has no docstring.
    if doc.startswith(f"{pass_cls.__name__}("):
        return ""
    paragraph = one_line(doc.strip().split("\n\n")[0])
    if (end := paragraph.find(". ")) != -1:
        paragraph = paragraph[: end + 1]
    return paragraph


def pass_options(pass_cls: type[ModulePass]) -> list[tuple[str, str, str, str]]:
    """(option name as -p spells it, type, default, one-line description) of each option."""
    if not dataclasses.is_dataclass(pass_cls):
        return []
    docs = _field_docs(pass_cls)
    rows = []
    for f in dataclasses.fields(pass_cls):
        if not f.init or f.name == "name":
            continue
        type_name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        rows.append((f.name.replace("_", "-"), str(type_name), option_default_text(f), docs.get(f.name, "")))
    return rows


def _field_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings (a string literal right after `field: type = ...`) of a class and its
    bases, first sentence each."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        node = _class_node(klass)
        body = node.body if node is not None else []
        for stmt, after in zip(body, body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                text = one_line(after.value.value.strip().split("\n\n")[0])
                end = text.find(". ")
                docs[stmt.target.id] = text[: end + 1] if end != -1 else text
    return docs


def _class_node(cls: type) -> ast.ClassDef | None:
    """The class statement of `cls` in its module's source (each module is parsed once)."""
    try:
        path = inspect.getsourcefile(cls)
    except TypeError:  # builtins
        return None
    return _class_nodes(path).get(cls.__qualname__) if path else None


@functools.cache
def _class_nodes(path: str) -> dict[str, ast.ClassDef]:
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _close_matches(name: str, names: Iterable[str], n: int) -> list[str]:
    """difflib's close matches, for "did you mean" hints (difflib imported only when a name is wrong);
    a stricter cutoff than difflib's 0.6, which offers `dmp-to-mpi` for `pow-to-mul`."""
    import difflib

    return difflib.get_close_matches(name, list(names), n=n, cutoff=0.75)


PLUGIN_HINT = "a plug-in's passes are known once it is loaded: add --load-pass-plugin FILE"


def format_pass_list(available: Mapping[str, PassFactory], forge_names: Collection[str]) -> str:
    """Every registered pass, once: Forge's (and plug-ins') with their one-line description and options,
    xDSL's by name (`--help-pass NAME` describes one; importing all ~150 of xDSL's pass modules to describe
    them would take `forge-opt --help` seconds) (the --help epilog)."""
    forge = [n for n in available if n in forge_names]
    xdsl = [n for n in available if n not in forge_names]
    lines = ["Forge passes (options: -p 'pass{option=value ...}'; --help-pass NAME shows one in full):"]
    lines += _pass_rows(available, forge) if forge else ["  (none registered yet)"]
    lines += ["", "xDSL passes (--help-pass NAME describes one):"]
    lines += textwrap.wrap(", ".join(sorted(xdsl)), _WIDTH, initial_indent="  ", subsequent_indent="  ",
                           break_on_hyphens=False)
    lines += [
        "",
        f"{TEST_PASSES_ENV}=1 in the environment also registers the test-only passes of "
        "forge/testing/passes.py; --load-pass-plugin FILE adds a plug-in's passes to this list.",
        "Exit codes: 0 success, 1 error in the input or pipeline, 2 bad command line, 70 internal error.",
    ]
    return "\n".join(lines)


_WIDTH = 120


def _pass_rows(available: Mapping[str, PassFactory], names: list[str]) -> list[str]:
    rows: list[str] = []
    width = max((len(n) for n in names), default=0)
    for name in sorted(names):
        try:
            pass_cls = available[name]()
            desc, options = pass_description(pass_cls), pass_options(pass_cls)
        except Exception as e:  # a plug-in that fails to import
            desc, options = f"(failed to load: {type(e).__name__}: {e})", []
        indent = " " * (width + 4)
        wrapped = textwrap.wrap(desc, _WIDTH - len(indent)) or [""]
        rows.append(f"  {name.ljust(width)}  {wrapped[0]}".rstrip())
        rows += [indent + line for line in wrapped[1:]]
        for option, type_name, default, doc in options:
            text = f"{option}: {type_name} = {default}" + (f"  {doc}" if doc else "")
            rows += textwrap.wrap(text, _WIDTH, initial_indent=indent + "  ", subsequent_indent=indent + "      ")
    return rows


def format_pass_help(name: str, available: Mapping[str, PassFactory]) -> str:
    """`--help-pass NAME`: the pass's whole docstring, its options and an example command."""
    if name not in available:
        close = _close_matches(name, available, n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ForgeOptError(f"unknown pass '{name}' for --help-pass{hint} ({PLUGIN_HINT})")
    pass_cls = available[name]()
    doc = inspect.getdoc(pass_cls) or ""
    if doc.startswith(f"{pass_cls.__name__}("):
        doc = ""
    lines = [f"{name}  ({pass_cls.__module__}.{pass_cls.__name__})", ""]
    lines += [doc or "(no description)", ""]
    if _is_function_local(name, available):
        lines += ["Works function by function: --pass-pipeline accepts it inside 'func.func(...)'.", ""]
    options = pass_options(pass_cls)
    if options:
        lines.append("Options:")
        for option, type_name, default, text in options:
            lines.append(f"  {option}: {type_name} = {default}")
            lines += textwrap.wrap(text, _WIDTH, initial_indent="      ", subsequent_indent="      ")
        example = " ".join(f"{o}={d if d != 'required' else '<value>'}" for o, _, d, _ in options)
        lines += ["", f"Example: forge-opt in.mlir -p '{name}{{{example}}}'"]
    else:
        lines += ["No options.", "", f"Example: forge-opt in.mlir -p {name}"]
    return "\n".join(lines)


def check_pattern_name(name: str) -> None:
    """`--explain-pattern NAME`: NAME must be a ForgePattern class that is loaded (Forge's own
    patterns and those of the passes in the pipeline and of plug-ins); else ForgeOptError listing them."""
    known = _pattern_names(ForgePattern)
    if name in known:
        return
    close = _close_matches(name, known, n=3)
    hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
    raise ForgeOptError(
        f"unknown pattern '{name}' for --explain-pattern; {hint}known patterns: {', '.join(sorted(known))}"
    )


def _pattern_names(cls: type) -> set[str]:
    names: set[str] = set()
    for sub in cls.__subclasses__():
        if not sub.__name__.startswith("_") and not sub.__dict__.get("_abstract_pattern", False):
            names.add(sub.__name__)
        names |= _pattern_names(sub)
    return names


# --- -p ---------------------------------------------------------------------------------------------


MODULE_ANCHORS = ("builtin.module",)
FUNCTION_ANCHORS = ("func.func", "any")

FUNCTION_LOCAL_PASSES = frozenset({
    # Forge's: they rewrite or check ops inside functions, one function at a time.
    "dce", "cse", "fold", "fuse-attention", "fuse-ops", "layout", "check-buffer-allocation",
    # xDSL's.
    "canonicalize", "xdsl-cse", "xdsl-dce", "constant-fold-interp",
})
"""Passes whose effect on a module is their effect on each function alone, so that mlir-opt's
`func.func(p)` means the same as `p`. A plug-in's pass says so with `function_local = True` on its class.
The lowering passes are not: they record a summary of the whole module on it (`npuir.lowering`, ...)."""


def _is_function_local(name: str, available: Mapping[str, PassFactory]) -> bool:
    if name in FUNCTION_LOCAL_PASSES:
        return True
    return name in available and bool(getattr(available[name](), "function_local", False))


def flatten_nested_pipeline(pipeline: str, available: Mapping[str, PassFactory]) -> str:
    """mlir-opt's `--pass-pipeline` nesting, `builtin.module(func.func(a,b),c)`, as the flat list forge-opt
    runs (`a,b,c`), accepted only where it means the same: `builtin.module(...)` around everything,
    `func.func(...)` / `any(...)` around function-local passes. A pipeline without nesting is returned as is."""
    items: list[tuple[str, tuple[str, ...], int]] = []  # (pass text, anchors around it, column)
    anchors: list[str] = []
    start, depth, quote, nested = 0, 0, False, False
    text = pipeline + ","
    for i, c in enumerate(text):
        if quote:
            quote = c != '"'
        elif c == '"':
            quote = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0 and c == "(":
            nested = True
            anchors.append(text[start:i].strip())
            start = i + 1
        elif depth == 0 and c in "),":
            if text[start:i].strip():
                items.append((text[start:i].strip(), tuple(anchors), start + 1))
            if c == ")":
                if not anchors:
                    raise _nesting_error(pipeline, i + 1, "')' closes no anchor")
                anchors.pop()
            start = i + 1
    if anchors:
        raise _nesting_error(pipeline, len(pipeline), f"'{anchors[-1]}(' is not closed")
    if not nested:
        return pipeline
    for name, around, column in items:
        _check_anchors(pipeline, name, around, column, available)
    return ",".join(name for name, _, _ in items)


def _check_anchors(pipeline: str, spec: str, around: tuple[str, ...], column: int,
                   available: Mapping[str, PassFactory]) -> None:
    levels = list(around)
    if levels and levels[0] in MODULE_ANCHORS:
        levels = levels[1:]
    if not levels:
        return
    anchor = levels[0]
    if anchor not in FUNCTION_ANCHORS or len(levels) > 1:
        raise _nesting_error(pipeline, column, f"forge-opt runs passes on the module or on each function: "
                             f"'{'('.join(around)}(' is not an anchor it knows (write builtin.module(...) and "
                             "func.func(...), or the flat list: -p a,b)")
    name = spec.split("{", 1)[0].strip()
    if not _is_function_local(name, available):
        raise _nesting_error(pipeline, column, f"pass '{name}' runs on the whole module, not on each function: "
                             f"write it outside '{anchor}(...)'")


def _nesting_error(pipeline: str, column: int, message: str) -> ForgeOptError:
    return ForgeOptError(f"invalid pass pipeline at column {column}: {message}",
                         context=[f"  {pipeline}", "  " + " " * (column - 1) + "^"])


def parse_pass_pipeline(
    pipeline: str, available: Mapping[str, PassFactory]
) -> tuple[tuple[ModulePass, ...], tuple[str, ...]]:
    """The pass instances of `-p pipeline`, and each pass as written (aliases such as `xdsl-cse` kept)."""
    pipeline = flatten_nested_pipeline(pipeline, available)
    try:
        specs = list(parse_pipeline(pipeline))
    except ArgSpecParseError as e:
        raise _pipeline_syntax_error(str(e), pipeline) from None
    passes = tuple(instantiate_pass(spec, available) for spec in specs)
    return passes, tuple(str(spec) for spec in specs)


def instantiate_pass(spec: ArgSpec, available: Mapping[str, PassFactory]) -> ModulePass:
    """The pass `spec` names, with its options; ForgeOptError for an unknown pass or option."""
    if spec.name not in available:
        close = _close_matches(spec.name, available, n=3)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ForgeOptError(f"unknown pass '{spec.name}'{hint} (`forge-opt --help` lists the passes; {PLUGIN_HINT})")
    pass_cls = available[spec.name]()
    fields = [f.name for f in dataclasses.fields(pass_cls) if f.init and f.name != "name"]
    unknown = [k for k in spec.normalize_parameter_names().parameters if k not in fields]
    if unknown:
        options = ", ".join(f.replace("_", "-") for f in fields)
        takes = f"its options are: {options}" if fields else "it takes no options"
        bad = ", ".join(repr(k.replace("_", "-")) for k in unknown)
        raise ForgeOptError(f"pass '{spec.name}' has no option {bad}; {takes}")
    try:
        # `xdsl-cse` is registered under an alias of its class's own name.
        return pass_cls.from_spec(ArgSpec(pass_cls.name, spec.parameters))
    except (ValueError, TypeError) as e:
        raise ForgeOptError(f"invalid options for pass '{spec.name}': {one_line(str(e))}") from None


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
