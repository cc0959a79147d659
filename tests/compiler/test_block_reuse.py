"""Block reuse (forge/frontend/blocks.py): each distinct repeated block is traced once and stitched for its
identical instances, soundly (issue 14 item 1).

Toy stacks whose layers differ through a Python attribute the forward reads (alternating every other layer,
one odd layer, a per-layer index), a different shape, state or a non-tensor argument: each is compiled with
reuse on and checked against eager, and the report's `blocks` says which layers shared a trace. The zoo's
GPT-2, Llama (grouped-query attention) and BERT reuse their layer with parity against eager, and give the
same outputs with reuse off."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from forge.cli.main import format_report, main
from forge.compiler import compile as forge_compile
from forge.frontend import blocks

MAX_ABS = 2.1e-5
HIDDEN = 16


class Layer(nn.Module):
    def __init__(self, index: int, *, sliding: bool = False, scale: float = 1.0, width: int = 32):
        super().__init__()
        self.layer_idx = index
        self.sliding = sliding
        self.scale = scale
        self.up = nn.Linear(HIDDEN, width)
        self.down = nn.Linear(width, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        h = self.down(torch.relu(self.up(self.norm(x)))) * self.scale
        if self.sliding:  # a different graph every other layer, chosen by a Python attribute
            h = h * mask
        return x + h


class IndexedLayer(Layer):
    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return super().forward(x, mask) + self.layer_idx  # the trace reads layer_idx: layers differ


class Stack(nn.Module):
    def __init__(self, layers: list[nn.Module]):
        super().__init__()
        self.embed = nn.Linear(8, HIDDEN)
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(HIDDEN, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        mask = (h > 0).float()
        for layer in self.layers:
            h = layer(h, mask=mask)
        return self.head(h)


def _compile(model: nn.Module, reuse: bool = True):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    compiled = forge_compile(model.eval(), (x,), check=True, reuse_blocks=reuse)
    assert compiled.report["parity"]["max_abs"] <= MAX_ABS
    return compiled, x


def _stack(make) -> Stack:
    torch.manual_seed(1)
    return Stack([make(i) for i in range(4)])


def test_layers_alternating_through_an_attribute_form_two_groups():
    compiled, _ = _compile(_stack(lambda i: Layer(i, sliding=i % 2 == 1)))
    report = compiled.report["blocks"]
    assert (report["distinct"], report["instances"], report["reused"]) == (2, 4, 2)
    assert [g["instances"] for g in report["groups"]] == [["layers.0", "layers.2"], ["layers.1", "layers.3"]]


def test_one_odd_layer_is_compiled_separately():
    compiled, _ = _compile(_stack(lambda i: Layer(i, scale=2.0 if i == 2 else 1.0)))
    report = compiled.report["blocks"]
    assert (report["distinct"], report["reused"]) == (2, 2)
    assert ["layers.2"] in [g["instances"] for g in report["groups"]]


def test_a_layer_of_another_shape_is_compiled_separately():
    compiled, _ = _compile(_stack(lambda i: Layer(i, width=48 if i == 1 else 32)))
    assert ["layers.1"] in [g["instances"] for g in compiled.report["blocks"]["groups"]]
    assert compiled.report["blocks"]["reused"] == 2


def test_a_read_layer_index_makes_every_layer_distinct():
    compiled, _ = _compile(_stack(IndexedLayer))
    assert (compiled.report["blocks"]["distinct"], compiled.report["blocks"]["reused"]) == (4, 0)


def test_an_unread_layer_index_does_not_prevent_reuse():
    compiled, _ = _compile(_stack(Layer))  # every layer has its own layer_idx; the forward never reads it
    assert compiled.report["blocks"]["reused"] == 3


class Gated(Layer):
    def __init__(self, index: int):
        super().__init__(index)
        self.register_buffer("gate", torch.rand(HIDDEN), persistent=False)  # a different mask per layer

    def forward(self, x, mask=None):
        return super().forward(x, mask) * self.gate


def test_layers_that_differ_in_buffer_values_reuse_one_trace_on_their_own_buffers():
    compiled, _ = _compile(_stack(Gated))  # parity: each copy reads its own layer's gate
    assert compiled.report["blocks"]["reused"] == 3


class TwoOutputs(Layer):
    def forward(self, x, mask=None):
        out = super().forward(x, mask)
        return out, out.mean()


class TwoOutputStack(Stack):
    def forward(self, x):
        h, total = self.embed(x), 0.0
        for layer in self.layers:
            h, m = layer(h)
            total = total + m
        return self.head(h) + total


def test_layers_with_several_outputs_are_reused():
    torch.manual_seed(1)
    compiled, _ = _compile(TwoOutputStack([TwoOutputs(i) for i in range(4)]))
    assert compiled.report["blocks"]["reused"] == 3


class Counting(Layer):
    def forward(self, x, mask=None):
        self.calls = getattr(self, "calls", 0) + 1  # state: not provably the same trace on the next layer
        return super().forward(x, mask)


class InPlace(Layer):
    def forward(self, x, mask=None):
        x.mul_(2.0)  # writes into its caller's tensor: reusing would drop the write
        return super().forward(x, mask)


def test_a_layer_that_writes_its_attributes_is_not_reused():
    compiled, _ = _compile(_stack(Counting))
    assert compiled.report["blocks"]["reused"] == 0


def test_a_layer_that_writes_its_input_falls_back_to_the_whole_export():
    compiled, _ = _compile(_stack(InPlace))
    report = compiled.report["blocks"]
    assert report["reused"] == 0 and "writes into one of its inputs" in report["off"]


def test_reads_equal_compares_by_value_path_and_identity():
    shared = object()
    a, b = Layer(0), Layer(1)
    a.config = b.config = shared
    assert blocks.reads_equal({("", "config"), ("", "scale"), ("up", "weight"), ("", "up")}, a, b) is None
    assert blocks.reads_equal({("", "layer_idx")}, a, b) == "layer_idx"
    b.config = object()
    assert blocks.reads_equal({("", "config")}, a, b) == "config"


@pytest.fixture(scope="module", params=["gpt2", "llama", "bert"])
def zoo(request):
    from forge.models import build_model, example_inputs

    model = build_model(request.param, small=True, layers=3).eval()
    args = tuple(example_inputs(request.param, seq_len=16, small=True))
    return request.param, model, args


def test_zoo_models_reuse_their_layer_with_parity(zoo):
    name, model, args = zoo
    reused = forge_compile(model, args, check=True)
    assert reused.report["parity"]["max_abs"] <= MAX_ABS
    report = reused.report["blocks"]
    assert (report["distinct"], report["instances"], report["reused"]) == (1, 3, 2), report
    whole = forge_compile(model, args, reuse_blocks=False)
    assert whole.report["blocks"]["reused"] == 0
    assert whole.report["ops_imported"] == reused.report["ops_imported"]
    assert torch.equal(reused(*args), whole(*args))
    assert "repeated blocks: 3 calls, 1 distinct traced, 2 reused" in format_report(reused.report)


def test_the_cli_switches_reuse_off(tmp_path):
    report = tmp_path / "report.json"
    assert main(["compile", "gpt2", "--small", "--layers", "2", "--seq-len", "8", "--no-reuse-blocks", "--quiet",
                 "--report", str(report)]) == 0
    blocks_report = json.loads(report.read_text())["blocks"]
    assert blocks_report["reused"] == 0 and blocks_report["off"] == "off"


class Kernel(nn.Module):
    """A kernel wrapper as transformers' hub-kernels integration attaches it: one object per layer, kept in the
    layer's `__dict__` (not a registered submodule), equal by value across layers."""

    def __init__(self, power: float = 1.0):
        super().__init__()
        self.power = power

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return torch.sign(t) * t.abs() ** self.power


