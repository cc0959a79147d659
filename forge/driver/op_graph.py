"""A module as a Graphviz DOT graph (what `forge-opt --view-op-graph` writes).

Like mlir-opt's `-view-op-graph`: one node per op and per block argument, one edge per use of
an SSA value (data flow, from the defining op to the user), one cluster per `func.func`. On top
of that, what a researcher wants to see at a glance:

- colour = device. npuir ops and `buffer.exec` carry theirs (after `lower-aten-to-npuir` and
  `schedule-device-affinity`); buffer values written by `buffer.transfer` live in the device of
  their destination buffer. `aten` ops show the device they are *predicted* to get: the module
  is lowered on a copy with the default `AffinityPolicy` (npu-first, `lowering/affinity.py`) and
  each aten op takes the device of the npuir ops it became (dashed border; "npu+cpu" when it
  became ops on both; neutral when it lowers to nothing, e.g. a view to the same type).
- fused ops (Forge's fused aten ops, `dialects.fused_kernels.FUSED_OPS`, sdpa, and the npuir/buffer
  kinds the kind table marks `fused`) have a double, thick border and a "fused" tag.
- shapes: weights are cylinders, constants notes, graph inputs inverted houses, buffers
  (`buffer.alloc`) folders, the return a house; edges from a buffer to its writers are dashed.
- a legend cluster explains all of it.

Every string goes through `quote` (DOT escaping), so any module, including unregistered ops
and odd names, gives a graph `dot` accepts.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp, StringAttr, UnregisteredOp
from xdsl.ir import Block, Operation, SSAValue

from dialects.aten_table import FUSED as FUSED_OPS  # names only: fused_kernels imports torch
from forge.kinds import KINDS

NPU_COLOUR = "#9ecae1"
CPU_COLOUR = "#fdae6b"
MIXED_COLOUR = "#cbb7e3"
NEUTRAL_COLOUR = "#eeeeee"
DEVICE_COLOURS = {"npu": NPU_COLOUR, "cpu": CPU_COLOUR, "npu+cpu": MIXED_COLOUR}

FUSED_ATEN_OPS = frozenset({f"aten.{name}" for name in FUSED_OPS} | {"aten.scaled_dot_product_attention"})
"""Forge's fused aten ops (fuse-ops, layout) and the sdpa fuse-attention builds."""

FUSED_KINDS = frozenset(name for name, spec in KINDS.items() if spec.fused)
"""npuir kinds (and `buffer.exec` kinds) that are fused kernels."""

MAX_LABEL = 64
"""Longest label line; longer ones (big types, long names) are cut with '...'."""

_WEIGHT_OPS = frozenset({"aten.weight", "npuir.weight", "buffer.weight"})
_CONSTANT_OPS = frozenset({"aten.constant", "npuir.constant", "buffer.constant", "arith.constant"})
_INPUT_OPS = frozenset({"npuir.input", "buffer.input"})


# ================================================================================ escaping


def quote(text: str) -> str:
    """`text` as a DOT double-quoted string: backslashes and quotes escaped, newlines as \\n."""
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    out = out.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{out}"'


def _cut(line: str) -> str:
    return line if len(line) <= MAX_LABEL else line[: MAX_LABEL - 3] + "..."


# ================================================================================ devices


def op_kind(op: Operation) -> str | None:
    """The npuir kind of an npuir op or `buffer.exec` (None for other ops)."""
    if op.name == "buffer.exec":
        kind = op.properties.get("kind")
        return kind.data if isinstance(kind, StringAttr) else None
    if op.name.startswith("npuir."):
        return op.name.removeprefix("npuir.")
    return None


def op_device(op: Operation) -> str | None:
    """The device an npuir/buffer op carries (None for ops without one)."""
    device = op.properties.get("device")
    if device is not None and hasattr(device, "data") and hasattr(device.data, "value"):
        return str(device.data.value)
    if op.name == "buffer.transfer" or op.name == "buffer.alloc":
        buf = (op.operands[-1] if op.name == "buffer.transfer" else op.results[0]).type
        on = getattr(buf, "on", None)
        return None if on is None else str(on.value)
    return None


def is_fused(op: Operation) -> bool:
    """Whether `op` is a fused kernel (see FUSED_ATEN_OPS and FUSED_KINDS)."""
    return op.name in FUSED_ATEN_OPS or op_kind(op) in FUSED_KINDS


