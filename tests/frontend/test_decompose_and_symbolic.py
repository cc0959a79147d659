"""The importer's decomposition loop (to a fixpoint, only for ops we lack) and its SymInt handling:
static sizes become numbers, data-dependent shapes are one clear error naming the op and line."""

from __future__ import annotations

import operator
import re

import pytest
import torch
import torch.nn.functional as F

from forge.frontend import normalize, symbolic
from forge.frontend.fx_importer import DataDependentShapeError, import_module
from forge.interpreter import interpret


def op_names(module) -> set[str]:
    return {op.name for op in module.walk() if op.name.startswith("aten.")}


class Bicubic(torch.nn.Module):
    def forward(self, x):
        return F.interpolate(x, scale_factor=2, mode="bicubic")


def test_decomposition_repeats_until_no_missing_op_is_left(monkeypatch):
    """upsample_bicubic2d decomposes into `_unsafe_index`; without that op in the dialect a second
    round decomposes it too (a single round left it unsupported)."""
    lacking = torch.ops.aten._unsafe_index.Tensor
    known = normalize.op_class
    monkeypatch.setattr(normalize, "op_class", lambda target: None if target is lacking else known(target))
    x = torch.randn(1, 2, 4, 4)
    imported = import_module(Bicubic(), (x,))
    assert imported.stats["decompose_rounds"] == 2
    names = op_names(imported.module)
    assert "aten._unsafe_index.Tensor" not in names and "aten.index.Tensor" in names
    (out,) = interpret(imported.module, imported.weights, x)
    assert torch.allclose(out, Bicubic()(x), atol=1e-5)


def test_nothing_is_decomposed_when_nothing_is_missing(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("run_decompositions ran although the dialect has every op")

    monkeypatch.setattr(torch.export.ExportedProgram, "run_decompositions", forbidden)
    imported = import_module(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU()), (torch.randn(2, 4),))
    assert imported.stats["decompose_rounds"] == 0


class Nonzero(torch.nn.Module):
    def forward(self, x):
        return torch.nonzero(x)


class MaskedSelect(torch.nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x > 0)


class BoolMask(torch.nn.Module):
    def forward(self, x):
        return x[x > 0] * 2


class Unique(torch.nn.Module):
    def forward(self, x):
        return torch.unique(x)


@pytest.mark.parametrize(
    ("model", "op"),
    [
        (Nonzero(), "aten.nonzero.default"),
        (MaskedSelect(), "aten.masked_select.default"),
        (BoolMask(), "aten.index.Tensor"),
        (Unique(), "aten._unique2.default"),
    ],
    ids=["nonzero", "masked_select", "bool-mask", "unique"],
)
def test_data_dependent_shapes_are_one_clear_error(model, op):
    with pytest.raises(DataDependentShapeError) as info:
        import_module(model, (torch.tensor([1.0, -2.0, 3.0, 0.0]),))
    message = str(info.value)
    assert f": {op}: result shape depends on tensor values:" in message
    assert re.match(r"\S*test_decompose_and_symbolic.py:\d+: ", message), message
    assert "u0" in message and "static shapes" in message


class Histc(torch.nn.Module):
    def forward(self, x):
        return torch.histc(x, bins=4, min=-2, max=2)


def test_value_dependent_op_with_a_static_shape_imports():
    x = torch.tensor([1.0, -1.5, 0.2, 1.9, -0.1])
    imported = import_module(Histc(), (x,))
    assert "aten.histc" in op_names(imported.module)
    (out,) = interpret(imported.module, imported.weights, x)
    assert torch.equal(out, Histc()(x))


def _graph_with_static_sizes() -> tuple[torch.fx.Graph, dict[str, torch.fx.Node]]:
    """x -> sym_size(x, 0) -> ge(size, 0) -> _assert_scalar; view(x, [size, -1])."""
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(3, 4, device="meta")
    size = graph.call_function(torch.ops.aten.sym_size.int, (x, 0))
    size.meta["val"] = 3
    ge = graph.call_function(operator.ge, (size, 0))
    ge.meta["val"] = True
    check = graph.call_function(torch.ops.aten._assert_scalar.default, (ge, "size >= 0"))
    view = graph.call_function(torch.ops.aten.view.default, (x, [size, -1]))
    view.meta["val"] = torch.empty(3, 4, device="meta")
    graph.output(view)
    return graph, {"size": size, "ge": ge, "check": check, "view": view}


def test_static_sym_sizes_become_numbers_and_static_assertions_are_dropped():
    graph, nodes = _graph_with_static_sizes()
    facts = symbolic.analyze(graph, lambda n: n.name, str)
    assert facts.static == {nodes["size"]: 3, nodes["ge"]: True}
    assert facts.dropped == {nodes["check"]}
    assert facts.substitute(list(nodes["view"].args)) == [nodes["view"].args[0], [3, -1]]
    assert not facts.handled(nodes["view"])
