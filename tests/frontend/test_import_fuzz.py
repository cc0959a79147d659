"""Importer robustness: seeded random models mixing supported ops with ops `aten` lacks.

Each model chains 1-4 blocks (every block maps a 4x8 float tensor to a 4x8 float tensor) drawn
from three pools:

- SUPPORTED: ops the `aten` dialect has (plus a Linear layer, so weights are involved);
- UNSUPPORTED: ops `aten` lacks and torch has no decomposition for (custom ops: the dialect now
  has every real-valued ATen op these blocks could use): they reach the importer as they are,
  so the set the importer must report is known from the exported graph;
- DECOMPOSABLE: ops torch can decompose (FFT, linalg det, argsort, diag, ...): the importer
  decomposes those `aten` lacks; what is left must be reported, or the model must import.

Every import must either succeed, with the reference interpreter matching eager PyTorch, or
raise `UnsupportedOpsError` listing every unsupported op with its count, all at once. The
expected set is computed here from the exported graph (`str(node.target)`, not the importer's
naming); any other exception fails the test. The same models go through `forge.compile`.
"""

from __future__ import annotations

import operator
import random
from collections import Counter
from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import forge
from dialects import aten
from forge.frontend.decompose import decomposition_for
from forge.frontend.fx_importer import UnsupportedOpsError, import_program
from forge.interpreter import interpret

Block = Callable[[torch.Tensor], torch.Tensor]

SUPPORTED: dict[str, Block] = {
    "relu": torch.relu,
    "exp": lambda x: torch.exp(x * 0.1),
    "tanh": torch.tanh,
    "softmax": lambda x: torch.softmax(x, -1),
    "add": lambda x: x + 1.5,
    "mul": lambda x: x * x * 0.5,
    "layer_norm": lambda x: F.layer_norm(x, (8,)),
    "matmul": lambda x: (x @ x.t()) @ x * 0.1,
    "gelu": F.gelu,
    "sigmoid": torch.sigmoid,
    "center": lambda x: x - x.mean(-1, keepdim=True),
    "cumsum": lambda x: torch.cumsum(x, 1) * 0.2,
    "sqrt": lambda x: torch.sqrt(x.abs() + 1),
    "where": lambda x: torch.where(x > 0, x, -x),
    "silu": F.silu,
    "amax": lambda x: x - x.amax(-1, keepdim=True),
    "cat": lambda x: torch.cat([x[:, 4:], x[:, :4]], dim=1),
    "clamp": lambda x: x.clamp(-1, 1),
    # ops the generated part of the table brought in (CPU fallback): sorting, scatter, norms,
    # special functions, searching, histograms
    "sort": lambda x: torch.sort(x, dim=-1).values,
    "topk": lambda x: torch.topk(x, 8, dim=-1).values,
    "vector_norm": lambda x: torch.linalg.vector_norm(x, dim=-1, keepdim=True) + x,
    "scatter_add": lambda x: torch.zeros_like(x).scatter_add(1, torch.arange(8).clamp(max=2).expand(4, 8), x),
    "cummax": lambda x: torch.cummax(x, dim=1).values,
    "cumprod": lambda x: torch.cumprod(x.tanh(), dim=1),
    "kthvalue": lambda x: torch.kthvalue(x, 2, dim=1, keepdim=True).values + x,
    "median": lambda x: torch.median(x, dim=1, keepdim=True).values * x,
    "flip": lambda x: torch.flip(x, dims=[1]),
    "erfinv": lambda x: torch.erfinv(torch.tanh(x) * 0.5),
    "lgamma": lambda x: torch.lgamma(x.abs() + 1),
    "digamma": lambda x: torch.digamma(x.abs() + 1),
    "logcumsumexp": lambda x: torch.logcumsumexp(x, dim=1),
    "histc": lambda x: torch.histc(x, bins=8).sum() + x,
    "nanmedian": lambda x: torch.nanmedian(x, dim=1, keepdim=True).values - x,
}


