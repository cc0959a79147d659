"""`activations="int8"` (issue 32, prefill against GenAI): with int8/int4 weights, a graph whose compressed-weight
matmuls have several rows runs them with OpenVINO's dynamic quantization of their inputs; a graph at one row (a
decode step) keeps float activations. The mode is refused without compressed weights, is reported, survives
save/load, and stays within a stated bound of eager's logits (while really changing them).
"""

from __future__ import annotations

import numpy as np
import openvino as ov
import openvino.opset13 as op
import pytest
import torch

import forge
from backends.nnfactory.runtime import openvino_runtime
from backends.nnfactory.runtime.openvino_settings import DYNAMIC_QUANTIZATION_GROUP
from forge.driver.compile_errors import CompileError
from forge.driver.generation import compile_generator
from forge.models import build_model
from forge.precision import bounds

PROMPT, NEW = 24, 6
BOUND = 0.03
"""Prefill logits: max |compiled - eager| over max |eager| (small GPT-2, int8 weights and activations: 0.009)."""


@pytest.fixture(scope="module")
def gpt2():
    zoo = build_model("gpt2", small=True)
    hf = getattr(zoo, "hf", zoo)
    ids = torch.randint(0, hf.config.vocab_size, (1, PROMPT), generator=torch.Generator().manual_seed(0))
    return hf, ids


@pytest.fixture(scope="module")
def group_sizes(gpt2):
    """The generator compiled with int8 activations, and each compiled graph's dynamic quantization group."""
    hf, _ = gpt2
    seen: list[int] = []
    original = openvino_runtime.OpenVINORuntime.record_compiled

    def record(self, compiled):
        seen.append(int(compiled.get_property("DYNAMIC_QUANTIZATION_GROUP_SIZE")))
        return original(self, compiled)

    openvino_runtime.OpenVINORuntime.record_compiled = record
    try:
        gen = compile_generator(hf, prompt_len=PROMPT, max_new_tokens=NEW, weights="int8", activations="int8",
                                share_weights=False)
    finally:
        openvino_runtime.OpenVINORuntime.record_compiled = original
    return gen, seen


def test_the_prefill_quantizes_its_activations_and_the_decode_step_does_not(group_sizes):
    gen, seen = group_sizes
    assert seen == [DYNAMIC_QUANTIZATION_GROUP, 0]  # prefill compiled first, then decode
    assert gen.report()["activations"] == "int8"


def test_quantized_activations_stay_within_the_bound_and_change_the_logits(gpt2, group_sizes):
    hf, ids = gpt2
    gen, _ = group_sizes
    plain = compile_generator(hf, prompt_len=PROMPT, max_new_tokens=NEW, weights="int8", share_weights=False)
    with torch.no_grad():
        eager = hf(ids).logits[:, -1]
    quantized_scores: list[torch.Tensor] = []
    plain_scores: list[torch.Tensor] = []
    tokens = gen.generate(ids, NEW, scores=quantized_scores)
    plain.generate(ids, NEW, scores=plain_scores)
    error = (quantized_scores[0] - eager).abs().max() / eager.abs().max()
    assert error <= BOUND
    # the mode changed the logits exactly where the runtime says it quantizes activations on this CPU (an
    # AVX2-only CPU keeps them in f32: the same logits)
    assert torch.equal(quantized_scores[0], plain_scores[0]) != openvino_runtime.cpu_quantizes_activations()
    reference = hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW, do_sample=False,
                            pad_token_id=0)
    assert torch.equal(tokens, reference)


def test_a_saved_generator_keeps_its_activation_mode(gpt2, group_sizes, tmp_path):
    _, ids = gpt2
    gen, _ = group_sizes
    gen.save(tmp_path / "gen")
    loaded = forge.load(tmp_path / "gen")
    assert loaded.report()["activations"] == "int8"
    assert torch.equal(loaded.generate(ids, NEW), gen.generate(ids, NEW))


def test_activations_need_compressed_weights(gpt2):
    hf, ids = gpt2
    with pytest.raises(CompileError, match="needs weights='int8' or 'int4'"):
        forge.compile(hf, (ids,), activations="int8")
    with pytest.raises(CompileError, match="unknown activation quantization 'int4'"):
        forge.compile(hf, (ids,), weights="int8", activations="int4")


def test_the_cli_refuses_activations_without_weights(capsys):
    from forge.cli.main import main

    code = main(["compile", "gpt2", "--small", "--seq-len", "8", "--activations", "int8", "--quiet"])
    assert code != 0
    assert "needs weights='int8' or 'int4'" in capsys.readouterr().err


def _matmul_model(rows: int, compressed: bool) -> ov.Model:
    x = op.parameter([1, rows, 64], np.float32)
    weights = np.ones((32, 64), np.int8 if compressed else np.float32)
    w = op.constant(weights)
    if compressed:
        w = op.multiply(op.convert(w, ov.Type.f32), op.constant(np.full((32, 1), 0.5, np.float32)))
    return ov.Model([op.matmul(x, w, False, True)], [x])


@pytest.mark.parametrize(("rows", "compressed", "expected"), [(1, True, 1), (8, True, 8), (8, False, 0)])
def test_compressed_matmul_rows_counts_only_compressed_weights(rows, compressed, expected):
    assert openvino_runtime.compressed_matmul_rows(_matmul_model(rows, compressed)) == expected


def test_compressed_matmul_rows_looks_inside_if_bodies():
    body_a, body_b = _matmul_model(8, True), _matmul_model(1, True)
    cond = op.parameter([], np.bool_)
    x = op.parameter([1, 8, 64], np.float32)
    branch = op.if_op(cond.output(0))
    branch.set_then_body(body_a)
    branch.set_else_body(body_b)
    branch.set_input(x.output(0), body_a.get_parameters()[0], None)
    x1 = op.parameter([1, 1, 64], np.float32)
    branch.set_input(x1.output(0), None, body_b.get_parameters()[0])
    out = branch.set_output(body_a.get_results()[0], body_b.get_results()[0])
    model = ov.Model([out], [cond, x, x1])
    assert openvino_runtime.compressed_matmul_rows(model) == 8


def test_the_accuracy_report_names_the_mode_and_holds_its_bounds(gpt2):
    hf, ids = gpt2
    compiled = forge.compile(hf, (ids,), kwargs={"use_cache": False}, weights="int8", activations="int8",
                             accuracy=5)
    accuracy = compiled.report["accuracy"]
    assert accuracy["mode"] == "f32+int8w+int8a"
    assert accuracy["bounds"]["why"] == bounds("f32", "int8", "int8").why != bounds("f32", "int8").why
    assert accuracy["within_bounds"], accuracy
