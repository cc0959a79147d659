"""Functionalization in the importer: in-place chains, aliasing through a view, input mutation."""

from __future__ import annotations

import pytest
import torch

from forge.frontend import functionalize
from forge.frontend.fx_importer import ImportError_, InputMutationError, import_module
from forge.interpreter import interpret


def op_names(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith("aten.")]


def check_parity(model: torch.nn.Module, *inputs: torch.Tensor):
    imported = import_module(model, inputs)
    imported.module.verify()
    got = interpret(imported.module, imported.weights, *(i.clone() for i in inputs))
    want = model(*(i.clone() for i in inputs))
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert torch.allclose(g, w, atol=1e-6), (g, w)
    return imported


class InplaceChain(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        y.add_(1)
        y.div_(2)
        return y.relu_()


def test_inplace_chain_on_a_private_value_imports_as_functional_ops(monkeypatch):
    def no_torch_pass(*args, **kwargs):
        raise AssertionError("torch's functionalization ran for a private in-place chain")

    monkeypatch.setattr("forge.frontend.normalize.torch_functionalize", no_torch_pass)
    imported = check_parity(InplaceChain(), torch.randn(4, 3))
    assert op_names(imported.module) == ["aten.clone", "aten.add.Scalar", "aten.div.Scalar", "aten.relu"]


class ReadBeforeAndAfter(torch.nn.Module):
    """Uses before the write see the old value, uses after it the new one (rebinding)."""

    def forward(self, x):
        y = x * 1.5
        before = y * 2
        y.mul_(3)
        y.sub_(before)
        return before, y + 1


def test_uses_after_an_inplace_op_see_the_new_value():
    imported = check_parity(ReadBeforeAndAfter(), torch.randn(5))
    assert not any(name.endswith("_") for name in op_names(imported.module))


class MutateThroughView(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        row = y[0]
        row.mul_(3)
        return y


def test_mutation_through_a_view_goes_through_torch_functionalization():
    imported = check_parity(MutateThroughView(), torch.randn(2, 3))
    assert "aten.select_scatter" in op_names(imported.module)


class MutateInput(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 2


class MutateInputThroughView(torch.nn.Module):
    def forward(self, x):
        x[0].zero_()
        return x * 2


class MutateBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(3))

    def forward(self, x):
        self.count.add_(x)
        return x + self.count


@pytest.mark.parametrize(
    ("model", "what"),
    [(MutateInput(), "user input 'x'"), (MutateInputThroughView(), "'x'"), (MutateBuffer(), "'count'")],
    ids=["input", "input-through-view", "buffer"],
)
def test_mutating_an_input_or_buffer_is_a_clear_error(model, what):
    with pytest.raises(InputMutationError) as info:
        import_module(model, (torch.randn(3),))
    message = str(info.value)
    assert what in message and "in place" in message


def test_inputs_are_located_at_the_mutating_line():
    with pytest.raises(InputMutationError, match=r"test_functionalize.py:\d+: add_: aten.add_.Tensor"):
        import_module(MutateInput(), (torch.randn(3),))


class DetachInput(torch.nn.Module):
    def forward(self, x):
        return x.detach_() * 2


def test_detach_in_place_is_an_identity_even_on_an_input():
    imported = check_parity(DetachInput(), torch.randn(3))
    assert "aten.detach" in op_names(imported.module)


def test_inplace_and_functional_overloads():
    a = torch.ops.aten
    assert functionalize.is_inplace(a.add_.Tensor) and functionalize.is_inplace(a.relu_.default)
    assert not functionalize.is_inplace(a.add.Tensor) and not functionalize.is_inplace(a.add.out)
    assert functionalize.functional_overload(a.add_.Tensor) is a.add.Tensor
    assert functionalize.functional_overload(a.index_put_.default) is a.index_put.default


class TrainingBatchNorm(torch.nn.Module):
    """Running statistics passed in and updated in place (OpInfo's `_native_batch_norm_legit`)."""

    def forward(self, x, mean, var):
        return torch.ops.aten._native_batch_norm_legit(x, None, None, mean, var, True, 0.1, 1e-5)[0]


def test_mutation_found_by_torch_functionalization_names_the_writer_and_line():
    with pytest.raises(InputMutationError) as info:
        import_module(TrainingBatchNorm(), (torch.randn(2, 3), torch.zeros(3), torch.ones(3)))
    message = str(info.value)
    assert "'mean', 'var'" in message and "test_functionalize.py:" in message


class Polar(torch.nn.Module):
    def forward(self, a, b):
        return torch.view_as_real(torch.polar(a, b))


def test_complex_values_are_a_clear_dtype_error_not_a_torch_assertion():
    expected = r"test_functionalize.py:\d+: \w+: unsupported torch dtype torch.complex64"
    with pytest.raises(ImportError_, match=expected):
        import_module(Polar(), (torch.rand(3), torch.rand(3)))
