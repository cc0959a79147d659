"""The documented differences from torch: where a runtime's kernels give other values than torch's
and Forge does not emit a correction (it would cost more than 1% of latency on the zoo), the
difference is listed here, with the special values that trigger it. docs/coverage.md shows the
table; tests/fuzz pins each entry with a case that still shows it (an entry whose difference is
gone fails its test, so the list cannot go stale).

A fuzz case that differs from torch at a stage is a documented deviation, not a failure, when an
entry names its overload's packet and that stage, the case's arguments hold one of the entry's
trigger values (`special_values`: nan, inf, -0.0, subnormal), and the difference is of the
entry's kind (`problems`: how forge.testing.fuzz.compare words it). Each entry has an `example`
that shows it: tests/fuzz/test_deviations.py runs the examples and fails when one matches torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forge.testing.fuzz.cases import Call, Case


@dataclass(frozen=True)
class Deviation:
    id: str
    packets: frozenset[str]
    """The overloads' packets (`aten::amax`) that show it."""
    stages: frozenset[str]
    """The runtimes (stages) that show it."""
    triggers: frozenset[str]
    """Special values of the arguments that trigger it (any of them)."""
    what: str
    """What the runtime gives instead of torch's value, for the docs."""
    problems: tuple[str, ...] = ("NaN differs",)
    """How the difference starts (compare's wording): other differences of the same case are failures."""
    example: str = ""
    """A call that shows it on every stage of `stages`: `aten::<op>.<overload>(<arguments>)`, the arguments
    a Python expression over torch, nan and inf. tests/fuzz/test_deviations.py pins it."""


def _packets(*names: str) -> frozenset[str]:
    return frozenset(f"aten::{n}" for n in names)


BOTH = frozenset({"openvino", "nnfactory"})

DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "nan-through-max-min",
        _packets("relu", "clamp", "hardtanh", "minimum", "maximum", "amax", "max_pool1d", "max_pool2d"),
        BOTH, frozenset({"nan"}),
        "NaN is dropped: relu(nan) = 0, clamp(nan, -1, 1) = -1, minimum/maximum(nan, 1) = 1, amax and "
        "max-pooling over a window with a NaN give the largest other value (OpenVINO's Relu, Clamp, "
        "Minimum, Maximum, ReduceMax and MaxPool CPU kernels; torch propagates NaN)",
        example="aten::relu.default(torch.tensor([nan, 1.0]))",
    ),
    Deviation(
        "nan-ordered-compare",
        _packets("gt", "ge"), BOTH, frozenset({"nan"}),
        "`nan > x` and `nan >= x` are true on OpenVINO (ge on both runtimes, gt on the openvino one); "
        "torch gives false (IEEE: every ordered comparison with NaN is false)",
        problems=("value differs",),
        example="aten::ge.Scalar(torch.tensor([nan, 1.0]), 0.0)",
    ),
    Deviation(
        "softmax-of-inf",
        _packets("softmax", "_softmax", "log_softmax", "_log_softmax"), BOTH, frozenset({"inf"}),
        "a row holding +inf and a finite value: torch gives NaN in the whole row (inf - inf), OpenVINO's "
        "SoftMax gives NaN at the inf but 0 at the finite values (log_softmax: -inf there); rows of only "
        "infinities are NaN on both",
        example="aten::softmax.int(torch.tensor([[inf, 1.0]]), 1)",
    ),
    Deviation(
        "subnormal-divisor-is-zero",
        _packets("div"), BOTH, frozenset({"subnormal"}),
        "a subnormal divisor counts as zero (OpenVINO's CPU plugin runs with denormals-are-zero): 0 / 1e-40 "
        "is nan and 0.5 / 3e-39 is inf where torch gives 0 and a finite quotient",
        problems=("NaN differs", "infinity differs"),
        example="aten::div.Tensor(torch.tensor([0.0, 1.0]), torch.tensor([1e-40, 1e-40]))",
    ),
    Deviation(
        "exp-of-nan",
        _packets("exp"), BOTH, frozenset({"nan"}),
        "exp(nan) is +inf on OpenVINO's Exp CPU kernel; torch gives nan",
        example="aten::exp.default(torch.tensor([nan, 0.0]))",
    ),
)


def documented(case: Call, stage: str, problem: str) -> Deviation | None:
    """The entry explaining the case's difference at `stage`, if any."""
    packet = case.packet
    specials = case.special_values()
    for dev in DEVIATIONS:
        if (packet in dev.packets and stage in dev.stages and dev.triggers & specials
                and problem.removeprefix("result ").lstrip("0123456789: ").startswith(dev.problems)):
            return dev
    return None


def example_case(dev: Deviation) -> Case:
    """The entry's example as a fuzz case."""
    import math

    import torch

    from forge.testing.fuzz.cases import Case

    op, _, rest = dev.example.partition("(")  # eval: the text is this table's own, never input
    args = eval(f"({rest[:-1]},)", {"torch": torch, "nan": math.nan, "inf": math.inf})
    return Case(op, args)
