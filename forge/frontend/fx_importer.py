"""Import a `torch.export.ExportedProgram` into one `func.func` of `aten` ops.

Policy (learned from torch-mlir's importer, kept small):
- arguments are bound by schema: positional, then keyword by name; schema defaults are implied
  (a property equal to its default is not stored, so nothing the user passed is lost);
- `getitem` on a multi-result op binds the matching result;
- FX node names become SSA name hints and the model-code frame of each node's stack trace becomes
  the op's location, so diagnostics and CHECK lines read like the model;
- parameters, buffers and lifted constants go to a WeightStore, referenced by `aten.weight`;
  tied weights (one storage) are stored once;
- in-place ops are functionalized (functionalize.py), ops with no `aten` op are decomposed with
  torch's own tables to a fixpoint (decompose.py), static SymInt plumbing becomes numbers and
  data-dependent shapes are refused with one clear error (symbolic.py); whatever remains is
  reported all at once, by name, with counts and first locations;
- `state=True` (what `forge.generate` compiles with): a *buffer* the program mutates (a KV cache
  written with `index_copy_`) is a persistent state, not a weight. It becomes a function argument
  after the user inputs and its final value an extra result after the user outputs; the function
  carries `forge.state = ["name", ...]` naming them in order (argument `n_inputs + i` and result
  `n_outputs + i` are state i), and `ImportedProgram.states` their names, types and initial
  values. The memory planner keeps a state in a buffer of its own that lives across calls.
  Mutating a user input is refused in either mode (InputMutationError).
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from dialects import aten
from dialects.aten_schema import ArgKind, equals_default, to_attribute
from dialects.torch_types import UnsupportedTypeError, tensor_type
from forge.frontend import symbolic
from forge.frontend.functionalize import (
    buffer_writes,
    mutated_chain,
)
from forge.frontend.import_errors import DataDependentShapeError, FrontendError, InputMutationError, UnsupportedOpsError
from forge.frontend.node_locations import location_text, model_frame, recorded_model_frames
from forge.frontend.normalize import StepRecord, flatten, normalize, op_class
from forge.stage_clock import charged
from forge.weights import WeightStore, attach_weights

__all__ = [
    "DataDependentShapeError",
    "FrontendError",
    "ImportedProgram",
    "InputMutationError",
    "InputSpec",
    "STATE_ATTR",
    "StateSpec",
    "UnsupportedOpsError",
    "import_module",
    "import_program",
]


@dataclass(frozen=True)
class InputSpec:
    """One user input of the imported function: its name, static shape and dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype


Leaves = dict[Any, Callable[["_GraphBuilder", torch.fx.Node], Any]]
"""Call targets the caller imports itself (see `import_program`)."""

STATE_ATTR = "forge.state"
"""The function attribute naming its states, in order (see the module docstring)."""


@dataclass(frozen=True)
class StateSpec:
    """A persistent state of the imported function: the mutated buffer's name and initial value."""

    name: str
    initial: torch.Tensor

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.initial.shape)

    @property
    def dtype(self) -> torch.dtype:
        return self.initial.dtype


