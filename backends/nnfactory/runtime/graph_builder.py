"""`GraphBuilder`: the NNFactory-shaped graph-building API every runtime implements.

Each public op is either *native* (a runtime hook, `_op_<name>`, calling one op of the underlying
API) or a *composition* of other public ops written once here; a runtime may override any
composition with a native hook. `runtime.py` documents the conventions and the runtimes.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .graph_values import (
    GraphBuildError,
    Node,
    Operand,
    build_failure_reason,
    contiguous,
    graph_op,
    norm_axes,
    norm_axis,
    to_numpy_dtype,
)
from .spatial_ops import SpatialOps

if TYPE_CHECKING:
    from backends.nnfactory.runtime import CompiledGraph, GraphGroup, Runtime

# --------------------------------------------------------------------------- builder


class GraphBuilder(SpatialOps):
    """NNFactory-shaped graph builder. Subclasses implement the ``_op_*`` hooks.

    Hooks take Nodes and return a runtime handle (wrapped into a Node by the caller);
    the public methods validate and normalize arguments first, so hooks receive
    non-negative axes, full-rank slice bounds, concrete reshape targets, same-dtype
    operands and python scalars already turned into constants.
    Hooks that have a default body here are compositions; the others are primitives
    every runtime must provide.
    """

    #: element types this runtime can represent (parameters, constants, conversions).
    supported_dtypes: ClassVar[frozenset[np.dtype]] = frozenset(
        np.dtype(t)
        for t in ("float16", "float32", "float64", "int8", "int16", "int32", "int64")
    )

    def __init__(self, runtime: Runtime):
        self.runtime = runtime
        self._closed = False
        self._params: list[Node] = []
        self._results: list[Node] = []
        self._known: dict[int, tuple[Any, np.ndarray]] = {}

    # ---- plumbing -------------------------------------------------------------------

    @abc.abstractmethod
    def _spec_of(self, handle: Any) -> tuple[tuple[int, ...], np.dtype]:
        """Static shape and numpy dtype of a runtime handle."""

    def _node(self, handle: Any) -> Node:
        shape, dtype = self._spec_of(handle)
        return Node(self, handle, tuple(int(d) for d in shape), np.dtype(dtype))

    def _own(self, x: Node) -> Node:
        if not isinstance(x, Node):
            raise TypeError(f"expected a Node, got {type(x).__name__}")
        if x.builder is not self:
            raise ValueError(f"{x} belongs to another graph builder")
        return x

    def _check_dtype(self, dtype: np.dtype) -> np.dtype:
        if dtype not in self.supported_dtypes:
            names = ", ".join(sorted(d.name for d in self.supported_dtypes))
            raise TypeError(
                f"dtype {dtype.name} is not supported by the {self.runtime.name} runtime "
                f"(supported: {names})"
            )
        return dtype

    def _operand(self, x: Operand, like: Node) -> Node:
        """A node for ``x``; python scalars and arrays become constants of like's dtype."""
        if isinstance(x, Node):
            return self._own(x)
        return self.constant(np.asarray(x, dtype=like.dtype))

    def _scalar(self, value: float, like: Node) -> Node:
        return self.constant(np.asarray(value, dtype=like.dtype))

    # ---- graph inputs ---------------------------------------------------------------

    @graph_op
    def parameter(self, shape: Sequence[int], dtype: Any = np.float32) -> Node:
        """A graph input; inputs are numbered in creation order."""
        shape = tuple(int(d) for d in shape)
        if any(d <= 0 for d in shape):
            raise ValueError(f"parameter shape must be static and positive, got {shape}")
        node = self._node(self._op_parameter(shape, self._check_dtype(to_numpy_dtype(dtype))))
        self._params.append(node)
        return node

    @graph_op
    def constant(self, value: Any, dtype: Any = None) -> Node:
        """A constant from an array, torch tensor, list or python scalar (float -> f32,
        int -> i64 unless ``dtype`` says otherwise). The data is copied."""
        if type(value).__module__ == "torch" and hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        if dtype is not None:
            array = np.asarray(value, dtype=to_numpy_dtype(dtype))
        elif isinstance(value, np.ndarray) or isinstance(value, np.generic):
            array = np.asarray(value)
        else:
            array = np.asarray(value)
            if array.dtype == np.float64:
                array = array.astype(np.float32)
        self._check_dtype(array.dtype)
        node = self._node(self._op_constant(contiguous(array)))
        if array.size <= self._KNOWN_CONSTANT_SIZE:
            self._known[id(node.handle)] = (node.handle, array.copy())
        return node

    _KNOWN_CONSTANT_SIZE = 4096
    """Constants up to this many elements are remembered (`known_value`)."""

    def known_value(self, x: Node) -> np.ndarray | None:
        """The value of a small constant node (None for others). A composition whose runtime trick
        depends on the CPU kernels (a NaN test through Clamp) computes it with numpy on a constant
        instead: OpenVINO folds constant subgraphs with its reference implementations, whose Clamp
        lets a NaN through where the CPU kernel gives a bound."""
        found = self._known.get(id(x.handle))
        return None if found is None or found[0] is not x.handle else found[1]

    # ---- linear algebra -------------------------------------------------------------

    @graph_op
    def matmul(self, a: Node, b: Node, trA: bool = False, trB: bool = False) -> Node:
        """``a @ b`` with optional transposition of the last two dims (numpy batching)."""
        a, b = self._own(a), self._own(b)
        if a.rank == 0 or b.rank == 0:
            raise ValueError("matmul needs inputs of rank >= 1")
        return self._node(self._op_matmul(a, b, bool(trA), bool(trB)))

    @graph_op
    def linear(self, x: Node, weight: Node, bias: Node | None = None) -> Node:
        """``x @ weight.T + bias`` with torch's ``[out, in]`` weight layout."""
        x, weight = self._own(x), self._own(weight)
        bias = None if bias is None else self._own(bias)
        return self._node(self._op_linear(x, weight, bias))

    def _op_linear(self, x: Node, weight: Node, bias: Node | None) -> Any:
        y = self.matmul(x, weight, trB=True)
        return (y if bias is None else self.eltwise_add(y, bias)).handle

    # ---- attention ------------------------------------------------------------------

    @graph_op
    def scaled_dot_product_attention(
        self,
        q: Node,
        k: Node,
        v: Node,
        mask: Node | np.ndarray | None = None,
        is_causal: bool = False,
        scale: float | None = None,
    ) -> Node:
        """torch's ``scaled_dot_product_attention`` on ``[..., H, L, E]`` inputs.

        ``mask`` is additive (float, broadcastable to ``[..., L, S]``) or boolean
        (True = attend; turned into an additive mask). Grouped-query attention: K/V with
        fewer heads than Q (``Hq % Hkv == 0``) are repeated head-wise, as torch's
        ``enable_gqa`` does. ``is_causal`` uses the top-left aligned ``tril(L, S)`` mask.
        """
        q, k, v = self._own(q), self._own(k), self._own(v)
        if min(q.rank, k.rank, v.rank) < 2:
            raise ValueError("q, k and v need rank >= 2")
        if is_causal and mask is not None:
            raise ValueError("give either mask or is_causal, not both")
        if q.rank >= 3 and k.rank == q.rank and v.rank == q.rank:
            hq, hk, hv = q.shape[-3], k.shape[-3], v.shape[-3]
            if hk != hv:
                raise ValueError(f"k has {hk} heads but v has {hv}")
            if hq != hk:
                if hq % hk:
                    raise ValueError(f"{hq} query heads are not a multiple of {hk} kv heads")
                k = self._repeat_heads(k, hq // hk)
                v = self._repeat_heads(v, hq // hk)
        if mask is not None:
            if not isinstance(mask, Node):
                array = np.asarray(mask)
                if array.dtype == np.bool_:
                    array = np.where(array, 0.0, -np.inf)
                mask = self.constant(array.astype(q.dtype))
            mask = self._own(mask)
            if mask.dtype == np.bool_:
                mask = self._bool_mask_to_additive(mask, q.dtype)
            elif mask.dtype != q.dtype:
                mask = self.convert(mask, q.dtype)
        scale = None if scale is None else float(scale)
        return self._node(
            self._op_scaled_dot_product_attention(q, k, v, mask, bool(is_causal), scale)
        )

    def _bool_mask_to_additive(self, mask: Node, dtype: np.dtype) -> Node:
        zero = self.constant(np.zeros((), dtype=dtype))
        ninf = self.constant(np.full((), -np.inf, dtype=dtype))
        return self.select(mask, zero, ninf)

    def _repeat_heads(self, x: Node, n_rep: int) -> Node:
        """``[..., H, S, E] -> [..., H * n_rep, S, E]``, each head repeated n_rep times
        in place (torch ``repeat_interleave`` on the head axis)."""
        *lead, h, s, e = x.shape
        x5 = self.reshape(x, (*lead, h, 1, s, e))
        x5 = self.broadcast(x5, (*lead, h, n_rep, s, e))
        return self.reshape(x5, (*lead, h * n_rep, s, e))

    @abc.abstractmethod
    def _op_scaled_dot_product_attention(
        self, q: Node, k: Node, v: Node, mask: Node | None, is_causal: bool, scale: float | None
    ) -> Any: ...

    @graph_op
    def softmax(self, x: Node, axis: int = -1) -> Node:
        x = self._own(x)
        return self._node(self._op_softmax(x, norm_axis(axis, x.rank)))

    @graph_op
    def log_softmax(self, x: Node, axis: int = -1) -> Node:
        x = self._own(x)
        return self._node(self._op_log_softmax(x, norm_axis(axis, x.rank)))

    # ---- elementwise: unary ---------------------------------------------------------

    def _unary(self, name: str, x: Node) -> Node:
        x = self._own(x)
        return self._node(getattr(self, f"_op_{name}")(x))

    @graph_op
    def gelu(self, x: Node) -> Node:
        """GELU, tanh approximation (torch ``approximate="tanh"``)."""
        return self._unary("gelu", x)

    @graph_op
    def gelu_erf(self, x: Node) -> Node:
        """Exact (erf) GELU, torch's default."""
        return self._unary("gelu_erf", x)

    @graph_op
    def relu(self, x: Node) -> Node:
        return self._unary("relu", x)

    @graph_op
    def sigmoid(self, x: Node) -> Node:
        return self._unary("sigmoid", x)

    @graph_op
    def swish(self, x: Node) -> Node:
        """``x * sigmoid(x)`` (SiLU)."""
        return self._unary("swish", x)

    @graph_op
    def tanh(self, x: Node) -> Node:
        return self._unary("tanh", x)

    @graph_op
    def exp(self, x: Node) -> Node:
        return self._unary("exp", x)

    @graph_op
    def log(self, x: Node) -> Node:
        return self._unary("log", x)

    @graph_op
    def sqrt(self, x: Node) -> Node:
        return self._unary("sqrt", x)

    @graph_op
    def rsqrt(self, x: Node) -> Node:
        """``1 / sqrt(x)``."""
        return self._unary("rsqrt", x)

    def _op_rsqrt(self, x: Node) -> Any:
        return self.eltwise_div(self._scalar(1.0, x), self.sqrt(x)).handle

    @graph_op
    def negative(self, x: Node) -> Node:
        return self._unary("negative", x)

    @graph_op
    def abs(self, x: Node) -> Node:
        return self._unary("abs", x)

    @graph_op
    def sign(self, x: Node) -> Node:
        return self._unary("sign", x)

    @graph_op
    def erf(self, x: Node) -> Node:
        return self._unary("erf", x)

    @graph_op
    def sin(self, x: Node) -> Node:
        return self._unary("sin", x)

    @graph_op
    def cos(self, x: Node) -> Node:
        return self._unary("cos", x)

    @graph_op
    def log1p(self, x: Node) -> Node:
        """``log(1 + x)``, accurate for small x (neither runtime has the op)."""
        x = self._own(x)
        if not np.issubdtype(x.dtype, np.floating):
            raise TypeError(f"log1p takes floats, got {x.dtype.name}")
        return self._node(self._op_log1p(x))

    def _op_log1p(self, x: Node) -> Any:
        # log(u) + (x - (u - 1)) / u with u = 1 + x: the second term is the rounding error of u,
        # so small x keep their digits (u == 1 gives x itself). It is computed on x clamped to
        # [-0.5, max]: finite, no inf - inf, and below -0.5 it is 0 anyway (1 + x is exact there).
        # log1p(-0.0) comes out +0.0: the runtime's arithmetic does not keep the sign of a zero
        # (OpenVINO restores it with a select, `OpenVINOGraphBuilder._op_log1p`).
        big = float(np.finfo(x.dtype).max)
        one = self._scalar(1.0, x)
        xc = self.clamp(x, -0.5, big)
        uc = self.eltwise_add(xc, one)
        correction = self.eltwise_div(self.eltwise_sub(xc, self.eltwise_sub(uc, one)), uc)
        return self.eltwise_add(self.log(self.eltwise_add(x, one)), correction).handle

    @graph_op
    def clamp(self, x: Node, min: float, max: float) -> Node:
        """Clip to ``[min, max]`` (python scalars)."""
        x = self._own(x)
        if min > max:
            raise ValueError(f"min {min} > max {max}")
        return self._node(self._op_clamp(x, float(min), float(max)))

    @graph_op
    def relu6(self, x: Node) -> Node:
        """``min(max(x, 0), 6)`` (torch's ReLU6, ``hardtanh(x, 0, 6)``)."""
        return self.clamp(x, 0.0, 6.0)

    # ---- elementwise: binary (numpy broadcasting, same dtype) -----------------------

    def _binary(self, name: str, a: Operand, b: Operand) -> Node:
        if not isinstance(a, Node) and isinstance(b, Node):
            a = self._operand(a, b)
        if not isinstance(a, Node):
            raise TypeError("at least one operand must be a Node")
        a = self._own(a)
        b = self._operand(b, a)
        if a.dtype != b.dtype:
            raise TypeError(f"operand dtypes differ: {a.dtype.name} vs {b.dtype.name}")
        if a.shape != b.shape:
            np.broadcast_shapes(a.shape, b.shape)  # raises ValueError naming both shapes
        return self._node(getattr(self, f"_op_{name}")(a, b))

    @graph_op
    def eltwise_add(self, a: Operand, b: Operand) -> Node:
        return self._binary("eltwise_add", a, b)

    @graph_op
    def eltwise_sub(self, a: Operand, b: Operand) -> Node:
        return self._binary("eltwise_sub", a, b)

    def _op_eltwise_sub(self, a: Node, b: Node) -> Any:
        return self.eltwise_add(a, self.negative(b)).handle

    @graph_op
    def eltwise_mul(self, a: Operand, b: Operand) -> Node:
        return self._binary("eltwise_mul", a, b)

    @graph_op
    def eltwise_div(self, a: Operand, b: Operand) -> Node:
        return self._binary("eltwise_div", a, b)

    @graph_op
    def power(self, x: Operand, exponent: Operand) -> Node:
        """``x ** exponent``; the exponent may be a node or a python scalar."""
        return self._binary("power", x, exponent)

    @graph_op
    def maximum(self, a: Operand, b: Operand) -> Node:
        return self._binary("maximum", a, b)

    def _op_maximum(self, a: Node, b: Node) -> Any:
        return self.select(self.greater(a, b), a, b).handle

    @graph_op
    def minimum(self, a: Operand, b: Operand) -> Node:
        return self._binary("minimum", a, b)

    def _op_minimum(self, a: Node, b: Node) -> Any:
        return self.select(self.less(a, b), a, b).handle

    # comparisons: 1/0 in the inputs' dtype, exact like torch's (IEEE) on every value. The
    # compositions use the sign of a - b: exact for finite inputs (IEEE: a - b == 0 iff a == b;
    # overflow keeps the sign), NaN (relu drops it to 0: the CPU kernels' max(x, 0)) when an input is
    # NaN or both are the same infinity. The unordered term (an input is NaN) tells those apart:
    # a NaN compares false with everything, equal infinities are equal.

    def _cmp_parts(self, a: Node, b: Node) -> tuple[Node, Node]:
        """(greater, less) as 0/1 of a vs b (0 when unordered)."""
        d = self.eltwise_sub(a, b)
        if np.issubdtype(d.dtype, np.integer):
            return self.clamp(d, 0, 1), self.clamp(self.negative(d), 0, 1)
        s = self.sign(d)
        return self.relu(s), self.relu(self.negative(s))

    def _isnan(self, x: Node) -> Node:
        """1 where x is NaN, else 0: clamp(x) + clamp(-x) over the finite range is c - c = 0 for a
        number (infinities included), and both clamps turn a NaN into the same bound (the CPU kernels'
        min/max drop NaN), whose double overflows to an infinity. A small constant's is computed here:
        OpenVINO folds constant subgraphs with its reference kernels, whose Clamp lets NaN through."""
        value = self.known_value(x)
        if value is not None:
            return self.constant(np.isnan(value).astype(x.dtype))
        big = float(np.finfo(x.dtype).max)
        both = self.eltwise_add(self.clamp(x, -big, big), self.clamp(self.negative(x), -big, big))
        return self.abs(self.sign(both))

    def _unordered(self, a: Node, b: Node) -> Node | None:
        """1 where a or b is NaN, else 0 (None for integers, or where neither can be NaN)."""
        if not np.issubdtype(a.dtype, np.floating):
            return None
        terms = []
        for x in (a, b) if a.handle is not b.handle else (a,):
            value = self.known_value(x)
            if value is None or np.isnan(value).any():
                terms.append(self._isnan(x))
        if len(terms) < 2:
            return terms[0] if terms else None
        return self.clamp(self.eltwise_add(*terms), 0, 1)

    def _one_minus(self, *terms: Node | None) -> Node:
        """1 - the sum of the (disjoint 0/1) terms."""
        present = [t for t in terms if t is not None]
        out = self.eltwise_sub(self._scalar(1, present[0]), present[0])
        for t in present[1:]:
            out = self.eltwise_sub(out, t)
        return out

    @graph_op
    def greater(self, a: Operand, b: Operand) -> Node:
        return self._binary("greater", a, b)

    def _op_greater(self, a: Node, b: Node) -> Any:
        return self._cmp_parts(a, b)[0].handle

    @graph_op
    def less(self, a: Operand, b: Operand) -> Node:
        return self._binary("less", a, b)

    def _op_less(self, a: Node, b: Node) -> Any:
        return self._cmp_parts(a, b)[1].handle

    @graph_op
    def greater_equal(self, a: Operand, b: Operand) -> Node:
        return self._binary("greater_equal", a, b)

    def _op_greater_equal(self, a: Node, b: Node) -> Any:
        return self._one_minus(self._cmp_parts(a, b)[1], self._unordered(a, b)).handle

    @graph_op
    def less_equal(self, a: Operand, b: Operand) -> Node:
        return self._binary("less_equal", a, b)

    def _op_less_equal(self, a: Node, b: Node) -> Any:
        return self._one_minus(self._cmp_parts(a, b)[0], self._unordered(a, b)).handle

    @graph_op
    def not_equal(self, a: Operand, b: Operand) -> Node:
        return self._binary("not_equal", a, b)

    def _op_not_equal(self, a: Node, b: Node) -> Any:
        gt, lt = self._cmp_parts(a, b)
        ne = self.eltwise_add(gt, lt)
        unordered = self._unordered(a, b)
        return (ne if unordered is None else self.eltwise_add(ne, unordered)).handle

    @graph_op
    def equal(self, a: Operand, b: Operand) -> Node:
        return self._binary("equal", a, b)

    def _op_equal(self, a: Node, b: Node) -> Any:
        return self._one_minus(*self._cmp_parts(a, b), self._unordered(a, b)).handle

    @graph_op
    def select(self, cond: Operand, a: Operand, b: Operand) -> Node:
        """``where(cond, a, b)`` with numpy broadcasting; cond is nonzero/True = a."""
        if isinstance(a, Node):
            a = self._own(a)
            b = self._operand(b, a)
        elif isinstance(b, Node):
            b = self._own(b)
            a = self._operand(a, b)
        else:
            raise TypeError("a or b must be a Node")
        if a.dtype != b.dtype:
            raise TypeError(f"a and b dtypes differ: {a.dtype.name} vs {b.dtype.name}")
        if not isinstance(cond, Node):
            cond = self.constant(np.asarray(cond, dtype=a.dtype))
        cond = self._own(cond)
        shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
        return self._node(self._op_select(cond, a, b, tuple(shape)))

    def _op_select(self, cond: Node, a: Node, b: Node, shape: tuple[int, ...]) -> Any:
        # Exact element-wise choice without a select op: stack the candidates as
        # [N, 2] (0 = b, 1 = a) and pick per row with a batched gather.
        n = math.prod(shape)
        flat = [self.reshape(self._broadcast_to(t, shape), (n, 1)) for t in (b, a)]
        table = self.concat(flat, axis=1)
        idx = cond if cond.dtype == np.bool_ else self.abs(self.sign(cond))  # nonzero -> 1
        idx = self.convert(self.reshape(self._broadcast_to(idx, shape), (n, 1)), np.int32)
        picked = self.gather(table, idx, axis=1, batch_dims=1)  # a batch of one row: see `gather`
        return self.reshape(picked, shape).handle

    def _broadcast_to(self, x: Node, shape: tuple[int, ...]) -> Node:
        return x if x.shape == tuple(shape) else self.broadcast(x, shape)

    # ---- reductions -----------------------------------------------------------------

    def _reduce(self, name: str, x: Node, axes: Any, keep_dims: bool) -> Node:
        x = self._own(x)
        if x.rank == 0:
            raise ValueError("cannot reduce a rank-0 tensor")
        return self._node(getattr(self, f"_op_{name}")(x, norm_axes(axes, x.rank), bool(keep_dims)))

    @graph_op
    def reduce_sum(self, x: Node, axes: int | Sequence[int] | None = None, keep_dims: bool = False) -> Node:
        return self._reduce("reduce_sum", x, axes, keep_dims)

    @graph_op
    def reduce_mean(self, x: Node, axes: int | Sequence[int] | None = None, keep_dims: bool = False) -> Node:
        return self._reduce("reduce_mean", x, axes, keep_dims)

    @graph_op
    def reduce_max(self, x: Node, axes: int | Sequence[int] | None = None, keep_dims: bool = False) -> Node:
        return self._reduce("reduce_max", x, axes, keep_dims)

    @graph_op
    def reduce_min(self, x: Node, axes: int | Sequence[int] | None = None, keep_dims: bool = False) -> Node:
        return self._reduce("reduce_min", x, axes, keep_dims)

    @graph_op
    def reduce_prod(self, x: Node, axes: int | Sequence[int] | None = None, keep_dims: bool = False) -> Node:
        return self._reduce("reduce_prod", x, axes, keep_dims)

    # ---- normalization (compositions of reductions: NNFactory has no norm op) -------

    @graph_op
    def layer_norm(
        self,
        x: Node,
        weight: Node | None = None,
        bias: Node | None = None,
        axes: int | Sequence[int] = -1,
        eps: float = 1e-5,
    ) -> Node:
        """``(x - mean) / sqrt(var + eps) * weight + bias`` over ``axes`` (biased var)."""
        x = self._own(x)
        axes = norm_axes(axes, x.rank)
        return self._node(self._op_layer_norm(x, weight, bias, axes, float(eps)))

    def _op_layer_norm(self, x: Node, weight: Node | None, bias: Node | None, axes: list[int], eps: float) -> Any:
        mean = self.reduce_mean(x, axes, keep_dims=True)
        d = self.eltwise_sub(x, mean)
        var = self.reduce_mean(self.eltwise_mul(d, d), axes, keep_dims=True)
        y = self.eltwise_div(d, self.sqrt(self.eltwise_add(var, eps)))
        if weight is not None:
            y = self.eltwise_mul(y, weight)
        if bias is not None:
            y = self.eltwise_add(y, bias)
        return y.handle

    @graph_op
    def rms_norm(
        self, x: Node, weight: Node | None = None, eps: float = 1e-6, axes: int | Sequence[int] = -1
    ) -> Node:
        """``x / sqrt(mean(x * x) + eps) * weight`` over ``axes``."""
        x = self._own(x)
        axes = norm_axes(axes, x.rank)
        return self._node(self._op_rms_norm(x, weight, float(eps), axes))

    def _op_rms_norm(self, x: Node, weight: Node | None, eps: float, axes: list[int]) -> Any:
        ms = self.reduce_mean(self.eltwise_mul(x, x), axes, keep_dims=True)
        y = self.eltwise_div(x, self.sqrt(self.eltwise_add(ms, eps)))
        if weight is not None:
            y = self.eltwise_mul(y, weight)
        return y.handle

    # ---- data movement --------------------------------------------------------------

    @graph_op
    def reshape(self, x: Node, shape: Sequence[int]) -> Node:
        """Row-major reshape; one dim may be -1."""
        x = self._own(x)
        shape = [int(d) for d in shape]
        if shape.count(-1) > 1 or any(d == 0 or d < -1 for d in shape):
            raise ValueError(f"invalid target shape {shape}")
        total = math.prod(x.shape)
        if -1 in shape:
            known = math.prod(d for d in shape if d != -1)
            if total % known:
                raise ValueError(f"cannot reshape {list(x.shape)} to {shape}")
            shape[shape.index(-1)] = total // known
        if math.prod(shape) != total:
            raise ValueError(f"cannot reshape {list(x.shape)} ({total} elements) to {shape}")
        if tuple(shape) == x.shape:
            return x
        return self._node(self._op_reshape(x, tuple(shape)))

    @graph_op
    def unsqueeze(self, x: Node, axis: int) -> Node:
        x = self._own(x)
        axis = norm_axis(axis, x.rank + 1)
        return self.reshape(x, (*x.shape[:axis], 1, *x.shape[axis:]))

    @graph_op
    def squeeze(self, x: Node, axes: int | Sequence[int] | None = None) -> Node:
        x = self._own(x)
        if axes is None:
            axes = [i for i, d in enumerate(x.shape) if d == 1]
        else:
            axes = norm_axes(axes, x.rank)
        if any(x.shape[a] != 1 for a in axes):
            raise ValueError(f"cannot squeeze non-unit axes {axes} of {list(x.shape)}")
        return self.reshape(x, [d for i, d in enumerate(x.shape) if i not in axes])

    @graph_op
    def transpose(self, x: Node, order: Sequence[int]) -> Node:
        x = self._own(x)
        order = [int(o) for o in order]
        if sorted(norm_axis(o, x.rank) for o in order) != list(range(x.rank)):
            raise ValueError(f"{order} is not a permutation of {x.rank} axes")
        order = [norm_axis(o, x.rank) for o in order]
        if order == list(range(x.rank)):
            return x
        return self._node(self._op_transpose(x, order))

    @graph_op
    def broadcast(self, x: Node, shape: Sequence[int]) -> Node:
        """numpy-style broadcast to ``shape``."""
        x = self._own(x)
        shape = tuple(int(d) for d in shape)
        if np.broadcast_shapes(x.shape, shape) != shape:
            raise ValueError(f"cannot broadcast {list(x.shape)} to {list(shape)}")
        if x.shape == shape:
            return x
        return self._node(self._op_broadcast(x, shape))

    def _op_broadcast(self, x: Node, shape: tuple[int, ...]) -> Any:
        # Exact and constant-free: add leading unit dims, then tile each expanded axis
        # by repeated doubling with concat.
        y = self.reshape(x, (1,) * (len(shape) - x.rank) + x.shape)
        for axis, (have, want) in enumerate(zip(y.shape, shape, strict=True)):
            if have != want:
                y = self._tile(y, axis, want)
        return y.handle

    def _tile(self, x: Node, axis: int, n: int) -> Node:
        pieces, power, remaining = [], x, n
        while remaining:
            if remaining & 1:
                pieces.append(power)
            remaining >>= 1
            if remaining:
                power = self.concat([power, power], axis)
        return self.concat(pieces, axis)

    @graph_op
    def slice(
        self,
        x: Node,
        begin: Sequence[int],
        end: Sequence[int],
        stride: Sequence[int] | None = None,
    ) -> Node:
        """``x[b0:e0:s0, b1:e1:s1, ...]`` over the leading ``len(begin)`` axes, with
        Python slicing semantics (negative indices, ends clamped); strides > 0."""
        x = self._own(x)
        if len(begin) != len(end) or (stride is not None and len(stride) != len(begin)):
            raise ValueError("begin, end and stride need the same length")
        if len(begin) > x.rank:
            raise ValueError(f"{len(begin)} slice bounds for rank {x.rank}")
        stride = [1] * len(begin) if stride is None else list(stride)
        nb, ne, ns, shape = [], [], [], []
        # Only the leading len(begin) axes are sliced: x.shape may be longer.
        for dim, b, e, s in zip(x.shape, begin, end, stride, strict=False):
            if int(s) <= 0:
                raise ValueError(f"stride must be > 0, got {s}")
            start, stop, step = slice(int(b), int(e), int(s)).indices(dim)
            n = max(0, -(-(stop - start) // step))
            if n == 0:
                raise ValueError(f"empty slice {b}:{e}:{s} of a dim of size {dim}")
            nb.append(start), ne.append(stop), ns.append(step), shape.append(n)
        for dim in x.shape[len(begin) :]:
            nb.append(0), ne.append(dim), ns.append(1), shape.append(dim)
        if tuple(shape) == x.shape:
            return x
        return self._node(self._op_slice(x, nb, ne, ns))

    @graph_op
    def concat(self, nodes: Sequence[Node], axis: int) -> Node:
        nodes = [self._own(n) for n in nodes]
        if not nodes:
            raise ValueError("concat of no nodes")
        axis = norm_axis(axis, nodes[0].rank)
        for n in nodes[1:]:
            if n.rank != nodes[0].rank or n.dtype != nodes[0].dtype or any(
                d1 != d2 for i, (d1, d2) in enumerate(zip(n.shape, nodes[0].shape, strict=True)) if i != axis
            ):
                raise ValueError(f"inputs do not match except on axis {axis}")
        if len(nodes) == 1:
            return nodes[0]
        return self._node(self._op_concat(nodes, axis))

    @graph_op
    def gather(self, data: Node, indices: Node | Sequence[int] | np.ndarray, axis: int, batch_dims: int = 0) -> Node:
        """OpenVINO Gather-8 (``torch.index_select``/embedding lookup; negative
        indices count from the end)."""
        data = self._own(data)
        if isinstance(indices, Node):
            indices = self._own(indices)
        else:
            indices = self.constant(np.asarray(indices, dtype=np.int64))
        if not np.issubdtype(indices.dtype, np.integer):
            raise TypeError(f"indices must be integers, got {indices.dtype.name}")
        axis = norm_axis(axis, data.rank)
        batch_dims = int(batch_dims)
        if batch_dims and math.prod(data.shape[:batch_dims]) == 1:
            # OpenVINO's CPU Gather with batch_dims over a batch of one element crashes the process
            # (or reads garbage, e.g. gather_elements of a [1] tensor at [2] indices): the batch axes
            # are dropped and a plain Gather is built instead (same values, same shape).
            keep = data.shape[:batch_dims]
            picked = self.gather(
                self.reshape(data, data.shape[batch_dims:]), self.reshape(indices, indices.shape[batch_dims:]),
                axis - batch_dims,
            )
            return self.reshape(picked, (*keep, *picked.shape))
        return self._node(self._op_gather(data, indices, axis, batch_dims))

    @graph_op
    def gather_elements(self, data: Node, indices: Node, axis: int) -> Node:
        """``torch.gather(data, axis, indices)`` (ONNX GatherElements): the result has the indices'
        shape; off ``axis`` each indices dim is at most data's; negative indices count from the end."""
        data, indices = self._own(data), self._own(indices)
        if not np.issubdtype(indices.dtype, np.integer):
            raise TypeError(f"indices must be integers, got {indices.dtype.name}")
        if indices.rank != data.rank:
            raise ValueError(f"indices rank {indices.rank} differs from data rank {data.rank}")
        if data.rank == 0:
            flat = self.gather_elements(self.reshape(data, (1,)), self.reshape(indices, (1,)), 0)
            return self.reshape(flat, ())
        axis = norm_axis(axis, data.rank)
        extents = [d if i == axis else j for i, (d, j) in enumerate(zip(data.shape, indices.shape, strict=True))]
        if any(e > d for e, d in zip(extents, data.shape, strict=True)):
            raise ValueError(f"indices {list(indices.shape)} exceed data {list(data.shape)} off axis {axis}")
        data = self.slice(data, [0] * data.rank, extents)
        return self._node(self._op_gather_elements(data, indices, axis))

    def _op_gather_elements(self, data: Node, indices: Node, axis: int) -> Any:
        # A batched Gather: every axis but `axis` is moved first and flattened into one batch axis.
        order = [i for i in range(data.rank) if i != axis] + [axis]
        d, j = self.transpose(data, order), self.transpose(indices, order)
        batch = j.shape[:-1]
        rows = math.prod(batch)
        picked = self.gather(
            self.reshape(d, (rows, d.shape[-1])), self.reshape(j, (rows, j.shape[-1])), axis=1, batch_dims=1
        )
        picked = self.reshape(picked, j.shape)
        return self.transpose(picked, [order.index(i) for i in range(data.rank)]).handle

    @graph_op
    def topk(self, x: Node, k: int, axis: int = -1, largest: bool = True) -> Node:
        """The int64 indices of the ``k`` largest (or smallest) elements of float ``x`` along
        ``axis``, from the first pick. Ties go to the lower index and NaN counts as larger than
        every number (torch's order); the values are ``gather_elements(x, indices, axis)``."""
        x = self._own(x)
        if not np.issubdtype(x.dtype, np.floating):
            raise TypeError(f"topk takes floats, got {x.dtype.name}")
        axis = norm_axis(axis, x.rank)
        if not 1 <= int(k) <= x.shape[axis]:
            raise ValueError(f"k {k} is not in [1, {x.shape[axis]}]")
        return self._node(self._op_topk(x, int(k), axis, bool(largest)))

    def _op_topk(self, x: Node, k: int, axis: int, largest: bool) -> Any:
        # k rounds: the best value still free, the first free position holding it (a min over an
        # iota), then that position is no longer free. In f32, clamped to the finite range and
        # halved first (exact but for subnormals): the composed comparisons subtract, which is exact
        # for finite values only (an infinite input ties with the largest finite value), and the CPU
        # plugin's ReduceMax of a row of -inf is the lowest finite float, so no key is infinite.
        # NaN is larger than every number (torch's order): `big` for the largest, `-big` (below
        # every number) for the smallest. Taken positions are a mask as well as `-big`: a NaN's
        # `-big` key must not tie with a taken position's.
        n = x.shape[axis]
        big = float(np.finfo(np.float32).max)
        raw = self.convert(x, np.float32)
        key = self.eltwise_mul(self.clamp(raw, -big, big), 0.5 if largest else -0.5)
        key = self.select(self.not_equal(raw, raw), big if largest else -big, key)
        iota = self.constant(np.arange(n, dtype=np.float32).reshape([n if i == axis else 1 for i in range(x.rank)]))
        free: Node | None = None
        picks = []
        for round_ in range(k):
            live = key if free is None else self.select(free, key, -big)
            best = self.reduce_max(live, [axis], keep_dims=True)
            hit = self.equal(live, best)
            if free is not None:
                hit = self.eltwise_mul(hit, free)
            first = self.reduce_min(self.select(hit, iota, float(n)), [axis], keep_dims=True)
            picks.append(first)
            if round_ + 1 < k:
                other = self.not_equal(iota, first)
                free = other if free is None else self.eltwise_mul(free, other)
        return self.convert(self.concat(picks, axis), np.int64).handle

    @graph_op
    def convert(self, x: Node, dtype: Any) -> Node:
        """Element type conversion (floats to ints truncate toward zero)."""
        x = self._own(x)
        dtype = self._check_dtype(to_numpy_dtype(dtype))
        if dtype == x.dtype:
            return x
        return self._node(self._op_convert(x, dtype))

    # NNFactory's name for convert
    to = convert

    # ---- outputs and compilation ----------------------------------------------------

    def result(self, node: Node) -> Node:
        """Mark ``node`` as the next graph output (outputs are numbered in call order)."""
        if self._closed:
            raise GraphBuildError("result", "", "the graph is already compiled")
        self._results.append(self._own(node))
        return node

    def compile(self, group: GraphGroup | None = None) -> CompiledGraph:
        """The compiled graph; with `group`, a graph of that group (compiled with it: `GraphGroup`)."""
        if self._closed:
            raise GraphBuildError("compile", "", "the graph is already compiled")
        if not self._results:
            raise GraphBuildError("compile", "", "no results: mark outputs with result()")
        params, results = list(self._params), list(self._results)
        try:
            graph = self._compile(params, results) if group is None else group.join(self, params, results)
        except GraphBuildError:
            raise
        except Exception as e:
            outs = ", ".join(str(r.spec) for r in self._results)
            raise GraphBuildError("compile", f"results: {outs}", build_failure_reason(e)) from e
        self._closed = True
        return graph

    @abc.abstractmethod
    def _compile(self, params: list[Node], results: list[Node]) -> CompiledGraph: ...

    # ---- primitives every runtime provides --------------------------------------------

    @abc.abstractmethod
    def _op_parameter(self, shape: tuple[int, ...], dtype: np.dtype) -> Any: ...
    @abc.abstractmethod
    def _op_constant(self, array: np.ndarray) -> Any: ...
    @abc.abstractmethod
    def _op_matmul(self, a: Node, b: Node, trA: bool, trB: bool) -> Any: ...
    @abc.abstractmethod
    def _op_softmax(self, x: Node, axis: int) -> Any: ...
    @abc.abstractmethod
    def _op_log_softmax(self, x: Node, axis: int) -> Any: ...
    @abc.abstractmethod
    def _op_gelu(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_gelu_erf(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_relu(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_sigmoid(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_swish(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_tanh(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_exp(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_log(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_sqrt(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_negative(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_abs(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_sign(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_erf(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_sin(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_cos(self, x: Node) -> Any: ...
    @abc.abstractmethod
    def _op_clamp(self, x: Node, lo: float, hi: float) -> Any: ...
    @abc.abstractmethod
    def _op_eltwise_add(self, a: Node, b: Node) -> Any: ...
    @abc.abstractmethod
    def _op_eltwise_mul(self, a: Node, b: Node) -> Any: ...
    @abc.abstractmethod
    def _op_eltwise_div(self, a: Node, b: Node) -> Any: ...
    @abc.abstractmethod
    def _op_power(self, a: Node, b: Node) -> Any: ...
    @abc.abstractmethod
    def _op_reduce_sum(self, x: Node, axes: list[int], keep_dims: bool) -> Any: ...
    @abc.abstractmethod
    def _op_reduce_mean(self, x: Node, axes: list[int], keep_dims: bool) -> Any: ...
    @abc.abstractmethod
    def _op_reduce_max(self, x: Node, axes: list[int], keep_dims: bool) -> Any: ...
    @abc.abstractmethod
    def _op_reduce_min(self, x: Node, axes: list[int], keep_dims: bool) -> Any: ...
    @abc.abstractmethod
    def _op_reduce_prod(self, x: Node, axes: list[int], keep_dims: bool) -> Any: ...
    @abc.abstractmethod
    def _op_reshape(self, x: Node, shape: tuple[int, ...]) -> Any: ...
    @abc.abstractmethod
    def _op_transpose(self, x: Node, order: list[int]) -> Any: ...
    @abc.abstractmethod
    def _op_slice(self, x: Node, begin: list[int], end: list[int], stride: list[int]) -> Any: ...
    @abc.abstractmethod
    def _op_concat(self, xs: list[Node], axis: int) -> Any: ...
    @abc.abstractmethod
    def _op_gather(self, data: Node, indices: Node, axis: int, batch_dims: int) -> Any: ...
    @abc.abstractmethod
    def _op_convert(self, x: Node, dtype: np.dtype) -> Any: ...


#: hooks whose default body above is a composition (the rest are primitives)
def _members() -> dict[str, object]:
    """The builder's attributes, its own and those of its bases (`SpatialOps`), by name."""
    members: dict[str, object] = {}
    for klass in GraphBuilder.__mro__[:-1]:  # the most derived definition of a name wins
        for name, value in vars(klass).items():
            members.setdefault(name, value)
    return members


COMPOSITE_HOOKS: frozenset[str] = frozenset(
    name[4:]
    for name, fn in _members().items()
    if name.startswith("_op_") and not getattr(fn, "__isabstractmethod__", False)
)

PUBLIC_OPS: tuple[str, ...] = tuple(
    name for name, fn in _members().items() if getattr(fn, "__forge_op__", False)
)
