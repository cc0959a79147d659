"""Attention over a KV cache reads the cache before its update: pass `cached-attention`.

A decoder step writes its new key/value rows into the cache and attends over the written cache:

    %k2 = npuir.aten cpu %k_cache, %pos, %k_rows {op = "aten.index_put", present = [0, 0, 1]}
    %v2 = npuir.aten cpu %v_cache, %pos, %v_rows {op = "aten.index_put", ...}
    %a  = npuir.sdpa npu %q, repeat(%k2), repeat(%v2), %mask        (repeat: GQA's reshape-broadcast-reshape)

The write runs on the host (`index_put` is an aten fallback) and the attention on the device, so the
device waits for the host and reads the whole written cache from it at every step (a transfer of the cache
per layer), and the step splits into one segment per layer. The pass makes the attention read the cache
as it was before the write, plus the new rows:

    %a  = npuir.cached_sdpa npu %q, %k_cache, %v_cache, %pos, %k_rows', %v_rows', %mask

(`forge.kinds.linear_algebra.CachedSdpa`: the same value, GQA without the repeat). The writes keep only
their other users (a state's new value, `forge.state`): nothing on the device reads them, so they run
after the device's work and only the new rows cross to the host (`schedule-device-affinity` orders a
state's write after every read of the state, `lower-npuir-to-buffer` lets the device read a state's
buffer in place).

Matched: an npu `sdpa` (no `is_causal`) whose K and V are each an `aten.index_put` of a state (`forge.state`:
a generator's KV cache) writing one 1-D index at dim -2 (no accumulate) with the same index, directly or
through `repeat_kv`'s head repeat; rows of any shape that broadcasts to the written rows (they are reshaped
and broadcast to `[..., n, D]` on their device). States only, because `cached_sdpa` is exact when the rows
it overwrites hold finite values, which a generator's cache does (zeros until written, each position
written once per sequence); an arbitrary tensor may hold an inf there.
The pass records `npuir.cached_attention = {rewritten}` on the module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from dialects import npuir as N
from dialects.shapes import static_shape
from lowering.npuir_to_buffer import state_values
from lowering.stats import PassStats


@dataclass
class CachedAttentionStats(PassStats):
    rewritten: int = 0


@dataclass(frozen=True)
class RowWrite:
    """`cache[..., index, :] = rows` (an `aten.index_put` of one 1-D index at dim -2)."""

    cache: SSAValue
    index: SSAValue
    rows: SSAValue


def row_write(value: SSAValue) -> RowWrite | None:
    """The row write that defines `value`, or None."""
    op = value.owner
    if not isinstance(op, N.AtenCallOp) or op.target.data != "aten.index_put" or op.result_index.value.data != 0:
        return None
    attrs = op.attrs.data
    if set(attrs) - {"present", "accumulate"} or _flag(attrs.get("accumulate")):
        return None
    present = list(attrs["present"].get_values()) if "present" in attrs else []
    cache, *rest = op.operands
    rank = len(static_shape(cache.type))
    if rank < 3 or present != [0] * (rank - 2) + [1] or len(rest) != 2:
        return None
    index, rows = rest
    if len(static_shape(index.type)) != 1:
        return None
    return RowWrite(cache, index, rows)


def _flag(attr: object) -> bool:
    value = getattr(attr, "value", None)
    return bool(getattr(value, "data", value)) if value is not None else False


def unrepeated(value: SSAValue) -> tuple[SSAValue, list[Operation]]:
    """`value` without `repeat_kv`'s head repeat (`[.., H, T, D]` -> reshape `[.., H, 1, T, D]` -> broadcast
    `[.., H, r, T, D]` -> reshape `[.., H * r, T, D]`), and the repeat's ops (outermost first); `value`
    itself and no ops when it is not one."""
    outer = value.owner
    if not isinstance(outer, N.ReshapeOp):
        return value, []
    middle = outer.operands[0].owner
    if not isinstance(middle, N.BroadcastOp):
        return value, []
    inner = middle.operands[0].owner
    if not isinstance(inner, N.ReshapeOp):
        return value, []
    base = inner.operands[0]
    *lead, h, t, d = static_shape(base.type)
    five = static_shape(middle.results[0].type)
    if static_shape(inner.results[0].type) != (*lead, h, 1, t, d) or len(five) != len(lead) + 4:
        return value, []
    r = five[-3]
    if five != (*lead, h, r, t, d) or static_shape(value.type) != (*lead, h * r, t, d):
        return value, []
    return base, [outer, middle, inner]


class _Builder:
    """New npuir ops inserted before an anchor op, numbered after the function's last vreg."""

    def __init__(self, block: Block):
        self.block = block
        self.vreg = 1 + max((op.vreg.value.data for op in block.ops if isinstance(op, N.NpuirOp)), default=-1)

    def add(self, before: Operation, cls: type[N.NpuirOp], operands: list[SSAValue], result: TensorType,
            device: N.DeviceAttr, **params: object) -> SSAValue:
        op = cls.make(operands, result, device, self.vreg, **params)
        self.vreg += 1
        self.block.insert_op_before(op, before)
        return op.results[0]