@dataclass
class ImportedProgram:
    """The result of an import: the IR, the weights it names, and the static input signature
    (and, imported with `state=True`, the states the function reads and updates)."""

    module: ModuleOp
    weights: WeightStore
    inputs: list[InputSpec]
    states: list[StateSpec] = field(default_factory=list)
    export_ms: float = 0.0
    import_ms: float = 0.0
    stats: dict[str, int] = field(default_factory=dict)
    weight_sources: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Store name -> (input kind: PARAMETER, BUFFER, CONSTANT_TENSOR, ...; the program's first target for it)."""
    blocks: dict[str, Any] | None = None
    """Block reuse (forge/frontend/blocks.py): the report's `blocks` entry, when the import stitched blocks."""
    normalization: list[StepRecord] = field(default_factory=list)
    """The frontend's normalization steps before the build (forge/frontend/normalize.py), in order."""
    normalized_program: ExportedProgram | None = None
    """The program the IR was built from (`import_program(..., keep_normalized=True)` only)."""
    value_nodes: dict[Any, str] = field(default_factory=dict)
    """Each op result -> the name of the FX node it computes (`keep_normalized=True` only: name hints lose
    their numeric suffixes, so they cannot tell `mul` from `mul_1`)."""

    def __post_init__(self) -> None:
        attach_weights(self.module, self.weights)  # the module's passes find its weights (`weights_of`)


# --- entry points ------------------------------------------------------------------------------


def import_module(
    model: torch.nn.Module, example_args: Sequence[Any], *, func_name: str = "forward", state: bool = False
) -> ImportedProgram:
    """Export `model` on `example_args` (static shapes) and import it (`state`: see the module
    docstring); an ExportError (the model's class, where in its code, the error) when torch.export fails."""
    from forge.frontend.export import ExportError, describe_export_failure, static_experts  # lazy: the larger module

    start = time.perf_counter()
    try:
        with charged("export_ms"), torch.no_grad(), recorded_model_frames(), static_experts(model):
            program = torch.export.export(model, tuple(example_args))
    except Exception as err:  # torch.export raises assorted types; each becomes one clear ExportError
        raise ExportError(describe_export_failure(model, err)) from err
    export_ms = (time.perf_counter() - start) * 1e3
    imported = import_program(program, func_name=func_name, state=state)
    imported.export_ms = export_ms
    return imported


def import_program(
    program: ExportedProgram,
    *,
    func_name: str = "forward",
    state: bool = False,
    leaves: Leaves | None = None,
    keep_normalized: bool = False,
) -> ImportedProgram:
    """Import an ExportedProgram into an `aten` module plus its WeightStore.

    `leaves`: {target: handler} for call targets the caller imports itself (forge/frontend/blocks.py's
    `forge::block`): `handler(builder, node)` adds the ops for `node` to `builder.block` and returns its
    result values; such targets are neither decomposed nor reported unsupported.

    The program is normalized first (forge/frontend/normalize.py: named FX-level steps, each recorded in
    `normalization`), then the IR is built (in-place ops on private values as their functional overloads,
    static SymInt plumbing as numbers). `state=True`: mutated buffers are states. `keep_normalized`: the
    normalized program stays on the result (`normalized_program`), whose nodes name the IR's values
    (forge bisect runs it node by node).
    """
    start = time.perf_counter()
    leaves = dict(leaves or {})
    with charged("import_ms"):  # the running compile's import stage (normalization charges its own steps)
        normalized = normalize(program, state=state, leaves=frozenset(leaves))
        builder = _GraphBuilder(normalized.program, func_name, normalized.rewrites, normalized.facts, state, leaves)
        imported = builder.build()
    imported.import_ms = (time.perf_counter() - start) * 1e3
    imported.normalization = normalized.records
    if keep_normalized:
        imported.normalized_program = normalized.program
        imported.value_nodes = {
            value: node.name
            for node, value in builder.values.items()
            if node.op == "call_function" and isinstance(value, SSAValue)
        }
    imported.stats["decompose_rounds"] = normalized.rounds
    return imported


def _location(node: torch.fx.Node) -> Attribute:
    frame = model_frame(node)
    if frame is None:
        return UnknownLoc()
    return FileLineColLoc(StringAttr(frame[0]), IntAttr(frame[1]), IntAttr(0))


# --- building the function -------------------------------------------------------------------------


class _GraphBuilder:
    """Walks the FX graph once, creating one op per node in program order."""

    def __init__(
        self,
        program: ExportedProgram,
        func_name: str,
        rewrites: dict[torch.fx.Node, Any] | None = None,
        facts: symbolic.SymbolicFacts | None = None,
        state: bool = False,
        leaves: Leaves | None = None,
    ):
        self.program = program
        self.leaves = leaves or {}
        self.target_names: dict[str, str] = {}  # state target (FQN) -> its name in the store
        self.weight_sources: dict[str, tuple[str, str]] = {}  # store name -> (input kind, first target)
        self.func_name = func_name
        self.rewrites = rewrites or {}
        self.facts = facts or symbolic.SymbolicFacts()
        self.weights = WeightStore()
        self.values: dict[torch.fx.Node, Any] = {}  # node -> SSAValue or list of SSAValues
        self.weight_values: dict[str, SSAValue] = {}
        self.block = Block()
        self.inputs: list[InputSpec] = []
        self.states: list[StateSpec] = []
        self.state_targets = set(program.graph_signature.buffers_to_mutate.values())
        if state:
            self.state_targets |= set(buffer_writes(program))
        self.state_nodes: dict[str, torch.fx.Node] = {}

    def build(self) -> ImportedProgram:
        kinds = {spec.arg.name: spec for spec in self.program.graph_signature.input_specs}
        placeholders = [n for n in self.program.graph.nodes if n.op == "placeholder"]
        stateful = [n for n in placeholders if self._is_state(kinds[n.name])]
        for node in placeholders:
            if node not in stateful:
                self._placeholder(node, kinds[node.name])
        for node in stateful:  # after the user inputs: their argument numbers do not change
            self._state(node, kinds[node.name])
        for node in self.program.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "call_function":
                self._call(node)
            elif node.op == "output":
                return self._finish(node)
        raise FrontendError("exported graph has no output node")

    def _placeholder(self, node: torch.fx.Node, spec) -> None:
        if spec.kind == InputKind.USER_INPUT:
            val = node.meta["val"]
            if not isinstance(val, torch.Tensor):  # a constant torch.export specialized (use_cache=False)
                self.values[node] = val
                return
            arg = self.block.insert_arg(tensor_type(tuple(val.shape), val.dtype), len(self.block.args))
            arg.name_hint = _ssa_name(node.name)
            self.inputs.append(InputSpec(node.name, tuple(val.shape), val.dtype))
            self.values[node] = arg
            return
        tensor = self._state_tensor(spec)
        self.values[node] = self.weight_value(spec.target, tensor, _ssa_name(node.name), spec.kind.name)

    def weight_value(self, target: str, tensor: torch.Tensor, hint: str, kind: str = "PARAMETER") -> SSAValue:
        """The `aten.weight` value of the state `target` (added to the store and the block once)."""
        name = self.weights.add(target, tensor)
        self.target_names.setdefault(target, name)
        self.weight_sources.setdefault(name, (kind, target))
        if name not in self.weight_values:
            op = aten.WeightOp(name, tensor_type(tuple(tensor.shape), tensor.dtype))
            op.result.name_hint = hint
            self.block.add_op(op)
            self.weight_values[name] = op.result
        return self.weight_values[name]

    def state_weight(self, target: str, hint: str) -> SSAValue:
        """The weight value of a parameter or buffer of the program by its FQN (FrontendError if it has none)."""
        if target in self.target_names:
            return self.weight_values[self.target_names[target]]
        tensor = self.program.state_dict.get(target)
        if tensor is None:
            tensor = self.program.constants.get(target)
        if not isinstance(tensor, torch.Tensor):
            raise FrontendError(f"the program has no parameter or buffer '{target}'")
        return self.weight_value(target, tensor.detach(), hint)

    def _is_state(self, spec) -> bool:
        return spec.kind == InputKind.BUFFER and spec.target in self.state_targets

    def _state(self, node: torch.fx.Node, spec) -> None:
        tensor = self._state_tensor(spec)
        arg = self.block.insert_arg(tensor_type(tuple(tensor.shape), tensor.dtype), len(self.block.args))
        arg.name_hint = _ssa_name(node.name)
        self.states.append(StateSpec(spec.target, tensor.clone()))
        self.state_nodes[spec.target] = node
        self.values[node] = arg

    def _state_tensor(self, spec) -> torch.Tensor:
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and spec.target in self.program.state_dict:
            return _materialized_if_empty(self.program.state_dict[spec.target].detach())
        if spec.target in self.program.constants:
            value = self.program.constants[spec.target]
            if isinstance(value, torch.Tensor):
                return _materialized_if_empty(value.detach())
        raise FrontendError(f"input '{spec.arg.name}' ({spec.kind.name}) has no tensor value in the program")

    def _call(self, node: torch.fx.Node) -> None:
        if node.target in self.leaves:
            self.values[node] = self.leaves[node.target](self, node)
            return
        if node.target is operator.getitem:
            source, index = node.args
            _refuse_bookkeeping(node, source, index)
            self.values[node] = self.values[source][index]
            return
        if node in self.facts.static:
            self.values[node] = self.facts.static[node]
            return
        if node in self.facts.dropped:
            return
        target = self.rewrites.get(node, node.target)
        cls = _scalar_overload(node, target) or op_class(target)
        groups, properties = self._bind(cls, node)
        try:
            result_types = _result_types(node)
        except UnsupportedTypeError as err:
            raise FrontendError(f"{location_text(node)}: {node.name}: {err}") from None
        op = cls.build_op(groups, properties, result_types, location=_location(node))
        if cls.SIGNATURE.qualname in aten.EXPORT_TYPES_DIFFER:
            op = _kernel_typed(op, node)
        self.block.add_op(op)
        if cls.SIGNATURE.variadic_result:
            for r in op.results:
                r.name_hint = _ssa_name(node.name)
            self.values[node] = list(op.results)
        elif len(op.results) == 1:
            op.results[0].name_hint = _ssa_name(node.name)
            self.values[node] = op.results[0]
        else:
            for r in op.results:
                r.name_hint = _ssa_name(node.name)
            self.values[node] = list(op.results)
        if node in self.rewrites:  # the functional op's result is the mutated value from now on
            for mutated in mutated_chain(node):
                self.values[mutated] = self.values[node]

    def _bind(self, cls: type[aten.AtenOp], node: torch.fx.Node) -> tuple[list[list[SSAValue]], dict[str, Attribute]]:
        """Bind the node's arguments to the schema: positional, then by keyword, else default."""
        sig = cls.SIGNATURE
        positional = self.facts.substitute(list(node.args))
        kwargs = {k: self.facts.substitute(v) for k, v in node.kwargs.items()}
        groups: list[list[SSAValue]] = []
        properties: dict[str, Attribute] = {}
        for i, spec in enumerate(sig.args):
            if i < len(positional) and not spec.kwarg_only:
                value, given = positional[i], True
            elif spec.name in kwargs:
                value, given = kwargs[spec.name], True
            else:
                value, given = spec.default, False
            if spec.kind is ArgKind.DEVICE and value is not None and torch.device(value).type == "meta":
                value = torch.device("cpu")  # a model on the meta device (forge.compile_meta): the host's IR
            if spec.kind.is_tensor:
                groups.append(self._tensor_group(spec, value, properties))
            elif spec.kind is ArgKind.GENERATOR:
                if value is not None:
                    raise FrontendError(f"{location_text(node)}: {node.name}: random generators are not supported")
            elif given and not equals_default(spec, value) and value is not None:
                properties[spec.name] = to_attribute(spec.kind, value)
            elif given and value is None and not spec.has_default:
                raise FrontendError(f"{location_text(node)}: {node.name}: required argument '{spec.name}' is None")
        return groups, properties

    def _tensor_group(self, spec, value: Any, properties: dict[str, Attribute]) -> list[SSAValue]:
        if spec.kind is ArgKind.TENSOR and _is_number(value):
            return [self._number_constant(value)]
        if spec.kind is ArgKind.TENSOR:
            return [self.values[value]]
        if spec.kind is ArgKind.OPT_TENSOR:
            return [] if value is None else [self.values[value]]
        if spec.kind is ArgKind.TENSOR_LIST:
            return [self.values[v] for v in value]
        present = [0 if v is None else 1 for v in value]
        properties[aten.PRESENT_MASK] = to_attribute(ArgKind.INT_LIST, present)
        return [self.values[v] for v in value if v is not None]

    def _number_constant(self, value: bool | int | float) -> SSAValue:
        """A Python number passed for a Tensor argument, as the 0-d tensor torch would wrap it in."""
        dtype = torch.bool if isinstance(value, bool) else torch.int64 if isinstance(value, int) else torch.float32
        op = aten.ConstantOp.from_tensor(torch.tensor(value, dtype=dtype))
        self.block.add_op(op)
        return op.result

    def _finish(self, node: torch.fx.Node) -> ImportedProgram:
        results = flatten(node.args[0])
        if self.states:  # user outputs first, then each state's final value in argument order
            updates = {}
            user = []
            for value, spec in zip(results, self.program.graph_signature.output_specs, strict=True):
                if spec.kind == OutputKind.BUFFER_MUTATION:
                    updates[spec.target] = value
                else:
                    user.append(value)
            # a state written by in-place ops (not functionalized): its value is rebound to the last write
            results = user + [updates.get(s.name, self.state_nodes[s.name]) for s in self.states]
        outputs = [self.values[v] for v in results]
        self.block.add_op(func.ReturnOp(*outputs))
        function = func.FuncOp(
            self.func_name,
            ([a.type for a in self.block.args], [o.type for o in outputs]),
            Region(self.block),
        )
        if self.states:
            function.attributes[STATE_ATTR] = ArrayAttr([StringAttr(s.name) for s in self.states])
        module = ModuleOp([function])
        stats = {"ops": len(self.block.ops) - 1, "weights": len(self.weights)}
        imported = ImportedProgram(module, self.weights, self.inputs, self.states, stats=stats)
        imported.weight_sources = self.weight_sources
        return imported


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def _scalar_overload(node: torch.fx.Node, target: Any) -> type[aten.AtenOp] | None:
    """The overload of the same packet that takes a Scalar where the graph passes a Python number for a
    Tensor argument: `add.Tensor(x, 1.0)` means `add.Scalar(x, 1.0)`, `div.Tensor_mode(x, 2, rounding_mode=
    "floor")` means `div.Scalar_mode(...)`. Every other argument must agree (name, kind, default), so no
    option is dropped on the way (`div.Scalar` would lose the rounding mode). None: keep the node's own
    overload (its numbers become 0-d constants)."""
    cls = op_class(target)
    sig = cls.SIGNATURE
    positional = {s.name: node.args[i] for i, s in enumerate(sig.args) if i < len(node.args)}
    bound = {**positional, **node.kwargs}
    numbers = {s.name for s in sig.tensor_args if s.kind is ArgKind.TENSOR and _is_number(bound.get(s.name))}
    if not numbers:
        return None
    packet = getattr(torch.ops.aten, target._schema.name.split("::")[1], None)
    for overload_name in packet.overloads() if packet is not None else ():
        candidate = op_class(getattr(packet, overload_name))
        if candidate is not None and candidate is not cls and _takes_numbers(candidate.SIGNATURE, sig, numbers):
            return candidate
    return None


def _takes_numbers(candidate: Any, original: Any, numbers: set[str]) -> bool:
    """Whether `candidate` binds the node's arguments as `original` does, with Scalars for `numbers`."""
    if [s.name for s in candidate.args] != [s.name for s in original.args]:
        return False
    for c, o in zip(candidate.args, original.args, strict=True):
        if o.name in numbers:
            if c.kind is not ArgKind.SCALAR:
                return False
        elif (c.kind, c.has_default, c.default) != (o.kind, o.has_default, o.default) or (
            c.kwarg_only and not o.kwarg_only
        ):
            return False
    return True


def _kernel_typed(op: aten.AtenOp, node: torch.fx.Node) -> aten.AtenOp:
    """`op` with the result types torch's kernel gives (aten.EXPORT_TYPES_DIFFER: the export metadata's
    dtypes differ for some operand dtypes); a FrontendError naming the reason when the op is invalid."""
    try:
        op.verify_()
        return op
    except VerifyException:
        pass
    try:
        inferred = op.infer_result_types()
        retyped = type(op).create(
            operands=list(op.operands),
            result_types=inferred,
            properties=dict(op.properties),
            attributes=dict(op.attributes),
            location=op.location,
        )
        retyped.verify_()
    except VerifyException as err:
        raise FrontendError(f"{location_text(node)}: {node.name}: {err}") from None
    op.erase(safe_erase=False)
    return retyped


def _result_types(node: torch.fx.Node) -> list[Attribute]:
    val = node.meta.get("val")
    tensors = flatten(val) if val is not None else []
    return [tensor_type(tuple(int(d) for d in t.shape), t.dtype) for t in tensors if isinstance(t, torch.Tensor)]


_SSA_UNSAFE = re.compile(r"[^A-Za-z0-9_$.]")
_NUMERIC_SUFFIXES = re.compile(r"(_\d+)+$")


def _ssa_name(name: str) -> str:
    """The FX name without its numeric suffixes (`split_1` -> `split`).

    xDSL strips one `_N` from a name hint and numbers values with the same hint in print order
    (`%split`, `%split_1`, ...), which for FX names mostly reproduces FX's own numbering. A hint
    that still ended in `_N` after that (`split_1_0`) could collide with a printer-made name.
    """
    return _NUMERIC_SUFFIXES.sub("", _SSA_UNSAFE.sub("_", name)) or "v"


def _materialized_if_empty(tensor: torch.Tensor) -> torch.Tensor:
    """A zero-element meta tensor as a real one: it has no values to lose or to load. (A model on the meta
    device traced with a KV cache lifts the cache's initial `torch.tensor([])` as a meta constant, which is
    not a checkpoint weight.)"""
    if tensor.device.type == "meta" and tensor.numel() == 0:
        return torch.empty(tensor.shape, dtype=tensor.dtype)
    return tensor


def _refuse_bookkeeping(node: torch.fx.Node, source: torch.fx.Node, index: int) -> None:
    """A used result of aten.BACKWARD_BOOKKEEPING is refused by name: Forge does not compute it."""
    names = aten.BOOKKEEPING_BY_TARGET.get(source.target, {})
    if index in names and node.users:
        raise FrontendError(
            f"{location_text(source)}: {source.name}: result {index} ({names[index]}) of {source.target} is used; "
            "it is bookkeeping for the backward pass, whose shape torch's CPU and meta kernels disagree on, "
            "and Forge computes only result 0 (the bags)"
        )
