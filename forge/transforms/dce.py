"""Dead code elimination, including the no-op ops that torch.export leaves in an eval-mode graph.

One reverse sweep over every block (users are visited before their definitions, so a chain of
dead ops goes in the same sweep, in linear time). On each op:

1. an op with no used result and no effect is erased (any dialect: `Pure`/`NoMemoryEffect` ops,
   or whatever xDSL's effect analysis proves trivially dead; this pass replaces xDSL's `dce`);
2. otherwise the patterns below may forward it to its input or erase it:
   - `aten._assert_tensor_metadata` is erased: shapes and dtypes are static and our verifier
     checks them;
   - `aten.dropout` with `train=false` or `p=0` is the identity;
   - `aten.clone`, `aten.contiguous`, `aten.alias`, `aten.detach`, `aten.lift_fresh_copy` are the
     identity on values (Forge IR has value semantics: no strides, no aliasing, no autograd),
     except that a copy read by a `view` stays: the reference semantics is eager torch, whose
     `view` rejects a transposed layout that the copy made contiguous;
   - `aten.to.dtype`, `aten.to.dtype_layout`, `aten.to.device`, `aten._to_copy` are the identity
     when they keep the type (a real dtype conversion stays) and name no device other than the
     CPU the graph was exported on (a device move stays).

On a module that is not plain dataflow (`forge.transforms.generic_ir`: graph or multi-block
regions, read-only ops) xDSL's own `dce` runs first (liveness: dead cycles, unreachable blocks),
then the sweep; on plain dataflow the sweep alone is exactly xDSL's `dce`. So on IR without aten
ops this pass is xDSL's `dce`, and the aten patterns are a strict extension.

The patterns are `ForgePattern`s (fire counts, `--explain-pattern`), applied by the shared driver
(`forge.patterns.PatternTable`, `sweep`) to the ops that survive the deadness check.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import get_args

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern
from xdsl.rewriter import Rewriter
from xdsl.traits import IsTerminator, MemoryEffect, NoMemoryEffect, SymbolOpInterface
from xdsl.transforms.dead_code_elimination import region_dce, would_be_trivially_dead

from dialects import aten
from forge.patterns import ForgePattern, PatternTable, count_fired, sweep
from forge.transforms.generic_ir import is_plain_dataflow
from forge.transforms.traced_patterns import TracedPattern

# --- deadness --------------------------------------------------------------------------------------

_EFFECT_FREE: dict[type[Operation], bool] = {}


def _statically_effect_free(cls: type[Operation]) -> bool | None:
    """True when every op of `cls` is removable once unused; None when it depends on the op."""
    cached = _EFFECT_FREE.get(cls)
    if cached is None and cls not in _EFFECT_FREE:
        effects = cls.get_traits_of_type(MemoryEffect)
        static = (
            bool(effects)
            and all(isinstance(t, NoMemoryEffect) for t in effects)
            and not cls.has_trait(IsTerminator)
            and not cls.has_trait(SymbolOpInterface)
        )
        cached = _EFFECT_FREE[cls] = True if static else None
    return cached


def is_dead(op: Operation) -> bool:
    """Whether `op` has no used result and no effect, so erasing it changes nothing."""
    for result in op.results:
        if result.first_use is not None:
            return False
    if _statically_effect_free(type(op)):
        return True
    return would_be_trivially_dead(op)


def erase_dead_operands(op_operands: Sequence[SSAValue]) -> int:
    """Erase the defining ops of `op_operands` that are now dead (one level); returns how many."""
    erased = 0
    for value in op_operands:
        owner = value.owner
        if isinstance(owner, Operation) and owner.parent is not None and is_dead(owner):
            Rewriter.erase_op(owner)
            erased += 1
    return erased


# --- patterns --------------------------------------------------------------------------------------


def forward_to_input(op: Operation, rewriter: PatternRewriter) -> None:
    """Replace the single-result `op` by its first operand (types are equal) and erase it."""
    rewriter.replace(op, [], [op.operands[0]])


_STRIDE_SENSITIVE = (aten.ViewOp, aten.UnsafeViewOp)
"""Ops whose eager kernel rejects some layouts (`view` of a transposed tensor): the reference
interpreter runs eager torch, so a `contiguous` feeding them must stay."""


_COPIES = (aten.ContiguousOp, aten.CloneOp, aten.LiftFreshCopyOp, aten.ToCopyOp)


def may_relayout(op: Operation) -> bool:
    """Whether eager torch may give `op`'s result other strides than its input's: `contiguous`,
    the copies (`clone` of an expanded tensor is dense), a conversion with `copy=true` or a
    memory format. `alias`, `detach` and a same-type `to` return their input's layout."""
    if isinstance(op, _COPIES):
        return True
    return "memory_format" in op.properties or ("copy" in op.properties and op.arg("copy"))


