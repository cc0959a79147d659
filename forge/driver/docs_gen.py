"""Generate the IR reference (docs/ir-reference.md) from the dialect and pass definitions.

    python -m forge.driver.docs_gen                 # writes docs/ir-reference.md
    python -m forge.driver.docs_gen -o -            # prints it

Every dialect that `forge.driver.registry.get_all_dialects()` registers is documented op by op: `aten` ops
from their ATen schema (`Cls.SIGNATURE`: which arguments are operands and which are properties,
with kinds and defaults), every other op generically from its IRDL definition (operands, results,
properties, attributes, regions, traits, assembly format, docstring). Each op also gets an example
taken from the round-trip FileCheck tests (`filecheck/dialects/<dialect>/*.mlir`) when one exists.
The pass section lists `forge.driver.registry.get_all_passes()`: name, docstring and options (dataclass
fields). A dialect or pass that fails to import is listed with the error instead of failing the run,
since they are developed in parallel.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import io
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from xdsl.ir import Dialect, Operation
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
    BaseAttr,
    EqAttrConstraint,
    IRDLOperation,
    OptOperandDef,
    OptResultDef,
    ParamAttrConstraint,
    VarConstraint,
    VarOperandDef,
    VarResultDef,
)
from xdsl.irdl.constraints import RangeLengthConstraint, RangeOf
from xdsl.parser import Parser
from xdsl.printer import Printer

from dialects.aten import AtenOp, format_float
from dialects.aten_schema import ArgKind
from forge import pipelines
from forge.driver import registry
from forge.driver.registry import get_all_dialects, get_all_passes, make_context
from forge.pass_runner import option_default_text

REPO_ROOT = Path(__file__).resolve().parents[2]
FILECHECK_DIALECTS = REPO_ROOT / "filecheck" / "dialects"
DEFAULT_OUTPUT = REPO_ROOT / "docs" / "ir-reference.md"
ROUND_TRIP_MARK = "--print-op-generic | forge-opt"
"""RUN-line text of the FileCheck files whose ops are valid round-trip examples."""


# --- small text helpers ----------------------------------------------------------------------------


def _doc(obj: Any) -> str:
    """An object's own docstring, dedented ('' if it has none or only an inherited/generated one)."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    if not doc:
        return ""
    if isinstance(obj, type) and dataclasses.is_dataclass(obj) and doc.startswith(f"{obj.__name__}("):
        return ""  # the signature dataclasses invent for undocumented classes
    return inspect.cleandoc(doc)


def _first_sentence(text: str) -> str:
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    parts = re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+(?=[A-Z])", paragraph, maxsplit=1)
    return parts[0]


