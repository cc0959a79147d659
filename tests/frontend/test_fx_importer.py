"""The importer: parity with eager, weights outside the IR, schema binding, errors, locations."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from dialects import aten
from forge.frontend.fx_importer import UnsupportedOpsError, import_module
from forge.interpreter import interpret
from tests.conftest import imported_small_model


def ops_named(module, name):
    return [op for op in module.walk() if op.name == name]


def test_zoo_model_imports_and_interprets_within_tolerance(zoo_case):
    imported, inputs, expected = imported_small_model(*zoo_case)
    imported.module.verify()
    (out,) = interpret(imported.module, imported.weights, *inputs)
    assert out.shape == expected.shape
    assert (out - expected).abs().max().item() <= 1e-5


def test_gpt2_tied_embedding_and_lm_head_are_one_weight():
    imported, _, _ = imported_small_model("gpt2", "sdpa")
    store = imported.weights
    assert store.resolve("hf.lm_head.weight") == store.resolve("hf.transformer.wte.weight")
    names = [op.weight_name.data for op in ops_named(imported.module, "aten.weight")]
    assert len(names) == len(set(names)) == len(store)
    embedding = ops_named(imported.module, "aten.embedding")[0]
    lm_head = ops_named(imported.module, "aten.linear")[-1]
    assert embedding.operands[0] is lm_head.operands[1]


def test_llama_non_persistent_rope_buffer_is_a_weight():
    imported, _, _ = imported_small_model("llama", "sdpa")
    assert "hf.model.rotary_emb.inv_freq" in imported.weights


def test_weights_never_appear_as_dense_attributes():
    imported, _, _ = imported_small_model("gpt2", "eager")
    text = str(imported.module)
    assert "dense<" not in text.replace("aten.constant dense<", "")
    biggest = max(t.numel() for _, t in imported.weights.items())
    assert biggest > 1000 and len(text) < 200 * len(list(imported.module.walk()))


class KwargsModel(torch.nn.Module):
    def forward(self, x, y):
        a = F.gelu(x, approximate="tanh")
        b = torch.cat([a, y], dim=1)
        q = b.reshape(1, 2, 4, 8)
        return F.scaled_dot_product_attention(q, q, q, scale=0.5, is_causal=True)


def test_keyword_arguments_are_bound_by_schema_name():
    x, y = torch.randn(1, 4, 8), torch.randn(1, 4, 8)
    imported = import_module(KwargsModel(), (x, y))
    text = str(imported.module)
    assert 'approximate = "tanh"' in text
    assert "{dim = 1}" in text
    assert "is_causal = true" in text and "scale = 0.5" in text
    (out,) = interpret(imported.module, imported.weights, x, y)
    assert torch.allclose(out, KwargsModel()(x, y), atol=1e-6)


class SplitModel(torch.nn.Module):
    def forward(self, x):
        a, b, c = torch.split(x, 2, dim=-1)
        return c * 2 + a - b


def test_getitem_binds_the_right_result_of_a_multi_result_op():
    x = torch.randn(3, 6)
    imported = import_module(SplitModel(), (x,))
    (out,) = interpret(imported.module, imported.weights, x)
    assert torch.equal(out, SplitModel()(x))


@torch.library.custom_op("forge_test::mystery", mutates_args=())
def mystery(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@mystery.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("forge_test::enigma", mutates_args=())
def enigma(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@enigma.register_fake
def _(x):
    return torch.empty_like(x)


class UnsupportedModel(torch.nn.Module):
    def forward(self, x):
        y = torch.ops.forge_test.mystery(x)
        z = torch.ops.forge_test.mystery(y)
        values, _ = torch.cummax(torch.ops.forge_test.enigma(z), dim=0)
        return values


def test_unsupported_ops_are_all_listed_with_counts_and_locations():
    with pytest.raises(UnsupportedOpsError) as info:
        import_module(UnsupportedModel(), (torch.randn(4, 4),))
    message = str(info.value)
    assert "forge_test.mystery.default  x2" in message
    assert "forge_test.enigma.default  x1" in message
    assert "cummax" not in message  # in the dialect: only what is missing is listed
    assert "test_fx_importer.py:" in message


def test_ops_carry_the_model_source_location():
    imported = import_module(SplitModel(), (torch.randn(3, 6),))
    mul = ops_named(imported.module, "aten.mul.Scalar")[0]
    assert "test_fx_importer.py" in str(mul.location)


def test_input_signature_is_recorded():
    imported, inputs, _ = imported_small_model("bert", "sdpa")
    assert [(s.shape, s.dtype) for s in imported.inputs] == [(tuple(inputs[0].shape), torch.int64)]


def test_every_schema_op_class_is_exported_under_its_own_name():
    for cls in aten.SCHEMA_OPS:
        assert getattr(aten, cls.__name__) is cls


class TwoSplits(torch.nn.Module):
    def forward(self, x):
        a, b, c = torch.split(x, 2, dim=-1)
        d, e, f = torch.split(x * 2, 2, dim=-1)
        return a + b + c + d + e + f


def test_printed_ir_of_several_multi_result_ops_parses_back():
    from xdsl.parser import Parser

    from forge.driver.registry import make_context

    imported = import_module(TwoSplits(), (torch.randn(2, 6),))
    text = str(imported.module)
    reparsed = Parser(make_context(), text).parse_module()
    assert str(reparsed) == text