def read_by_a_view(value: SSAValue) -> bool:
    return any(isinstance(use.operation, _STRIDE_SENSITIVE) for use in value.uses)


class EraseAssertTensorMetadata(ForgePattern):
    """`aten._assert_tensor_metadata` checks what the IR types already state: erase it."""

    ROOTS = (aten.AssertTensorMetadataOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.AssertTensorMetadataOp, rewriter: PatternRewriter) -> None:
        rewriter.erase(op)


class ForwardEvalDropout(TracedPattern):
    """`aten.dropout` with `train=false` or `p=0` is its input (written in PyTorch:
    forge/transforms/traced_patterns.py; any `p` and `train`, then the predicate decides)."""

    KEY = "eval_dropout"
    OPTIONS = {"wildcards": ("p", "train"), "predicate": lambda m: not m.root.arg("train") or m.root.arg("p") == 0}


_ValueCopy = aten.CloneOp | aten.ContiguousOp | aten.AliasOp | aten.DetachOp | aten.LiftFreshCopyOp


class ForwardValueCopy(ForgePattern):
    """`clone`, `contiguous`, `alias`, `detach`, `lift_fresh_copy`: the identity on values."""

    ROOTS = get_args(_ValueCopy)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _ValueCopy, rewriter: PatternRewriter) -> None:
        if op.result.type != op.input.type:
            return self.fail(op, "result type differs from the input type")
        if may_relayout(op) and read_by_a_view(op.result):
            return self.fail(op, "a view reads the copy (eager view may need its layout)")
        forward_to_input(op, rewriter)


_HOME_DEVICES = (None, "cpu")
"""Devices a conversion may name and still be a no-op: the graph is exported (and typed) on CPU."""


_Conversion = aten.ToDtypeOp | aten.ToDtypeLayoutOp | aten.ToDeviceOp | aten.ToCopyOp


class ForwardSameTypeConversion(ForgePattern):
    """`to.dtype`/`to.dtype_layout`/`to.device`/`_to_copy` that keep the type (and device): input."""

    ROOTS = get_args(_Conversion)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: _Conversion, rewriter: PatternRewriter) -> None:
        if op.result.type != op.input.type:
            return self.fail(op, f"converts {op.input.type} to {op.result.type}")
        if "device" in op.properties and op.properties["device"].data not in _HOME_DEVICES:
            return self.fail(op, f"moves to device {op.properties['device'].data}")
        if may_relayout(op) and read_by_a_view(op.result):
            return self.fail(op, "a view reads the copy (eager view may need its layout)")
        forward_to_input(op, rewriter)


DCE_PATTERNS: tuple[type[ForgePattern], ...] = (
    EraseAssertTensorMetadata,
    ForwardEvalDropout,
    ForwardValueCopy,
    ForwardSameTypeConversion,
)


# --- the pass ----------------------------------------------------------------------------------------


def eliminate_dead_code(module: Operation, table: PatternTable | None = None) -> int:
    """One reverse sweep over everything nested in `module` (users before definitions, so a dead
    chain goes at once): a dead op is erased, any other is offered to the patterns. Returns how
    many dead ops were erased."""
    table = table if table is not None else PatternTable(p() for p in DCE_PATTERNS)
    erased_by_xdsl = 0
    if not is_plain_dataflow(module):
        before = sum(1 for _ in module.walk())
        for region in module.regions:
            region_dce(region)
        erased_by_xdsl = before - sum(1 for _ in module.walk())

    def erase_if_dead(op: Operation) -> bool:
        if is_dead(op):
            Rewriter.erase_op(op)
            return True
        table.apply(op)
        return False

    return erased_by_xdsl + sweep(module, erase_if_dead, reverse=True)


@dataclass(frozen=True)
class DcePass(ModulePass):
    """Remove unused side-effect-free ops and eval-mode no-ops (asserts, dropout, clones, same-type `to`).

    Any dialect's unused `Pure` ops go, in one reverse sweep; `aten._assert_tensor_metadata` is
    erased, and `dropout` (eval), `clone`/`contiguous`/`alias`/`detach`/`lift_fresh_copy` and
    conversions to the same type and device are replaced by their input.
    """

    name = "dce"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        count_fired("EraseDeadOp", eliminate_dead_code(op))
