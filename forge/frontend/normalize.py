"""The frontend's FX-level normalizations: named steps run in order by one driver, each recorded.

torch.export hands over training IR: in-place ops, mutations through views, ops the `aten` dialect
lacks, SymInt plumbing. Before the importer builds IR, the program goes through these steps
(`STEPS`), each of which runs only when its condition holds and leaves a `StepRecord` (name, wall
ms, whether it ran, what it did), the way passes leave PassRecords:

1. `refuse-data-dependent-shapes`: a shape that depends on data fails here, with its location.
2. `functionalize-states` (`state=True`, a buffer is written): one `run_decompositions` both
   functionalizes and decomposes what the dialect lacks (each re-trace costs seconds); a program
   whose buffer writes are private in-place ops the dialect has needs neither.
3. `functionalize-aliases`: a mutation through an alias (a view) needs torch's functionalization.
4. `decompose`: the ops the dialect lacks, with torch's tables, to a fixpoint.
5. `rewrite-inplace`: every remaining in-place op is private: the builder imports its functional
   overload (a decomposition that introduced an aliased mutation is functionalized by torch instead).
6. `resolve-symbols`: static SymInts become numbers.
7. `check-supported`: whatever the dialect still lacks is reported all at once, by name.

Every dtype is checked before torch's functionalization runs (it fails on complex views with
internal assertions; the dtype error is the clearer one). Steps 2-5 are charged to the compile's
`decompose_ms`, the analyses to `import_ms`.
"""

from __future__ import annotations

import operator
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from dialects import aten
from dialects.torch_types import UnsupportedTypeError, tensor_type
from forge.frontend import symbolic
from forge.frontend.decompose import decompose_missing
from forge.frontend.errors import ImportError_, UnsupportedOpsError
from forge.frontend.functionalize import functional_overload, inplace_rewrites, is_inplace, torch_functionalize
from forge.frontend.node_locations import location_text
from forge.stage_clock import charged


@dataclass
class StepRecord:
    """One normalization step: its name, wall ms, whether its condition held and it ran, and what it did."""

    name: str
    ms: float
    ran: bool
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        row = {"name": self.name, "ms": round(self.ms, 3), "ran": self.ran}
        return {**row, "note": self.note} if self.note else row


@dataclass
class Normalizing:
    """What the steps share: the program as it is now, and what the earlier steps found."""

    program: ExportedProgram
    state: bool = False
    leaves: frozenset[Any] = frozenset()
    """Call targets the caller imports itself (block reuse's markers): neither decomposed nor unsupported."""
    exported: ExportedProgram | None = None
    """The program before decomposition: where a rewrite's input-mutation error finds the op that writes."""
    rewrites: dict[torch.fx.Node, Any] = field(default_factory=dict)
    facts: symbolic.SymbolicFacts | None = None
    rounds: int = 0
    records: list[StepRecord] = field(default_factory=list)

    def missing(self, program: ExportedProgram) -> set[Any]:
        return lacking_targets(program) - self.leaves

    def functionalize(self, allow_buffers: bool) -> None:
        check_dtypes(self.program)
        self.program = torch_functionalize(self.program, location_text, allow_buffers=allow_buffers)


@dataclass(frozen=True)
class Step:
    """A named normalization: `run` it when `applies`; it returns a note on what it did."""

    name: str
    run: Callable[[Normalizing], str]
    applies: Callable[[Normalizing], bool] = lambda n: True
    clock: str = "import_ms"


def normalize(program: ExportedProgram, *, state: bool = False, leaves: frozenset[Any] = frozenset()) -> Normalizing:
    """Run `STEPS` on `program` (see the module docstring); the result holds the program, the in-place
    rewrites and symbolic facts the builder needs, and one record per step."""
    n = Normalizing(program, state, frozenset(leaves))
    for step in STEPS:
        start = time.perf_counter()
        with charged(step.clock):
            ran = step.applies(n)
            note = step.run(n) if ran else ""
        n.records.append(StepRecord(step.name, (time.perf_counter() - start) * 1e3, ran, note))
    return n


# --- the steps -----------------------------------------------------------------------------------------


def _refuse_data_dependent(n: Normalizing) -> str:
    symbolic.analyze(n.program.graph, location_text, target_name)
    return ""


def _states_need_functionalizing(n: Normalizing) -> bool:
    return n.state and mutates_buffers(n.program) and (
        bool(n.missing(n.program)) or inplace_rewrites(n.program, location_text, allow_buffers=True) is None
    )


def _functionalize_states(n: Normalizing) -> str:
    check_dtypes(n.program)
    n.program, rounds = decompose_missing(n.program, n.missing)
    n.rounds += rounds
    if rounds == 0:
        n.program = torch_functionalize(n.program, location_text, allow_buffers=True)
        return "torch's functionalization"
    return f"functionalized by {rounds} decomposition round(s)"


def _aliased(n: Normalizing) -> bool:
    return inplace_rewrites(n.program, location_text, allow_buffers=n.state) is None


def _functionalize_aliases(n: Normalizing) -> str:
    n.functionalize(allow_buffers=False)
    return "torch's functionalization"


