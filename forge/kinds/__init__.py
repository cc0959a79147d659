"""The npuir kind table: every fact about an npuir compute kind, declared once, read by every consumer.

An npuir op class (`dialects/npuir.py`) says what an op of a kind looks like: operands, properties,
verifier, syntax. Everything else about the kind lives in its `KindSpec` here, one class per kind,
grouped by family (`linear_algebra`, `normalization`, `elementwise`, `movement`, `sorting`,
`convolution`, `pooling`, `fallback`):

- `reference(p, ins, out_type)`: its semantics on torch tensors (`evaluate` adds the cast to the
  result's element type); the interpreter runs npuir and `buffer.exec` with it;
- `cpu_kernel(p, in_types, out_type)`: the executor's kernel writing into a preallocated output,
  with its `allocation_free` flag (`reference_kernel`, the reference value copied into the output,
  when there is no special one);
- `torch_source(p, args, in_types, out_type)`: the torch expression `--emit nnfactory-py` writes
  for a CPU step;
- `build_npu(em, p, ins, in_types, out_type)`: the NPU graph, built with the runtime's
  GraphBuilder (`em.g`, duck-typed) and the segment emitter's helpers (`SegmentHelpers`); raise
  `NotOnNpu` with the reason when the runtime cannot express this instance; `npu = False` for
  kinds with no NPU lowering;
- `npu_reason(in_types, out_type, small_ints=False)`: why the NPU cannot run it on these types
  (None when it can), what the affinity policy asks; `small_ints` says the integer operands hold
  values that fit in 32 bits, which a `small_int_exact` kind (data movement) then moves exactly;
- `flops(p, in_types, out_type)`, `moves_data`, `view`: what the cost model charges;
- `fused`: a fused kernel (several aten ops in one npuir op);
- `example`: operand types and parameters of one op of the kind (`tests/test_kinds.py` runs it
  through every consumer).

`KINDS` maps each kind name to its spec; `kind_spec(name)` is the lookup that fails naming an
unknown kind. This package sits in the core layer: it may import dialects, torch and numpy, never
lowering, backends or drivers. It imports torch and numpy only inside the functions that run or
build kernels (`torch_function` resolves a named torch function): the lowering passes read the
table without loading torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from xdsl.dialects.builtin import Float16Type, Float32Type, IntegerType, TensorType
from xdsl.ir import Attribute

from dialects import npuir as N
from dialects.shapes import static_shape
from dialects.torch_types import dtype_of

if TYPE_CHECKING:
    import torch

_I1 = IntegerType(1)  # built once: is_i1 runs per emitted op, and an IntegerType costs ~30 us to build
NPU_ELEMENTS = frozenset({Float32Type(), Float16Type(), _I1})
"""Element types the NPU computes with (i1 for masks and comparison results). Not bfloat16: both
runtimes build graphs through numpy, which has no bfloat16 (a bf16 model compiles in float32,
`forge.frontend.export.CastPolicy`; `precision="bf16"` computes in it inside f32 graphs), so a
bf16 value in the IR (a `dtype=torch.bfloat16` argument, a `.to(torch.bfloat16)`) is computed by
the CPU ops, which hold it."""
SMALL_INT_BITS = 32
"""Integers the runtimes hold exactly inside a graph: OpenVINO's CPU plugin (and NNFactory's build
of it) computes i64 tensors as i32, so an i64 value of 2**31 or more comes back wrapped. An
integer proven to fit (`small_ints`) may be moved by a `small_int_exact` kind on the NPU."""


class UnknownKindError(LookupError):
    """The kind table has no entry for an npuir kind."""


class NotOnNpu(Exception):
    """The runtime cannot express this op on the npu (the message is the reason)."""


class NoTorchSource(ValueError):
    """No torch source can be written for this op (the message says why)."""


@dataclass(frozen=True)
class CpuKernel:
    """`fn(*ins, out)` writes the op's value into `out` (a view of its buffer); `scratch` are
    temporaries the kernel allocated once, when it was made."""

    fn: Callable[..., Any]
    allocation_free: bool
    scratch: tuple[torch.Tensor, ...] = ()


@dataclass(frozen=True)
class Example:
    """One op of a kind: operand and result types as `2x3xf32` (`f32` is rank 0), parameters as
    plain values (`N.make_params`), and how to draw each input (`normal`, `positive`, `ints`,
    `nonzero`, `index<N>`: integers in [0, N), `keep`: a mask keeping column 0)."""

    ins: tuple[str, ...]
    out: str
    params: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()


class SegmentHelpers(Protocol):
    """What the segment emitter lends `build_npu`: the graph builder and bool/layout helpers."""

    g: Any
    """The runtime's GraphBuilder (or a recorder standing for it)."""

    def scalar(self, value: float, dtype: Any) -> Any:
        """A scalar constant node (one per value and dtype in a graph)."""

    def num01(self, node: Any) -> Any:
        """A logical node as 0/1 in a dtype arithmetic accepts."""

    def same_dtype(self, nodes: Sequence[Any]) -> list[Any]:
        """Logical nodes brought to one dtype."""

    def flag(self, node: Any, flag: bool) -> bool:
        """A matmul transpose flag for `node`, flipped when the node holds its value transposed."""

    def np_dtype(self, t: TensorType) -> Any:
        """The numpy dtype of a tensor type on the runtime (`NotOnNpu` if it has none)."""


