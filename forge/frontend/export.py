"""Export a model as torch.export does, and remember how it is called and what it returns.

`export_model(model, args, kwargs)` runs `torch.export.export(model, args, kwargs)` under `no_grad` and
returns the ExportedProgram with its `CallSignature`:
- `in_spec` / `out_spec`: the TreeSpecs of the program's root call signature (`module_call_graph[0]`,
  the same as `call_spec`): how `(args, kwargs)` flatten into the graph's user inputs, and how its user
  outputs rebuild the model's own result (tensor, tuple, dict, a `transformers` `ModelOutput`, a KV cache);
- `inputs`: one `InputLeaf` per flattened input, in graph order: its name (the forward's parameter, with a
  path for nested values: `cache.key_cache[0]`), positional or keyword, and its shape and dtype, or the
  constant torch.export specialized (`use_cache=False`);
- `flatten(args, kwargs)`: a call checked against the recorded inputs (a missing or unexpected keyword, a
  shape or dtype that differs: a `CallError` naming the argument) -> the tensors the graph takes;
- `unflatten(outputs)`: the graph's outputs in the model's structure (the same keys and class).

`transformers` models: `ModelOutput` classes are pytree nodes already (transformers registers every
subclass), and the default `use_cache=True` forward returns a KV cache (`DynamicCache`, an
`EncoderDecoderCache` for seq2seq); `register_cache_types` makes the cache classes pytree nodes with
transformers' own export helpers (`integrations.executorch` for DynamicCache, `exporters.exporter_dynamo`
for the rest), so the model exports as it comes and its cache's key/value tensors are outputs,
returned as the same cache class.

`cast_policy(model, args, kwargs, dtype)`: a bf16/f16 model (numpy, and so the runtime API, cannot hold
bfloat16) is exported from a float32 copy with float32 inputs; the `CastPolicy` casts a call's inputs
up and the float outputs back to the model's dtype, and is what the report's `cast_policy` says.

A torch.export failure the call caused (a tensor passed positionally onto a cache parameter, a keyword
the forward does not take, a result type torch.export cannot return) is an `ExportError` naming the
argument and what to do; anything else is an `ExportError` with torch's message on one line.
"""

from __future__ import annotations

import copy
import difflib
import importlib
import inspect
import json
import re
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch.export.graph_signature import ConstantArgument, InputKind, OutputKind

from forge.frontend.import_errors import FrontendError
from forge.frontend.node_locations import error_location, recorded_model_frames
from forge.stage_clock import charged

__all__ = [
    "CallError",
    "CallSignature",
    "CastPolicy",
    "ExportError",
    "InputLeaf",
    "describe_export_failure",
    "cast_policy",
    "export_model",
    "export_model_around",
    "register_cache_types",
    "static_experts",
]

POSITIONAL, KEYWORD = "positional", "keyword"
_PLAIN = (bool, int, float, str, type(None))
_CACHE_REGISTERED: set[type] = set()  # model classes whose module's caches are registered
_CACHE_PARAMETER = re.compile(r"(^|_)(past|cache|past_key_values?|layer_past|caches?)($|_)")


class ExportError(FrontendError):
    """torch.export could not trace the model on these inputs (the message names the argument if it can)."""


class CallError(ValueError):
    """A call of a compiled model that does not match the inputs it was compiled for."""


@dataclass(frozen=True)
class InputLeaf:
    """One flattened input: a tensor (shape, dtype) or a constant torch.export specialized (`value`)."""

    name: str
    kind: str  # POSITIONAL or KEYWORD
    shape: tuple[int, ...] | None = None
    dtype: torch.dtype | None = None
    value: Any = None

    @property
    def is_tensor(self) -> bool:
        return self.dtype is not None

    def describe(self) -> str:
        what = f"{str(self.dtype).removeprefix('torch.')} {list(self.shape)}" if self.is_tensor else repr(self.value)
        return f"{self.name}: {what} ({self.kind})"

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.is_tensor:
            entry.update(shape=list(self.shape), dtype=str(self.dtype))
        else:
            plain = isinstance(self.value, _PLAIN)
            entry["value"] = self.value if plain else repr(self.value)
        return entry

    @staticmethod
    def from_json(entry: dict[str, Any]) -> InputLeaf:
        if "dtype" in entry:
            dtype = getattr(torch, str(entry["dtype"]).removeprefix("torch."), None)
            if not isinstance(dtype, torch.dtype):
                raise ValueError(f"unknown dtype {entry['dtype']!r}")
            return InputLeaf(str(entry["name"]), str(entry["kind"]), tuple(int(d) for d in entry["shape"]), dtype)
        return InputLeaf(str(entry["name"]), str(entry["kind"]), value=entry.get("value"))