def _cell(text: str) -> str:
    """Text made safe for a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code, with a fence long enough for backticks inside."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _anchor(name: str) -> str:
    return "op-" + re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines




# --- IRDL constraints as short text ----------------------------------------------------------------


def describe_constraint(constr: Any) -> str:
    """A short human reading of an IRDL constraint (`tensor`, `IntegerAttr(i64)`, `a | b`)."""
    if isinstance(constr, RangeLengthConstraint):
        return describe_constraint(constr.constraint)
    if isinstance(constr, RangeOf):
        return describe_constraint(constr.constr)
    if isinstance(constr, VarConstraint):
        return f"{describe_constraint(constr.constraint)} (same as every `{constr.name}`)"
    if isinstance(constr, BaseAttr):
        return _attr_class_name(constr.attr)
    if isinstance(constr, EqAttrConstraint):
        return f"exactly {constr.attr}"
    if isinstance(constr, AnyAttr):
        return "any attribute"
    if isinstance(constr, AnyOf):
        return " or ".join(describe_constraint(c) for c in constr.attr_constrs)
    if isinstance(constr, ParamAttrConstraint):
        params = [p for p in constr.param_constrs if isinstance(p, EqAttrConstraint)]
        inner = ", ".join(str(p.attr) for p in params)
        return f"{_attr_class_name(constr.base_attr)}({inner})" if inner else _attr_class_name(constr.base_attr)
    return type(constr).__name__


def _attr_class_name(cls: type) -> str:
    return "tensor" if cls.__name__ == "TensorType" else cls.__name__


# --- examples from the round-trip FileCheck tests --------------------------------------------------


def collect_examples(dialect: str, ctx_factory: Callable[[], Any]) -> dict[str, tuple[str, str]]:
    """First printed instance of each op in the `filecheck/dialects/<dialect>/*.mlir` round-trip files.

    Returns (printed op, file relative to the repository) by op name. Files that do not parse are
    skipped (they may be mid-edit; the FileCheck suite reports them).
    """
    examples: dict[str, tuple[str, str]] = {}
    directory = FILECHECK_DIALECTS / dialect
    if not directory.is_dir():
        return examples
    for path in sorted(directory.glob("*.mlir")):
        text = path.read_text()
        if ROUND_TRIP_MARK not in text:
            continue
        try:
            module = Parser(ctx_factory(), text, str(path)).parse_module()
        except Exception:
            continue
        for op in module.walk():
            if op.name.startswith(dialect + ".") and op.name not in examples:
                examples[op.name] = (_print_op(op), str(path.relative_to(REPO_ROOT)))
    return examples


def _example(name: str, examples: dict[str, tuple[str, str]]) -> list[str]:
    if name not in examples:
        return []
    text, path = examples[name]
    return [f"Example (from `{path}`):", "", "```mlir", text, "```", ""]


def _print_op(op: Operation) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(op)
    return out.getvalue().strip()


# --- aten ops: from the ATen schema ----------------------------------------------------------------


def _aten_kind_text(kind: Any) -> str:

    return {
        ArgKind.TENSOR: "Tensor",
        ArgKind.OPT_TENSOR: "Tensor? (`none` when absent)",
        ArgKind.TENSOR_LIST: "Tensor[] (`[%a, %b]`)",
        ArgKind.OPT_TENSOR_LIST: "Tensor?[] (`[none, %i]`; `present` mask in generic form)",
        ArgKind.INT: "int (`i64`)",
        ArgKind.FLOAT: "float (`f64`)",
        ArgKind.BOOL: "bool (`true`/`false`)",
        ArgKind.SCALAR: "Scalar (int `i64`, float `f64` or bool)",
        ArgKind.INT_LIST: "int[] (`[1, 2]`)",
        ArgKind.FLOAT_LIST: "float[] (`[0.5, 1.0]`)",
        ArgKind.DTYPE: "dtype (an element type: `f32`, `i64`, `i1`...)",
        ArgKind.STR: 'str (`"..."`)',
        ArgKind.DEVICE: 'Device (`"cpu"`)',
        ArgKind.LAYOUT: 'Layout (`"strided"`)',
        ArgKind.MEMORY_FORMAT: 'MemoryFormat (`"contiguous_format"`...)',
        ArgKind.GENERATOR: "Generator (always none; not stored)",
    }[kind]


def _aten_placeholder(kind: Any) -> str:

    return {
        ArgKind.INT: "<int>",
        ArgKind.FLOAT: "<float>",
        ArgKind.BOOL: "<bool>",
        ArgKind.SCALAR: "<number>",
        ArgKind.INT_LIST: "[<int>, ...]",
        ArgKind.FLOAT_LIST: "[<float>, ...]",
        ArgKind.DTYPE: "<dtype>",
        ArgKind.STR: '"<str>"',
        ArgKind.DEVICE: '"<device>"',
        ArgKind.LAYOUT: '"<layout>"',
        ArgKind.MEMORY_FORMAT: '"<memory format>"',
    }[kind]


def _aten_default(spec: Any) -> str:
    """The schema default in IR spelling ('required' when there is none)."""

    if spec.kind is ArgKind.GENERATOR:
        return "none"
    if not spec.has_default:
        if not spec.kind.is_tensor or spec.kind is not ArgKind.OPT_TENSOR:
            return "required"
        return "required (may be `none`)"
    value = spec.default
    if value is None:
        return "absent (`none`)" if spec.kind.is_tensor else "none (not stored)"
    if spec.kind is ArgKind.MEMORY_FORMAT and isinstance(value, int):
        return _code('"contiguous_format"') if value == 0 else _code(str(value))  # torch's enum index
    if isinstance(value, bool):
        return _code("true" if value else "false")
    if isinstance(value, float):
        return _code(format_float(value))
    if isinstance(value, (list, tuple)):
        return _code("[" + ", ".join(str(v) for v in value) + "]")
    if isinstance(value, str):
        return _code(f'"{value}"')
    return _code(str(value))


def _aten_syntax(cls: Any) -> str:
    """The op's custom syntax with placeholders, from its signature."""

    sig = cls.SIGNATURE
    operands = []
    for spec in sig.tensor_args:
        if spec.kind is ArgKind.TENSOR:
            operands.append(f"%{spec.field}")
        elif spec.kind is ArgKind.OPT_TENSOR:
            operands.append(f"%{spec.field}|none")
        elif spec.kind is ArgKind.TENSOR_LIST:
            operands.append(f"[%{spec.field}, ...]")
        else:
            operands.append(f"[%{spec.field}|none, ...]")
    props = [f"{s.name} = {_aten_placeholder(s.kind)}" for s in sig.property_args]
    if sig.variadic_result:
        results, result_types = "%r0, %r1, ... = ", "(<tensor types>)"
    elif not sig.result_fields:
        results, result_types = "", "()"
    elif len(sig.result_fields) == 1:
        results, result_types = "%result = ", "<tensor type>"
    else:
        names = ", ".join(f"%{f}" for f in sig.result_fields)
        results = f"{names} = "
        result_types = "(" + ", ".join("<tensor type>" for _ in sig.result_fields) + ")"
    text = f"{results}{cls.name}"
    if operands:
        text += " " + ", ".join(operands)
    if props:
        text += " {" + ", ".join(props) + "}"
    return text + f" : (<operand types>) -> {result_types}"