class KernelTableLayer(Layer):
    def __init__(self, index: int, power: float = 1.0):
        super().__init__(index)
        self.__dict__["_kernel_funcs"] = {"act": Kernel(power)}  # per-instance, outside the module tree
        self.scale_fn = (lambda k: lambda t: t * k)(1.0 + (power != 1.0))  # a per-instance closure

    def forward(self, x, mask=None):
        return self.scale_fn(self._kernel_funcs["act"](super().forward(x, mask)))


def test_layers_with_per_instance_kernel_tables_equal_by_value_share_one_trace():
    compiled, _ = _compile(_stack(KernelTableLayer))
    report = compiled.report["blocks"]
    assert (report["distinct"], report["reused"]) == (1, 3), report


def test_a_kernel_table_that_really_differs_splits_the_group_and_the_report_names_it():
    compiled, _ = _compile(_stack(lambda i: KernelTableLayer(i, power=2.0 if i == 2 else 1.0)))
    report = compiled.report["blocks"]
    assert (report["distinct"], report["reused"]) == (2, 2), report
    split = next(g for g in report["groups"] if g["instances"] == ["layers.2"])
    assert split["split"] == "attribute _kernel_funcs differs from layers.0's"
    assert "split" not in report["groups"][0]


def test_reads_equal_looks_inside_callables_and_refuses_state_it_cannot_see():
    import functools

    a, b = Layer(0), Layer(1)
    a.fn, b.fn = functools.partial(torch.add, alpha=2), functools.partial(torch.add, alpha=2)
    assert blocks.reads_equal({("", "fn")}, a, b) is None
    b.fn = functools.partial(torch.add, alpha=3)
    assert blocks.reads_equal({("", "fn")}, a, b) == "fn"
    b.fn = functools.partial(torch.sub, alpha=2)
    assert blocks.reads_equal({("", "fn")}, a, b) == "fn"

    class Slotted:
        __slots__ = ("k",)

        def __init__(self, k):
            self.k = k

    a.opaque, b.opaque = Slotted(1), Slotted(1)  # fields outside __dict__: never assumed equal
    assert blocks.reads_equal({("", "opaque")}, a, b) == "opaque"
