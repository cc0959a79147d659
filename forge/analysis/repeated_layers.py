"""Repeated layers of an imported model, and the same module cut down to its first k layers.

Transformers repeat one block L times. The autotuner scores a configuration on the 1- and 2-layer
cuts and extrapolates (`cost(L) = cost(1) + (L-1) * (cost(2) - cost(1))`): exact when the blocks
are identical and the passes and the cost model treat each block alike, which the tuner's tests
check against full compiles.

Layers are found through weight names: a weight named `...<sep><k><sep>...` (`h.3.attn.c_attn.weight`,
`model.layers.3.mlp.up_proj.weight`) belongs to layer k. Every other op belongs to the highest
layer among its operands (-1 when none: the embedding and the mask arithmetic). Layer L-1 then also
holds the tail (final norm, head): its ops beyond the length of layer 0 are the tail. The layers
are `Layers.identical` when every layer has layer 0's op names and result types in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

_LAYER_INDEX = re.compile(r"(?:^|[._])(\d+)[._]")


def _weight_layer(op: Operation) -> int:
    if op.name != "aten.weight":
        return -1
    match = _LAYER_INDEX.search(op.properties["name"].data)
    return int(match.group(1)) if match else -1


@dataclass
class Layers:
    body: list[Operation]
    layers: list[list[Operation]]
    """The ops of each layer, in program order (the tail excluded)."""
    tail: list[Operation]

    @property
    def count(self) -> int:
        return len(self.layers)

    @property
    def identical(self) -> bool:
        if self.count < 2 or not self.layers[0]:
            return False
        shape = [(op.name, tuple(r.type for r in op.results)) for op in self.layers[0]]
        return all([(op.name, tuple(r.type for r in op.results)) for op in layer] == shape for layer in self.layers[1:])


def find_layers(module: ModuleOp) -> Layers | None:
    """The layers of the module's single function, or None (no function, or no numbered weights)."""
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if len(functions) != 1 or not functions[0].body.blocks:
        return None
    body = list(functions[0].body.block.ops)
    layer_of: dict[Operation, int] = {}
    for op in body:
        own = _weight_layer(op)
        inherited = max((layer_of.get(o.owner, -1) for o in op.operands if isinstance(o.owner, Operation)), default=-1)
        layer_of[op] = max(own, inherited)
    count = max(layer_of.values(), default=-1) + 1
    if count < 1:
        return None
    layers: list[list[Operation]] = [[] for _ in range(count)]
    for op in body:
        if layer_of[op] >= 0:
            layers[layer_of[op]].append(op)
    size = len(layers[0])
    tail = layers[-1][size:]
    layers[-1] = layers[-1][:size]
    return Layers(body, layers, tail)


def truncate(module: ModuleOp, keep: int) -> bool:
    """Cut `module` (in place) to its first `keep` identical layers; the tail reads layer keep-1
    where it read the last layer. False (module unchanged) when the layers are not identical or
    there are not more than `keep` of them."""
    found = find_layers(module)
    if found is None or not found.identical or found.count <= keep or keep < 1:
        return False
    last, kept_last = found.layers[-1], found.layers[keep - 1]
    replacement = {}
    for old, new in zip(last, kept_last, strict=True):
        for r_old, r_new in zip(old.results, new.results, strict=True):
            replacement[r_old] = r_new
    dropped = [op for layer in found.layers[keep:] for op in layer]
    for op in found.tail + [op for op in found.body if op.name == "func.return"]:
        for i, operand in enumerate(op.operands):
            if operand in replacement:
                op.operands[i] = replacement[operand]
    block = found.body[0].parent
    assert block is not None
    for op in reversed(dropped):
        block.erase_op(op)
    return True
