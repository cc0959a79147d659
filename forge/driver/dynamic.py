"""Dynamic sequence length by shape buckets: `forge.compile(..., dynamic_shapes=...)`.

Forge's dialects, memory plan and NNFactory segments are static-shape, so a dynamic dimension is
served by *buckets*: static compiles at a few lengths (powers of two clipped to the Dim's
``[min, max]``, or a given list; ``max`` is always one), compiled lazily the first time a call
needs one and cached.  A call of length ``L`` runs the smallest bucket ``B >= L``: every input
that carries the dynamic dim is right-padded to ``B`` (with ``pad_values[name]``, default 0 --
which is what an ``attention_mask`` needs: pads are masked out), and every output dim that
follows the sequence dim is sliced back to ``L``.  Each bucket is an ordinary
:class:`forge.driver.artifact.CompiledModel` with its own memory plan and report.

The contract (:func:`compile_dynamic`):

* ``dynamic_shapes`` has torch.export's form (a dict keyed by forward parameter names, or a
  tuple/list matching args then kwargs; per input a ``{dim: Dim}`` dict or a per-dim tuple).
  Forge buckets ONE named ``torch.export.Dim`` with a finite ``max`` (it may appear in several
  inputs: their sizes must agree at every call).  ``Dim.AUTO``/``Dim.DYNAMIC``, derived dims
  (``2 * seq``) and several distinct Dims are refused by name.
* The model is exported once with the dynamic spec (``export_check=True``): torch.export raises
  when the model specializes the dim (its error is passed on, naming the dim).
* Padding is exact only when positions ``< L`` never see the pads.  That holds for causal
  decoders (right pads come after every valid position) and for models whose padded positions
  are masked (an ``attention_mask`` input padded with zeros).  A probe checks it before anything
  is compiled: the eager model at a length ``a`` and right-padded to ``max`` must agree on the
  valid positions (and on outputs without a seq dim); otherwise :class:`DynamicShapeError` says
  which output changed (e.g. a bidirectional encoder given no mask).  The probe also finds, per
  output, which dims follow the sequence (those whose size is ``a`` at length ``a`` and ``max``
  at ``max``; an output dim that grows otherwise is refused).  The probe is a check on the
  example inputs, not a proof: a model whose padding behaviour depends on the values is not
  covered.

Each bucket is compiled by the stage list of a static compile (`forge.driver.static_compile.compile_static`) with
the compile's `CompileOptions`; nothing calls back into `forge.compile`.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree

from forge.driver.emit import graph_group
from forge.driver.options import CompileOptions
from forge.driver.static_compile import compile_static
from forge.frontend.node_locations import recorded_model_frames
from forge.mapped_pages import return_freed_heap

MAX_BUCKET_LEN = 1 << 16
"""A Dim's max above this is taken for "unbounded" (torch.export's default is infinity)."""
PROBE_RTOL = 1e-4
"""Padding changes the valid outputs when they differ by more than this times (1 + max |output|)."""


class DynamicShapeError(ValueError):
    """A dynamic_shapes spec, a call's shapes or a model Forge cannot pad soundly, said by name."""


@dataclass(frozen=True)
class DynamicDim:
    """The one dynamic dimension: its name, range and where it appears (input name, dim index)."""

    name: str
    min: int
    max: int
    uses: tuple[tuple[str, int], ...]

    def dim_of(self, input_name: str) -> int | None:
        return next((d for n, d in self.uses if n == input_name), None)


# --- the spec --------------------------------------------------------------------------------------


def bind_inputs(
    model: torch.nn.Module, args: Sequence[Any], kwargs: Mapping[str, Any], signature: inspect.Signature | None = None
) -> dict[str, Any]:
    """`args`/`kwargs` by forward parameter name, in call order (positional first)."""
    signature = signature or inspect.signature(model.forward)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as err:
        owner = "the saved model's " if model is None else f"{type(model).__name__}."  # a loaded model: no module
        raise DynamicShapeError(f"the inputs do not match {owner}forward{signature}: {err}") from None
    named: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            named.update({f"{name}_{i}": v for i, v in enumerate(value)})
        elif kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = value
    return named