@torch.library.custom_op("forge_fuzz::opaque", mutates_args=())
def opaque(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


@opaque.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("forge_fuzz::murky", mutates_args=())
def murky(x: torch.Tensor) -> torch.Tensor:
    return x.flip(0)


@murky.register_fake
def _(x):
    return torch.empty_like(x)


UNSUPPORTED: dict[str, Block] = {
    "opaque": lambda x: torch.ops.forge_fuzz.opaque(x),
    "murky": lambda x: torch.ops.forge_fuzz.murky(x) * 2,
}

DECOMPOSABLE: dict[str, Block] = {
    "rfft": lambda x: torch.fft.rfft(x, dim=-1).abs()[:, :4].repeat(1, 2),
    "inv": lambda x: torch.linalg.inv(x[:, :4] + 4 * torch.eye(4)).sum(-1, keepdim=True) + x,
    "det": lambda x: x * torch.linalg.det(x[:, :4]).sum(),
    "argsort": lambda x: torch.argsort(x, dim=-1).float(),
    "roll": lambda x: torch.roll(x, 2, dims=1),
    "diag": lambda x: torch.diag(x[:, :4]).sum() + x,
    "trace": lambda x: torch.trace(x[:, :4]) + x,
    "renorm": lambda x: torch.renorm(x, 2, 0, 1.0),
}

N_MODELS = 60


class _Decompositions:
    """`op in DECOMPOSITIONS`: whether the importer can decompose `op` (its tables, not a copy)."""

    def __contains__(self, op) -> bool:
        return decomposition_for(op) is not None


DECOMPOSITIONS = _Decompositions()


class Chain(nn.Module):
    """The blocks in order, with a Linear layer wherever the recipe says 'linear'."""

    def __init__(self, recipe: list[str], seed: int):
        super().__init__()
        torch.manual_seed(seed)
        self.recipe = recipe
        self.linear = nn.Linear(8, 8)
        self.blocks = {name: {**SUPPORTED, **UNSUPPORTED, **DECOMPOSABLE}[name] for name in recipe if name != "linear"}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in self.recipe:
            x = self.linear(x) if name == "linear" else self.blocks[name](x)
        return x


def _recipe(seed: int) -> list[str]:
    rng = random.Random(seed)
    pools = [list(SUPPORTED) + ["linear"], list(UNSUPPORTED), list(DECOMPOSABLE)]
    recipe = []
    for _ in range(rng.randint(1, 4)):
        pool = pools[rng.choices((0, 1, 2), weights=(5, 3, 2))[0]]
        recipe.append(rng.choice(pool))
    if rng.random() < 0.2:  # a block used twice: counts must add up
        recipe.append(rng.choice(recipe))
    return recipe


RECIPES = [_recipe(seed) for seed in range(N_MODELS)]


def _unsupported_in(graph: torch.fx.Graph) -> Counter[str]:
    """ATen targets of `graph` without an `aten` op, by their torch names, with node counts."""
    return Counter(
        str(node.target)
        for node in graph.nodes
        if node.op == "call_function" and node.target is not operator.getitem and node.target not in aten.OPS_BY_TARGET
    )


def test_the_pools_are_what_they_claim() -> None:
    """UNSUPPORTED ops are exported as themselves and cannot be decomposed; SUPPORTED are supported."""
    x = torch.randn(4, 8)
    for name, _block in UNSUPPORTED.items():
        graph = torch.export.export(Chain([name], 0), (x,)).graph
        targets = [n.target for n in graph.nodes if n.op == "call_function" and n.target not in aten.OPS_BY_TARGET]
        assert targets and not any(t in DECOMPOSITIONS for t in targets if t is not operator.getitem), name
    for name in SUPPORTED:
        assert not _unsupported_in(torch.export.export(Chain([name], 0), (x,)).graph), name
    for name in DECOMPOSABLE:
        graph = torch.export.export(Chain([name], 0), (x,)).graph
        assert any(n.target in DECOMPOSITIONS for n in graph.nodes if n.op == "call_function"), name
    assert sum(any(n in UNSUPPORTED for n in r) for r in RECIPES) >= N_MODELS // 4


@pytest.mark.parametrize("seed", range(N_MODELS), ids=[f"{s}-{'+'.join(r)}" for s, r in enumerate(RECIPES)])
def test_import_succeeds_with_parity_or_lists_every_unsupported_op(seed: int) -> None:
    recipe = RECIPES[seed]
    model = Chain(recipe, seed).eval()
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        program = torch.export.export(model, (x,))
        expected_out = model(x)
    must_report = _must_report(program.graph)
    try:
        imported = import_program(program)
    except UnsupportedOpsError as err:
        reported = {name: count for name, (count, _) in err.unsupported.items()}
        # Every op the exported graph has and nothing can decompose, at least as often (a
        # decomposition may add more: argsort becomes sort)...
        assert all(reported.get(name, 0) >= n for name, n in must_report.items()), (must_report, reported)
        # ...and nothing that is supported; all listed in the one message.
        for name, count in reported.items():
            assert not _is_supported(name), name
            assert f"{name}  x{count}" in str(err)
        if not any(n in DECOMPOSABLE for n in recipe):
            assert reported == dict(must_report)
        return
    assert not must_report, f"imported although {sorted(must_report)} have no aten op"
    (out,) = interpret(imported.module, imported.weights, x)
    torch.testing.assert_close(out, expected_out, rtol=1e-4, atol=1e-4)


def _must_report(graph: torch.fx.Graph) -> Counter[str]:
    """The unsupported ops no decomposition touches: non-decomposable ones, and when anything is
    decomposed (which also functionalizes the graph), only those that are not in-place."""
    targets = [n.target for n in graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    missing = [t for t in targets if t not in aten.OPS_BY_TARGET]
    decomposes = any(t in DECOMPOSITIONS for t in missing)
    return Counter(
        str(t) for t in missing if t not in DECOMPOSITIONS and not (decomposes and t._schema.is_mutable)
    )


def _is_supported(name: str) -> bool:
    return any(str(t) == name for t in aten.OPS_BY_TARGET)


@pytest.mark.parametrize("seed", [s for s, r in enumerate(RECIPES) if any(n in UNSUPPORTED for n in r)][:3])
def test_forge_compile_reports_unsupported_ops(seed: int) -> None:
    recipe = RECIPES[seed]
    x = torch.randn(4, 8)
    expected = {str(t) for t in _unsupported_targets(Chain(recipe, seed), x)}
    with pytest.raises(UnsupportedOpsError) as info:
        forge.compile(Chain(recipe, seed), (x,))
    message = str(info.value)
    assert message.startswith(f"{len(info.value.unsupported)} unsupported ATen op(s) in the exported graph:")
    assert expected <= set(info.value.unsupported)
    assert all(name in message for name in expected)


def _unsupported_targets(model: nn.Module, x: torch.Tensor) -> set:
    graph = torch.export.export(model, (x,)).graph
    return {
        n.target
        for n in graph.nodes
        if n.op == "call_function" and n.target is not operator.getitem
        and n.target not in aten.OPS_BY_TARGET and n.target not in DECOMPOSITIONS
    }
