"""The IR reference generator (forge/driver/docs_gen.py): it runs, it documents every op and pass, and the
checked-in docs/ir-reference.md (ops and passes) is what it generates today: a change to an op or a
pass that does not regenerate the page (`make docs` / `python -m forge.driver.docs_gen`) fails here.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import ClassVar

import pytest
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, i64
from xdsl.irdl import AnyOf, BaseAttr, EqAttrConstraint, irdl_to_attr_constraint
from xdsl.passes import ModulePass

from dialects import aten
from forge.driver import docs_gen, registry
from forge.driver.registry import get_all_dialects, get_all_passes


@pytest.fixture(scope="module")
def reference() -> str:
    return docs_gen.generate()


def test_the_checked_in_reference_is_current(reference: str):
    checked_in = docs_gen.DEFAULT_OUTPUT.read_text()
    if reference != checked_in:
        diff = difflib.unified_diff(checked_in.splitlines(), reference.splitlines(), "checked in", "generated",
                                    lineterm="", n=1)
        shown = "\n".join(list(diff)[:40])
        pytest.fail(f"docs/ir-reference.md is stale: run `make docs` (python -m forge.driver.docs_gen)\n{shown}")


def test_the_reference_leaves_out_passes_registered_at_run_time(monkeypatch):
    monkeypatch.setitem(registry._REGISTERED_PASSES, "some-plugin-pass", ModulePass)
    assert "some-plugin-pass" not in docs_gen.documented_passes()


def _heading(text: str, name: str) -> bool:
    return f"### `{name}`\n" in text  # `###` or `####` (ops under a family heading)


def test_every_aten_op_is_documented(reference: str):
    missing = [cls.name for cls in aten.Aten.operations if not _heading(reference, cls.name)]
    assert not missing, f"ops without a section in the IR reference: {missing}"
    for cls in aten.SCHEMA_OPS:
        assert f"ATen schema: `{cls.SIGNATURE.target._schema}`" in reference, cls.name


def test_every_loadable_dialect_op_and_pass_is_documented(reference: str):
    for name, factory in get_all_dialects().items():
        try:
            dialect = factory()
        except Exception:
            assert f"Dialect `{name}`: not documented" in reference
            continue
        assert f'<a id="dialect-{name}"></a>' in reference
        missing = [op.name for op in dialect.operations if not _heading(reference, op.name)]
        assert not missing, f"{name}: {missing}"
    for name, factory in get_all_passes().items():
        try:
            factory()
        except Exception:
            assert f"`{name}` | (not documented: failed to import" in reference
            continue
        assert f'<a id="pass-{name}"></a>' in reference


def test_aten_sections_show_arguments_defaults_syntax_and_examples(reference: str):
    section = reference.split('<a id="op-aten.layer_norm"></a>')[1].split("<a id=")[0]
    assert "| `normalized_shape` | property | int[] (`[1, 2]`) | required |" in section
    assert "| `weight` | operand | Tensor? (`none` when absent) | absent (`none`) |" in section
    assert "| `eps` | property | float (`f64`) | `1.0e-05` |" in section
    assert "%result = aten.layer_norm %input, %weight|none, %bias|none {normalized_shape = [<int>, ...]" in section
    assert "Example (from `filecheck/dialects/aten/ops.mlir`)" in section
    assert "aten.layer_norm %x, %w, %b {normalized_shape = [32]}" in section

    split = reference.split('<a id="op-aten.split.Tensor"></a>')[1].split("<a id=")[0]
    assert "%r0, %r1, ... = aten.split.Tensor" in split
    asserts = reference.split('<a id="op-aten._assert_tensor_metadata"></a>')[1].split("<a id=")[0]
    assert "Results: none." in asserts and "traits: none" in asserts
    # `self` is the operand `input` on the op class
    assert "| `self` | operand `input` | Tensor | required |" in reference
    # aten ops are grouped by the families of the op table in dialects/aten.py
    assert "### Linear algebra" in reference and "| [`aten.mm`](#op-aten.mm) | Linear algebra |" in reference


def test_pass_options_are_documented():
    @dataclasses.dataclass(frozen=True)
    class DemoPass(ModulePass):
        """Do nothing, configurably.

        A longer explanation.
        """

        name: ClassVar[str] = "demo-pass"
        max_steps: int = 3
        verbose: bool = False

        def apply(self, ctx, op) -> None:  # pragma: no cover - never run
            pass

    text = docs_gen.generate(dialects={}, passes={"demo-pass": lambda: DemoPass})
    assert "| [`demo-pass`](#pass-demo-pass) | Do nothing, configurably. |" in text
    assert "| `max-steps` | `int` | `3` |" in text
    assert "| `verbose` | `bool` | `false` |" in text
    assert "forge-opt in.mlir -p 'demo-pass{max-steps=3 verbose=false}'" in text


def test_import_failures_are_reported_not_raised():
    def broken():
        raise ImportError("No module named 'dialects.nosuch'")

    text = docs_gen.generate(dialects={"nosuch": broken}, passes={"nosuch-pass": broken})
    assert "Dialect `nosuch`: not documented, failed to import (ImportError: No module named" in text
    assert "| `nosuch-pass` | (not documented: failed to import: ImportError:" in text


def test_describe_constraint_reads_like_a_type():
    assert docs_gen.describe_constraint(BaseAttr(TensorType)) == "tensor"
    assert docs_gen.describe_constraint(irdl_to_attr_constraint(IntegerAttr[i64])).startswith("IntegerAttr")
    assert docs_gen.describe_constraint(AnyOf((BaseAttr(StringAttr), EqAttrConstraint(i64)))) == (
        "StringAttr or exactly i64"
    )


def test_first_sentence_keeps_abbreviations():
    assert docs_gen._first_sentence("Run op (e.g. \"aten.x\") on it. More text.") == 'Run op (e.g. "aten.x") on it.'


def test_main_writes_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(docs_gen, "generate", lambda: "# Forge IR reference\n")
    out = tmp_path / "sub" / "ir.md"
    assert docs_gen.main(["-o", str(out)]) == 0
    assert out.read_text() == "# Forge IR reference\n"


def test_the_named_pipelines_are_listed_as_forge_opt_spells_them(reference: str):
    from forge.pipelines import DEFAULT_PIPELINE, LOWER_TO_NPUIR, PLAN_MEMORY

    for name, passes in (("DEFAULT_PIPELINE", DEFAULT_PIPELINE), ("LOWER_TO_NPUIR", LOWER_TO_NPUIR),
                         ("PLAN_MEMORY", PLAN_MEMORY)):
        assert f"| `{name}` | `{','.join(passes)}` |" in reference
