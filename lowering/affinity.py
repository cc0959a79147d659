"""Device affinity: which device (`npu` or `cpu`) runs each npuir op.

`AffinityPolicy` is what `lower-aten-to-npuir` consults for every op it creates. An op goes to the
NPU when NNFactory can express it, which the kind table says (`forge.kinds`,
`KindSpec.npu_reason`): its kind has an NPU lowering (matmul/linear with a fused activation,
attention, softmax, norms (the backend composes them from reductions), the elementwise families,
reductions, data movement, gather) and it computes in floating point: every operand and the
result have an element type in `forge.kinds.NPU_ELEMENTS` (f32/f16/bf16, plus i1 for masks and
comparisons), except integer index operands (a gather's indices), and integers that data movement
moves when they are proven to fit in 32 bits (`small_ints`: indices made by a topk, small constants,
booleans; the lowering tracks them). Everything else runs on the CPU (integer index arithmetic,
integer cumsum, the `npuir.aten` fallback). This module keeps the policy: modes, pins, the final norm.

Modes (`policy=`):
- `npu-first` (default): the rule above;
- `cpu-only`: everything on the CPU (a reference placement);
- `npu-only`: like npu-first, but an op the NPU cannot run is an error instead of a CPU op.

Pinning (the published setup kept embeddings and the final norm on the CPU):
- `cpu_ops`: npuir kinds (`gather`, `softmax`, ...) or aten op names without the `aten.`
  prefix (`embedding`, `index.Tensor`) whose ops go to the CPU whatever they are;
- `pin_final_norm`: the last layer_norm / rms_norm of the function runs on the CPU.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from dialects.npuir import Device
from forge.kinds import KINDS

POLICIES = ("npu-first", "cpu-only", "npu-only")

NPU_KINDS = frozenset(name for name, spec in KINDS.items() if spec.npu)
"""npuir kinds NNFactory has (or composes: norms from reductions): the kind table's, read here."""

NORM_KINDS = frozenset({"layer_norm", "rms_norm"})
NORM_ATEN_OPS = frozenset({"aten.layer_norm", "aten.native_layer_norm", "aten.rms_norm", "aten.add_layer_norm"})
"""The final norm `pin_final_norm` pins may have absorbed its residual add (`fuse-ops`)."""


class NoDeviceError(Exception):
    """No device can run an op under the policy (the message says why)."""


@dataclass(frozen=True)
class AffinityPolicy:
    mode: str = "npu-first"
    cpu_ops: frozenset[str] = field(default_factory=frozenset)
    pin_final_norm: bool = False

    def __post_init__(self) -> None:
        if self.mode not in POLICIES:
            raise ValueError(f"unknown affinity policy '{self.mode}' (expected one of {', '.join(POLICIES)})")
        object.__setattr__(self, "cpu_ops", frozenset(n.removeprefix("aten.") for n in self.cpu_ops))

    @staticmethod
    def of(mode: str = "npu-first", cpu_ops: Iterable[str] = (), pin_final_norm: bool = False) -> AffinityPolicy:
        return AffinityPolicy(mode, frozenset(cpu_ops), pin_final_norm)

    def npu_reason(
        self, kind: str, in_types: Sequence[Attribute], out_type: Attribute, small_ints: bool = False
    ) -> str | None:
        """Why the NPU cannot run an op of `kind` on these types (None when it can): the kind
        table's answer (`KindSpec.npu_reason`; `small_ints`: the integer operands fit in 32 bits)."""
        spec = KINDS.get(kind)
        if spec is None:
            return f"NNFactory has no '{kind}' op"
        return spec.npu_reason(in_types, out_type, small_ints)

    def is_pinned(self, kind: str, aten_name: str) -> bool:
        return kind in self.cpu_ops or aten_name.removeprefix("aten.") in self.cpu_ops

    def device(
        self,
        kind: str,
        in_types: Sequence[Attribute],
        out_type: Attribute,
        *,
        aten_name: str = "",
        pinned: bool = False,
        small_ints: bool = False,
    ) -> Device:
        """The device of a new op of `kind`; `pinned` forces the CPU (e.g. the final norm);
        `small_ints`: its integer operands are proven to fit in 32 bits (`KindSpec.npu_reason`).
        NoDeviceError under `npu-only` when the NPU cannot run it."""
        if self.mode == "cpu-only":
            return Device.CPU
        if pinned or self.is_pinned(kind, aten_name):
            if self.mode == "npu-only":
                raise NoDeviceError(f"'{kind}' is pinned to the cpu, which policy npu-only excludes")
            return Device.CPU
        reason = self.npu_reason(kind, in_types, out_type, small_ints)
        if reason is None:
            return Device.NPU
        if self.mode == "npu-only":
            raise NoDeviceError(f"the npu cannot run it ({reason}) and policy npu-only excludes the cpu")
        return Device.CPU


def final_norm(ops: Iterable[object]) -> object | None:
    """The last aten norm op among `ops` (what `pin_final_norm` pins), or None."""
    last = None
    for op in ops:
        if getattr(op, "name", None) in NORM_ATEN_OPS:
            last = op
    return last


def is_tensor(t: Attribute) -> bool:
    return isinstance(t, TensorType)