def _rows_as_written(b: _Builder, before: Operation, write: RowWrite) -> SSAValue:
    """The rows `[..., n, D]` the write stores (index_put broadcasts its values to them)."""
    cache = static_shape(write.cache.type)
    target = (*cache[:-2], static_shape(write.index.type)[0], cache[-1])
    rows = write.rows
    shape = static_shape(rows.type)
    owner = rows.owner
    device = owner.device if isinstance(owner, N.NpuirOp) and not isinstance(owner, N.SourceOp) else None
    device = device or N.DeviceAttr(N.Device.NPU)
    element = write.cache.type.element_type
    if shape != target and len(shape) < len(target):
        shape = (1,) * (len(target) - len(shape)) + shape
        rows = b.add(before, N.ReshapeOp, [rows], TensorType(element, shape), device)
    if shape != target:
        rows = b.add(before, N.BroadcastOp, [rows], TensorType(element, target), device)
    return rows


def _rewrite(b: _Builder, sdpa: N.SdpaOp, states: set[SSAValue]) -> bool:
    if sdpa.device.data != N.Device.NPU or N.Params.of(sdpa).get_flag("is_causal"):
        return False
    (k, k_repeat), (v, v_repeat) = unrepeated(sdpa.k), unrepeated(sdpa.v)
    kw, vw = row_write(k), row_write(v)
    if kw is None or vw is None or kw.index != vw.index or len(k_repeat) != len(v_repeat):
        return False
    if kw.cache not in states or vw.cache not in states:
        return False  # cached_sdpa's rewritten rows must be finite: a state's are (a generator's cache)
    if any(math.prod(static_shape(w.rows.type)) == 0 for w in (kw, vw)):
        return False
    operands = [sdpa.q, kw.cache, vw.cache, kw.index, _rows_as_written(b, sdpa, kw), _rows_as_written(b, sdpa, vw)]
    if sdpa.mask is not None:
        operands.append(sdpa.mask)
    scale = N.Params.of(sdpa).get_float("scale")
    params = {} if scale is None else {"scale": scale}
    new = b.add(sdpa, N.CachedSdpaOp, operands, sdpa.results[0].type, sdpa.device, **params)
    sdpa.results[0].replace_all_uses_with(new)
    sdpa.detach()
    sdpa.erase()
    for op in (*k_repeat, *v_repeat):  # outermost first: each is dead once its user is gone
        if op.parent is not None and not op.results[0].uses:
            op.detach()
            op.erase()
    return True


def rewrite_block(block: Block) -> CachedAttentionStats:
    states = set(state_values(block)[0])
    if not states:
        return CachedAttentionStats()
    b = _Builder(block)
    stats = CachedAttentionStats()
    for op in list(block.ops):
        if isinstance(op, N.SdpaOp) and _rewrite(b, op, states):
            stats.rewritten += 1
    return stats


def rewrite_module(module: ModuleOp) -> CachedAttentionStats:
    return CachedAttentionStats.over(module, rewrite_block)


@dataclass(frozen=True)
class CachedAttentionPass(ModulePass):
    """Attention over a written KV cache reads the cache before the write plus the new rows
    (`npuir.cached_sdpa`); records `npuir.cached_attention = {rewritten}` on the module."""

    name: ClassVar[str] = "cached-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        stats = rewrite_module(op)
        if stats.rewritten:
            op.attributes["npuir.cached_attention"] = stats.as_attribute()
