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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from forge.testing.fuzz.cases import Call, Case


@dataclass(frozen=True)
class Deviation:
    id: str
    packets: frozenset[str]
    """The overloads' packets (`aten::amax`) that show it."""
    stages: frozenset[str]
    """The runtimes (stages) that show it."""
    triggers: frozenset[str]
    """Special values of the arguments that trigger it (any of them): `Case.special_values`' nan, inf, -0.0,
    subnormal, and `zero` and `huge` (`_computed_triggers`)."""
    what: str
    """What the runtime gives instead of torch's value, for the docs."""
    problems: tuple[str, ...] = ("NaN differs",)
    """How the difference starts (compare's wording): other differences of the same case are failures."""
    example: str = ""
    """A call that shows it on every stage of `stages`: `aten::<op>.<overload>(<arguments>)`, the arguments
    a Python expression over torch, nan and inf. tests/fuzz/test_deviations.py pins it."""
    kernels: str = ""
    """`avx512`: only OpenVINO's AVX-512 (or AMX) CPU kernels show it, a CPU whose kernels are AVX2 gives
    torch's values; '': every CPU."""
    check: Callable[[Call, Sequence[torch.Tensor], Sequence[Any]], bool] | None = None
    """A computation that confirms the entry's explanation on the case's results (expected, got), when
    the entry is not tied to a list of overloads: `packets` ANY."""


def _packets(*names: str) -> frozenset[str]:
    return frozenset(f"aten::{n}" for n in names)


def _forge_packets(*names: str) -> frozenset[str]:
    return frozenset(f"forge::{n}" for n in names)


BOTH = frozenset({"openvino", "nnfactory"})
EVERY_DIFFERENCE = ("NaN differs", "infinity differs", "signed zero differs", "value differs")
"""`problems` of an entry that explains any difference of values its check confirms (not dtypes or shapes)."""
ANY = frozenset({"*"})
"""`packets` of an entry that any overload can show; its `check` confirms each case."""

def computed_in_float32(case: Call, expected: Sequence[torch.Tensor], got: Sequence[Any]) -> bool:
    """forge.testing.fuzz.compare's check that the half tensors upcast give Forge's values."""
    from forge.testing.fuzz import compare

    return compare.computed_in_float32(case, expected, got)


