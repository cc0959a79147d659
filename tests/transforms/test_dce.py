"""dce: unused effect-free ops and the eval-mode no-ops torch.export leaves.

* every small zoo model keeps its output (within 1e-5 of eager) and loses every assert, eval
  dropout, same-type conversion and copy that no view reads; no dead op survives; one sweep is a
  fixpoint (a second run changes nothing);
* every function of `filecheck/transforms/dce.mlir` keeps its semantics on random inputs;
* hypothesis: `check_pattern` on the dce motifs (and all motifs), with "nothing dead is left".
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from dialects import aten
from forge.driver.registry import make_context
from forge.driver.semantics import random_inputs
from forge.interpreter import interpret
from forge.patterns import collect_pattern_stats
from forge.testing.check import check_pattern, working_copy
from forge.testing.strategies import PASS_MOTIFS
from forge.transforms import PASSES
from forge.transforms.dce import DcePass, is_dead
from forge.weights import WeightStore
from tests.conftest import ZOO_CASES, imported_small_model

FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms" / "dce.mlir"

EXPORT_NOISE = (aten.AssertTensorMetadataOp, aten.DropoutOp, aten.AliasOp, aten.DetachOp, aten.LiftFreshCopyOp)
CONVERSIONS = (aten.ToDtypeOp, aten.ToDtypeLayoutOp, aten.ToDeviceOp, aten.ToCopyOp)


def _counts(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in module.walk())


def _run(module: ModuleOp) -> None:
    DcePass().apply(make_context(), module)


def _zoo(name: str, attn: str):
    imported, inputs, expected = imported_small_model(name, attn)
    module, weights = working_copy(imported.module, imported.weights)
    return imported.module, module, weights, inputs, expected


def _random(op) -> bool:
    return isinstance(op, aten.DropoutOp) and op.arg("train") and op.arg("p") != 0


def aten_functions(module: ModuleOp) -> list[func.FuncOp]:
    """The deterministic functions made of aten/func ops only (what the interpreter can compare)."""
    return [f for f in module.ops if isinstance(f, func.FuncOp)
            and all(op.name.split(".")[0] in ("aten", "func") and not _random(op)
                    for op in f.walk() if op is not f)]


# --- zoo models --------------------------------------------------------------------------------


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_zoo_model_keeps_output_and_loses_export_noise(name: str, attn: str):
    original, module, weights, inputs, expected = _zoo(name, attn)
    before = _counts(original)
    with collect_pattern_stats() as stats:
        _run(module)
    module.verify()
    after = _counts(module)
    (got,) = interpret(module, weights, *inputs)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)

    assert sum(after.values()) < sum(before.values())
    for cls in EXPORT_NOISE:
        assert after[cls.name] == 0, f"{cls.name} survived dce"
    # Conversions stay only when they convert; copies only where a view reads them.
    for op in module.walk():
        if isinstance(op, CONVERSIONS):
            assert op.result.type != op.input.type
        if isinstance(op, (aten.CloneOp, aten.ContiguousOp)):
            assert any(isinstance(u.operation, aten.ViewOp) for u in op.result.uses)
    assert not [op for op in module.walk() if op.parent is not None and is_dead(op)]
    assert stats.fired["EraseAssertTensorMetadata"] == before["aten._assert_tensor_metadata"]
    assert stats.fired["ForwardEvalDropout"] == before["aten.dropout"]


@pytest.mark.parametrize("name,attn", ZOO_CASES, ids=[f"{n}-{a}" for n, a in ZOO_CASES])
def test_one_sweep_is_a_fixpoint(name: str, attn: str):
    _, module, _, _, _ = _zoo(name, attn)
    _run(module)
    once = str(module)
    with collect_pattern_stats() as stats:
        _run(module)
    assert str(module) == once
    assert sum(stats.fired.values()) == 0


def test_registered_as_dce():
    assert PASSES["dce"]() is DcePass
    assert DcePass.name == "dce"
    assert DcePass.__doc__ and DcePass.__doc__.splitlines()[0].strip()


# --- the FileCheck cases keep their semantics ----------------------------------------------------


def test_filecheck_cases_keep_semantics():
    module = Parser(make_context(), FILECHECK.read_text(), str(FILECHECK)).parse_module()
    after = module.clone()
    _run(after)
    after.verify()
    weights = WeightStore()
    weights.add("unused.weight", torch.randn(3, 3))
    functions = aten_functions(module)
    assert len(functions) >= 7
    for function in functions:
        name = function.sym_name.data
        inputs = random_inputs(function)
        want = interpret(module, weights, *inputs, func_name=name)
        got = interpret(after, weights, *inputs, func_name=name)
        for w, g in zip(want, got, strict=True):
            torch.testing.assert_close(g, w, msg=lambda m, name=name: f"@{name}: {m}")


# --- hypothesis ----------------------------------------------------------------------------------


def _nothing_dead_left(case, module: ModuleOp) -> None:
    dead = [op.name for op in module.walk() if op.parent is not None and is_dead(op)]
    assert not dead, f"dead ops left: {dead}"
    counts = _counts(module)
    assert counts["aten._assert_tensor_metadata"] == 0
    for op in module.walk():
        if isinstance(op, aten.DropoutOp):
            assert op.arg("train") and op.arg("p") != 0


def test_property_dce_motifs():
    check_pattern(DcePass(), motifs=PASS_MOTIFS["dce"], max_examples=40, on_case=_nothing_dead_left)


def test_property_all_motifs():
    check_pattern(DcePass(), max_examples=25, on_case=_nothing_dead_left)
