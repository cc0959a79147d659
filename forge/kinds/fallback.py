"""The `aten` kind: the host-only fallback running an `aten` op unchanged (no NPU lowering).

Its semantics are exactly the aten op's (`N.aten_call(...).call`); its torch source is a call of
the op's overload (`torch.ops.aten.<name>.<overload>(...)`), or of its value-semantics twin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, TensorType, i64

from dialects import aten
from dialects import npuir as N
from dialects.torch_types import dtype_of, type_of
from forge.kinds import Example, KindSpec, NoTorchSource

if TYPE_CHECKING:
    import torch


def _call(p: N.Params, in_types: tuple[TensorType, ...]) -> Any:
    """The detached aten op the fallback runs, verified on these operand types."""
    attrs = p.attr("attrs")
    assert isinstance(attrs, DictionaryAttr)
    return N.aten_call(p.get_str("op"), attrs, in_types)


class _Var:
    """A placeholder argument that renders as a variable name."""

    def __init__(self, name: str):
        self.name = name


def _py(value: Any) -> str:
    """Python source for an argument of an aten call."""
    import torch

    if isinstance(value, _Var):
        return value.name
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_py(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else (f"({inner},)" if len(value) == 1 else f"({inner})")
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.device):
        return f"torch.device({str(value)!r})"
    if isinstance(value, (torch.memory_format, torch.layout)):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "math.nan" if math.isnan(value) else ("math.inf" if value > 0 else "-math.inf")
    return repr(value)


class Aten(KindSpec):
    """Run the `aten` op named `op` with properties `attrs`; take result `result_index`."""

    name = "aten"
    npu = False
    example = Example(
        ("2x5xf32", "2x3xi64"),
        "2x3xf32",
        {"op": "aten.gather", "attrs": DictionaryAttr({"dim": IntegerAttr(1, i64)})},
        ("normal", "index5"),
    )

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        result = _call(p, tuple(type_of(t) for t in ins)).call(list(ins))
        if isinstance(result, torch.Tensor):
            return result
        return result[p.get_int("result_index")]

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        import torch

        op = _call(p, tuple(in_types))
        call_args, call_kwargs = op.call_arguments([_Var(a) for a in args])
        target = aten.VALUE_SEMANTICS.get(op.SIGNATURE.target, op.SIGNATURE.target)
        if not isinstance(target, torch._ops.OpOverload):
            raise NoTorchSource(f"pyemit: cannot write a call of {target!r} (npuir.aten {p.get_str('op')})")
        rendered = [_py(a) for a in call_args] + [f"{k}={_py(v)}" for k, v in call_kwargs.items()]
        expr = f"torch.ops.{target}({', '.join(rendered)})"
        if len(op.results) > 1:
            expr += f"[{p.get_int('result_index')}]"
        return f"{expr}.to({dtype_of(out_type)})"


SPECS: tuple[KindSpec, ...] = (Aten(),)
