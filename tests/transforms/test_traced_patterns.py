"""Forge's own patterns written in PyTorch (forge/transforms/traced_patterns.py): the checked-in
traced IR is what tracing the PyTorch functions gives today (scripts/gen_traced_patterns.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from forge.transforms.dce import ForwardEvalDropout
from forge.transforms.fold import DoubleNegation
from forge.transforms.traced_patterns import SOURCES, TRACED

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_traced_patterns.py"


def test_the_traced_table_is_current():
    spec = importlib.util.spec_from_file_location("gen_traced_patterns", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert set(TRACED) == set(SOURCES)
    assert module.regenerated() == module.PATH.read_text(), "run scripts/gen_traced_patterns.py"


def test_the_builtin_traced_patterns_root_on_their_ops():
    assert DoubleNegation().ROOTS[0].name == "aten.neg"
    assert ForwardEvalDropout().ROOTS[0].name == "aten.dropout"
    assert ForwardEvalDropout().wildcards == {"p", "train"}
