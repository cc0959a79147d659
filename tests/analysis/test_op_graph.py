"""forge.driver.op_graph: the DOT graph is well formed and says what the IR says.

The DOT text is parsed back with a small parser of the subset DOT grammar the module writes
(graph, subgraphs, node and edge statements, attribute lists, quoted strings), so a broken
escape or brace fails here, and the parsed graph is compared with the IR: one node per op and
block argument, one edge per use, devices and fused ops marked as the ops say.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Operation

from dialects import aten
from forge.driver.op_graph import FUSED_ATEN_OPS, FUSED_KINDS, op_device, op_graph, op_kind, quote
from forge.driver.pass_stages import run_passes
from forge.pipelines import DEFAULT_PIPELINE, LOWERING_PIPELINE
from tests.conftest import imported_small_model

# ============================================================================ a DOT reader

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<arrow>->)|(?P<punct>[{}\[\];,=])'
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>-?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)))"
)


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    end = len(text.rstrip())
    while pos < end:
        m = _TOKEN.match(text, pos)
        assert m is not None and m.end() > pos, f"bad DOT at {pos}: {text[pos:pos + 40]!r}"
        out.append(m.group(m.lastgroup))
        pos = m.end()
    return out


def unquote(token: str) -> str:
    """The value of a DOT ID token (a quoted string with \\" \\\\ \\n escapes, or a bare ID)."""
    if not token.startswith('"'):
        return token
    body, out, i = token[1:-1], [], 0
    while i < len(body):
        if body[i] == "\\":
            nxt = body[i + 1]
            out.append({"n": "\n", '"': '"', "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


@dataclass
class Dot:
    name: str
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    node_cluster: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    clusters: dict[str, dict[str, str]] = field(default_factory=dict)


def parse_dot(text: str) -> Dot:
    """Parse `digraph NAME { ... }` (the statements op_graph writes); AssertionError if invalid."""
    toks = _tokens(text)
    pos = 0

    def take(expected: str | None = None) -> str:
        nonlocal pos
        assert pos < len(toks), "unexpected end of DOT"
        tok = toks[pos]
        assert expected is None or tok == expected, f"expected {expected!r}, got {tok!r} at token {pos}"
        pos += 1
        return tok

    def attr_list() -> dict[str, str]:
        attrs: dict[str, str] = {}
        take("[")
        while toks[pos] != "]":
            key = unquote(take())
            take("=")
            attrs[key] = unquote(take())
            if toks[pos] == ",":
                take(",")
        take("]")
        return attrs

    def is_id(tok: str) -> bool:
        return tok not in ("{", "}", "[", "]", ";", ",", "=", "->")

    def statements(dot: Dot, cluster: str) -> None:
        while toks[pos] != "}":
            tok = take()
            if tok == "subgraph":
                name = unquote(take())
                dot.clusters[name] = {}
                take("{")
                statements(dot, name)
                take("}")
                continue
            assert is_id(tok), f"statement starts with {tok!r}"
            if toks[pos] == "=":  # graph attribute
                take("=")
                value = unquote(take())
                if cluster:
                    dot.clusters[cluster][unquote(tok)] = value
            elif toks[pos] == "->":
                chain = [unquote(tok)]
                while toks[pos] == "->":
                    take("->")
                    chain.append(unquote(take()))
                attrs = attr_list() if toks[pos] == "[" else {}
                dot.edges += [(a, b, attrs) for a, b in pairwise(chain)]
            else:
                attrs = attr_list() if toks[pos] == "[" else {}
                if tok not in ("node", "edge", "graph"):
                    dot.nodes[unquote(tok)] = attrs
                    dot.node_cluster[unquote(tok)] = cluster
            take(";")

    take("digraph")
    dot = Dot(unquote(take()))
    take("{")
    statements(dot, "")
    take("}")
    assert pos == len(toks), f"trailing tokens after the graph: {toks[pos:pos + 5]}"
    return dot


# ============================================================================ helpers


def _graph_ops(module: ModuleOp) -> list[Operation]:
    return [op for op in module.walk() if not isinstance(op, ModuleOp) and op.name != "func.func"]


def _block_args(module: ModuleOp) -> int:
    return sum(len(b.args) for op in module.walk() if op.name == "func.func" for b in op.regions[0].blocks)


def _model_nodes(dot: Dot) -> dict[str, dict[str, str]]:
    return {n: a for n, a in dot.nodes.items() if dot.node_cluster[n] != "cluster_legend"}


def _model_edges(dot: Dot) -> list[tuple[str, str, dict[str, str]]]:
    return [e for e in dot.edges if not e[0].startswith("legend_")]


@pytest.fixture(scope="module")
def gpt2_stages() -> dict[str, ModuleOp]:
    """GPT-2 small after the optimization passes (aten) and after lowering (buffer)."""
    imported, _, _ = imported_small_model("gpt2", "eager")
    module = imported.module.clone()
    run_passes(module, DEFAULT_PIPELINE, weights=imported.weights)
    stages = {"aten": module.clone()}
    run_passes(module, LOWERING_PIPELINE)
    stages["buffer"] = module
    return stages


# ============================================================================ tests


@pytest.mark.parametrize("stage", ["aten", "buffer"])
def test_nodes_are_ops_and_edges_are_uses(gpt2_stages, stage) -> None:
    module = gpt2_stages[stage]
    dot = parse_dot(op_graph(module, "gpt2"))
    nodes = _model_nodes(dot)
    ops = _graph_ops(module)
    assert len(nodes) == len(ops) + _block_args(module)
    labels = Counter(a["label"].split("\n")[0].split(" ")[0] for a in nodes.values() if not a["label"].startswith("%"))
    assert labels == Counter(op.name for op in ops)
    uses = sum(len(op.operands) for op in ops)
    edges = _model_edges(dot)
    assert len(edges) == uses
    assert all(a in nodes and b in nodes for a, b, _ in edges)
    assert set(dot.clusters) == {"cluster_1", "cluster_legend"}
    assert dot.clusters["cluster_1"]["label"] == "func.func @forward"


def test_devices_and_fused_ops_follow_the_ir(gpt2_stages) -> None:
    module = gpt2_stages["buffer"]
    dot = parse_dot(op_graph(module, "gpt2"))
    nodes = list(_model_nodes(dot).values())[_block_args(module):]
    colours = {"npu": "#9ecae1", "cpu": "#fdae6b"}
    fused = 0
    for op, attrs in zip(_graph_ops(module), nodes, strict=True):
        assert attrs["label"].startswith(op.name)
        if (device := op_device(op)) is not None:
            assert attrs["fillcolor"] == colours[device], attrs["label"]
            assert f"[{device}]" in attrs["label"]
        if op_kind(op) in FUSED_KINDS:
            fused += 1
            assert attrs.get("peripheries") == "2", attrs["label"]
        else:
            assert "peripheries" not in attrs, attrs["label"]
        if op.name == "buffer.weight":
            assert attrs["shape"] == "cylinder"
            assert op.properties["name"].data in attrs["label"]
    assert fused >= 2 * 3  # per layer: qkv and MLP linears, sdpa at least


def test_aten_ops_show_the_predicted_device(gpt2_stages) -> None:
    module = gpt2_stages["aten"]
    dot = parse_dot(op_graph(module, "gpt2"))
    nodes = list(_model_nodes(dot).values())[_block_args(module):]
    fused = [a for op, a in zip(_graph_ops(module), nodes, strict=True) if op.name in FUSED_ATEN_OPS]
    assert fused and all(a.get("peripheries") == "2" for a in fused)
    predicted = [a for a in nodes if "dashed" in a["style"]]
    assert predicted and all(re.search(r"\[(npu|cpu|npu\+cpu)\?\]", a["label"]) for a in predicted)
    # GPT-2 small runs entirely on the npu under the default policy.
    assert {a["fillcolor"] for a in predicted} == {"#9ecae1"}
    assert not any(
        "dashed" in a["style"] for op, a in zip(_graph_ops(module), nodes, strict=True) if op.name == "aten.weight"
    )
    assert "legend_predicted" in dot.nodes


def test_predict_false_gives_neutral_aten_ops(gpt2_stages) -> None:
    dot = parse_dot(op_graph(gpt2_stages["aten"], "gpt2", predict=False))
    assert not any("dashed" in a.get("style", "") for a in _model_nodes(dot).values())
    assert "legend_predicted" not in dot.nodes


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@given(_TEXT)
def test_quote_round_trips(text: str) -> None:
    assert unquote(quote(text)) == _newlines(text)
    assert len(_tokens(quote(text))) == 1


@settings(max_examples=30, deadline=None)
@given(weight_name=_TEXT.filter(bool), graph_name=_TEXT)
def test_any_names_give_valid_dot(weight_name: str, graph_name: str) -> None:
    t = TensorType(f32, [2, 2])
    fn = func.FuncOp("f", ((t,), (t,)))
    w = aten.WeightOp(weight_name, t)
    fn.body.block.add_ops([w, func.ReturnOp(w.result)])
    module = ModuleOp([fn])
    dot = parse_dot(op_graph(module, graph_name))
    assert dot.name == _newlines(graph_name)
    weight = next(a for a in dot.nodes.values() if a["label"].startswith("aten.weight"))
    assert weight["label"].startswith(f'aten.weight "{_newlines(weight_name)}"')  # names < 40 chars: not cut


def _newlines(text: str) -> str:
    """DOT labels have one line break, \\n: carriage returns become it."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def test_unregistered_ops_nested_regions_and_odd_names() -> None:
    """Ops of unknown dialects (named as written), values defined in nested regions, and
    quotes/backslashes/newlines in names: still one node per op, one edge per use, valid DOT."""
    from xdsl.parser import Parser

    from forge.driver.registry import make_context

    text = r'''
    func.func @f(%x: i32) -> i32 {
      %a = "my.op\"quoted\\"(%x) : (i32) -> i32
      %b = "my.region"(%a) ({
      ^bb0(%inner: i32):
        %c = "my.inside"(%inner, %a) : (i32, i32) -> i32
        "my.yield"(%c) : (i32) -> ()
      }) : (i32) -> i32
      func.return %b : i32
    }
    '''
    module = Parser(make_context(allow_unregistered=True), text).parse_module()
    dot = parse_dot(op_graph(module, 'odd "name"\nwith newline'))
    nodes = _model_nodes(dot)
    ops = _graph_ops(module)
    block_args = sum(len(b.args) for op in module.walk() for r in op.regions for b in r.blocks if op is not module)
    assert len(nodes) == len(ops) + block_args
    assert len(_model_edges(dot)) == sum(len(op.operands) for op in ops)
    labels = [a["label"].split("\n")[0] for a in nodes.values()]
    assert 'my.op"quoted\\' in labels and "my.inside" in labels
    assert dot.name == 'odd "name"\nwith newline'