def _aten_results(cls: Any) -> str:
    sig = cls.SIGNATURE
    if sig.variadic_result:
        return "a variadic list of tensors (as many as the overload returns)"
    if not sig.result_fields:
        return "none"
    return ", ".join(f"`{f}`: tensor" for f in sig.result_fields)


def _aten_op_section(cls: Any, examples: dict[str, tuple[str, str]]) -> list[str]:
    sig = cls.SIGNATURE
    target = sig.target
    schema = str(target._schema)
    lines = [f'<a id="{_anchor(cls.name)}"></a>', f"### `{cls.name}`", ""]
    lines += [f"ATen schema: {_code(schema)}", ""]
    traits = _traits(cls)
    lines += [f"Class `{cls.__name__}`; traits: {traits}.", ""]
    rows = []
    for spec in sig.args:
        if spec.kind.is_tensor:
            where = "operand" + (f" `{spec.field}`" if spec.field != spec.name else "")
        elif spec.kind.name == "GENERATOR":
            where = "—"
        else:
            where = "property"
        kind = _aten_kind_text(spec.kind) + (" · keyword-only" if spec.kwarg_only else "")
        rows.append((f"`{spec.name}`", where, kind, _aten_default(spec)))
    if rows:
        lines += _table(["Argument", "In the IR", "Kind", "Default"], rows) + [""]
    lines += [f"Results: {_aten_results(cls)}.", ""]
    lines += ["```mlir", _aten_syntax(cls), "```", ""]
    return lines + _example(cls.name, examples)


# --- any IRDL op: from its definition ---------------------------------------------------------------


def _traits(cls: type[IRDLOperation]) -> str:
    try:
        traits = list(cls.get_irdl_definition().traits)
    except Exception:
        traits = []
    return ", ".join(f"`{type(t).__name__}`" for t in traits) or "none"


def _arity(definition: Any, var_cls: type, opt_cls: type) -> str:
    if isinstance(definition, opt_cls):  # (checked first: the optional defs subclass the variadic ones)
        return "optional"
    if isinstance(definition, var_cls):
        return "variadic"
    return "single"