def _decompose(n: Normalizing) -> str:
    n.exported = n.program
    try:
        n.program, rounds = decompose_missing(n.program, n.missing)
    except ImportError_:
        check_dtypes(n.program)  # a complex intermediate is the likelier, clearer cause
        raise
    n.rounds += rounds
    return f"{rounds} round(s)" if rounds else ""


def _rewrite_inplace(n: Normalizing) -> str:
    rewrites = inplace_rewrites(n.program, location_text, original=n.exported, allow_buffers=n.state)
    if rewrites is None:  # a decomposition introduced an aliased mutation
        n.functionalize(allow_buffers=n.state)
        return "a decomposition aliased a mutation: torch's functionalization"
    n.rewrites = rewrites
    return f"{len(rewrites)} in-place op(s) as functional" if rewrites else ""


def _resolve_symbols(n: Normalizing) -> str:
    n.facts = symbolic.analyze(n.program.graph, location_text, target_name)
    return ""


def _check_supported(n: Normalizing) -> str:
    raise_on_unsupported(n.program, n.rewrites, n.facts, n.leaves)
    return ""


STEPS: tuple[Step, ...] = (
    Step("refuse-data-dependent-shapes", _refuse_data_dependent),
    Step("functionalize-states", _functionalize_states, _states_need_functionalizing, "decompose_ms"),
    Step("functionalize-aliases", _functionalize_aliases, _aliased, "decompose_ms"),
    Step("decompose", _decompose, clock="decompose_ms"),
    Step("rewrite-inplace", _rewrite_inplace, clock="decompose_ms"),
    Step("resolve-symbols", _resolve_symbols),
    Step("check-supported", _check_supported),
)


# --- what the steps ask of a program -------------------------------------------------------------------


def mutates_buffers(program: ExportedProgram) -> bool:
    """Whether some op writes into a buffer (in place, or as a functional BUFFER_MUTATION output)."""
    if program.graph_signature.buffers_to_mutate:
        return True
    buffers = {s.arg.name for s in program.graph_signature.input_specs if s.kind == InputKind.BUFFER}
    for node in program.graph.nodes:
        if node.op == "call_function" and is_inplace(node.target):
            root = node.args[0]
            while isinstance(root, torch.fx.Node) and root.op == "call_function" and root.args:
                root = root.args[0]
            if isinstance(root, torch.fx.Node) and root.name in buffers:
                return True
    return False


def check_dtypes(program: ExportedProgram) -> None:
    """Every tensor of the graph has a dtype Forge represents (no complex, no float8), else one clear
    error at the first node that makes one."""
    for node in program.graph.nodes:
        for val in flatten(node.meta.get("val")):
            if isinstance(val, torch.Tensor):
                try:
                    tensor_type((), val.dtype)
                except UnsupportedTypeError as err:
                    raise ImportError_(f"{location_text(node)}: {node.name}: {err}") from None


def flatten(value: Any) -> list[Any]:
    if isinstance(value, (list, tuple)):
        return [v for item in value for v in flatten(item)]
    return [value]


def effective_target(node: torch.fx.Node) -> Any:
    """The overload the node imports as: an in-place op as its functional twin."""
    if is_inplace(node.target):
        return functional_overload(node.target) or node.target
    return node.target


def _is_plumbing(node: torch.fx.Node) -> bool:
    target = node.target
    return target is operator.getitem or target in symbolic.SCALAR_TARGETS or target in symbolic.ASSERTIONS


def op_class(target: Any) -> type[aten.AtenOp] | None:
    """The `aten` op class of a torch overload (None: the dialect lacks it), built on first use: reading
    `aten.OPS_BY_TARGET` builds all 426 classes (~100 ms of a cold compile) to look up the few a graph has."""
    if not isinstance(target, torch._ops.OpOverload):
        return None
    return aten.op_for(f"{target.namespace}::{target._opname}.{target._overloadname}")


def lacking_targets(program: ExportedProgram) -> set[Any]:
    """The overloads of the graph the dialect lacks (what decomposition should remove)."""
    missing = set()
    for node in program.graph.nodes:
        if node.op == "call_function" and not _is_plumbing(node):
            target = effective_target(node)
            if op_class(target) is None:
                missing.add(target)
    return missing


def raise_on_unsupported(
    program: ExportedProgram, rewrites: dict, facts: symbolic.SymbolicFacts, leaves: frozenset[Any] = frozenset()
) -> None:
    """UnsupportedOpsError naming every op the dialect lacks, with counts and first locations."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for node in program.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem or facts.handled(node):
            continue
        if node.target in leaves:
            continue
        if op_class(rewrites.get(node, node.target)) is not None:
            continue
        name = target_name(node.target)
        if name == "with_effects" and len(node.args) > 1:
            name = f"with_effects({target_name(node.args[1])})"
        counts[name] += 1
        first.setdefault(name, location_text(node))
    if counts:
        raise UnsupportedOpsError({name: (count, first[name]) for name, count in counts.items()})


def target_name(target: Any) -> str:
    schema = getattr(target, "_schema", None)
    if schema is not None:
        overload = target._overloadname
        return f"{schema.name.replace('::', '.')}.{overload}"
    return getattr(target, "__name__", str(target))