@dataclass(frozen=True)
class CallSignature:
    """How a compiled model is called and what it returns (see the module docstring)."""

    in_spec: pytree.TreeSpec
    out_spec: pytree.TreeSpec
    inputs: tuple[InputLeaf, ...]
    model_name: str = "model"
    defaults: dict[str, Any] = field(default_factory=dict)
    """Keywords the compile added to the call (`use_cache=False`): a call may leave them out."""

    # --- calls ---------------------------------------------------------------------------------

    @property
    def keywords(self) -> list[str]:
        return list(self.in_spec.child(1).context)

    @property
    def bound_keywords(self) -> dict[str, Any]:
        """Keywords the compile saw as constants only (`flag=True`, `use_cache=False`): bound to those
        values like `functools.partial`, so a call may leave them out (another value is a CallError)."""
        _, kw_spec = self.in_spec.children()
        bound = {}
        for i, key in enumerate(kw_spec.context):
            leaves = [leaf for leaf in self.inputs if re.split(r"[.\[]", leaf.name, maxsplit=1)[0] == key]
            if all(not leaf.is_tensor and isinstance(leaf.value, _PLAIN) for leaf in leaves):
                bound[key] = pytree.tree_unflatten([leaf.value for leaf in leaves], kw_spec.child(i))
        return bound

    def flatten(self, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> list[torch.Tensor]:
        """The tensors the compiled graph takes for this call, after checking it matches the compiled one."""
        args, kwargs = tuple(args), {**self.bound_keywords, **self.defaults, **(kwargs or {})}
        self._check_arity(args, kwargs)
        ordered = {key: kwargs[key] for key in self.keywords}
        values, spec = pytree.tree_flatten((args, ordered))
        if spec != self.in_spec:
            raise CallError(self._structure_mismatch(args, ordered))
        tensors = []
        for leaf, value in zip(self.inputs, values, strict=True):
            _check_leaf(leaf, value)
            if leaf.is_tensor:
                tensors.append(value)
        return tensors

    def unflatten(self, outputs: list[Any]) -> Any:
        """The graph's user outputs in the model's own structure."""
        return pytree.tree_unflatten(list(outputs), self.out_spec)

    def _check_arity(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        arg_specs = self.in_spec.child(0)
        expected = arg_specs.num_children
        if len(args) != expected:
            names = ", ".join(_top_names(self.inputs, POSITIONAL)) or "none"
            raise CallError(
                f"{self.model_name} was compiled with {expected} positional argument(s) ({names}), got {len(args)}"
                + ("; pass the others by keyword, as at compile time" if len(args) > expected else "")
            )
        missing = [k for k in self.keywords if k not in kwargs]
        unexpected = [k for k in kwargs if k not in self.keywords]
        if unexpected:
            took = ", ".join(self.keywords) or "no keyword arguments"
            raise CallError(
                f"{self.model_name} got unexpected keyword argument(s) {', '.join(map(repr, unexpected))}; "
                f"it was compiled with {took} (recompile with kwargs= to add one)"
            )
        if missing:
            described = "; ".join(_describe_top(self.inputs, k) for k in missing)
            raise CallError(f"{self.model_name} is missing keyword argument(s) {described}")

    def _structure_mismatch(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
        arg_spec, kw_spec = self.in_spec.children()
        tops = _top_names(self.inputs, POSITIONAL, all_positions=arg_spec.num_children)
        pairs = [(tops[i], a, arg_spec.child(i)) for i, a in enumerate(args)]
        pairs += [(k, kwargs[k], kw_spec.child(i)) for i, k in enumerate(kw_spec.context)]
        for name, value, expected in pairs:
            got = pytree.tree_structure(value)
            if got != expected:
                return f"argument '{name}' has structure {_spec_text(got)}, compiled for {_spec_text(expected)}"
        return "the arguments' structure differs from the compiled one"

    # --- report and storage ------------------------------------------------------------------------

    def describe(self) -> list[dict[str, Any]]:
        """The report's `inputs`: name, positional or keyword, shape and dtype (or the constant);
        `added`: a default of the call the compile added (`use_cache=False`)."""
        return [{**leaf.to_json(), **({"added": True} if leaf.name in self.defaults else {})} for leaf in self.inputs]

    def output_structure(self) -> str:
        return _spec_text(self.out_spec)

    def retyped(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> CallSignature:
        """The same signature with the tensor dtypes of this call (the user's, before a compile-time cast)."""
        kwargs = {**self.bound_keywords, **self.defaults, **kwargs}
        values = pytree.tree_leaves((tuple(args), {k: kwargs[k] for k in self.keywords}))
        leaves = tuple(
            replace(leaf, dtype=value.dtype) if leaf.is_tensor and isinstance(value, torch.Tensor) else leaf
            for leaf, value in zip(self.inputs, values, strict=True)
        )
        return replace(self, inputs=leaves)

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model_name,
            "in_spec": pytree.treespec_dumps(self.in_spec),
            "out_spec": _dumps_or_none(self.out_spec),
            "outputs": self.out_spec.num_leaves,
            "inputs": self.describe(),
            "defaults": self.defaults,
        }

    @staticmethod
    def from_json(entry: dict[str, Any]) -> tuple[CallSignature, list[str]]:
        """The signature saved by `to_json`, and notes on what could not be rebuilt (an output class no
        longer importable comes back as a dict with the same keys; an unknown container as a tuple)."""
        notes: list[str] = []
        in_spec = pytree.treespec_loads(entry["in_spec"])
        out_text = entry.get("out_spec")
        if out_text:
            out_spec = _loads_leniently(out_text, notes)
        else:  # a node type without a serialized name: the outputs come back flat
            out_spec = pytree.tree_structure(tuple(range(int(entry["outputs"]))))
            notes.append("the output structure was not serializable: returned as a tuple")
        inputs = tuple(InputLeaf.from_json(e) for e in entry["inputs"])
        defaults = dict(entry.get("defaults", {}))
        return CallSignature(in_spec, out_spec, inputs, str(entry.get("model", "model")), defaults), notes


# --- the cast policy ----------------------------------------------------------------------------------


REDUCED_FLOATS = (torch.bfloat16, torch.float16)


@dataclass(frozen=True)
class CastPolicy:
    """How a model whose floats are not the compute dtype was compiled: its floating weights and float
    inputs cast to `compute_dtype` (float32 unless `dtype=` says otherwise), its float outputs cast
    back to `model_dtype`. Reduced-precision *compute* is `precision=` (forge.precision), not this."""

    model_dtype: torch.dtype
    compute_dtype: torch.dtype
    weights: int = 0
    inputs: tuple[str, ...] = ()
    output_dtypes: tuple[torch.dtype | None, ...] | None = None
    """The dtype of each flat output of the model as it is (None: not a tensor), when known: `restore`
    casts each float output back to its own dtype, so a bf16 model's float32 logits (or a float32
    result beside f16 ones) stay float32. Unknown (None): every float output goes back to `model_dtype`."""

    def apply(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """(args, kwargs) with their floating tensors in the compute dtype."""
        return pytree.tree_map(self._up, (tuple(args), dict(kwargs)))

    def _up(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != self.compute_dtype:
            return value.to(self.compute_dtype)
        return value

    def restore(self, outputs: list[Any]) -> list[Any]:
        """Float outputs back in the dtype the model gives them (`output_dtypes`), else the model's dtype."""
        if self.output_dtypes is not None and len(self.output_dtypes) == len(outputs):
            return [
                o.to(d)
                if isinstance(o, torch.Tensor) and d is not None and o.is_floating_point() and o.dtype != d
                else o
                for o, d in zip(outputs, self.output_dtypes, strict=True)
            ]
        return [
            o.to(self.model_dtype) if isinstance(o, torch.Tensor) and o.dtype == self.compute_dtype else o
            for o in outputs
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "model_dtype": _dtype_name(self.model_dtype),
            "compute_dtype": _dtype_name(self.compute_dtype),
            "weights_cast": self.weights,
            "inputs_cast": list(self.inputs),
            "outputs_cast_to": _dtype_name(self.model_dtype),
            **(
                {"output_dtypes": [d and _dtype_name(d) for d in self.output_dtypes]}
                if self.output_dtypes is not None
                else {}
            ),
        }

    def note(self) -> str:
        """The report's one-line note on the cast."""
        what = f"{self.weights} weights" + (f" and inputs {', '.join(self.inputs)}" if self.inputs else "")
        why = " (numpy, and so the runtime API, cannot hold bfloat16)" if self.model_dtype == torch.bfloat16 else ""
        return (
            f"{_dtype_name(self.model_dtype)} model compiled in {_dtype_name(self.compute_dtype)}{why}: {what} cast to "
            f"{_dtype_name(self.compute_dtype)}, float outputs cast back to {_dtype_name(self.model_dtype)}"
        )

    @staticmethod
    def from_json(entry: dict[str, Any]) -> CastPolicy:
        return CastPolicy(
            _dtype_named(entry["model_dtype"]),
            _dtype_named(entry["compute_dtype"]),
            int(entry.get("weights_cast", 0)),
            tuple(entry.get("inputs_cast", ())),
            _output_dtypes_named(entry.get("output_dtypes")),
        )


def _output_dtypes_named(names: list[str | None] | None) -> tuple[torch.dtype | None, ...] | None:
    return None if names is None else tuple(n and _dtype_named(n) for n in names)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _dtype_named(name: str) -> torch.dtype:
    dtype = getattr(torch, str(name).removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r}")
    return dtype


def cast_policy(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: torch.dtype
) -> tuple[torch.nn.Module, CastPolicy | None]:
    """The model to export and its cast policy: floating weights and inputs that are not `dtype` are
    cast on a copy, when `dtype` is not float32 or they are bf16/f16 (float64 stays, as torch runs it)."""
    model = model.eval()
    tensors = [t for t in (*model.parameters(), *model.buffers()) if t.is_floating_point()]
    leaves = [(n, t) for n, t in _named_leaves(args, kwargs) if isinstance(t, torch.Tensor) and t.is_floating_point()]

    def needs_cast(t: torch.Tensor) -> bool:
        return t.dtype != dtype and (dtype != torch.float32 or t.dtype in REDUCED_FLOATS)

    cast_weights = sum(1 for t in tensors if needs_cast(t))
    cast_inputs = tuple(n for n, t in leaves if needs_cast(t))
    if not cast_weights and not cast_inputs:
        return model, None
    counts = Counter(t.dtype for t in tensors) or Counter(t.dtype for _, t in leaves)
    model_dtype = counts.most_common(1)[0][0]
    copied = copy.deepcopy(model).to(dtype) if cast_weights else model
    return copied, CastPolicy(model_dtype, dtype, cast_weights, cast_inputs, _output_dtypes(model, args, kwargs))


def _output_dtypes(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple | None:
    """The dtype of each flat output of `model` as it is (before any cast), from one run on fake tensors
    (shapes and dtypes only, no arithmetic); None when the model cannot run so, e.g. on meta weights
    (its float outputs are then cast back to the model's dtype, as before)."""
    from torch._subclasses.fake_tensor import FakeTensorMode  # lazy: only a cast model needs it

    if _is_transformers_model(model):
        register_cache_types(model)  # its cache arguments are copied as pytrees, never run on in place
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode, torch.no_grad():
            fake_args, fake_kwargs = pytree.tree_map_only(torch.Tensor, mode.from_tensor, (tuple(args), dict(kwargs)))
            with _kernel_dtypes():
                out = model(*fake_args, **fake_kwargs)
    except Exception:  # fake tensors are an optimization of knowing the dtypes; the old rule still holds
        return None
    return tuple(x.dtype if isinstance(x, torch.Tensor) else None for x in pytree.tree_leaves(out))


def _kernel_dtypes_mode() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes  # lazy, as above

    from dialects import aten
    from dialects.aten_schema import resolve_overload

    targets = frozenset(resolve_overload(name) for name in aten.EXPORT_TYPES_DIFFER)

    class KernelDtypes(TorchDispatchMode):
        """Fake results retyped as torch's CPU kernel types them, for the overloads whose fake tensors
        are typed otherwise (aten.EXPORT_TYPES_DIFFER: a half batch norm's float32 statistics, ldexp
        of an integer by a half exponent, ...): the kernel runs on zeros of the operands' types."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if func not in targets:
                return out
            tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            if sum(t.numel() for t in tensors) > _KERNEL_PROBE_LIMIT:
                return out
            with _disable_current_modes():
                zeros = pytree.tree_map_only(
                    torch.Tensor, lambda t: torch.zeros(t.shape, dtype=t.dtype), (args, kwargs)
                )
                real = pytree.tree_leaves(func(*zeros[0], **zeros[1]))
            leaves, spec = pytree.tree_flatten(out)
            if len(leaves) != len(real):
                return out
            retyped = [
                x.to(r.dtype)
                if isinstance(x, torch.Tensor) and isinstance(r, torch.Tensor) and x.dtype != r.dtype
                else x
                for x, r in zip(leaves, real, strict=True)
            ]
            return pytree.tree_unflatten(retyped, spec)

    return KernelDtypes


_KERNEL_PROBE_LIMIT = 1 << 22
"""Operand elements beyond which `_kernel_dtypes` keeps the fake types (no zeros that large)."""


def _kernel_dtypes() -> Any:
    """A dispatch mode (`KernelDtypes` above), its class built on first use: torch's dispatch modes
    import lazily."""
    return _kernel_dtypes_mode()()


def _named_leaves(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    paths, _ = pytree.tree_flatten_with_path((args, kwargs))
    return [(pytree.keystr(path[1:]).lstrip("."), value) for path, value in paths]


# --- export ------------------------------------------------------------------------------------------


def export_model(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
) -> tuple[torch.export.ExportedProgram, CallSignature, float]:
    """torch.export the model on (args, kwargs) under no_grad: the program, its call signature, and
    the export time in ms."""
    program, signature, export_ms, _ = _export_model(model, args, kwargs)
    return program, signature, export_ms


def export_model_around(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any] | None, around: Any
) -> tuple[torch.export.ExportedProgram, CallSignature, float, Any]:
    """`export_model` with torch.export's call run by `around(model, export) -> (program, extra)`, e.g.
    forge/frontend/blocks.py's `export_reusing_blocks` (block reuse): (program, signature, ms, extra). An
    exception `around` raises by design (`BlockReuseUnavailable`) passes through; torch.export's become an
    ExportError as in `export_model`."""
    return _export_model(model, args, kwargs, around=around)


def _export_model(model, args, kwargs, *, around=None):
    with charged("export_ms"):  # the running compile's export stage
        return _export_in_stage(model, args, kwargs, around)


def _export_in_stage(model, args, kwargs, around):
    args, kwargs = tuple(args), dict(kwargs or {})
    parameters = _forward_parameters(model)
    _check_binding(model, parameters, args, kwargs)
    if _is_transformers_model(model):
        register_cache_types(model)
    start = time.perf_counter()
    extra = None
    try:
        with torch.no_grad(), recorded_model_frames(), static_experts(model):
            if around is not None:
                program, extra = around(model, lambda: torch.export.export(model, args, kwargs))
            else:
                program = torch.export.export(model, args, kwargs)
    except Exception as err:  # torch.export raises assorted types; each becomes one clear ExportError
        if around is not None and type(err).__name__ == "BlockReuseUnavailable":
            raise
        raise ExportError(describe_export_failure(model, err, parameters)) from err
    export_ms = (time.perf_counter() - start) * 1e3
    signature = call_signature(program, model, parameters, args, kwargs)
    _check_absorbed_keywords(program, signature, model, parameters)
    return program, signature, export_ms, extra


def call_signature(
    program: torch.export.ExportedProgram,
    model: torch.nn.Module,
    parameters: list[inspect.Parameter] | None,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> CallSignature:
    """The program's root call signature with the names and kinds of its flattened inputs."""
    root = program.module_call_graph[0].signature
    in_spec, out_spec = (root.in_spec, root.out_spec) if root is not None else program.call_spec
    user = [s for s in program.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    ordered = {key: kwargs[key] for key in in_spec.child(1).context}
    paths, spec = pytree.tree_flatten_with_path((args, ordered))
    if spec != in_spec or len(paths) != len(user):
        raise ExportError(f"the exported program's inputs ({len(user)}) do not match the call's ({len(paths)})")
    names = _positional_names(parameters or [], len(args))
    leaves = []
    for (path, value), spec_ in zip(paths, user, strict=True):
        name, kind = _leaf_name(path, names)
        if isinstance(spec_.arg, ConstantArgument):
            leaves.append(InputLeaf(name, kind, value=spec_.arg.value))
        else:
            leaves.append(InputLeaf(name, kind, tuple(value.shape), value.dtype))
    outputs = [s for s in program.graph_signature.output_specs if s.kind == OutputKind.USER_OUTPUT]
    if any(isinstance(s.arg, ConstantArgument) for s in outputs):
        raise ExportError(f"{type(model).__name__} returns a non-tensor value; Forge compiles tensor outputs only")
    return CallSignature(in_spec, out_spec, tuple(leaves), type(model).__name__)


def register_cache_types(model: torch.nn.Module | None = None) -> None:
    """Make transformers' KV caches pytree nodes with transformers' own torch.export helpers:
    DynamicCache as its executorch integration does (key_cache/value_cache lists), once; then the
    other Cache classes and `model`'s module's own *Cache classes (EncoderDecoderCache, ...) as its
    exporter does (`exporters.exporter_dynamo.register_cache_pytrees_for_model`)."""
    try:
        from transformers.cache_utils import DynamicCache  # lazy: only for transformers models
        from transformers.integrations.executorch import register_dynamic_cache_export_support
    except ImportError:  # an older or newer transformers: the default forward's error says what to do
        return
    if DynamicCache not in pytree.SUPPORTED_NODES:
        register_dynamic_cache_export_support()
    if model is None or type(model) in _CACHE_REGISTERED:
        return
    try:
        from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model
    except ImportError:  # a transformers without it: such caches keep their clear CompileError
        return
    register_cache_pytrees_for_model(model)
    _CACHE_REGISTERED.add(type(model))


STATIC_EXPERTS = "batched_mm"
"""The transformers MoE routing torch.export traces to a static graph Forge imports: each token's picked experts'
weights gathered and applied with batched matmuls (forge/transforms/dense_experts.py computes them densely). The
default `grouped_mm` is a custom op (`transformers::grouped_mm_fallback`) no backend runs, and `eager` routes with
data-dependent shapes."""


@contextmanager
def static_experts(model: torch.nn.Module) -> Iterator[None]:
    """While inside, the transformers models in `model` whose MoE layers use another experts implementation use
    `STATIC_EXPERTS` (the same products, another kernel: transformers' public `set_experts_implementation`,
    restored after). A model without experts, or whose implementation cannot be switched, is left as it is."""
    switched = []
    for module in model.modules():
        get, put = (getattr(module, n, None) for n in ("get_experts_implementation", "set_experts_implementation"))
        if not (callable(get) and callable(put)):
            continue
        before = get()
        if all(v in (None, STATIC_EXPERTS) for v in before.values()):
            continue
        put(STATIC_EXPERTS)
        if get() != before:  # a model without experts keeps its setting (the call does nothing)
            switched.append((put, before))
    try:
        yield
    finally:
        for put, before in reversed(switched):
            put(before)


# --- errors at export time -----------------------------------------------------------------------------


def _forward_parameters(model: torch.nn.Module) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):  # a builtin or C++ forward
        return None


def _signature_text(model: torch.nn.Module, parameters: list[inspect.Parameter]) -> str:
    shown = ", ".join(p.name for p in parameters[:6]) + (", ..." if len(parameters) > 6 else "")
    return f"{type(model).__name__}.forward({shown})"


def _check_binding(
    model: torch.nn.Module, parameters: list[inspect.Parameter] | None, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """The call binds to the forward's parameters (else the error torch.export would give, with the names)."""
    if parameters is None:
        return
    try:
        inspect.Signature(parameters).bind(*args, **kwargs)
    except TypeError as err:
        raise ExportError(f"example inputs do not fit {_signature_text(model, parameters)}: {err}") from None
    landed = _tensor_on_cache_parameter(parameters, args)
    if landed is not None:
        raise ExportError(_cache_parameter_message(model, parameters, *landed))


def _check_absorbed_keywords(program, signature: CallSignature, model, parameters) -> None:
    """A keyword the forward does not name (taken by its **kwargs) that the graph never reads is a
    misspelt input, not an input: without this its tensor would be silently ignored."""
    if parameters is None:
        return
    named = {p.name for p in parameters if p.kind != p.VAR_KEYWORD}
    users = {n.name: len(n.users) for n in program.graph.nodes if n.op == "placeholder"}
    user_specs = [s for s in program.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    for leaf, spec in zip(signature.inputs, user_specs, strict=True):
        top = re.split(r"[.\[]", leaf.name, maxsplit=1)[0]
        if leaf.kind == KEYWORD and leaf.is_tensor and top not in named and not users.get(spec.arg.name):
            close = sorted((n for n in named if top in n), key=len)
            close = close or difflib.get_close_matches(top, sorted(named), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ExportError(
                f"unexpected keyword argument '{top}'{hint}: {_signature_text(model, parameters)} has no such "
                "parameter and the model never reads it (its **kwargs took it)"
            )


def _tensor_on_cache_parameter(parameters: list[inspect.Parameter], args: tuple[Any, ...]):
    """(position, parameter) of a positional tensor that lands on a KV-cache parameter, if one does."""
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, (value, param) in enumerate(zip(args, positional, strict=False)):
        if i > 0 and isinstance(value, torch.Tensor) and _CACHE_PARAMETER.search(param.name):
            return i, param
    return None


def _cache_parameter_message(model, parameters, index: int, param: inspect.Parameter) -> str:
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    following = [n for n in positional[index + 1 :] if "mask" in n] or positional[index + 1 : index + 2]
    hint = f" (did you mean {following[0]}?)" if following else ""
    before = "(" + "".join(f"{n}, " for n in positional[:index]).rstrip(" ") + ")"
    return (
        f"positional argument {index + 1} (a tensor) lands on parameter '{param.name}' of "
        f"{_signature_text(model, parameters)}, which takes a KV cache, not a tensor{hint}; pass it by keyword: "
        f"forge.compile(model, {before}, kwargs={{'{following[0] if following else 'name'}': tensor}})"
    )


def describe_export_failure(model: Any, err: Exception, parameters: Any = None) -> str:
    """What an ExportError says for `err` raised by torch.export of `model`: the model's class, where in its
    code (`error_location`) and the error, with a hint for the failures a user can fix (a cache object returned,
    a tensor bound to a non-tensor parameter)."""
    text = _one_line(str(err))
    unknown = re.search(r"Found <class '([\w.]+)'> in output", text)
    if unknown:
        kind = unknown.group(1)
        cache = "cache" in kind.lower()
        return f"{type(model).__name__} returns a {kind.rsplit('.', 1)[-1]}, which torch.export cannot return" + (
            "; compile the cache-free forward: kwargs={'use_cache': False}"
            if cache
            else "; register it as a pytree node (torch.utils._pytree.register_pytree_node) or return tensors"
        )
    where = error_location(err)
    at = f" at {where}" if where is not None else ""
    failed = f"torch.export of {type(model).__name__} failed{at}: {type(err).__name__}: {text}"
    if parameters is not None and isinstance(err, AttributeError) and "FakeTensor" in text:
        hint = "a tensor reached a parameter that takes another kind of value: pass the inputs by keyword, kwargs="
        return f"{failed} ({hint})"
    return failed


def _one_line(text: str, limit: int = 400) -> str:
    first = " ".join(text.strip().split("\n\n")[0].split())
    return first if len(first) <= limit else first[: limit - 3] + "..."


# --- names ---------------------------------------------------------------------------------------------


def _positional_names(parameters: list[inspect.Parameter], count: int) -> list[str]:
    """The names `count` positional arguments bind to: parameters in order, then `*args[i]`."""
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), "args")
    return names[:count] + [f"{star}[{i}]" for i in range(count - len(names))]


def _leaf_name(path: tuple[Any, ...], names: list[str]) -> tuple[str, str]:
    """(display name, kind) of a flattened input from its key path in (args, kwargs)."""
    top, rest = path[1], path[2:]
    if path[0].idx == 0:
        index = top.idx
        base, kind = (names[index] if index < len(names) else f"args[{index}]"), POSITIONAL
    else:
        base, kind = str(top.key), KEYWORD
    return base + "".join(_key_text(k) for k in rest), kind


def _key_text(key: Any) -> str:
    if isinstance(key, pytree.SequenceKey):
        return f"[{key.idx}]"
    if isinstance(key, pytree.MappingKey):
        return f".{key.key}"
    if isinstance(key, pytree.GetAttrKey):
        return f".{key.name}"
    return str(key)


def _top_names(inputs: tuple[InputLeaf, ...], kind: str, all_positions: int | None = None) -> list[str]:
    seen: list[str] = []
    for leaf in inputs:
        top = re.split(r"[.\[]", leaf.name, maxsplit=1)[0]
        if leaf.kind == kind and top not in seen:
            seen.append(top)
    if all_positions is not None:
        seen += [f"args[{i}]" for i in range(len(seen), all_positions)]
    return seen


def _describe_top(inputs: tuple[InputLeaf, ...], name: str) -> str:
    parts = [leaf.describe() for leaf in inputs if re.split(r"[.\[]", leaf.name, maxsplit=1)[0] == name]
    return f"'{name}' (compiled with " + (", ".join(parts) if parts else "None") + ")"


def _spec_text(spec: pytree.TreeSpec) -> str:
    if spec.is_leaf():
        return "a tensor"
    kind = getattr(spec.type, "__name__", str(spec.type))
    if (
        spec.context is not None
        and isinstance(spec.context, (list, tuple))
        and all(isinstance(k, str) for k in spec.context)
    ):
        return f"{kind}({', '.join(spec.context)})"
    return f"{kind} of {spec.num_children}"


def _check_leaf(leaf: InputLeaf, value: Any) -> None:
    if leaf.is_tensor:
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != leaf.shape or value.dtype != leaf.dtype:
            got = f"{value.dtype} {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
            raise CallError(
                f"input '{leaf.name}' ({leaf.kind}) was compiled for {leaf.dtype} {leaf.shape}, got {got} "
                "(Forge compiles static shapes; recompile for a new shape, or compile with dynamic_shapes=)"
            )
        return
    if isinstance(value, torch.Tensor) or value != leaf.value:
        raise CallError(
            f"input '{leaf.name}' ({leaf.kind}) was compiled as the constant {leaf.value!r} (torch.export "
            f"specializes non-tensor inputs), got {value!r}; recompile with the new value"
        )


# --- storing TreeSpecs ---------------------------------------------------------------------------------


def _dumps_or_none(spec: pytree.TreeSpec) -> str | None:
    try:
        return pytree.treespec_dumps(spec)
    except Exception:  # a type without a serialized name: the loaded model returns a flat tuple
        return None


def _loads_leniently(text: str, notes: list[str]) -> pytree.TreeSpec:
    """A stored TreeSpec; a node type that is not registered is imported by its serialized name
    (transformers registers ModelOutput classes on import), else rebuilt as a dict (or tuple)."""
    if "transformers." in text and "Cache" in text:
        # DynamicCache, in a process that has not exported a transformers model. Only when the spec names a
        # cache: registering imports transformers' executorch integration and modeling_utils (~3-5 s in a
        # fresh process, most of forge.load's time), while a ModelOutput needs its module alone (below)
        register_cache_types()
    try:
        return pytree.treespec_loads(text)
    except Exception:  # an unregistered serialized type: import, or degrade below
        pass
    data = json.loads(text)
    _, tree = data
    _degrade_unknown(tree, notes)
    return pytree.treespec_loads(json.dumps(data))


def _degrade_unknown(node: dict[str, Any], notes: list[str]) -> None:
    name = node.get("type")
    if name is not None and name not in pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE:
        _import_node_type(name)
        if name not in pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE:
            context = json.loads(node["context"]) if node.get("context") else None
            keyed = isinstance(context, list) and all(isinstance(k, str) for k in context)
            node["type"] = "builtins.dict" if keyed else "builtins.tuple"
            node["context"] = json.dumps(context if keyed else None)
            notes.append(f"{name} is not importable: returned as a {'dict' if keyed else 'tuple'}")
    for child in node.get("children_spec", []):
        _degrade_unknown(child, notes)


def _import_node_type(name: str) -> None:
    """Import the module of a serialized node type (transformers registers its ModelOutput classes on
    import; a transformers cache class is registered as its exporter does)."""
    module, _, cls_name = name.rpartition(":" if ":" in name else ".")  # exporter_dynamo writes module:Class
    try:
        cls = getattr(importlib.import_module(module), cls_name, None)
    except Exception:  # not importable here: the caller degrades the node
        return
    if cls is not None and module.startswith("transformers") and name not in pytree.SERIALIZED_TYPE_TO_PYTHON_TYPE:
        try:
            from transformers.exporters.exporter_dynamo import is_cache_class, register_pytree_node

            if is_cache_class(cls):
                register_pytree_node(cls)
        except ImportError:
            return


def _is_transformers_model(model: torch.nn.Module) -> bool:
    return any(c.__module__.startswith("transformers.") for c in type(model).__mro__)