def _irdl_op_section(cls: type[IRDLOperation], examples: dict[str, tuple[str, str]]) -> list[str]:
    op_def = cls.get_irdl_definition()
    lines = [f'<a id="{_anchor(cls.name)}"></a>', f"### `{cls.name}`", ""]
    doc = _doc(cls)
    if doc:
        lines += [doc, ""]
    lines += [f"Class `{cls.__name__}`; traits: {_traits(cls)}.", ""]
    if op_def.operands:
        rows = [(f"`{n}`", describe_constraint(d.constr), _arity(d, VarOperandDef, OptOperandDef))
                for n, d in op_def.operands]
        lines += _table(["Operand", "Type", "Arity"], rows) + [""]
    if op_def.properties:
        rows = []
        for name, d in op_def.properties.items():
            default = getattr(d, "default_value", None)
            optional = type(d).__name__.startswith("Opt")
            shown = _code(str(default)) if default is not None else ("optional" if optional else "required")
            rows.append((f"`{name}`", describe_constraint(d.constr), shown))
        lines += _table(["Property", "Attribute", "Default"], rows) + [""]
    if op_def.attributes:
        rows = [(f"`{n}`", describe_constraint(d.constr)) for n, d in op_def.attributes.items()]
        lines += _table(["Attribute", "Constraint"], rows) + [""]
    if op_def.regions:
        lines += ["Regions: " + ", ".join(f"`{n}`" for n, _ in op_def.regions) + ".", ""]
    if op_def.results:
        rows = [(f"`{n}`", describe_constraint(d.constr), _arity(d, VarResultDef, OptResultDef))
                for n, d in op_def.results]
        lines += _table(["Result", "Type", "Arity"], rows) + [""]
    else:
        lines += ["No results.", ""]
    if op_def.assembly_format:
        lines += [f"Assembly format: {_code(op_def.assembly_format)}", ""]
    elif "parse" in cls.__dict__:
        lines += ["Custom syntax (hand-written parser and printer); see the example.", ""]
    return lines + _example(cls.name, examples)


# --- dialects --------------------------------------------------------------------------------------


def _aten_families(module: Any) -> dict[str, str]:
    """Op name -> family, from the op table of dialects/aten.py (`OP_FAMILIES`)."""
    return dict(getattr(module, "OP_FAMILIES", {}))


def _dialect_module_doc(dialect: Dialect) -> str:
    ops = list(dialect.operations)
    if not ops:
        return ""
    module = sys.modules.get(ops[0].__module__)
    return _doc(module) if module is not None else ""


def _dialect_section(name: str, dialect: Dialect, ctx_factory: Callable[[], Any]) -> list[str]:
    ops = list(dialect.operations)
    examples = collect_examples(name, ctx_factory)
    lines = [f'<a id="dialect-{name}"></a>', f"## Dialect `{name}`", ""]
    doc = _dialect_module_doc(dialect)
    if doc:
        lines += [doc, ""]
    lines += [f"{len(ops)} ops.", ""]

    is_schema_op = _schema_op_predicate()
    families = _aten_families(sys.modules[ops[0].__module__]) if ops and name == "aten" else {}
    groups: dict[str, list[type]] = {}
    for cls in ops:
        group = families.get(cls.name) or ("Schema ops" if is_schema_op(cls) else "Ops")
        if name == "aten" and not is_schema_op(cls):
            group = "Weights and constants"
        groups.setdefault(group, []).append(cls)
    if name == "aten" and "Weights and constants" in groups:
        groups = {"Weights and constants": groups.pop("Weights and constants"), **groups}

    rows = []
    for group, classes in groups.items():
        for cls in classes:
            summary = (_code(str(cls.SIGNATURE.target._schema)) if is_schema_op(cls)
                       else _first_sentence(_doc(cls)))
            link = f"[`{cls.name}`](#{_anchor(cls.name)})"
            rows.append((link, group, summary) if len(groups) > 1 else (link, summary))
    header = ["Op", "Family", "Summary"] if len(groups) > 1 else ["Op", "Summary"]
    lines += _table(header, rows) + [""]
    if any(is_schema_op(cls) for cls in ops):
        lines += [SCHEMA_OPS_NOTE, ""]

    attributes = list(dialect.attributes)
    if attributes:
        lines += [f"### Attributes and types of `{name}`", ""]
        lines += _table(["Name", "Class", "Description"],
                        [(f"`{a.name}`", f"`{a.__name__}`", _attribute_summary(a)) for a in attributes])
        lines += [""]

    for group, classes in groups.items():
        if len(groups) > 1:
            lines += [f"### {group}", ""]
        for cls in classes:
            if is_schema_op(cls):
                section = _aten_op_section(cls, examples)
            else:
                section = _irdl_op_section(cls, examples)
            if len(groups) > 1:  # ops one heading level below their family
                section = [("#" + s) if s.startswith("### ") else s for s in section]
            lines += section
    return lines


