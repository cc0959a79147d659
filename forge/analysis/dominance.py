"""SSA dominance: every use must be dominated by its definition.

xDSL 0.75's `Operation.verify()` does not check it, so IR that uses a value before defining
it (swapped lines, a reused SSA name) verifies and then crashes a pass deep inside with a
`KeyError`. `verify_module` runs xDSL's verifier and then this check, so such IR is rejected
up front with a diagnostic at the offending op, as mlir-opt does.

The walk is linear: a value is visible in a block after its definition, in blocks its block
dominates, and in regions nested below that point.

Region kinds follow MLIR's `RegionKindInterface`: only SSACFG regions need dominance. A region is
a graph region (order does not matter: every value of the region is visible everywhere in it,
including in regions nested below) when its op
- is `builtin.module` or another op whose regions are graph regions in xDSL/MLIR
  (`GRAPH_REGION_OPS`: the e-graph `equivalence.graph`, xDSL's stand-in for any op `test.op`),
- carries the `HasGraphRegion` trait (for Forge's or a plug-in's own ops), or
- is unregistered (`--allow-unregistered-dialect`): MLIR's `mayBeGraphRegion` assumes so, since
  nothing is known about it.
An e-graph may also live in a block of an SSACFG region (xDSL's eqsat passes build one in a
`func.func` body): a block holding an e-class op (`EGRAPH_CLASS_OPS`, `equivalence.class`) is
checked as a graph block, since classes and the ops they contain refer to each other in cycles
(`x = a * one; a = class(x, a)`). The region's other blocks keep SSA dominance.
xDSL 0.75 has no region-kind notion of its own (its verifier checks no dominance at all).
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.traits import OpTrait
from xdsl.utils.exceptions import VerifyException

from forge.diagnostics import with_op


class HasGraphRegion(OpTrait):
    """Every region of the op is a graph region (MLIR's `RegionKind::Graph`): no dominance inside."""


GRAPH_REGION_OPS: frozenset[str] = frozenset({"builtin.module", "equivalence.graph", "test.op"})
"""Ops of xDSL's dialects whose regions are graph regions (they cannot carry `HasGraphRegion`).
xDSL's generic `test.op` stands for an arbitrary op, as an unregistered op does in MLIR's tests."""


EGRAPH_CLASS_OPS: frozenset[str] = frozenset({"equivalence.class", "equivalence.const_class"})
"""Ops whose results are e-classes: a block that holds one is an e-graph, whose order does not matter."""


def has_ssa_dominance(op: Operation) -> bool:
    """Whether the regions of `op` are SSACFG regions, where every use must be dominated."""
    return not (
        op.name in GRAPH_REGION_OPS or isinstance(op, UnregisteredOp) or op.has_trait(HasGraphRegion)
    )


def verify_module(module: Operation) -> None:
    """xDSL's verifier, then the SSA dominance check (raises `VerifyException`)."""
    module.verify()
    verify_dominance(module)


def verify_dominance(root: Operation) -> None:
    """Raise a `VerifyException` (attached to the op) at the first use not dominated by its def."""
    _check_op_regions(root, visible=set())


def _check_op_regions(op: Operation, visible: set[SSAValue]) -> None:
    ssa = has_ssa_dominance(op) if op.regions else True
    for region in op.regions:
        if not ssa:
            _check_graph_region(region, visible)
        else:
            _check_ssa_region(region, visible)


def _check_graph_region(region: Region, visible: set[SSAValue]) -> None:
    """Every value of the region is visible everywhere in it."""
    defined = {v for block in region.blocks for v in _block_values(block)}
    inner = visible | defined
    for block in region.blocks:
        for op in block.ops:
            _check_operands(op, inner)
            _check_op_regions(op, inner)


def _check_ssa_region(region: Region, visible: set[SSAValue]) -> None:
    blocks = list(region.blocks)
    dominance = DominanceInfo(region) if len(blocks) > 1 else None
    for block in blocks:
        scope = set(visible)
        if dominance is not None:
            for other in blocks:
                if other is not block and dominance.dominates(other, block):
                    scope.update(_block_values(other))
        scope.update(block.args)
        if _is_egraph(block):
            scope.update(_block_values(block))
        for op in block.ops:
            _check_operands(op, scope)
            _check_op_regions(op, scope)
            scope.update(op.results)


def _is_egraph(block: Block) -> bool:
    return any(op.name in EGRAPH_CLASS_OPS for op in block.ops)


def _block_values(block: Block) -> Iterable[SSAValue]:
    yield from block.args
    for op in block.ops:
        yield from op.results


def _check_operands(op: Operation, scope: set[SSAValue]) -> None:
    for index, operand in enumerate(op.operands):
        if operand not in scope:
            raise with_op(VerifyException(_message(op, index, operand)), op)


def _message(op: Operation, index: int, operand: SSAValue) -> str:
    name = f"%{operand.name_hint}" if operand.name_hint else "the value"
    if isinstance(operand, OpResult):
        definition = f"defined by '{operand.op.name}'"
        same_block = operand.op.parent_block() is op.parent_block()
    elif isinstance(operand, BlockArgument):
        definition = "a block argument"
        same_block = operand.block is op.parent_block()
    else:  # pragma: no cover - every SSAValue is one of the two
        definition, same_block = "defined elsewhere", False
    where = "before its definition" if same_block else "where its definition does not dominate"
    return f"operand #{index} uses {name} ({definition}) {where}"
