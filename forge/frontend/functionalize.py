"""Functionalization: turn the in-place ATen ops torch.export leaves in a graph into functional ones.

torch.export returns training IR, which keeps in-place ops (`clone -> add_.Tensor -> div_.Tensor`);
Forge IR has value semantics. Two paths:

* the cheap path (`inplace_rewrites`, applied by the importer while it builds the IR) imports an
  in-place op whose mutated value nobody else can observe (a value the graph computed, not a graph
  input, not a view nor viewed by another node) as its functional overload (`add_.Tensor` ->
  `add.Tensor`) and rebinds every later use of the mutated value; the torch program is not touched;
* anything with real aliasing (a mutation through a view: `y[0].mul_(3)`) goes through torch's
  own functionalization (`torch_functionalize`: `run_decompositions({})`), only then, and only once;
* a mutation of a user input, parameter or buffer raises InputMutationError naming the input
  and where it is mutated: a Forge function cannot change its caller's tensors, and dropping
  the write would give silently wrong results on the next call;
* except, with `allow_buffers=True` (the importer's `state=True`, used by `forge.generate`), a
  mutated *buffer*: torch's functionalization turns its writes into a BUFFER_MUTATION output and
  the importer makes the buffer a persistent state of the function. User inputs stay refused.
"""

from __future__ import annotations

import operator
from functools import cache
from typing import Any

import torch
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

from forge.frontend.decompose import run_torch_decompositions
from forge.frontend.import_errors import InputMutationError

METADATA_ONLY = frozenset({torch.ops.aten.detach_.default})
"""In-place ops that change no values (`detach_` only drops autograd history): always imported as
their functional twin, whatever they are applied to."""


@cache
def is_inplace(target: Any) -> bool:
    """Whether `target` is an ATen op that writes into its first argument and returns it."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.arguments or not schema.returns:
        return False
    first = schema.arguments[0].alias_info
    if first is None or not first.is_write or any(a.kwarg_only and a.name == "out" for a in schema.arguments):
        return False
    return schema.name.endswith("_") or torch.Tag.inplace in target.tags


def functional_overload(target: Any) -> Any | None:
    """The functional twin of an in-place overload (`add_.Tensor` -> `add.Tensor`), if torch has one."""
    packet = target._schema.name.split("::")[1].removesuffix("_")
    candidate = getattr(getattr(torch.ops.aten, packet, None), target._overloadname, None)
    if candidate is None or candidate._schema.is_mutable:
        return None
    return candidate


def _node_name(node: torch.fx.Node) -> str:
    return f"node {node.name}"


def _is_view(node: torch.fx.Node) -> bool:
    """Whether the node's value may share storage with one of its inputs (a view or alias)."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return _is_view(node.args[0])
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return False
    return any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


def _mutated_root(node: torch.fx.Node) -> torch.fx.Node:
    """The value an in-place op writes into, looking through earlier in-place results."""
    value = node.args[0]
    while isinstance(value, torch.fx.Node) and value.op == "call_function" and is_inplace(value.target):
        value = value.args[0]
    return value


def _is_private(value: torch.fx.Node) -> bool:
    """Whether a mutation of `value` can only be seen through `value` itself (no aliases)."""
    if value.op != "call_function" or _is_view(value):
        return False
    return not any(_is_view(user) for user in value.users)


def _input_names(program: ExportedProgram) -> dict[str, tuple[str, str]]:
    """Placeholder name -> (kind, user-facing name) for every graph input."""
    names = {}
    for spec in program.graph_signature.input_specs:
        kind = {InputKind.USER_INPUT: "user input", InputKind.BUFFER: "buffer", InputKind.PARAMETER: "parameter"}.get(
            spec.kind, spec.kind.name.lower()
        )
        names[spec.arg.name] = (kind, spec.target or spec.arg.name)
    return names


def _check_no_input_mutation(
    program: ExportedProgram, where, original: ExportedProgram | None = None, allow_buffers: bool = False
) -> None:
    inputs = _input_names(program)
    for node in program.graph.nodes:
        if node.op == "call_function" and is_inplace(node.target) and node.target not in METADATA_ONLY:
            root = _mutated_root(node)
            if isinstance(root, torch.fx.Node) and root.op == "placeholder":
                kind, name = inputs.get(root.name, ("input", root.name))
                if allow_buffers and kind == "buffer":
                    continue
                raise InputMutationError(
                    f"{where(node)}: {node.name}: {node.target} mutates {kind} '{name}' in place; Forge "
                    "functions cannot change the tensors they are given (clone it first)"
                )
    signature = program.graph_signature
    mutated = {**signature.user_inputs_to_mutate, **({} if allow_buffers else signature.buffers_to_mutate)}
    if mutated:
        names = ", ".join(f"'{n}'" for n in mutated.values())
        writer = _writer(original or program, set(mutated.values()))
        where_text = f"{where(writer)}: {writer.name}: {writer.target}" if writer is not None else "the program"
        raise InputMutationError(
            f"{where_text} writes into {names} in place; Forge functions cannot change the tensors "
            "they are given (clone them first)"
        )