def parse_dynamic_shapes(dynamic_shapes: Any, inputs: Mapping[str, Any]) -> DynamicDim:
    """Validate torch.export's `dynamic_shapes` against the named example inputs: one named Dim
    with a finite range, on dims that exist, containing every example size and agreeing across inputs."""
    per_input = _spec_per_input(dynamic_shapes, inputs)
    found: dict[str, Any] = {}
    uses: list[tuple[str, int]] = []
    for input_name, spec in per_input.items():
        for dim, dim_spec in _dims_of(input_name, spec, inputs[input_name]).items():
            _check_dim_object(input_name, dim, dim_spec)
            if dim_spec is None:
                continue
            key = dim_spec.__name__
            if key in found and (found[key].min, found[key].max) != (dim_spec.min, dim_spec.max):
                raise DynamicShapeError(f"Dim '{key}' is given two ranges (input '{input_name}' dim {dim})")
            found[key] = dim_spec
            uses.append((input_name, dim))
    if not found:
        raise DynamicShapeError("dynamic_shapes names no Dim: give e.g. {'input_ids': {1: Dim('seq', min=8, max=128)}}")
    if len(found) > 1:
        raise DynamicShapeError(
            f"Forge buckets one dynamic dimension; dynamic_shapes names {len(found)}: {', '.join(sorted(found))}"
        )
    ((name, dim_obj),) = found.items()
    limit = MAX_BUCKET_LEN + 1
    high = int(dim_obj.max) if dim_obj.max <= limit else limit  # torch's default max is int_oo
    result = DynamicDim(name, int(dim_obj.min), high, tuple(uses))
    _check_range(result)
    _check_example_sizes(result, inputs)
    return result


def _spec_per_input(dynamic_shapes: Any, inputs: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(dynamic_shapes, Mapping):
        unknown = [k for k in dynamic_shapes if k not in inputs]
        if unknown:
            raise DynamicShapeError(
                f"dynamic_shapes names unknown input(s) {', '.join(map(repr, unknown))}; "
                f"the inputs are {', '.join(inputs)}"
            )
        return {k: v for k, v in dynamic_shapes.items() if v is not None}
    if isinstance(dynamic_shapes, (tuple, list)):
        if len(dynamic_shapes) != len(inputs):
            raise DynamicShapeError(
                f"dynamic_shapes has {len(dynamic_shapes)} entries, the model got {len(inputs)} input(s) "
                f"({', '.join(inputs)})"
            )
        return {k: v for k, v in zip(inputs, dynamic_shapes, strict=True) if v is not None}
    raise DynamicShapeError(
        "dynamic_shapes should be a dict by input name or a tuple matching the inputs, "
        f"not {type(dynamic_shapes).__name__}"
    )


def _dims_of(input_name: str, spec: Any, value: Any) -> dict[int, Any]:
    if not isinstance(value, torch.Tensor):
        raise DynamicShapeError(f"dynamic_shapes gives a shape for input '{input_name}', which is not a tensor")
    rank = value.dim()
    if isinstance(spec, Mapping):
        bad = [d for d in spec if not isinstance(d, int) or not 0 <= d < rank]
        if bad:
            raise DynamicShapeError(
                f"input '{input_name}' has {rank} dim(s) (shape {tuple(value.shape)}); "
                f"dynamic_shapes names dim {bad[0]!r}"
            )
        return dict(spec)
    if isinstance(spec, (tuple, list)):
        if len(spec) != rank:
            raise DynamicShapeError(
                f"input '{input_name}' has {rank} dim(s) (shape {tuple(value.shape)}); "
                f"its dynamic_shapes entry has {len(spec)}"
            )
        return dict(enumerate(spec))
    raise DynamicShapeError(
        f"input '{input_name}': a shape spec is a {{dim: Dim}} dict or a per-dim tuple, not {type(spec).__name__}"
    )


def _check_dim_object(input_name: str, dim: int, spec: Any) -> None:
    from torch.export.dynamic_shapes import _DerivedDim, _DimHint

    where = f"input '{input_name}' dim {dim}"
    if spec is None or (isinstance(spec, _DimHint) and "STATIC" in str(spec)):
        return
    if isinstance(spec, _DerivedDim):
        raise DynamicShapeError(f"{where}: derived dims ({spec.__name__}) are not supported; use one Dim")
    if isinstance(spec, _DimHint):
        raise DynamicShapeError(
            f"{where}: {spec} has no range; Forge compiles buckets for a bounded range: "
            "give torch.export.Dim('seq', min=..., max=...)"
        )
    if not isinstance(spec, torch.export.Dim):
        raise DynamicShapeError(f"{where}: expected a torch.export.Dim or None, got {type(spec).__name__} {spec!r}")


def _check_range(dim: DynamicDim) -> None:
    if dim.max > MAX_BUCKET_LEN:
        raise DynamicShapeError(f"Dim '{dim.name}' has no finite max (or one above {MAX_BUCKET_LEN}); give max=...")
    if dim.min < 1:
        raise DynamicShapeError(f"Dim '{dim.name}': min must be >= 1, got {dim.min}")
    if dim.min >= dim.max:
        raise DynamicShapeError(f"Dim '{dim.name}': min {dim.min} >= max {dim.max}; that is a static shape")


def _check_example_sizes(dim: DynamicDim, inputs: Mapping[str, Any]) -> None:
    sizes = {name: inputs[name].shape[d] for name, d in dim.uses}
    if len(set(sizes.values())) > 1:
        raise DynamicShapeError(
            f"Dim '{dim.name}' is shared by inputs of different sizes: "
            + ", ".join(f"'{n}' dim {d} = {sizes[n]}" for n, d in dim.uses)
        )
    (size,) = set(sizes.values())
    if not dim.min <= size <= dim.max:
        raise DynamicShapeError(
            f"the example's '{dim.name}' = {size} is outside the Dim's range [{dim.min}, {dim.max}]"
        )


def bucket_sizes(dim: DynamicDim, buckets: Sequence[int] | None = None) -> tuple[int, ...]:
    """The bucket lengths: `buckets` (or the powers of two) inside [min, max], plus max."""
    if buckets is None:
        chosen = [1 << k for k in range(max(0, (dim.min - 1).bit_length()), dim.max.bit_length())]
    else:
        if not buckets or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in buckets):
            raise DynamicShapeError(f"buckets should be positive ints, got {list(buckets)!r}")
        chosen = list(buckets)
    kept = sorted({b for b in chosen if dim.min <= b <= dim.max} | {dim.max})
    return tuple(kept)


