"""One fuzz case: a single `torch.ops.<namespace>.<op>.<overload>(...)` call on concrete arguments, and
many cases as one module (`BatchModule`) so that one export and one compile serve them all.

A case's arguments are what the call receives: tensors, Python numbers (also for Tensor arguments,
as `torch.div(t, 2, rounding_mode="floor")` passes them), lists, strings, dtypes and None. `to_json`
and `from_json` write a case as a small, readable data file (a regression case): tensors by dtype,
shape and values, with NaN, the infinities and -0.0 spelled out.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch.utils import _pytree as pytree

from dialects.aten import BACKWARD_BOOKKEEPING
from dialects.aten_schema import resolve_overload
from forge.testing.fuzz.compare import mismatch

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
"""The tensor dtypes the fuzzer draws (Forge's dtypes but float64 and int16), by torch's name."""


@dataclass
class Case:
    """One overload call: `target(*args, **kwargs)`."""

    op: str
    """The qualified overload, `aten::div.Tensor_mode`."""
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> Any:
        return resolve_overload(self.op)

    @property
    def name(self) -> str:
        """How torch prints the overload: `aten.div.Tensor_mode`."""
        return self.op.replace("::", ".")

    @property
    def packet(self) -> str:
        """The overload's packet, `aten::div` (what a documented deviation names)."""
        return self.op.rpartition(".")[0]

    def mismatch(self, expected: Sequence[torch.Tensor], got: Sequence[Any]) -> str | None:
        """What differs between `got` and torch's `expected` results (forge.testing.fuzz.compare), or None."""
        return mismatch(self.op, expected, got)

    def tensors(self) -> list[torch.Tensor]:
        """The tensor arguments, in call order (the batch module's inputs)."""
        return [x for x in pytree.tree_leaves((self.args, self.kwargs)) if isinstance(x, torch.Tensor)]

    def call(self, tensors: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]:
        """The call's results as a flat list, but those a program may not use (aten.BACKWARD_BOOKKEEPING);
        `tensors` replace the tensor arguments (default: clones)."""
        args, kwargs = self.bind(tensors if tensors is not None else [t.clone() for t in self.tensors()])
        results = flat_results(self.target(*args, **kwargs))
        unused = BACKWARD_BOOKKEEPING.get(self.op, {})
        return [r for i, r in enumerate(results) if i not in unused]

    def bind(self, tensors: Sequence[torch.Tensor]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """(args, kwargs) with the tensor arguments replaced by `tensors`."""
        leaves, spec = pytree.tree_flatten((self.args, self.kwargs))
        given = iter(tensors)
        leaves = [next(given) if isinstance(x, torch.Tensor) else x for x in leaves]
        args, kwargs = pytree.tree_unflatten(leaves, spec)
        return tuple(args), dict(kwargs)

    def with_tensors(self, tensors: Sequence[torch.Tensor]) -> Case:
        args, kwargs = self.bind(tensors)
        return Case(self.op, args, kwargs)

    def special_values(self) -> frozenset[str]:
        """The special values among the float arguments (tensors and numbers): `nan`, `inf`, `-0.0`,
        `subnormal`; what a documented deviation is triggered by."""
        return special_values((self.args, self.kwargs))

    def describe(self, limit: int = 6) -> str:
        """`aten.div.Tensor_mode(float32[3]{-7.0, nan, 2.5}, 2, rounding_mode='floor')`."""
        parts = [_describe(a, limit) for a in self.args]
        parts += [f"{k}={_describe(v, limit)}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"

    def to_json(self) -> dict[str, Any]:
        kwargs = {k: encode(v) for k, v in self.kwargs.items()}
        return {"op": self.op, "args": [encode(a) for a in self.args], "kwargs": kwargs}

    @staticmethod
    def from_json(entry: dict[str, Any]) -> Case:
        kwargs = {k: decode(v) for k, v in entry["kwargs"].items()}
        return Case(entry["op"], tuple(decode(a) for a in entry["args"]), kwargs)

    def key(self) -> str:
        """A short stable digest of the case (its file name as a regression case)."""
        text = json.dumps(self.to_json(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def flat_results(out: Any) -> list[torch.Tensor]:
    """An overload's result(s) as a flat list of tensors."""
    return [x for x in pytree.tree_leaves(out) if isinstance(x, torch.Tensor)]


def special_values(arguments: Any) -> frozenset[str]:
    """The special values (`nan`, `inf`, `-0.0`, `subnormal`) among the float tensors and numbers of
    `arguments` (any nesting of lists, tuples and dicts)."""
    found: set[str] = set()
    for x in pytree.tree_leaves(arguments):
        if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel():
            found |= _tensor_specials(x)
        elif isinstance(x, float):
            found |= _tensor_specials(torch.tensor([x], dtype=torch.float64))
    return frozenset(found)


def _tensor_specials(x: torch.Tensor) -> set[str]:
    x = x.detach().to(torch.float64) if x.dtype != torch.float64 else x
    found = set()
    if torch.isnan(x).any():
        found.add("nan")
    if torch.isinf(x).any():
        found.add("inf")
    if ((x == 0) & torch.signbit(x)).any():
        found.add("-0.0")
    tiny = {torch.float64: torch.finfo(torch.float32).tiny}
    if ((x != 0) & (x.abs() < tiny[torch.float64])).any():
        found.add("subnormal")
    return found


def _describe(value: Any, limit: int) -> str:
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        shape = ",".join(str(d) for d in value.shape)
        flat = value.detach().reshape(-1)
        shown = ", ".join(_number_text(v) for v in flat[:limit].tolist())
        more = ", ..." if flat.numel() > limit else ""
        return f"{dtype}[{shape}]{{{shown}{more}}}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_describe(v, limit) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, float):
        return _number_text(value)
    return repr(value)


def _number_text(v: Any) -> str:
    if isinstance(v, float) and v == 0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    return repr(v)


# --- the data file form ------------------------------------------------------------------------------


def _encode_float(v: float) -> Any:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0 and math.copysign(1.0, v) < 0:
        return "-0.0"
    return v


def _decode_float(v: Any) -> float:
    return float(v)  # float("nan"), float("-inf"), float("-0.0") read the spelled-out forms


def encode(value: Any) -> Any:
    """A JSON form of an argument (see `decode`)."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        flat = value.detach().reshape(-1).tolist()
        values = [_encode_float(v) for v in flat] if value.is_floating_point() else flat
        return {"tensor": dtype, "shape": list(value.shape), "values": values}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, float):
        return {"float": _encode_float(value)}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode(v) for v in value]}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, (torch.device, torch.layout, torch.memory_format)):
        return {"torch": str(value).removeprefix("torch.")}
    raise TypeError(f"cannot encode a {type(value).__name__} argument: {value!r}")


def decode(value: Any) -> Any:
    """The argument `encode` wrote."""
    if not isinstance(value, dict):
        return value
    if "tensor" in value:
        dtype = DTYPES.get(value["tensor"]) or getattr(torch, value["tensor"])
        values = value["values"]
        if dtype.is_floating_point:
            values = [_decode_float(v) for v in values]
        return torch.tensor(values, dtype=dtype).reshape(value["shape"])
    if "dtype" in value:
        return getattr(torch, value["dtype"])
    if "float" in value:
        return _decode_float(value["float"])
    if "list" in value:
        return [decode(v) for v in value["list"]]
    if "tuple" in value:
        return tuple(decode(v) for v in value["tuple"])
    if "torch" in value:
        text = value["torch"]
        return getattr(torch, text) if hasattr(torch, text) else torch.device(text)
    raise ValueError(f"not an encoded argument: {value!r}")


# --- many cases as one module ------------------------------------------------------------------------


class Call(Protocol):
    """What a batch (`BatchModule`, forge.testing.fuzz.run) needs of a case: a `Case`, or one OpInfo
    sample (forge.coverage.opinfo.SampleCase)."""

    op: str
    """Cases of one `op` are kept together when a failed batch is split."""

    @property
    def packet(self) -> str: ...  # what a documented deviation names: `aten::div`

    def tensors(self) -> list[torch.Tensor]: ...

    def call(self, tensors: Sequence[torch.Tensor] | None = None) -> list[torch.Tensor]: ...

    def mismatch(self, expected: Sequence[torch.Tensor], got: Sequence[Any]) -> str | None: ...

    def special_values(self) -> frozenset[str]: ...

    def describe(self) -> str: ...


class BatchModule(torch.nn.Module):
    """`forward(*tensors)` makes every case's call, the tensors of case i following those of case i-1;
    it returns all results, flat. `split(outputs)` cuts them back into one list per case."""

    def __init__(self, cases: Sequence[Call]):
        super().__init__()
        self.cases = list(cases)
        self.arity = [len(c.tensors()) for c in self.cases]
        self.counts: list[int] = []

    def inputs(self) -> tuple[torch.Tensor, ...]:
        return tuple(t.clone() for c in self.cases for t in c.tensors())

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out: list[torch.Tensor] = []
        counts = []
        start = 0
        for case, n in zip(self.cases, self.arity, strict=True):
            results = case.call(tensors[start : start + n])
            start += n
            counts.append(len(results))
            out += results
        self.counts = counts
        return tuple(out)

    def split(self, outputs: Sequence[Any]) -> list[list[Any]]:
        per_case, start = [], 0
        for n in self.counts:
            per_case.append(list(outputs[start : start + n]))
            start += n
        if start != len(outputs):
            raise ValueError(f"{len(outputs)} outputs for {start} expected results")
        return per_case
