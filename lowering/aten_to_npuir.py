"""aten -> npuir: every op becomes typed npuir ops with a device and a virtual register.

Pass `lower-aten-to-npuir{policy=npu-first cpu-ops=gather pin-final-norm=true}`.

One forward sweep over each function body builds a new block (no rewriter, no text; the sweep is
`FunctionLowering` in `lowering/function_lowering.py`):

- graph inputs become `npuir.input` (on the cpu: inputs live on the host), `aten.weight` and
  `aten.constant` become `npuir.weight` / `npuir.constant`, factories (`arange`, `full`,
  `zeros_like`, ...) become constants (uniform ones as splats, whatever their size);
- each aten op maps to one or a few npuir ops (the rules of `lowering/aten_rules/`, one module
  per op family): matmul-like ops to `matmul`/`linear`, scalar operands to rank-0 constants,
  torch's type promotion to explicit `convert`s, negative dims and slice bounds normalized,
  composites for what has no single family (log_softmax, repeat, stack, triu/tril, diff, clamp, ...);
- no-ops disappear: views to the same type, `clone`/`contiguous`/`alias`/`detach`, eval-mode
  `dropout`, same-dtype `to`, and `_assert_tensor_metadata` (shapes are static and checked);
- anything without a rule (or a variant a rule does not cover, e.g. `div` with a rounding mode,
  multi-index `index.Tensor`, training-mode dropout) becomes `npuir.aten`, the host fallback that
  runs the aten op unchanged, so lowering never fails on an op the CPU can run;
- ops whose results are never used are dropped (one backward sweep), so are unused results.

Each created op gets its device from the `AffinityPolicy` (`lowering/affinity.py`) and the
next virtual register (`vreg`, one per SSA result, numbered in program order). Weights and
constants take the device of their first NPU user (they are device-neutral data); inputs are on
the cpu. An op no device can run under the policy (npu-only and a CPU-only op, or an op that
is not an aten op) is an error naming it with its location.

`predict_devices` answers "which device would each aten op get?" without changing the module
(what `forge-opt --view-op-graph` colours aten ops with).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from lowering import aten_rules  # noqa: F401 - importing it registers every rule FunctionLowering applies
from lowering.affinity import AffinityPolicy
from lowering.function_lowering import FunctionLowering, LoweringStats
from lowering.stats import functions


def lower_module(module: ModuleOp, policy: AffinityPolicy) -> LoweringStats:
    """Lower every func.func of `module` from aten to npuir (in place)."""
    total = LoweringStats()
    for fn in functions(module):
        total.add(FunctionLowering(policy).run(fn))
    return total


def predict_devices(module: ModuleOp, policy: AffinityPolicy) -> dict[Operation, frozenset[str]]:
    """For each aten op of `module`, the devices ('npu', 'cpu') of the npuir ops it becomes under
    `policy`; ops that become no op (or only weights and constants) are absent.

    Lowers a copy, so `module` is unchanged; a function the lowering rejects (e.g. one that is
    not all aten) gets no prediction.
    """
    copy = module.clone()
    original_of = dict(zip(copy.walk(), module.walk(), strict=True))
    found: dict[Operation, set[str]] = {}

    def record(aten_op: Operation, npuir_op: Operation) -> None:
        device = npuir_op.properties["device"].data.value
        found.setdefault(aten_op, set()).add(str(device))

    for fn in functions(copy):
        before = set(found)
        try:
            FunctionLowering(policy, on_emit=record).run(fn)
        except Exception:
            for op in set(found) - before:  # no half predictions for this function
                del found[op]
    return {original_of[op]: frozenset(devices) for op, devices in found.items() if op in original_of}


@dataclass(frozen=True)
class LowerAtenToNpuirPass(ModulePass):
    """aten -> npuir with device affinity from an `AffinityPolicy` (see lowering/affinity.py).

    Options: `policy` (npu-first | cpu-only | npu-only), `cpu-ops` (npuir kinds or aten op names
    pinned to the cpu, e.g. `cpu-ops=gather`), `pin-final-norm` (the last norm on the cpu).
    Records `npuir.lowering = {vregs, fallbacks, dropped}` on the module.
    """

    name: ClassVar[str] = "lower-aten-to-npuir"

    policy: str = "npu-first"
    cpu_ops: tuple[str, ...] = ()
    pin_final_norm: bool = False

    def __post_init__(self) -> None:
        self.affinity()  # ValueError on an unknown policy: reported as an invalid option

    def affinity(self) -> AffinityPolicy:
        return AffinityPolicy.of(self.policy, self.cpu_ops, self.pin_final_norm)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        op.attributes["npuir.lowering"] = lower_module(op, self.affinity()).as_attribute()
