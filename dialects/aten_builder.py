"""Build `aten` ops from SSA values and plain Python values: the inverse of `op.arg()`.

    from dialects import aten
    from dialects.aten_builder import build

    softmax = build(aten.SoftmaxIntOp, x, dim=-1)            # like torch.ops.aten.softmax.int(x, -1)
    fused = build(aten.AddLayerNormOp, a, b, [64], weight=w, location=op.location)
    rewriter.replace(op, fused)

Arguments bind by schema name and position, as in a torch call (and as the importer binds FX
nodes): tensor arguments are SSA values (None for an absent optional tensor, a list for a tensor
list); every other argument is a Python value (int, float, bool, list, dtype, ...) stored as the
property the schema says, or left out when it equals the schema default. Result types are inferred
from the operands (the op's meta kernel, `AtenOp.infer_result_types`). The op is returned, not
inserted. Wrong arguments are a TypeError naming the op and the argument; a Python value the
property cannot hold is a TypeError naming the op, the property and the value.

`AtenOp.build_op` stays the fast path for code that already has attributes and result types.
"""

from __future__ import annotations

from typing import Any

from xdsl.ir import Attribute, SSAValue

from dialects import aten
from dialects.aten_schema import ArgKind, equals_default, to_attribute


def build(cls: type[aten.AtenOp], *args: Any, location: Any = None, **kwargs: Any) -> aten.AtenOp:
    """`cls` applied to `args`/`kwargs` (a torch call's arguments, SSA values for tensors)."""
    groups, properties = bind(cls, args, kwargs)
    sig = cls.SIGNATURE
    n_results = 0 if sig.variadic_result else len(sig.result_fields)
    operand_types = [v.type for g in groups for v in g]
    probe = cls.build_op(groups, properties, operand_types[:1] * n_results if operand_types else [])
    try:
        types = probe.infer_result_types()
    except Exception as e:
        raise TypeError(f"{cls.name}: cannot infer the result types: {str(e).strip().splitlines()[0]}") from None
    finally:
        probe.drop_all_references()
    return cls.build_op(groups, properties, list(types), location=location)


def bind(cls: type[aten.AtenOp], args: tuple[Any, ...], kwargs: dict[str, Any]
         ) -> tuple[list[list[SSAValue]], dict[str, Attribute]]:
    """Operand groups and properties of `cls` for a torch-style call."""
    sig = cls.SIGNATURE
    positional = [s for s in sig.args if not s.kwarg_only]
    if len(args) > len(positional):
        raise TypeError(f"{cls.name}: takes {len(positional)} positional arguments, {len(args)} given")
    bound = {s.name: a for s, a in zip(positional, args, strict=False)}
    names = {s.name for s in sig.args}
    for key, value in kwargs.items():
        if key not in names:
            raise TypeError(f"{cls.name}: no argument {key!r} (its arguments: {', '.join(s.name for s in sig.args)})")
        if key in bound:
            raise TypeError(f"{cls.name}: argument {key!r} given twice")
        bound[key] = value
    groups: list[list[SSAValue]] = []
    properties: dict[str, Attribute] = {}
    for spec in sig.args:
        given, value = spec.name in bound, bound.get(spec.name)
        kind = spec.kind
        if kind is ArgKind.TENSOR:
            groups.append([_tensor(cls, spec.name, value)])
        elif kind is ArgKind.OPT_TENSOR:
            groups.append([] if value is None else [_tensor(cls, spec.name, value)])
        elif kind is ArgKind.TENSOR_LIST:
            groups.append([_tensor(cls, spec.name, v) for v in (value or [])])
        elif kind is ArgKind.OPT_TENSOR_LIST:
            values = list(value or [])
            properties[aten.PRESENT_MASK] = to_attribute(ArgKind.INT_LIST, [int(v is not None) for v in values])
            groups.append([_tensor(cls, spec.name, v) for v in values if v is not None])
        elif kind is ArgKind.GENERATOR:
            continue
        elif given and value is not None and not equals_default(spec, value):
            properties[spec.name] = _attribute(cls, spec.name, kind, value)
        elif not given and not spec.has_default:
            raise TypeError(f"{cls.name}: missing argument {spec.name!r}")
    return groups, properties


def _tensor(cls: type[aten.AtenOp], name: str, value: Any) -> SSAValue:
    if not isinstance(value, SSAValue):
        raise TypeError(f"{cls.name}: tensor argument {name!r} must be an SSA value, not {type(value).__name__}")
    return value


def _attribute(cls: type[aten.AtenOp], name: str, kind: ArgKind, value: Any) -> Attribute:
    try:
        return to_attribute(kind, value)
    except Exception as e:
        raise TypeError(f"{cls.name}: property {name!r} ({kind.name.lower()}) cannot hold {value!r}: {e}") from None
