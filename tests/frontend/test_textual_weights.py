"""IR that references weights round-trips through text: model.mlir + model.safetensors."""

from __future__ import annotations

import torch

from forge.cli.opt import main as forge_opt
from forge.driver.registry import make_context
from forge.interpreter import interpret
from forge.weights import companion_weights_path, load_module, save_module
from tests.conftest import imported_small_model


def test_forge_opt_prints_a_saved_gpt2_module_back_unchanged(tmp_path, capsys):
    imported, _, _ = imported_small_model("gpt2", "eager")
    mlir, weights = save_module(imported.module, imported.weights, tmp_path / "gpt2.mlir")
    assert weights == companion_weights_path(mlir) and weights.exists()
    assert forge_opt([str(mlir)]) == 0
    assert capsys.readouterr().out.strip() == mlir.read_text().strip()


def test_a_loaded_module_computes_what_the_imported_one_did(tmp_path):
    imported, inputs, expected = imported_small_model("llama", "eager")
    mlir, _ = save_module(imported.module, imported.weights, tmp_path / "llama.mlir")
    module, store = load_module(make_context(), mlir)
    (out,) = interpret(module, store, *inputs)
    assert torch.allclose(out, expected, atol=1e-5)
    assert store.resolve("hf.lm_head.weight") in store