@cache
def torch_function(name: str) -> Callable[..., Any]:
    """The function `torch.<name>`. The kind tables name torch functions rather than hold them, so
    that reading a kind's facts (what lowering and the cost model do) never imports torch; the
    semantics and kernels resolve them on first use."""
    import torch

    return getattr(torch, name)


SMALL_INTS = frozenset(IntegerType(w) for w in (8, 16, 32, 64))
"""The integer element types a `small_int_exact` kind moves on the NPU when the values are small."""


def is_i1(t: Any) -> bool:
    """Whether `t` is a tensor of booleans."""
    return isinstance(t, TensorType) and t.element_type == _I1


def elements(t: Attribute) -> int:
    """The element count of a static tensor type (1 for a scalar or a non-tensor)."""
    return math.prod(static_shape(t))


def _element_type(t: Attribute) -> Attribute:
    assert isinstance(t, TensorType), f"expected a tensor type, got {t}"
    return t.element_type


def all_floating(in_types: Sequence[TensorType], out_type: TensorType) -> bool:
    """A floating-point result and every operand of the same dtype (torch's `out=` fast paths)."""
    out_dtype = dtype_of(out_type)
    return out_dtype.is_floating_point and all(dtype_of(t) == out_dtype for t in in_types)


class KindSpec:
    """Everything about one npuir kind (see the module docstring). Subclasses set `name` and
    `example` and override what differs from the defaults."""

    name: ClassVar[str]
    example: ClassVar[Example]
    fused: ClassVar[bool] = False
    """A fused kernel: one npuir op standing for several aten ops."""
    npu: ClassVar[bool] = True
    """Has an NPU lowering (`build_npu`)."""
    index_operands: ClassVar[tuple[int, ...]] = ()
    """Operands that are integer indices: the NPU takes them whatever their element type."""
    transposable_operands: ClassVar[tuple[int, ...]] = ()
    """2-D operands whose transposed layout a transpose flag absorbs (constants stay uncopied)."""
    moves_data: ClassVar[bool] = False
    """Moves or reinterprets data without arithmetic: no FLOPs."""
    view: ClassVar[bool] = False
    """Only reinterprets a buffer's shape: no bytes move either."""
    makes_small_ints: ClassVar[bool] = False
    """Its integer result indexes an axis of an operand (a topk): it fits in `SMALL_INT_BITS`."""
    small_int_exact: ClassVar[bool] = False
    """On integer operands whose values fit in `SMALL_INT_BITS`, the NPU computes exactly what the
    CPU does (data movement: it never makes a value its operands do not hold)."""
    flops_per_element: ClassVar[float] = 1.0
    """The default FLOPs rule: this many per result element."""

    @property
    def op_class(self) -> type[N.NpuirOp]:
        cls = N.op_class(self.name)
        assert cls is not None, f"npuir has no kind '{self.name}'"
        return cls

    # ---- semantics ------------------------------------------------------------------

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        """The value an op of this kind computes (maybe in another dtype than the result's)."""
        raise NotImplementedError(f"no interpreter semantics for npuir kind '{self.name}'")

    def evaluate(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        """`reference`, cast to the result type's element type."""
        r = self.reference(p, ins, out_type)
        dtype = dtype_of(out_type)
        if r.dtype != dtype:
            r = r.to(dtype)
        return r

    # ---- host execution -------------------------------------------------------------

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        """The executor's kernel writing into a preallocated output (default: `reference_kernel`)."""
        return self.reference_kernel(p, out_type)

    def reference_kernel(self, p: N.Params, out_type: TensorType) -> CpuKernel:
        """The reference value computed as a temporary and copied into the output."""

        def fn(*args: torch.Tensor) -> None:
            *ins, out = args
            out.copy_(self.evaluate(p, ins, out_type))

        return CpuKernel(fn, allocation_free=False)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        """A torch expression computing the op from the variables `args`."""
        raise NoTorchSource(f"pyemit: no torch code for npuir kind '{self.name}'")

    # ---- the npu --------------------------------------------------------------------

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        """The graph node computing the op from the nodes `ins`."""
        raise NotOnNpu(f"the npu has no '{self.name}' op")

    def npu_reason(self, in_types: Sequence[Attribute], out_type: Attribute, small_ints: bool = False) -> str | None:
        """Why the NPU cannot run an op of this kind on these types (None when it can).
        `small_ints`: every integer operand holds values that fit in `SMALL_INT_BITS` bits."""
        if not self.npu:
            return f"NNFactory has no '{self.name}' op"
        if any(isinstance(t, TensorType) and 0 in t.get_shape() for t in (*in_types, out_type)):
            return "a zero-size tensor has no static NNFactory shape"
        accepted = self._npu_elements(small_ints)
        for i, t in enumerate(in_types):
            if i in self.index_operands:
                continue
            elt = _element_type(t)
            if elt not in accepted:
                return f"operand {i} has element type {elt}"
        elt = _element_type(out_type)
        if elt not in accepted:
            return f"result has element type {elt}"
        return None

    def _npu_elements(self, small_ints: bool) -> frozenset[Attribute]:
        return NPU_ELEMENTS | SMALL_INTS if small_ints and self.small_int_exact else NPU_ELEMENTS

    def index_bound(self, p: N.Params, in_types: Sequence[TensorType], operand: int) -> int:
        """The size an index operand indexes (random inputs of a generated program stay below it)."""
        raise NotImplementedError(f"npuir kind '{self.name}' has no index operands")

    # ---- cost -----------------------------------------------------------------------

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        """Arithmetic of one op (`flops_per_element` per result element; none for data movement)."""
        if self.moves_data:
            return 0.0
        return elements(out_type) * self.flops_per_element


# The families subclass KindSpec above, so they are imported after it.
from forge.kinds import (  # noqa: E402
    convolution,
    elementwise,
    fallback,
    linear_algebra,
    movement,
    normalization,
    pooling,
    sorting,
)

KINDS: dict[str, KindSpec] = {
    spec.name: spec
    for family in (linear_algebra, normalization, elementwise, movement, sorting, convolution, fallback, pooling)
    for spec in family.SPECS
}
"""Every npuir compute kind's spec, by kind name."""


def kind_spec(name: str) -> KindSpec:
    """The spec of npuir kind `name`; UnknownKindError naming it when the table has none."""
    spec = KINDS.get(name)
    if spec is None:
        raise UnknownKindError(f"the npuir kind table (forge/kinds) has no entry for kind '{name}'")
    return spec