SCHEMA_OPS_NOTE = (
    "How to read the schema ops below: tensor arguments are operands (in schema order; `none` for "
    "an absent optional tensor), every other argument is a property, written `{name = value}` in "
    "custom syntax. The importer stores a property only when it differs from the schema default, "
    "and `op.arg(name)` reads it back as a Python value (the default when absent). Result types are "
    "inferred by running the overload on meta tensors; the verifier requires the declared ones to "
    "match."
)


def _attribute_summary(attr_cls: type) -> str:
    summary = _first_sentence(_doc(attr_cls))
    enum = getattr(attr_cls, "enum_type", None)
    if enum is not None:
        values = ", ".join(f"`{m.value}`" for m in enum)
        summary = f"{summary} Values: {values}." if summary else f"One of {values}."
    return summary


def _schema_op_predicate() -> Callable[[type], bool]:
    return lambda cls: isinstance(cls, type) and issubclass(cls, AtenOp) and hasattr(cls, "SIGNATURE")


# --- passes ----------------------------------------------------------------------------------------


def _option_default(f: dataclasses.Field) -> str:
    text = option_default_text(f)
    return text if text == "required" else _code(text)


def _pass_section(name: str, pass_cls: type) -> list[str]:
    lines = [f'<a id="pass-{name}"></a>', f"### `{name}`", ""]
    doc = _doc(pass_cls) or _doc(sys.modules.get(pass_cls.__module__))
    lines += [f"Class `{pass_cls.__name__}` in `{pass_cls.__module__}`.", ""]
    if doc:
        lines += [doc, ""]
    fields = [f for f in dataclasses.fields(pass_cls) if f.init and f.name != "name"] \
        if dataclasses.is_dataclass(pass_cls) else []
    if fields:
        rows = [(f"`{f.name.replace('_', '-')}`", _code(str(f.type)), _option_default(f)) for f in fields]
        lines += _table(["Option", "Type", "Default"], rows) + [""]
        example = " ".join(f"{f.name.replace('_', '-')}={_example_value(f)}" for f in fields)
        lines += ["```sh", f"forge-opt in.mlir -p '{name}{{{example}}}'", "```", ""]
    else:
        lines += ["No options.", "", "```sh", f"forge-opt in.mlir -p {name}", "```", ""]
    return lines


def _example_value(f: dataclasses.Field) -> str:
    default = _option_default(f).strip("`")
    return "<value>" if default == "required" else default


def _pipelines_table() -> list[str]:
    """The named pipelines of `forge.pipelines`, spelled as `forge-opt -p` takes them."""
    named = [(name, value) for name, value in vars(pipelines).items() if name.isupper() and isinstance(value, tuple)]
    lines = [
        "The named pipelines (`forge/pipelines.py`): `forge.compile` runs `DEFAULT_PIPELINE`, then "
        "`LOWER_TO_NPUIR` and `PLAN_MEMORY`.",
        "",
    ]
    rows = [(_code(name), _code(",".join(value))) for name, value in named]
    return lines + _table(["Pipeline", "Passes (`-p`)"], rows) + [""]


