"""`GraphBuilder`: the NNFactory-shaped graph-building API every runtime implements.

Each public op is either *native* (a runtime hook, `_op_<name>`, calling one op of the underlying
API) or a *composition* of other public ops written once here; a runtime may override any
composition with a native hook. `runtime.py` documents the conventions and the runtimes.
"""

from __future__ import annotations

import abc
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from .graph_values import (
    GraphBuildError,
    Node,
    Operand,
    PoolWindows,
    build_failure_reason,
    contiguous,
    graph_op,
    linear_weights,
    nearest_indices,
    norm_axes,
    norm_axis,
    pool_windows,
    to_numpy_dtype,
)

if TYPE_CHECKING:
    from .runtime import CompiledGraph, Runtime

# --------------------------------------------------------------------------- builder


class GraphBuilder(abc.ABC):
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
        return self._node(self._op_constant(contiguous(array)))

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
    def clamp(self, x: Node, min: float, max: float) -> Node:
        """Clip to ``[min, max]`` (python scalars)."""
        x = self._own(x)
        if min > max:
            raise ValueError(f"min {min} > max {max}")
        return self._node(self._op_clamp(x, float(min), float(max)))

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

    # comparisons: 1/0 in the inputs' dtype. The compositions use the sign of a - b,
    # exact for finite inputs (IEEE: a - b == 0 iff a == b; overflow keeps the sign);
    # equal infinities compare wrongly and NaN is not "unordered".

    def _cmp_parts(self, a: Node, b: Node) -> tuple[Node, Node]:
        """(greater, less) as 0/1 of a vs b."""
        d = self.eltwise_sub(a, b)
        if np.issubdtype(d.dtype, np.integer):
            return self.clamp(d, 0, 1), self.clamp(self.negative(d), 0, 1)
        s = self.sign(d)
        return self.relu(s), self.relu(self.negative(s))

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
        lt = self._cmp_parts(a, b)[1]
        return self.eltwise_sub(self._scalar(1, lt), lt).handle

    @graph_op
    def less_equal(self, a: Operand, b: Operand) -> Node:
        return self._binary("less_equal", a, b)

    def _op_less_equal(self, a: Node, b: Node) -> Any:
        gt = self._cmp_parts(a, b)[0]
        return self.eltwise_sub(self._scalar(1, gt), gt).handle

    @graph_op
    def not_equal(self, a: Operand, b: Operand) -> Node:
        return self._binary("not_equal", a, b)

    def _op_not_equal(self, a: Node, b: Node) -> Any:
        gt, lt = self._cmp_parts(a, b)
        return self.eltwise_add(gt, lt).handle

    @graph_op
    def equal(self, a: Operand, b: Operand) -> Node:
        return self._binary("equal", a, b)

    def _op_equal(self, a: Node, b: Node) -> Any:
        ne = self.not_equal(a, b)
        return self.eltwise_sub(self._scalar(1, ne), ne).handle

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
        picked = self.gather(table, idx, axis=1, batch_dims=1)
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

    # ---- pooling (torch semantics; hooks see floor-mode windows over explicit padding) ----

    def _pool_windows(self, x: Node, kernel: Sequence[int], *args: Any) -> PoolWindows:
        x = self._own(x)
        if len(kernel) not in (1, 2) or x.rank != len(kernel) + 2:
            raise ValueError(f"pooling needs a [N, C, *spatial] input with 1 or 2 spatial dims, got {list(x.shape)}")
        return pool_windows(x.shape[2:], kernel, *args)

    @graph_op
    def max_pool(
        self,
        x: Node,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        pads_begin: Sequence[int] | None = None,
        pads_end: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        ceil_mode: bool = False,
    ) -> Node:
        """torch's ``max_pool1d``/``max_pool2d`` on ``[N, C, *spatial]`` (pads may differ at the ends)."""
        w = self._pool_windows(x, kernel, strides, pads_begin, pads_end, dilations, bool(ceil_mode))
        return self._node(self._op_max_pool(x, w.kernel, w.strides, w.pads_begin, w.pads_end, w.dilations))

    def _op_max_pool(
        self, x: Node, kernel: list[int], strides: list[int], pads_begin: list[int], pads_end: list[int],
        dilations: list[int],
    ) -> Any:
        # The maximum of one strided slice per kernel offset, over an input padded with the lowest finite value
        # (every torch window holds an input element).
        lowest = np.finfo(x.dtype).min if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
        for i, (b, e) in enumerate(zip(pads_begin, pads_end, strict=True)):
            axis = 2 + i
            blocks = [
                self.constant(np.full((*x.shape[:axis], c, *x.shape[axis + 1 :]), lowest, dtype=x.dtype))
                for c in (b, e) if c > 0
            ]
            x = self.concat([*blocks[: int(b > 0)], x, *blocks[int(b > 0) :]], axis)
        spans = zip(x.shape[2:], kernel, strides, dilations, strict=True)
        out = [(size - d * (k - 1) - 1) // s + 1 for size, k, s, d in spans]
        y = None
        for offsets in itertools.product(*(range(k) for k in kernel)):
            begin = [0, 0, *(o * d for o, d in zip(offsets, dilations, strict=True))]
            end = [*x.shape[:2], *(b + (n - 1) * s + 1 for b, n, s in zip(begin[2:], out, strides, strict=True))]
            piece = self.slice(x, begin, end, [1, 1, *strides])
            y = piece if y is None else self.maximum(y, piece)
        assert y is not None
        return y.handle

    @graph_op
    def avg_pool(
        self,
        x: Node,
        kernel: Sequence[int],
        strides: Sequence[int] | None = None,
        pads_begin: Sequence[int] | None = None,
        pads_end: Sequence[int] | None = None,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> Node:
        """torch's ``avg_pool1d``/``avg_pool2d`` on ``[N, C, *spatial]``: the hook averages whole
        windows over zero padding; torch's divisors (clipped or valid-only windows) rescale it."""
        w = self._pool_windows(x, kernel, strides, pads_begin, pads_end, None, bool(ceil_mode), bool(count_include_pad))
        y = self._node(self._op_avg_pool(x, w.kernel, w.strides, w.pads_begin, w.pads_end))
        if w.divisors is None:
            return y
        return self.eltwise_mul(y, self.constant((float(np.prod(w.kernel)) / w.divisors).astype(y.dtype)))

    # ---- resampling (compositions: NNFactory has no interpolate) ----------------------

    @graph_op
    def interpolate(self, x: Node, size: Sequence[int], mode: str = "nearest", align_corners: bool = False) -> Node:
        """torch's ``interpolate`` of the spatial dims of ``[N, C, *spatial]`` to ``size`` (scale = input / output):
        ``nearest`` gathers each axis at constant indices, ``linear``/``bilinear`` multiply each axis by a
        constant [out, in] interpolation matrix."""
        x = self._own(x)
        size = [int(v) for v in size]
        if x.rank not in (3, 4) or len(size) != x.rank - 2 or min(size) < 1:
            raise ValueError(f"cannot resize {list(x.shape)} to spatial size {size}")
        if mode not in ("nearest", "linear", "bilinear"):
            raise ValueError(f"unknown interpolation mode {mode!r}")
        for axis, out in enumerate(size, start=2):
            if out == x.shape[axis]:  # every mode keeps an unresized axis as it is
                continue
            if mode == "nearest":
                x = self.gather(x, nearest_indices(x.shape[axis], out), axis)
                continue
            m = self.constant(linear_weights(x.shape[axis], out, bool(align_corners)).astype(x.dtype))
            x = self.matmul(x, m, trB=True) if axis == x.rank - 1 else self.matmul(m, x)
        return x

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
        return self._node(self._op_gather(data, indices, axis, int(batch_dims)))

    # ---- convolution and padding ----------------------------------------------------

    @graph_op
    def convolution(
        self,
        x: Node,
        weight: Node,
        bias: Node | None = None,
        strides: Sequence[int] | None = None,
        pads_begin: Sequence[int] | None = None,
        pads_end: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int = 1,
    ) -> Node:
        """torch's ``conv1d``/``conv2d`` on ``[N, C, *spatial]`` with a ``[O, C/groups, *k]``
        weight and an optional ``[O]`` bias; pads may differ at the two ends of a dim."""
        x, weight = self._own(x), self._own(weight)
        n, groups = self._conv_dims(x, weight), int(groups)
        strides, dilations = self._conv_list(strides, n, 1), self._conv_list(dilations, n, 1)
        pads_begin, pads_end = self._conv_list(pads_begin, n, 0), self._conv_list(pads_end, n, 0)
        if groups < 1 or x.shape[1] != weight.shape[1] * groups or weight.shape[0] % groups:
            raise ValueError(f"weight {list(weight.shape)} with groups {groups} does not fit input {list(x.shape)}")
        if groups > 1:  # the grouped layout [groups, O/groups, C/groups, *k]
            weight = self.reshape(weight, (groups, weight.shape[0] // groups, *weight.shape[1:]))
        y = self._node(self._op_convolution(x, weight, strides, pads_begin, pads_end, dilations, groups))
        return self._conv_bias(y, bias)

    @graph_op
    def convolution_transpose(
        self,
        x: Node,
        weight: Node,
        bias: Node | None = None,
        strides: Sequence[int] | None = None,
        pads_begin: Sequence[int] | None = None,
        pads_end: Sequence[int] | None = None,
        dilations: Sequence[int] | None = None,
        groups: int = 1,
        output_padding: Sequence[int] | None = None,
    ) -> Node:
        """torch's ``conv_transpose1d``/``conv_transpose2d`` with a ``[C, O/groups, *k]`` weight:
        the pads crop the full output, ``output_padding`` extends its end."""
        x, weight = self._own(x), self._own(weight)
        n, groups = self._conv_dims(x, weight), int(groups)
        strides, dilations = self._conv_list(strides, n, 1), self._conv_list(dilations, n, 1)
        pads_begin, pads_end = self._conv_list(pads_begin, n, 0), self._conv_list(pads_end, n, 0)
        output_padding = self._conv_list(output_padding, n, 0)
        if groups < 1 or x.shape[1] != weight.shape[0] or weight.shape[0] % groups:
            raise ValueError(f"weight {list(weight.shape)} with groups {groups} does not fit input {list(x.shape)}")
        y = self._node(
            self._op_convolution_transpose(x, weight, strides, pads_begin, pads_end, dilations, groups, output_padding)
        )
        return self._conv_bias(y, bias)

    def _conv_dims(self, x: Node, weight: Node) -> int:
        if x.rank not in (3, 4) or weight.rank != x.rank:
            raise ValueError(f"convolution needs rank-3/4 input and weight, got {list(x.shape)}, {list(weight.shape)}")
        if x.dtype != weight.dtype:
            raise TypeError(f"input and weight dtypes differ: {x.dtype.name} vs {weight.dtype.name}")
        return x.rank - 2

    @staticmethod
    def _conv_list(values: Sequence[int] | None, n: int, default: int) -> list[int]:
        values = [default] * n if values is None else [int(v) for v in values]
        if len(values) != n or any(v < 0 for v in values):
            raise ValueError(f"expected {n} non-negative values, got {values}")
        return values

    def _conv_bias(self, y: Node, bias: Node | None) -> Node:
        if bias is None:
            return y
        bias = self._own(bias)
        return self.eltwise_add(y, self.reshape(bias, (1, y.shape[1], *[1] * (y.rank - 2))))

    def _op_convolution_transpose(
        self,
        x: Node,
        w: Node,
        strides: list[int],
        pads_begin: list[int],
        pads_end: list[int],
        dilations: list[int],
        groups: int,
        output_padding: list[int],
    ) -> Any:
        # A stride-1 convolution of the zero-interleaved, padded input with the flipped weight.
        n = x.rank - 2
        for i, s in enumerate(strides):
            x = self._interleave_zeros(x, 2 + i, s)
        span = [d * (k - 1) for d, k in zip(dilations, w.shape[2:], strict=True)]
        begin = [0, 0, *(sp - b for sp, b in zip(span, pads_begin, strict=True))]
        end = [0, 0, *(sp - e + o for sp, e, o in zip(span, pads_end, output_padding, strict=True))]
        x = self.pad(x, begin, end, 0.0)
        for axis in range(2, 2 + n):
            w = self.gather(w, np.arange(w.shape[axis] - 1, -1, -1, dtype=np.int64), axis)
        c, o, *k = w.shape
        w = self.reshape(w, (groups, c // groups, o, *k))
        w = self.transpose(w, (0, 2, 1, *range(3, 3 + n)))
        w = self.reshape(w, (groups * o, c // groups, *k))
        return self.convolution(x, w, None, [1] * n, [0] * n, [0] * n, dilations, groups).handle

    def _interleave_zeros(self, x: Node, axis: int, s: int) -> Node:
        """``s - 1`` zeros between neighbours along ``axis``: length L becomes (L - 1) * s + 1."""
        if s == 1 or x.shape[axis] == 1:
            return x
        pre, length, post = x.shape[:axis], x.shape[axis], x.shape[axis + 1 :]
        y = self.reshape(x, (*pre, length, 1, *post))
        zeros = self.constant(np.zeros((*pre, length, s - 1, *post), dtype=x.dtype))
        y = self.reshape(self.concat([y, zeros], axis + 1), (*pre, length * s, *post))
        return self.slice(y, [0] * axis + [0], [*pre, (length - 1) * s + 1])

    @graph_op
    def pad(self, x: Node, pads_begin: Sequence[int], pads_end: Sequence[int], value: float = 0.0) -> Node:
        """Constant padding: ``pads_begin[i]`` / ``pads_end[i]`` elements of ``value`` before /
        after axis i; a negative pad crops (torch's ``constant_pad_nd``)."""
        x = self._own(x)
        begin, end = [int(v) for v in pads_begin], [int(v) for v in pads_end]
        if len(begin) != x.rank or len(end) != x.rank:
            raise ValueError(f"pads {begin}/{end} do not have {x.rank} entries")
        if any(d + b + e <= 0 for d, b, e in zip(x.shape, begin, end, strict=True)):
            raise ValueError(f"pads {begin}/{end} leave no elements of {list(x.shape)}")
        if not any(begin) and not any(end):
            return x
        return self._node(self._op_pad(x, begin, end, float(value)))

    def _op_pad(self, x: Node, begin: list[int], end: list[int], value: float) -> Any:
        # Crop the negative pads with one slice, then concat constant blocks axis by axis.
        starts = [max(0, -b) for b in begin]
        stops = [d - max(0, -e) for d, e in zip(x.shape, end, strict=True)]
        x = self.slice(x, starts, stops)
        for axis, (b, e) in enumerate(zip(begin, end, strict=True)):
            blocks = [self._pad_block(x, axis, count, value) if count > 0 else None for count in (b, e)]
            x = self.concat([piece for piece in (blocks[0], x, blocks[1]) if piece is not None], axis)
        return x.handle

    def _pad_block(self, x: Node, axis: int, count: int, value: float) -> Node:
        shape = (*x.shape[:axis], count, *x.shape[axis + 1 :])
        return self.constant(np.full(shape, value, dtype=x.dtype))

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

    def compile(self) -> CompiledGraph:
        if self._closed:
            raise GraphBuildError("compile", "", "the graph is already compiled")
        if not self._results:
            raise GraphBuildError("compile", "", "no results: mark outputs with result()")
        try:
            graph = self._compile(list(self._params), list(self._results))
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
    def _op_convolution(
        self, x: Node, w: Node, strides: list[int], pads_begin: list[int], pads_end: list[int],
        dilations: list[int], groups: int,
    ) -> Any:
        """w is [O, C, *k], or [groups, O/groups, C/groups, *k] when groups > 1."""
    @abc.abstractmethod
    def _op_avg_pool(
        self, x: Node, kernel: list[int], strides: list[int], pads_begin: list[int], pads_end: list[int]
    ) -> Any:
        """The mean of every whole (floor-mode) window over x zero-padded (no divisor clipping)."""
    @abc.abstractmethod
    def _op_convert(self, x: Node, dtype: np.dtype) -> Any: ...


#: hooks whose default body above is a composition (the rest are primitives)
COMPOSITE_HOOKS: frozenset[str] = frozenset(
    name[4:]
    for name, fn in vars(GraphBuilder).items()
    if name.startswith("_op_") and not getattr(fn, "__isabstractmethod__", False)
)

PUBLIC_OPS: tuple[str, ...] = tuple(
    name for name, fn in vars(GraphBuilder).items() if getattr(fn, "__forge_op__", False)
)
