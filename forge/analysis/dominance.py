"""SSA dominance: every use must be dominated by its definition.

xDSL 0.75's `Operation.verify()` does not check it, so IR that uses a value before defining
it (swapped lines, a reused SSA name) verifies and then crashes a pass deep inside with a
`KeyError`. `verify_module` runs xDSL's verifier and then this check, so such IR is rejected
up front with a diagnostic at the offending op, as mlir-opt does.

The walk is linear: a value is visible in a block after its definition, in blocks its block
dominates, and in regions nested below that point. The body of `builtin.module` is a graph
region (MLIR's rule), where order does not matter.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.utils.exceptions import VerifyException

from forge.diagnostics import with_op


def verify_module(module: Operation) -> None:
    """xDSL's verifier, then the SSA dominance check (raises `VerifyException`)."""
    module.verify()
    verify_dominance(module)


def verify_dominance(root: Operation) -> None:
    """Raise a `VerifyException` (attached to the op) at the first use not dominated by its def."""
    _check_op_regions(root, visible=set())


def _check_op_regions(op: Operation, visible: set[SSAValue]) -> None:
    for region in op.regions:
        if isinstance(op, ModuleOp):
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
        for op in block.ops:
            _check_operands(op, scope)
            _check_op_regions(op, scope)
            scope.update(op.results)


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
