"""Finding the repeated layers of a model and cutting it down to its first k layers."""

from __future__ import annotations

import pytest

from forge.analysis.repeated_layers import find_layers, truncate
from forge.driver.pass_stages import run_passes
from forge.frontend.fx_importer import import_module
from forge.models import build_model, example_inputs


@pytest.fixture(scope="module", params=["gpt2", "llama"])
def four_layers(request):
    name = request.param
    model = build_model(name, attn="eager", small=True, layers=4)
    return import_module(model, example_inputs(name, seq_len=16, small=True)).module


def _ops(module) -> int:
    return sum(1 for _ in module.walk())


def test_layers_are_found_and_identical(four_layers) -> None:
    found = find_layers(four_layers)
    assert found is not None and found.count == 4 and found.identical
    assert found.tail, "the final norm and head follow the last layer"
    assert all(op.name.startswith("aten.") for layer in found.layers for op in layer)


def test_truncate_keeps_a_valid_module_of_k_layers(four_layers) -> None:
    module = four_layers.clone()
    size = len(find_layers(module).layers[0])
    assert truncate(module, 2)
    module.verify()
    assert _ops(module) == _ops(four_layers) - 2 * size
    cut = find_layers(module)
    assert cut is not None and cut.count == 2 and cut.identical
    run_passes(module, "dce")
    assert _ops(module) > 0 and find_layers(module).count == 2  # nothing of the kept layers is dead


def test_truncate_refuses_what_it_cannot_cut(four_layers) -> None:
    module = four_layers.clone()
    before = str(module)
    assert not truncate(module, 4)
    assert not truncate(module, 0)
    assert str(module) == before