def predicted_aten_devices(module: ModuleOp) -> dict[Operation, str]:
    """For each aten op of `module`, the device(s) `lower-aten-to-npuir` (default policy) gives
    the npuir ops it becomes: 'npu', 'cpu' or 'npu+cpu'. Ops that become no op are absent.

    Lowers a copy; a function the lowering rejects (e.g. one that is not all aten) gets none.
    """
    if not any(op.name.startswith("aten.") for op in module.walk()):
        return {}
    # lazy: start-up cost (the lowering and torch load only for a module with aten ops)
    from lowering.affinity import AffinityPolicy
    from lowering.aten_to_npuir import predict_devices

    predicted = predict_devices(module, AffinityPolicy())
    return {op: "+".join(sorted(devices, reverse=True)) for op, devices in predicted.items()}


# ================================================================================ graph


@dataclass
class _Node:
    id: str
    label: str
    attrs: dict[str, str]


def display_name(op: Operation) -> str:
    """The op's name as written in the IR (an unregistered op's own name, not xDSL's wrapper's)."""
    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


def _node_label(op: Operation, device: str | None, predicted: bool) -> str:
    head = display_name(op)
    if (kind := op_kind(op)) is not None and op.name == "buffer.exec":
        head = f"buffer.exec {kind}"
    if op.name in _WEIGHT_OPS and isinstance(name := op.properties.get("name"), StringAttr):
        head = f'{head} "{name.data}"'
    if device is not None:
        head += f" [{device}{'?' if predicted else ''}]"
    lines = [head]
    if is_fused(op):
        lines.append("fused" + (f" {act}" if (act := _activation(op)) else ""))
    for result in op.results:
        hint = f"%{result.name_hint} : " if result.name_hint else ": "
        lines.append(f"{hint}{result.type}")
    return "\n".join(_cut(line) for line in lines)


def _activation(op: Operation) -> str | None:
    act = op.properties.get("activation")
    if act is None:
        params = op.properties.get("params")
        act = getattr(params, "data", {}).get("activation") if params is not None else None
    if act is None:
        return None
    value = act.data if isinstance(act, StringAttr) else getattr(getattr(act, "data", None), "value", None)
    return None if value in (None, "none") else str(value)


def _shape(op: Operation) -> str:
    if op.name in _WEIGHT_OPS:
        return "cylinder"
    if op.name in _CONSTANT_OPS:
        return "note"
    if op.name in _INPUT_OPS:
        return "invhouse"
    if op.name == "buffer.alloc":
        return "folder"
    if op.name == "func.return":
        return "house"
    return "box"


def _op_node(node_id: str, op: Operation, predictions: dict[Operation, str]) -> _Node:
    device = op_device(op)
    predicted = device is None and op in predictions
    if predicted:
        device = predictions[op]
    styles = ["filled"]
    if _shape(op) == "box":
        styles.append("rounded")
    if predicted:
        styles.append("dashed")
    attrs = {
        "shape": _shape(op),
        "style": ",".join(styles),
        "fillcolor": DEVICE_COLOURS.get(device or "", NEUTRAL_COLOUR),
    }
    if is_fused(op):
        attrs |= {"peripheries": "2", "penwidth": "2"}
    return _Node(node_id, _node_label(op, device, predicted), attrs)


def _arg_node(node_id: str, arg: SSAValue, index: int) -> _Node:
    hint = f"%{arg.name_hint}" if arg.name_hint else f"%arg{index}"
    label = _cut(f"{hint} : {arg.type}")
    return _Node(node_id, label, {"shape": "invhouse", "style": "filled", "fillcolor": "white"})


def _format_node(node: _Node, indent: str) -> str:
    attrs = [f"label={quote(node.label)}"] + [f"{k}={quote(v)}" for k, v in node.attrs.items()]
    return f"{indent}{node.id} [{', '.join(attrs)}];"


