"""The first divergent op of a model at the import stage (issue 28 point 4, first part).

`first_divergence(model, args)` exports the model, normalizes and imports it as `compile` does, then
runs two things node by node on the same inputs: the normalized FX graph with torch's kernels (the
reference), and the imported `aten` IR op by op with Forge's semantics (each op's own overload, as the
reference interpreter runs it). Walking the FX nodes in order, the first node whose imported value
differs from torch's (dtype, shape, or values beyond the tolerance) is the first divergent op: an
import bug (a wrong overload, a dropped option) or a wrong kernel shows at that node, named with its
overload, the model's source line, the max |diff| and the scale of torch's value.

What it does not cover yet: the passes, the lowering and the runtimes (a divergence that appears only
after import is not named here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.export.graph_signature import InputKind
from xdsl.dialects import func

from dialects import aten
from forge.frontend.fx_importer import _GraphBuilder
from forge.frontend.node_locations import model_frame
from forge.frontend.normalize import normalize


@dataclass(frozen=True)
class Divergence:
    node: str
    """The FX node's name."""
    op: str
    """Its overload (`aten.div.Scalar_mode`)."""
    stage: str
    location: tuple[str, int] | None
    """(file, line) of the model code that made the node."""
    max_diff: float
    scale: float
    detail: str

    def __str__(self) -> str:
        where = f"{self.location[0]}:{self.location[1]}" if self.location else "<unknown location>"
        return (f"{self.op} ({self.node}) at {where}, {self.stage}: max |diff| {self.max_diff:.3g} "
                f"at scale {self.scale:.3g}{'; ' + self.detail if self.detail else ''}")


def first_divergence(
    model: torch.nn.Module, args: tuple[Any, ...], rtol: float = 1e-5, atol: float = 1e-5
) -> Divergence | None:
    """The first FX node whose imported value differs from torch's, or None when all agree."""
    with torch.no_grad():
        program = torch.export.export(model, tuple(args))
        normalized = normalize(program, state=False, leaves=frozenset())
        builder = _GraphBuilder(normalized.program, "forward", normalized.rewrites, normalized.facts, False, {})
        imported = builder.build()
        reference = _reference_values(normalized.program, args)
        ours = _imported_values(imported, args)
    for node in normalized.program.graph.nodes:
        if node.op != "call_function" or node not in reference:
            continue
        value = builder.values.get(node)
        got = ours.get(value) if not isinstance(value, list) else None
        if got is None:
            continue
        found = _differs(reference[node], got, rtol, atol)
        if found is not None:
            op = getattr(value, "owner", None)
            name = op.name if isinstance(op, aten.AtenOp) else str(node.target)
            return Divergence(node.name, name, "import", model_frame(node), *found)
    return None


def _reference_values(program: torch.export.ExportedProgram, args: tuple[Any, ...]) -> dict[torch.fx.Node, Any]:
    """Each FX node's value, from torch's kernels on the lifted graph (parameters and buffers passed in)."""
    user = iter(args)
    flat = []
    for spec in program.graph_signature.input_specs:
        if spec.kind == InputKind.USER_INPUT:
            flat.append(next(user))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            flat.append(program.state_dict[spec.target])
        else:
            flat.append(program.constants[spec.target])
    values: dict[torch.fx.Node, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            out = super().run_node(n)
            values[n] = out
            return out

    Recorder(program.graph_module).run(*flat)
    return values


def _imported_values(imported: Any, args: tuple[Any, ...]) -> dict[Any, torch.Tensor]:
    """Each SSA value of the imported function, op by op, as the reference interpreter computes it."""
    function = next(op for op in imported.module.ops if isinstance(op, func.FuncOp))
    block = function.body.blocks[0]
    env: dict[Any, Any] = dict(zip(block.args, [a for a in args if isinstance(a, torch.Tensor)], strict=False))
    for op in block.ops:
        if isinstance(op, aten.WeightOp):
            env[op.results[0]] = imported.weights[op.weight_name.data]
        elif isinstance(op, aten.ConstantOp):
            env[op.results[0]] = op.to_tensor()
        elif isinstance(op, aten.AtenOp):
            out = op.call(tuple(env[o] for o in op.operands))
            outs = (out,) if isinstance(out, torch.Tensor) else tuple(out or ())
            env.update(zip(op.results, outs, strict=False))
    return env


def _differs(expected: Any, got: Any, rtol: float, atol: float) -> tuple[float, float, str] | None:
    if not isinstance(expected, torch.Tensor) or not isinstance(got, torch.Tensor):
        return None
    scale = float(expected.double().abs().nan_to_num(0.0, 0.0, 0.0).max()) if expected.numel() else 0.0
    if got.dtype != expected.dtype or got.shape != expected.shape:
        theirs = f"{expected.dtype}{list(expected.shape)}"
        return float("inf"), scale, f"{got.dtype}{list(got.shape)}, torch gives {theirs}"
    if torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol, equal_nan=True):
        return None
    diff = (got.double() - expected.double()).abs().nan_to_num(float("inf"))
    return float(diff.max()), scale, ""