# --- padding ---------------------------------------------------------------------------------------


def resize(value: torch.Tensor, dim: int, length: int, pad_value: float) -> torch.Tensor:
    """`value` truncated or right-padded with `pad_value` to `length` along `dim`."""
    size = value.shape[dim]
    if size >= length:
        return value.narrow(dim, 0, length)
    pad_shape = list(value.shape)
    pad_shape[dim] = length - size
    return torch.cat([value, torch.full(pad_shape, pad_value, dtype=value.dtype, device=value.device)], dim=dim)


def resize_inputs(inputs: Mapping[str, Any], dim: DynamicDim, length: int, pad_values: Mapping[str, float]):
    return {
        name: resize(v, dim.dim_of(name), length, pad_values.get(name, 0)) if dim.dim_of(name) is not None else v
        for name, v in inputs.items()
    }


@dataclass(frozen=True)
class OutputPlan:
    """Per output leaf (pytree key path): the dims that follow the sequence length."""

    seq_dims: dict[str, tuple[int, ...]]

    def slice(self, outputs: Any, length: int) -> Any:
        if isinstance(outputs, torch.Tensor) and "" in self.seq_dims:  # the common case, without pytree
            for d in self.seq_dims[""]:
                outputs = outputs.narrow(d, 0, length)
            return outputs
        leaves, spec = pytree.tree_flatten_with_path(outputs)
        sliced = []
        for path, leaf in leaves:
            key = pytree.keystr(path)
            if isinstance(leaf, torch.Tensor):
                if key not in self.seq_dims:
                    raise DynamicShapeError(f"output{key} was not seen when probing the model; cannot slice it")
                for d in self.seq_dims[key]:
                    leaf = leaf.narrow(d, 0, length)
            sliced.append(leaf)
        return pytree.tree_unflatten(sliced, spec)


