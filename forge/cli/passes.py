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
import inspect
import os
import re
import textwrap
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

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
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--load-pass-plugin", action="append", default=[])
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
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in zip(body, body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                text = one_line(after.value.value.strip().split("\n\n")[0])
                end = text.find(". ")
                docs[stmt.target.id] = text[: end + 1] if end != -1 else text
    return docs


def _close_matches(name: str, names: Iterable[str], n: int) -> list[str]:
    """difflib's close matches, for "did you mean" hints (difflib imported only when a name is wrong)."""
    import difflib

    return difflib.get_close_matches(name, list(names), n=n)


def format_pass_list(available: Mapping[str, PassFactory], forge_names: Collection[str]) -> str:
    """Every registered pass, once, with its one-line description and options, Forge's first
    (the --help epilog)."""
    forge = [n for n in available if n in forge_names]
    xdsl = [n for n in available if n not in forge_names]
    lines = ["Forge passes (options: -p 'pass{option=value ...}'; --help-pass NAME shows one in full):"]
    lines += _pass_rows(available, forge) if forge else ["  (none registered yet)"]
    lines += ["", "xDSL passes:", *_pass_rows(available, xdsl)]
    lines += [
        "",
        f"{TEST_PASSES_ENV}=1 in the environment also registers the test-only passes of "
        "forge/testing/passes.py.",
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
        raise ForgeOptError(f"unknown pass '{name}' for --help-pass{hint}")
    pass_cls = available[name]()
    doc = inspect.getdoc(pass_cls) or ""
    if doc.startswith(f"{pass_cls.__name__}("):
        doc = ""
    lines = [f"{name}  ({pass_cls.__module__}.{pass_cls.__name__})", ""]
    lines += [doc or "(no description)", ""]
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


def parse_pass_pipeline(
    pipeline: str, available: Mapping[str, PassFactory]
) -> tuple[tuple[ModulePass, ...], tuple[str, ...]]:
    """The pass instances of `-p pipeline`, and each pass as written (aliases such as `xdsl-cse` kept)."""
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
        hint = hint or " (`forge-opt --help` lists the available passes)"
        raise ForgeOptError(f"unknown pass '{spec.name}'{hint}")
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