def reproduced_by_openvino(case: Call, expected: Sequence[torch.Tensor], got: Sequence[Any]) -> bool:
    """forge.testing.fuzz.oracle's `kernel` verdict (imported on first use: it loads OpenVINO)."""
    from forge.testing.fuzz import oracle

    return oracle.reproduced_by_openvino(case, expected, got)


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        "nan-through-max-min",
        _packets("relu", "clamp", "hardtanh", "minimum", "maximum", "max_pool1d", "max_pool2d"),
        BOTH, frozenset({"nan"}),
        "NaN is dropped: relu(nan) = 0, clamp(nan, -1, 1) = -1, minimum/maximum(nan, 1) = 1, max-pooling "
        "over a window with a NaN gives the largest other value (OpenVINO's Relu, Clamp, Minimum, Maximum "
        "and MaxPool CPU kernels; torch propagates NaN)",
        example="aten::relu.default(torch.tensor([nan, 1.0]))",
    ),
    Deviation(
        "nan-through-reductions",
        _packets("amax", "amin", "max", "min", "norm", "linalg_vector_norm", "logsumexp", "aminmax",
                 "masked.amax", "masked.amin", "masked.norm", "masked.logsumexp"),  # the last: OpInfo names
        frozenset({"openvino"}), frozenset({"nan"}),
        "a max- or min-reduction over a row holding a NaN gives the row's largest (smallest) other value "
        "on the openvino runtime (OpenVINO's ReduceMax/ReduceMin CPU kernels skip NaN; torch propagates "
        "it), and so do the norms of order +-inf and logsumexp built on them. Not corrected: with the "
        "check the all-infinity correction's cost on hiera grows to +4% (bench/special_values_cost.py); the "
        "nnfactory runtime propagates NaN",
        example="aten::amax.default(torch.tensor([[nan, 1.0]]), [1])",
    ),
    Deviation(
        "nan-ordered-compare",
        _packets("gt", "ge"), frozenset({"openvino"}), frozenset({"nan"}),
        "`nan > x` and `nan >= x` are true on OpenVINO's Greater and GreaterEqual CPU kernels; torch gives "
        "false (IEEE: every ordered comparison with NaN is false), on its AVX-512 kernels (AVX2 ones give "
        "false). The nnfactory runtime's comparisons (compositions) match torch",
        problems=("value differs",),
        kernels="avx512",
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
        "signed-zero-of-sums",
        _packets("mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "layer_norm")
        | _forge_packets("add_layer_norm", "fused_linear"),
        BOTH, frozenset({"-0.0", "zero"}),
        "a zero that is a sum (a dot product, a normalized row) has the sign its kernel's accumulation gives: "
        "OpenVINO's MatMul and MVN CPU kernels start from +0.0 or fuse the terms in another order, torch's "
        "differ by kernel and size (mm with one term gives -7.0 * 0.0 = -0.0). Not corrected: the sign of "
        "every zero of a matmul would cost a compare and a select per element",
        problems=("signed zero differs",),
        example="aten::mm.default(torch.tensor([[-7.0], [0.0]]), torch.tensor([[0.0, 0.0]]))",
    ),
    Deviation(
        "signed-zero-of-elementwise",
        _packets("relu", "clamp", "hardtanh", "maximum", "minimum", "pad"),
        BOTH, frozenset({"-0.0", "zero"}),
        "OpenVINO's Relu and Clamp give +0.0 for -0.0 (torch keeps -0.0), its Pad fills a -0.0 value as "
        "+0.0, Maximum/Minimum of +0.0 and -0.0 return the other operand than torch's (torch's own choice "
        "depends on the element's position: its vectorized loop and its scalar tail differ). Not corrected: "
        "a select after every Relu would break OpenVINO's Convolution+Relu fusion (not measured)",
        problems=("signed zero differs",),
        example="aten::relu.default(torch.tensor([-0.0, 1.0]))",
    ),
    Deviation(
        "nan-inf-through-dot-products",
        _packets("mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "conv2d", "convolution", "_convolution_mode",
                 "conv_transpose1d", "conv_transpose2d", "grid_sampler_2d")
        | _forge_packets("fused_linear", "gated_mlp", "matmul_transposed"),
        BOTH, frozenset({"nan", "inf", "huge"}),
        "OpenVINO's MatMul and Convolution CPU kernels (oneDNN) sum in another order and skip zero terms: a "
        "NaN or an infinity times a zero weight can vanish (1.0 where torch gives nan), huge products that "
        "torch sums to inf - inf = nan come out -inf, and an overflowing half-precision sum stays finite",
        problems=("NaN differs", "infinity differs"),
        example="aten::mm.default(torch.tensor([[-3.4e38, -3.4e38, 0.0, 0.0]]), "
        "torch.tensor([[0.0, 6.5e16], [0.0, -3.4e38], [0.0, 0.0], [0.0, 0.0]]))",
    ),
    Deviation(
        "overflow-in-normalization",
        _packets("layer_norm", "group_norm", "softmax", "_softmax") | _forge_packets("add_layer_norm"),
        BOTH, frozenset({"nan", "huge"}),
        "a row whose variance overflows (|x| near float32's max): torch's variance is inf and the row NaN, "
        "OpenVINO's MVN CPU kernel gives finite values (0.0); a NaN in a softmax row leaves OpenVINO's other "
        "elements finite where torch's whole row is NaN",
        example="aten::layer_norm.default(torch.tensor([0.0, -3.4028234663852886e+38]), [2], None, None, 0.0, False)",
    ),
    Deviation(
        "max-pool-of-minus-infinity",
        _packets("max_pool1d", "max_pool2d"), BOTH, frozenset({"inf"}),
        "a window of only -inf gives the lowest finite value (-3.4e38): OpenVINO's MaxPool CPU kernel starts "
        "from it; torch gives -inf",
        problems=("infinity differs",),
        example="aten::max_pool1d.default(torch.tensor([[[-inf, 1.0]]]), [1], [1], [0], [1])",
    ),
    Deviation(
        "gelu-of-inf",
        _packets("gelu"), BOTH, frozenset({"inf", "huge"}),
        "gelu(inf) is nan and gelu(x) of a finite x near the dtype's max is inf on OpenVINO's Gelu CPU kernel "
        "(its polynomial overflows) on AVX-512 kernels (AVX2 ones give torch's values); torch gives inf and x",
        problems=("NaN differs", "infinity differs"),
        kernels="avx512",
        example="aten::gelu.default(torch.tensor([inf, 1.0], dtype=torch.float16))",
    ),
    Deviation(
        "half-intermediates-in-float32",
        _packets("prod", "mul", "fmod", "remainder", "_adaptive_avg_pool3d"), BOTH, frozenset({"huge"}),
        "torch computes these float16/bfloat16 ops in the half type, where a value beyond its range becomes "
        "an infinity (int32 -2147483647 is -inf in float16, -65504 * -2.5 is inf, and then inf * 0 is nan); "
        "OpenVINO's CPU plugin (f32 inference precision) and Forge compute them in float32, where they stay "
        "finite",
        problems=("NaN differs", "infinity differs"),
        example="aten::prod.default(torch.tensor([-65504.0, -2.5, 0.0], dtype=torch.float16))",
    ),
    Deviation(
        "exp-of-nan",
        _packets("exp"), BOTH, frozenset({"nan"}),
        "exp(nan) is +inf on OpenVINO's Exp CPU kernel; torch gives nan",
        example="aten::exp.default(torch.tensor([nan, 0.0]))",
    ),
    Deviation(
        "zero-minus-zero",
        _packets("rsub", "linspace", "batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training"),
        BOTH, frozenset({"zero", "-0.0"}),
        "0 - 0.0 is -0.0 where torch gives +0.0 (IEEE: x - x is +0.0): a subtraction from a zero constant "
        "runs as a negation on OpenVINO's CPU plugin (its own conversion of rsub gives the same). linspace "
        "computes its second half as end - k * step, so linspace(-2, 0, 50) ends in -0.0; a batch norm "
        "without a bias its shift as 0 - mean * alpha (torch's kernel form), so x = -0.0 with a zero mean "
        "gives -0.0",
        problems=("signed zero differs",),
        example="aten::rsub.Scalar(torch.tensor([0.0, 1.0]), 0.0)",
    ),
    Deviation(
        "half-computed-in-float32",
        ANY, BOTH, frozenset({"half"}),
        "Forge computes float16 and bfloat16 graphs in float32 (forge.compile's frontend; OpenVINO's CPU "
        "plugin runs f32 inference precision too) and rounds the results back; torch's half kernels round "
        "their intermediates to the half type, so a product, a sum or a signed zero can differ. Confirmed "
        "per case: torch's own call with the half tensors upcast to float32 gives Forge's values at every "
        "element (`check`)",
        problems=EVERY_DIFFERENCE,
        example="aten::addmv.default(torch.tensor(0.0, dtype=torch.bfloat16), "
        "torch.tensor([[-0.0]], dtype=torch.bfloat16), torch.tensor([1.0], dtype=torch.bfloat16), beta=-2.0**40)",
        check=computed_in_float32,
    ),
    Deviation(
        "openvino-kernel-reproduced",
        ANY, BOTH, frozenset({"nan", "inf", "-0.0", "zero", "huge", "subnormal", "half", "ties"}),
        "any other difference in special values, signed zeros, huge (cancelling) values or the order of equal "
        "elements (topk's indices) that OpenVINO's own "
        "PyTorch frontend reproduces: the same call converted by `openvino.convert_model` (traced, or with "
        "torch's decompositions) and run on the CPU in f32 gives Forge's values at every differing element "
        "(forge.testing.fuzz.oracle's `kernel` verdict, run on the case: `check`). The campaign table below "
        "counts these per overload (its deviation column); `python -m forge.testing.fuzz.oracle NAME` "
        "shows the two results of a regression case",
        problems=EVERY_DIFFERENCE,
        example="aten::sum.default(torch.tensor([[[0.0, 0.0], [0.0, -2.5], [-3.4028234663852886e+38, "
        "3.4028234663852886e+38]]]))",
        check=reproduced_by_openvino,
    ),
)