def _writer(program: ExportedProgram, targets: set[str]) -> torch.fx.Node | None:
    """The first node of `program` that writes into one of the named inputs (directly, through
    earlier in-place results, or through views of it)."""
    placeholders = {
        spec.arg.name for spec in program.graph_signature.input_specs if (spec.target or spec.arg.name) in targets
    }
    for node in program.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or not schema.is_mutable:
            continue
        bound = [*zip(schema.arguments, node.args, strict=False)] + [
            (a, node.kwargs[a.name]) for a in schema.arguments if a.name in node.kwargs
        ]
        for arg, value in bound:
            if arg.alias_info is not None and arg.alias_info.is_write and _base(value) in placeholders:
                return node
    return None


def _base(value: Any) -> str | None:
    """The placeholder name a value aliases (through views and in-place results), if any."""
    while isinstance(value, torch.fx.Node) and value.op == "call_function" and value.args:
        if not (_is_view(value) or is_inplace(value.target)):
            return None
        value = value.args[0]
    return value.name if isinstance(value, torch.fx.Node) and value.op == "placeholder" else None


def inplace_rewrites(
    program: ExportedProgram, where=_node_name, original: ExportedProgram | None = None, allow_buffers: bool = False
) -> dict[torch.fx.Node, Any] | None:
    """In-place node -> its functional overload, for every in-place op of the graph, when all of them
    are private (the importer then builds the functional op and rebinds the mutated value); None
    when some mutation goes through an alias (torch's functionalization must run first).
    InputMutationError when an input, parameter or buffer is mutated (`original`: the program before
    torch's passes ran, where the error finds the op that writes; `allow_buffers`: buffer
    mutations are states, see the module docstring)."""
    _check_no_input_mutation(program, where, original, allow_buffers)
    rewrites = {}
    for node in program.graph.nodes:
        if node.op != "call_function" or not is_inplace(node.target):
            continue
        root, functional = _mutated_root(node), functional_overload(node.target)
        if node.target in METADATA_ONLY:
            rewrites[node] = functional
            continue
        private = isinstance(root, torch.fx.Node) and (
            _is_private(root) or (allow_buffers and _is_private_buffer(program, root))
        )
        if functional is None or not private:
            return None
        rewrites[node] = functional
    return rewrites


def _is_private_buffer(program: ExportedProgram, value: torch.fx.Node) -> bool:
    """A buffer placeholder no view reads (`allow_buffers`: its in-place writes become a state's
    functional updates, rebound like a private value's)."""
    if value.op != "placeholder" or _input_names(program).get(value.name, ("",))[0] != "buffer":
        return False
    return not any(_is_view(user) for user in value.users)


def buffer_writes(program: ExportedProgram) -> list[str]:
    """The buffer placeholders that in-place ops write into, in graph order (their targets)."""
    names = _input_names(program)
    found: list[str] = []
    for node in program.graph.nodes:
        if node.op == "call_function" and is_inplace(node.target) and node.target not in METADATA_ONLY:
            root = _mutated_root(node)
            if isinstance(root, torch.fx.Node) and root.op == "placeholder":
                kind, target = names.get(root.name, ("", ""))
                if kind == "buffer" and target not in found:
                    found.append(target)
    return found


def torch_functionalize(program: ExportedProgram, where=_node_name, allow_buffers: bool = False) -> ExportedProgram:
    """torch's own functionalization (views and mutations through them become `*_scatter` ops)."""
    functional = run_torch_decompositions(program, {}, "torch's functionalization failed on this program")
    _check_no_input_mutation(functional, where, original=program, allow_buffers=allow_buffers)
    return functional


def mutated_chain(node: torch.fx.Node) -> list[torch.fx.Node]:
    """The values an in-place op's write rebinds: its argument, and through earlier in-place results,
    the value they all mutate (`add_ -> div_` on `clone`: [add_, clone])."""
    chain = []
    value = node.args[0]
    while isinstance(value, torch.fx.Node):
        chain.append(value)
        if value.op != "call_function" or not is_inplace(value.target):
            break
        value = value.args[0]
    return chain