def _passes_section(passes: dict[str, Callable[[], type]]) -> list[str]:
    lines = ['<a id="passes"></a>', "## Passes", ""]
    lines += [
        "Every pass runs from the command line as `forge-opt in.mlir -p a,b,c`; options go in braces, "
        "separated by spaces, with hyphens for underscores: `-p 'fold{max-inline-elements=16}'`. "
        "`forge-opt --help` also lists xDSL's own passes (a Forge pass that shares a name with one "
        "of them wins; xDSL's stays reachable as `xdsl-<name>`).",
        "",
    ]
    lines += _pipelines_table()
    loaded: list[tuple[str, type]] = []
    failed: list[tuple[str, str]] = []
    for name, factory in passes.items():
        try:
            loaded.append((name, factory()))
        except Exception as e:
            failed.append((name, f"{type(e).__name__}: {e}".splitlines()[0]))
    rows = [(f"[`{n}`](#pass-{n})", _first_sentence(_doc(c) or _doc(sys.modules.get(c.__module__))))
            for n, c in loaded]
    rows += [(f"`{n}`", f"(not documented: failed to import: {err})") for n, err in failed]
    lines += _table(["Pass", "Summary"], rows) + [""]
    for name, cls in loaded:
        lines += _pass_section(name, cls)
    return lines


# --- the whole document ----------------------------------------------------------------------------


def documented_passes() -> dict[str, Callable[[], type]]:
    """The passes the reference documents: every pass Forge knows except those registered at run
    time (a plug-in file a test or a forge-opt run loaded), so that the page is the same in every
    process (tests/test_docs_gen.py compares it with the checked-in copy)."""
    return {name: factory for name, factory in get_all_passes().items() if name not in registry._REGISTERED_PASSES}


def generate(
    dialects: dict[str, Callable[[], Dialect]] | None = None,
    passes: dict[str, Callable[[], type]] | None = None,
) -> str:
    """The IR reference as Markdown (by default for every registered dialect and pass)."""

    dialects = get_all_dialects() if dialects is None else dialects
    try:
        passes = documented_passes() if passes is None else passes
        pass_table_error = None
    except Exception as e:
        passes, pass_table_error = {}, f"{type(e).__name__}: {e}"

    loaded: list[tuple[str, Dialect]] = []
    failed: list[tuple[str, str]] = []
    for name, factory in dialects.items():
        try:
            loaded.append((name, factory()))
        except Exception as e:
            failed.append((name, f"{type(e).__name__}: {e}".splitlines()[0]))

    lines = [
        "# Forge IR reference",
        "",
        "<!-- Generated by `python -m forge.driver.docs_gen` (`make docs`) from the dialect and pass "
        "definitions. Do not edit by hand: change the definitions and regenerate. -->",
        "",
        "Forge's dialects as `forge-opt` and `forge.driver.registry.make_context()` load them (xDSL's "
        "`builtin`, `func` and `arith` are loaded too and documented by xDSL), and its passes. "
        "Examples come from the round-trip tests in `filecheck/dialects/`.",
        "",
    ]
    for name, dialect in loaded:
        lines.append(f"- [Dialect `{name}`](#dialect-{name}): {len(list(dialect.operations))} ops")
    for name, err in failed:
        lines.append(f"- Dialect `{name}`: not documented, failed to import ({err})")
    lines += [f"- [Passes](#passes): {len(passes)} registered", ""]

    for name, dialect in loaded:
        lines += _dialect_section(name, dialect, lambda: make_context(allow_unregistered=True))
    if pass_table_error:
        lines += ["## Passes", "", f"The pass table failed to load: {pass_table_error}", ""]
    else:
        lines += _passes_section(passes)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forge.driver.docs_gen", description=__doc__.split("\n\n")[0])
    parser.add_argument("-o", "--output", default=str(DEFAULT_OUTPUT),
                        help="where to write the Markdown ('-' for stdout; default: %(default)s)")
    args = parser.parse_args(argv)
    text = generate()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"wrote {out} ({len(text.splitlines())} lines)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