def documented(
    case: Call, stage: str, problem: str, expected: Sequence[torch.Tensor] = (), got: Sequence[Any] = ()
) -> Deviation | None:
    """The entry explaining the case's difference at `stage` (torch's `expected` results, the stage's
    `got`), if any."""
    packet = case.packet
    specials = case.special_values() | _computed_triggers(case) | _result_triggers(expected)
    for dev in DEVIATIONS:
        if ((packet in dev.packets or dev.packets == ANY) and stage in dev.stages and dev.triggers & specials
                and problem.removeprefix("result ").lstrip("0123456789: ").startswith(dev.problems)
                and (dev.check is None or (bool(expected) and dev.check(case, expected, got)))):
            return dev
    return None


def _result_triggers(expected: Sequence[torch.Tensor]) -> set[str]:
    """`zero` also when torch's result holds a zero (a linspace or an arange through 0 has no zero
    argument, yet its result's sign of zero is what differs)."""
    return {"zero"} if any(t.is_floating_point() and bool((t == 0).any()) for t in expected) else set()


def _computed_triggers(case: Call) -> set[str]:
    """Triggers beyond `Case.special_values`: `half` (a float16 or bfloat16 tensor), `ties` (a tensor
    holding a value twice: which of equal elements a sort or topk returns first), `zero` (a zero of
    either sign in a float argument: the product or sum that gives a signed zero) and `huge` (a float
    whose square overflows its dtype, or an integer beyond float16's range: values whose intermediates
    overflow)."""
    import torch

    found: set[str] = set()
    for x in case.tensors():
        if x.dtype in (torch.float16, torch.bfloat16):
            found.add("half")
        if x.numel() > 1 and x.detach().reshape(-1).unique().numel() < x.numel():
            found.add("ties")
        if not x.numel() or x.dtype == torch.bool:
            continue
        if x.is_floating_point():
            x64 = x.detach().to(torch.float64)
            if (x64 == 0).any():
                found.add("zero")
            if (x64.isfinite() & (x64.abs() >= torch.finfo(x.dtype).max ** 0.5)).any():
                found.add("huge")
        elif (x.detach().to(torch.float64).abs() > torch.finfo(torch.float16).max).any():
            found.add("huge")
    return found


def example_case(dev: Deviation) -> Case:
    """The entry's example as a fuzz case."""
    import math

    import torch

    from forge.testing.fuzz.cases import Case

    op, _, rest = dev.example.partition("(")  # eval: the text is this table's own, never input
    names = {"torch": torch, "nan": math.nan, "inf": math.inf, "call": lambda *a, **k: (a, k)}
    args, kwargs = eval(f"call({rest[:-1]})", names)
    return Case(op, args, kwargs)