def probe_padding(model, inputs: Mapping[str, Any], dim: DynamicDim, pad_values: Mapping[str, float]) -> OutputPlan:
    """Run the eager model at a length `a` and right-padded to `max`; find the outputs' seq dims
    and check that padding leaves the valid outputs unchanged (module docstring)."""
    size = inputs[dim.uses[0][0]].shape[dim.uses[0][1]]
    a = size if size < dim.max else max(dim.min, dim.max // 2)
    short = resize_inputs(inputs, dim, a, pad_values)
    padded = resize_inputs(short, dim, dim.max, pad_values)
    out_a, out_b = _eager(model, short, f"length {a}"), _eager(model, padded, f"length {dim.max} (the Dim's max)")
    leaves_a, spec_a = pytree.tree_flatten_with_path(out_a)
    leaves_b, spec_b = pytree.tree_flatten_with_path(out_b)
    if spec_a != spec_b:
        raise DynamicShapeError(f"the model's output structure changes with '{dim.name}' ({a} vs {dim.max})")
    seq_dims = {}
    for (path, x), (_, y) in zip(leaves_a, leaves_b, strict=True):
        key = pytree.keystr(path)
        if isinstance(x, torch.Tensor):
            seq_dims[key] = _seq_dims(key, x, y, dim, a)
            _check_exact(key, x, y, seq_dims[key], dim, a, pad_values)
    return OutputPlan(seq_dims)


def _eager(model, inputs: Mapping[str, Any], what: str) -> Any:
    try:
        with torch.no_grad():
            return model(**inputs)
    except Exception as err:  # the model's own errors (e.g. positions beyond its context)
        raise DynamicShapeError(
            f"the eager model fails at {what}: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        ) from err


def _seq_dims(key: str, x: torch.Tensor, y: torch.Tensor, dim: DynamicDim, a: int) -> tuple[int, ...]:
    if x.dim() != y.dim():
        raise DynamicShapeError(f"output{key} changes rank with '{dim.name}'")
    dims = tuple(d for d in range(x.dim()) if x.shape[d] != y.shape[d])
    bad = [d for d in dims if (x.shape[d], y.shape[d]) != (a, dim.max)]
    if bad:
        d = bad[0]
        raise DynamicShapeError(
            f"output{key} dim {d} is {x.shape[d]} at '{dim.name}' = {a} and {y.shape[d]} at {dim.max}: Forge slices "
            "outputs only along dims equal to the sequence length"
        )
    return dims


def _check_exact(key, x, y, dims, dim: DynamicDim, a: int, pad_values) -> None:
    for d in dims:
        y = y.narrow(d, 0, a)
    if x.is_floating_point():
        diff = (x.double() - y.double()).abs().max().item() if x.numel() else 0.0
        ok = diff <= PROBE_RTOL * (1.0 + x.double().abs().max().item() if x.numel() else 1.0)
    else:
        diff, ok = float((x != y).sum().item()), bool(torch.equal(x, y))
    if not ok:
        padded = ", ".join(f"'{n}' with {pad_values.get(n, 0)}" for n, _ in dim.uses)
        raise DynamicShapeError(
            f"right-padding {padded} along '{dim.name}' changes output{key} at the valid positions "
            f"(max |diff| {diff:.3g} between length {a} and {a} padded to {dim.max}): buckets are exact only for "
            "causal models or with an attention mask; pass the model's attention_mask (padded with 0) "
            "or the right pad_values"
        )


# --- the compiled object ---------------------------------------------------------------------------


@dataclass
class Bucket:
    length: int
    compiled: Any
    compile_ms: float


@dataclass
class DynamicCompiledModel:
    """One compiled model for a range of lengths: callable like the model; `.buckets` are the
    compiled static shapes (length -> CompiledModel), `.reports` their reports."""

    model: torch.nn.Module
    example: dict[str, Any]
    positional: tuple[str, ...]
    dim: DynamicDim
    bucket_sizes: tuple[int, ...]
    pad_values: dict[str, float]
    plan: OutputPlan
    options: CompileOptions
    static_compile: Callable[..., Any] = compile_static
    """What compiles one bucket: `static_compile(model, args, kwargs, options=...)` (a test may count its calls)."""
    checks_ms: dict[str, float] = field(default_factory=dict)
    group: Any = None
    """The GraphGroup every bucket's graphs join (made with the first bucket): one device program, so the
    buckets hold the weights they share once; each compiled bucket compiles it again with every bucket."""
    _compiled: dict[int, Bucket] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=lambda: {"calls": 0, "valid_tokens": 0, "padded_tokens": 0})
    _signature: inspect.Signature | None = None

    @property
    def buckets(self) -> dict[int, Any]:
        return {b: self._compiled[b].compiled for b in sorted(self._compiled)}

    @property
    def compiles(self) -> int:
        return len(self._compiled)

    @property
    def reports(self) -> dict[int, dict[str, Any]]:
        return {b: self._compiled[b].compiled.report for b in sorted(self._compiled)}

    @property
    def report(self) -> dict[str, Any]:
        return {
            "dynamic": {
                "dim": self.dim.name,
                "min": self.dim.min,
                "max": self.dim.max,
                "inputs": [f"{n}[{d}]" for n, d in self.dim.uses],
                "buckets": list(self.bucket_sizes),
                "compiled": {str(b): round(c.compile_ms, 3) for b, c in sorted(self._compiled.items())},
                **({"device_program": self.group.report()} if self.group is not None else {}),
                "pad_values": {n: self.pad_values.get(n, 0) for n, _ in self.dim.uses},
                **{k: round(v, 3) for k, v in self.checks_ms.items()},
                **self.stats,
            },
            "buckets": {str(b): r for b, r in self.reports.items()},
        }

    def bucket_for(self, length: int) -> int:
        if not self.dim.min <= length <= self.dim.max:
            raise DynamicShapeError(
                f"'{self.dim.name}' = {length} is outside the compiled range [{self.dim.min}, {self.dim.max}]"
            )
        return next(b for b in self.bucket_sizes if b >= length)

    def compile_bucket(self, length: int, *, device_compile: bool = True) -> Any:
        """The CompiledModel of bucket `length` (compiled now if it is not yet); `device_compile=False` leaves
        the device compile of the buckets' program to the next call (`compile_all` compiles it once)."""
        if length not in self._compiled:
            if length not in self.bucket_sizes:
                raise DynamicShapeError(f"{length} is not a bucket (buckets: {list(self.bucket_sizes)})")
            inputs = resize_inputs(self.example, self.dim, length, self.pad_values)
            args, kwargs = self._split(inputs)
            start = time.perf_counter()
            if self.group is None:
                self.group = graph_group(self.options)
            compiled = self.static_compile(self.model, args, kwargs, options=self.options, group=self.group)
            if device_compile:
                self.group.compile()
                return_freed_heap()
            self._compiled[length] = Bucket(length, compiled, (time.perf_counter() - start) * 1e3)
        return self._compiled[length].compiled

    def compile_all(self) -> DynamicCompiledModel:
        for b in self.bucket_sizes:
            self.compile_bucket(b, device_compile=False)
        if self.group is not None:
            self.group.compile()
        return_freed_heap()
        return self

    def save(self, directory: Any) -> Any:
        """Compile every bucket and write them (one saved static model each) with meta.json; `forge.load`
        reads the directory back (forge/driver/saved_kinds.py)."""
        from forge.driver.saved_kinds import save_dynamic

        return save_dynamic(self, directory)

    def warmup(self, lengths: Sequence[int] | None = None) -> DynamicCompiledModel:
        """Compile the buckets serving `lengths` (default: every bucket) and run each once."""
        for b in sorted({self.bucket_for(n) for n in lengths} if lengths is not None else self.bucket_sizes):
            self._run(b, resize_inputs(self.example, self.dim, b, self.pad_values))
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._signature is None:
            self._signature = inspect.signature(self.model.forward)
        inputs = self._check_call(bind_inputs(self.model, args, kwargs, self._signature))
        length = inputs[self.dim.uses[0][0]].shape[self.dim.uses[0][1]]
        b = self.bucket_for(length)
        self.stats["calls"] += 1
        self.stats["valid_tokens"] += length
        self.stats["padded_tokens"] += b - length
        out = self._run(b, resize_inputs(inputs, self.dim, b, self.pad_values))
        return self.plan.slice(out, length)

    def _run(self, length: int, inputs: Mapping[str, Any]) -> Any:
        args, kwargs = self._split(inputs)
        return self.compile_bucket(length)(*args, **kwargs)

    def _split(self, inputs: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        args = tuple(inputs[n] for n in self.positional)
        return args, {n: v for n, v in inputs.items() if n not in self.positional}

    def _check_call(self, inputs: dict[str, Any]) -> dict[str, Any]:
        if set(inputs) != set(self.example):
            raise DynamicShapeError(
                f"compiled with inputs {', '.join(self.example)}; called with {', '.join(inputs) or 'none'}"
            )
        for name, value in inputs.items():
            _check_input(name, value, self.example[name], self.dim)
        sizes = {n: inputs[n].shape[d] for n, d in self.dim.uses}
        if len(set(sizes.values())) > 1:
            raise DynamicShapeError(
                f"inputs sharing Dim '{self.dim.name}' disagree: "
                + ", ".join(f"'{n}' dim {d} = {sizes[n]}" for n, d in self.dim.uses)
            )
        return {n: inputs[n] for n in self.example}


def _check_input(name: str, value: Any, example: Any, dim: DynamicDim) -> None:
    if not isinstance(example, torch.Tensor):
        if value is not example and value != example:
            raise DynamicShapeError(f"input '{name}' was compiled as the constant {example!r}, got {value!r}")
        return
    if not isinstance(value, torch.Tensor) or value.dtype != example.dtype or value.dim() != example.dim():
        got = f"{value.dtype} {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
        raise DynamicShapeError(f"input '{name}' was compiled for {example.dtype} rank {example.dim()}, got {got}")
    d = dim.dim_of(name)
    for i, (got, want) in enumerate(zip(value.shape, example.shape, strict=True)):
        if i != d and got != want:
            raise DynamicShapeError(
                f"input '{name}' dim {i} is static ({want}); got {got} (only '{dim.name}' at dim {d} is dynamic)"
                if d is not None
                else f"input '{name}' is static {tuple(example.shape)}; got {tuple(value.shape)}"
            )


# --- the entry point -------------------------------------------------------------------------------


def compile_dynamic(
    model: torch.nn.Module,
    args: Sequence[Any],
    kwargs: Mapping[str, Any] | None,
    dynamic_shapes: Any,
    options: CompileOptions,
    export_check: bool = True,
) -> DynamicCompiledModel:
    """Validate the spec, export once with it (`export_check`), probe the padding, and return the
    lazily-bucketed model (nothing is compiled yet; `compile_all()` compiles every bucket with `options`:
    `options.buckets` are their lengths, `options.pad_values` what each named input is padded with)."""
    from forge.frontend.export import register_cache_types  # lazy: start-up cost (transformers)

    register_cache_types()  # a transformers forward with use_cache returns a DynamicCache: a pytree node
    model = model.eval()
    args, kwargs = tuple(args), dict(kwargs or {})
    inputs = bind_inputs(model, args, kwargs)
    dim = parse_dynamic_shapes(dynamic_shapes, inputs)
    pads = _pad_values(options.pad_values, inputs)
    checks: dict[str, float] = {}
    if export_check:
        start = time.perf_counter()
        _export_check(model, args, kwargs, dynamic_shapes, dim)
        checks["export_check_ms"] = (time.perf_counter() - start) * 1e3
    start = time.perf_counter()
    plan = probe_padding(model, inputs, dim, pads)
    checks["probe_ms"] = (time.perf_counter() - start) * 1e3
    positional = tuple(list(inputs)[: len(args)])
    return DynamicCompiledModel(
        model, inputs, positional, dim, bucket_sizes(dim, options.buckets), pads, plan, options, checks_ms=checks
    )


def _pad_values(pad_values: Mapping[str, float] | None, inputs: Mapping[str, Any]) -> dict[str, float]:
    pads = dict(pad_values or {})
    unknown = [k for k in pads if k not in inputs]
    if unknown:
        raise DynamicShapeError(f"pad_values names unknown input(s) {', '.join(map(repr, unknown))}")
    return pads


def _export_check(model, args, kwargs, dynamic_shapes, dim: DynamicDim) -> None:
    """torch.export with the dynamic spec: raises when the model specializes the dim."""
    try:
        with recorded_model_frames():
            torch.export.export(model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    except Exception as err:  # torch.export's UserError / ConstraintViolationError, with its suggested fixes
        lines = [ln for ln in str(err).splitlines() if ln.strip()][:4]
        raise DynamicShapeError(
            f"torch.export cannot keep Dim '{dim.name}' dynamic over [{dim.min}, {dim.max}]: " + " | ".join(lines)
        ) from None
