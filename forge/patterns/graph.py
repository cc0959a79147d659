"""Patterns given as two graphs: what to find (`search`) and what to put instead (`replacement`).

A `GraphPattern` is a `ForgePattern` made from two `func.func`s of `aten` IR with the same
arguments, usually traced from PyTorch functions (`forge.frontend.torch_patterns.from_torch`, like
Inductor's `register_replacement`), or parsed from MLIR (`GraphPattern.from_mlir`). The search
function's arguments are wildcards for any value; its results are the pattern's outputs (one or
more); its ops must appear in the module with the same op class and result index. Matching:

- anchored on the op that defines the first output (`ROOTS` is its class), then backwards through
  operands, so the cost per candidate op is the size of the search graph: linear in the module;
- `aten.add.Tensor` (alpha 1) and `aten.mul.Tensor` match their operands in either order;
- properties (constants and scalars: `alpha`, `dim`, `eps`, ...) must equal the traced ones, unless
  their name is in `wildcards` (then any value matches, and the replacement op's property of that
  name takes the matched value when it had the traced value); a scalar matches across its int and
  float spellings when the numbers are equal (`pow(x, 2)` and `pow(x, 2.0)`: the replacement's
  result types are still checked against the match's, so integer tensors are not rewritten into
  float ones);
- types are not compared (a pattern traced on `tensor<4xf32>` matches any shape): the replacement
  ops' result types are inferred from their operands; use `predicate` for shape conditions;
- an intermediate value (not an output) with users outside the match fails the match, or with
  `shared="keep"` is left in place for those users;
- `predicate(match)` can veto a match (`match[name]` is the value bound to argument `name`).

When a candidate does not match, `self.fail` names the search node that failed
(`node %1 (aten.neg): the operand is aten.exp, not aten.neg`), which `--explain-pattern` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Attribute, BlockArgument, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from dialects import aten
from dialects.context import ForgeContext
from forge.patterns import ForgePattern

COMMUTATIVE: tuple[type[Operation], ...] = (aten.AddTensorOp, aten.MulTensorOp)
"""Ops whose two tensor operands may be swapped (add only with alpha 1)."""


class Match:
    """A match of the search graph: search values and ops → module values and ops."""

    __slots__ = ("arg_names", "inputs", "ops", "properties", "root", "values")

    def __init__(self, arg_names: Sequence[str], values=None, ops=None, properties=None, inputs=None,
                 root: Operation | None = None):
        self.arg_names = arg_names
        self.values: dict[SSAValue, SSAValue] = {} if values is None else values
        self.ops: dict[Operation, Operation] = {} if ops is None else ops
        self.properties: dict[str, Attribute] = {} if properties is None else properties
        """The values matched by wildcard properties, by property name."""
        self.inputs: dict[int, SSAValue] = {} if inputs is None else inputs
        """Argument index of the search function → the module value bound to it."""
        self.root = root
        """The op the match is anchored at (the first output's op)."""

    def __getitem__(self, name: str) -> SSAValue:
        return self.inputs[list(self.arg_names).index(name)]

    def copy(self) -> Match:
        return Match(self.arg_names, dict(self.values), dict(self.ops), dict(self.properties), dict(self.inputs),
                     self.root)


def _node(value: SSAValue) -> str:
    owner = value.owner
    name = f"%{value.name_hint}" if value.name_hint else "%?"
    return f"node {name} ({owner.name})" if isinstance(owner, Operation) else f"argument {name}"


def _what(value: SSAValue) -> str:
    owner = value.owner
    return owner.name if isinstance(owner, Operation) else "a block argument"


class _Mismatch(Exception):
    """Why a candidate did not match; formatted only when someone reads it (`--explain-pattern`)."""

    def __init__(self, fmt: Callable[..., str], *args: object):
        super().__init__()
        self.fmt, self.args_ = fmt, args

    def __str__(self) -> str:
        return self.fmt(*self.args_)


@dataclass(frozen=True)
class _OpPlan:
    """What a search op asks of a module op, precomputed."""

    cls: type[Operation]
    fixed: tuple[tuple[str, Attribute], ...]
    """Properties that must be equal."""
    wild: tuple[str, ...]
    """Wildcard properties it has."""
    operands: tuple[SSAValue, ...]
    commutative: bool


def _plan(op: Operation, wildcards: frozenset[str]) -> _OpPlan:
    fixed = tuple((n, a) for n, a in op.properties.items() if n not in wildcards)
    wild = tuple(n for n in op.properties if n in wildcards)
    return _OpPlan(type(op), fixed, wild, tuple(op.operands), isinstance(op, COMMUTATIVE) and len(op.operands) == 2)


class GraphPattern(ForgePattern):
    """The rewrite search → replacement, both `func.func`s of `aten` IR with the same arguments."""

    ROOTS: ClassVar[tuple[type[Operation], ...]] = ()
    _abstract_pattern: ClassVar[bool] = True
    """A base class, not a pattern of its own (forge-opt --explain-pattern does not list it)."""

    def __init__(
        self,
        search: func.FuncOp,
        replacement: func.FuncOp,
        *,
        wildcards: Collection[str] = (),
        predicate: Callable[[Match], bool] | None = None,
        shared: str = "fail",
    ):
        if shared not in ("fail", "keep"):
            raise ValueError(f"shared must be 'fail' or 'keep', not {shared!r}")
        self.search, self.replacement = search, replacement
        self.outputs = _returned(search)
        self.replacement_outputs = _returned(replacement)
        if not self.outputs:
            raise ValueError("the search function returns nothing: a pattern needs at least one output")
        if len(self.outputs) != len(self.replacement_outputs):
            raise ValueError(f"the search returns {len(self.outputs)} values, the replacement "
                             f"{len(self.replacement_outputs)}")
        if len(search.args) != len(replacement.args):
            raise ValueError("search and replacement must take the same arguments")
        anchor = self.outputs[0].owner
        if not isinstance(anchor, Operation):
            raise ValueError("the first output of the search is an argument: nothing to match")
        self.anchor = anchor
        self.ROOTS = (type(anchor),)
        self.wildcards = frozenset(wildcards)
        self.predicate = predicate
        self.shared = shared
        self.arg_names = [a.name_hint or f"arg{i}" for i, a in enumerate(search.args)]
        self._arg_index = {a: i for i, a in enumerate(search.args)}
        self._body = list(_body_ops(search))
        self._plans = {op: _plan(op, self.wildcards) for op in self._body}
        output_set = set(self.outputs)
        self._inner = [r for op in self._body for r in op.results if r not in output_set]
        self._replacement_args = list(replacement.args)
        self._replacement_body = list(_body_ops(replacement))
        self._returned_args = [(o, r.index) for o, r in zip(self.outputs, self.replacement_outputs, strict=True)
                               if isinstance(r, BlockArgument)]
        self._traced = {name: _traced_value(search, name) for name in self.wildcards}
        self.size = len(self._body)

    @classmethod
    def named(cls, name: str, search: func.FuncOp, replacement: func.FuncOp, **options) -> GraphPattern:
        """An instance of a subclass called `name`: fire counts, `--debug-patterns` and
        `--explain-pattern NAME` know patterns by their class name."""
        subclass = type(name, (cls,), {"__doc__": options.pop("doc", None) or cls.__doc__,
                                       "_abstract_pattern": False})
        return subclass(search, replacement, **options)

    @classmethod
    def from_mlir(cls, text: str, **options) -> GraphPattern:
        """A pattern from MLIR text holding `func.func @search` and `func.func @replacement`."""
        module = Parser(_context(), text).parse_module()
        funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
        missing = {"search", "replacement"} - set(funcs)
        if missing:
            raise ValueError(f"pattern IR has no func.func @{' or @'.join(sorted(missing))}")
        name = options.pop("name", None)
        if name is not None:
            pattern = cls.named(name, funcs["search"], funcs["replacement"], **options)
        else:
            pattern = cls(funcs["search"], funcs["replacement"], **options)
        pattern._module = module  # keeps the functions' parents alive
        return pattern

    # --- matching ------------------------------------------------------------------------------

    def match(self, op: Operation) -> Match | str:
        """The match anchored at `op`, or the reason (naming the search node) why there is none."""
        m = Match(self.arg_names, None, None, None, None, op)
        first = self.outputs[0]
        try:
            results = op.results
            if first.index >= len(results):
                raise _Mismatch(lambda: f"{_node(first)}: the op has no such result")
            self._value(first, results[first.index], m)
            for output in self.outputs[1:]:
                self._other_output(output, m)
            if self.shared == "fail":
                self._check_uses(m)
            if len(self.outputs) > 1:
                self._check_placement(m, op)
        except _Mismatch as e:
            return str(e)
        if self.predicate is not None and not self.predicate(m):
            return "the predicate rejected the match"
        for output, index in self._returned_args:
            if m.inputs[index].type != m.values[output].type:
                return (f"{_node(output)}: the replacement returns argument %{self.arg_names[index]}, "
                        "whose type differs (broadcasting or type promotion)")
        return m

    def _value(self, pv: SSAValue, v: SSAValue, m: Match) -> None:
        bound = m.values.get(pv)
        if bound is not None:
            if bound is not v:
                raise _Mismatch(lambda: f"{_node(pv)}: used twice in the pattern, bound to two different values")
            return
        index = self._arg_index.get(pv)
        if index is not None:
            m.values[pv] = v
            m.inputs[index] = v
            return
        pop, op = pv.owner, v.owner
        plan = self._plans[pop]
        if type(op) is not plan.cls:
            raise _Mismatch(lambda: f"{_node(pv)}: the value is {_what(v)}, not {pop.name}")
        if v.index != pv.index:
            raise _Mismatch(lambda: f"{_node(pv)}: the value is result #{v.index} of {op.name}, not #{pv.index}")
        if pop in m.ops:
            if m.ops[pop] is not op:
                raise _Mismatch(lambda: f"{_node(pv)}: matched two different {pop.name} ops")
        else:
            self._op(pop, plan, op, m)
        m.values[pv] = v

    def _op(self, pop: Operation, plan: _OpPlan, op: Operation, m: Match) -> None:
        properties = op.properties
        for name, want in plan.fixed:
            got = properties.get(name)
            if got != want and not _same_number(got, want):
                raise _Mismatch(lambda n=name: self._property_reason(pop, op, n))
        if len(properties) != len(plan.fixed) + len(plan.wild):
            for name in properties:
                if name not in pop.properties:
                    raise _Mismatch(lambda n=name: self._property_reason(pop, op, n))
        for name in plan.wild:
            if name in properties:
                m.properties.setdefault(name, properties[name])
        m.ops[pop] = op
        for pr, r in zip(pop.results, op.results, strict=False):
            m.values[pr] = r
        operands = op.operands
        if len(plan.operands) != len(operands):
            raise _Mismatch(lambda: f"{_node(pop.results[0]) if pop.results else pop.name}: "
                            f"{len(operands)} operands, the pattern has {len(plan.operands)}")
        if plan.commutative and _alpha_one(op):
            saved = m.copy()
            try:
                for pv, v in zip(plan.operands, operands, strict=True):
                    self._value(pv, v, m)
                return
            except _Mismatch as first:
                _restore(m, saved)
                try:
                    for pv, v in zip(plan.operands, reversed(operands), strict=True):
                        self._value(pv, v, m)
                except _Mismatch:
                    raise first from None
                return
        for pv, v in zip(plan.operands, operands, strict=True):
            self._value(pv, v, m)

    def _property_reason(self, pop: Operation, op: Operation, name: str) -> str:
        node = _node(pop.results[0]) if pop.results else pop.name
        got, want = op.properties.get(name), pop.properties.get(name)
        return f"{node}: property '{name}' is {_show(op, name, got)}, the pattern wants {_show(pop, name, want)}"

    def _other_output(self, output: SSAValue, m: Match) -> None:
        """An output not reached from the anchor: find its op among the users of matched values."""
        if output in m.values:
            return
        pop = output.owner
        if not isinstance(pop, Operation):
            raise _Mismatch(lambda: f"{_node(output)}: an output that is an argument is not supported")
        for pv in pop.operands:
            if pv not in m.values:
                continue
            for use in m.values[pv].uses:
                if type(use.operation) is not type(pop) or use.operation in m.ops.values():
                    continue
                trial = m.copy()
                try:
                    self._value(output, use.operation.results[output.index], trial)
                except _Mismatch:
                    continue
                _restore(m, trial)
                return
        raise _Mismatch(lambda: f"{_node(output)}: no {pop.name} using the matched values (output of the pattern)")

    def _check_uses(self, m: Match) -> None:
        matched: set[Operation] | None = None
        for pr in self._inner:
            r = m.values.get(pr)
            if r is None:
                continue
            for use in r.uses:
                if matched is None:
                    matched = set(m.ops.values())
                if use.operation not in matched:
                    raise _Mismatch(lambda pr=pr: f"{_node(pr)}: has users outside the pattern")

    def _check_placement(self, m: Match, anchor: Operation) -> None:
        at = self._insertion_point(m, anchor)
        for i, value in m.inputs.items():
            owner = value.owner
            if (isinstance(owner, Operation) and owner.parent_block() is at.parent_block() and owner is not at
                    and not owner.is_before_in_block(at)):
                raise _Mismatch(lambda i=i: f"argument %{self.arg_names[i]}: defined after the first output, "
                                "so the replacement cannot be placed")

    # --- rewriting -----------------------------------------------------------------------------

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if type(op) is not self.ROOTS[0]:
            return None
        m = self.match(op)
        if isinstance(m, str):
            return self.fail(op, "%s", m)
        reason = self.rewrite(m, op, rewriter)
        if reason is not None:
            return self.fail(op, "%s", reason)

    def rewrite(self, m: Match, anchor: Operation, rewriter: PatternRewriter) -> str | None:
        """Put the replacement in; or, when its results' types differ from the matched outputs'
        (the replacement broadcasts differently), change nothing and say why."""
        mapping: dict[SSAValue, SSAValue] = {a: m.inputs[i] for i, a in enumerate(self._replacement_args)
                                             if i in m.inputs}
        new_ops: list[Operation] = []
        for rop in self._replacement_body:
            new = self._build(rop, mapping, m, anchor)
            new_ops.append(new)
            for rr, r in zip(rop.results, new.results, strict=True):
                mapping[rr] = r
        for output, routput in zip(self.outputs, self.replacement_outputs, strict=True):
            if mapping[routput].type != m.values[output].type:
                for new in reversed(new_ops):
                    new.drop_all_references()
                return (f"{_node(output)}: the replacement computes {mapping[routput].type}, "
                        f"the match {m.values[output].type}")
        if new_ops:
            rewriter.insert(new_ops, InsertPoint.before(self._insertion_point(m, anchor)))
        for output, routput in zip(self.outputs, self.replacement_outputs, strict=True):
            old, new = m.values[output], mapping[routput]
            if new.owner in new_ops and old.name_hint and not new.name_hint:
                new.name_hint = old.name_hint
            rewriter.replace_all_uses_with(old, new)
        for pop in reversed(self._body):  # users before producers
            op = m.ops.get(pop)
            if op is not None and all(not r.uses for r in op.results):
                rewriter.erase(op)
        return None

    def _insertion_point(self, m: Match, anchor: Operation) -> Operation:
        """The anchor, or with several outputs the first of their ops (the replacement must
        dominate every use of every output)."""
        first = anchor
        for output in self.outputs[1:]:
            op = m.values[output].owner
            if isinstance(op, Operation) and op.is_before_in_block(first):
                first = op
        return first

    def _build(self, rop: Operation, mapping: dict[SSAValue, SSAValue], m: Match, anchor: Operation) -> Operation:
        properties = dict(rop.properties)
        for name in self.wildcards & set(properties):
            if name in m.properties and self._traced[name] == properties[name]:
                properties[name] = m.properties[name]
        operands = [mapping[o] for o in rop.operands]
        types = [r.type for r in rop.results]
        new = type(rop).create(operands=operands, result_types=types, properties=properties,
                               attributes=dict(rop.attributes), location=anchor.location)
        if isinstance(new, aten.AtenOp):
            inferred = new.infer_result_types()
            if list(inferred) != types:
                new.drop_all_references()
                new = type(rop).create(operands=operands, result_types=list(inferred), properties=properties,
                                       attributes=dict(rop.attributes), location=anchor.location)
        return new


def _show(op: Operation, name: str, attr: Attribute | None) -> str:
    """A property as the Python value `op.arg` gives (`[-1]`, `1e-05`), else as xDSL prints it."""
    if attr is None:
        return "absent"
    if isinstance(op, aten.AtenOp):
        try:
            return repr(op.arg(name))
        except Exception:  # not a schema argument (e.g. operandSegmentSizes)
            pass
    return str(attr)


def _same_number(a: Attribute | None, b: Attribute) -> bool:
    """Whether two scalar properties hold the same number in an int and a float spelling (`2`, `2.0`);
    bools (`i1`) are not numbers here."""
    numbers = (builtin.IntegerAttr, builtin.FloatAttr)
    if not (isinstance(a, numbers) and isinstance(b, numbers)) or type(a) is type(b):
        return False
    if any(isinstance(x, builtin.IntegerAttr) and x.type == builtin.i1 for x in (a, b)):
        return False
    return a.value.data == b.value.data


def _alpha_one(op: Operation) -> bool:
    alpha = op.properties.get("alpha")
    return alpha is None or getattr(getattr(alpha, "value", None), "data", None) == 1


def _restore(m: Match, saved: Match) -> None:
    m.values, m.ops, m.properties, m.inputs = saved.values, saved.ops, saved.properties, saved.inputs


def _returned(function: func.FuncOp) -> list[SSAValue]:
    last = function.body.block.last_op
    return list(last.operands) if isinstance(last, func.ReturnOp) else []


def _body_ops(function: func.FuncOp):
    return (op for op in function.body.block.ops if not isinstance(op, func.ReturnOp))


def _traced_value(search: func.FuncOp, name: str) -> Attribute | None:
    for op in _body_ops(search):
        if name in op.properties:
            return op.properties[name]
    return None


_CONTEXT: Context | None = None


def _context() -> Context:
    global _CONTEXT
    if _CONTEXT is None:
        ctx = ForgeContext()  # aten ops one by one: loading the whole dialect defines 426 classes
        for dialect in (builtin.Builtin, func.Func):
            ctx.load_dialect(dialect)
        ctx.register_dialect("aten", lambda: aten.Aten)
        _CONTEXT = ctx
    return _CONTEXT