class _GraphBuilder:
    """Numbers ops and block arguments, then prints nodes (clustered by function) and edges."""

    def __init__(self, module: ModuleOp, predictions: dict[Operation, str]):
        self.module = module
        self.predictions = predictions
        self.ids: dict[SSAValue | Operation, str] = {}
        self.lines: list[str] = []
        self.clusters = 0

    def node_id(self, key: SSAValue | Operation, prefix: str) -> str:
        if key not in self.ids:
            self.ids[key] = f"{prefix}{len(self.ids)}"
        return self.ids[key]

    def block_nodes(self, block: Block, indent: str) -> None:
        for i, arg in enumerate(block.args):
            self.lines.append(_format_node(_arg_node(self.node_id(arg, "v"), arg, i), indent))
        for op in block.ops:
            self.op_nodes(op, indent)

    def op_nodes(self, op: Operation, indent: str) -> None:
        if _is_container(op):
            self.cluster(op, indent)
            return
        node = _op_node(self.node_id(op, "v"), op, self.predictions)
        self.lines.append(_format_node(node, indent))
        for region in op.regions:  # nested regions of ordinary ops: their ops as plain nodes
            for block in region.blocks:
                self.block_nodes(block, indent)

    def cluster(self, op: Operation, indent: str) -> None:
        if op is self.module:
            for region in op.regions:
                for block in region.blocks:
                    self.block_nodes(block, indent)
            return
        self.clusters += 1
        title = op.name
        if isinstance(sym := op.properties.get("sym_name") or op.attributes.get("sym_name"), StringAttr):
            title = f"{op.name} @{sym.data}"
        self.lines.append(f"{indent}subgraph cluster_{self.clusters} {{")
        self.lines.append(f"{indent}  label={quote(_cut(title))}; style=rounded; color=gray50;")
        for region in op.regions:
            for block in region.blocks:
                self.block_nodes(block, indent + "  ")
        self.lines.append(f"{indent}}}")

    def edges(self) -> Iterator[str]:
        for op in self.module.walk():
            if _is_container(op) or op not in self.ids:
                continue
            for operand in op.operands:
                source = self._source_id(operand)
                if source is None:
                    continue
                from_buffer = isinstance(operand.owner, Operation) and operand.owner.name == "buffer.alloc"
                style = ' [style="dashed", color="gray50"]' if from_buffer else ""
                yield f"  {source} -> {self.ids[op]}{style};"

    def _source_id(self, value: SSAValue) -> str | None:
        owner = value.owner
        if isinstance(owner, Operation):
            return self.ids.get(owner)
        return self.ids.get(value)


def _is_container(op: Operation) -> bool:
    """Ops drawn as clusters, not nodes: the module and functions."""
    return isinstance(op, ModuleOp) or op.name == "func.func"


def _legend(predicted: bool) -> list[str]:
    entries = [
        ("legend_npu", "runs on npu", {"fillcolor": NPU_COLOUR}),
        ("legend_cpu", "runs on cpu", {"fillcolor": CPU_COLOUR}),
    ]
    if predicted:
        entries += [
            ("legend_predicted", "aten op: predicted device [npu?]\\n(lower-aten-to-npuir, npu-first)",
             {"fillcolor": NPU_COLOUR, "style": "filled,rounded,dashed"}),
            ("legend_mixed", "aten op lowered to npu and cpu ops",
             {"fillcolor": MIXED_COLOUR, "style": "filled,rounded,dashed"}),
        ]
    entries += [
        ("legend_none", "no device (not lowered, or lowers to nothing)", {"fillcolor": NEUTRAL_COLOUR}),
        ("legend_fused", "fused kernel", {"fillcolor": "white", "peripheries": "2", "penwidth": "2"}),
        ("legend_weight", "weight", {"shape": "cylinder", "fillcolor": "white"}),
        ("legend_constant", "constant", {"shape": "note", "fillcolor": "white"}),
        ("legend_input", "graph input", {"shape": "invhouse", "fillcolor": "white"}),
        (
            "legend_buffer",
            "buffer (buffer.alloc);\\ndashed edge: written into",
            {"shape": "folder", "fillcolor": "white"},
        ),
    ]
    lines = ["  subgraph cluster_legend {", '    label="legend"; style=rounded; color=gray50;']
    for node_id, text, attrs in entries:
        full = {"shape": "box", "style": "filled,rounded"} | attrs
        # Legend texts are fixed, but may hold a literal \n (a DOT line break): not re-escaped.
        attr_text = ", ".join(f"{k}={quote(v)}" for k, v in full.items())
        lines.append(f'    {node_id} [label="{text}", {attr_text}];')
    ids = [e[0] for e in entries]
    lines.append("    " + " -> ".join(ids) + " [style=invis];")
    lines.append("  }")
    return lines


def op_graph(module: ModuleOp, name: str = "module", *, predict: bool = True) -> str:
    """`module` as a DOT digraph named `name`; `predict=False` skips the aten device prediction."""
    predictions = predicted_aten_devices(module) if predict else {}
    builder = _GraphBuilder(module, predictions)
    builder.cluster(module, "  ")
    lines = [
        f"digraph {quote(name)} {{",
        "  rankdir=TB;",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [color="gray30"];',
        *builder.lines,
        *builder.edges(),
        *_legend(bool(predictions)),
        "}",
    ]
    return "\n".join(lines) + "\n"
