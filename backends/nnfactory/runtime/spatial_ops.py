"""Spatial ops of the graph API: convolution, padding, pooling and resampling (torch semantics).

`SpatialOps` is a base class of `GraphBuilder` (`graph_builder.py`): its public ops are the builder's
like any other (`PUBLIC_OPS` walks both classes) and use the builder's plumbing (`_own`, `_node`,
`constant`, ...). It lives apart only to keep each module readable; the vision/audio kinds of
`forge/kinds` (convolution, pooling) are what build with it.
"""

from __future__ import annotations

import abc
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .graph_values import (
    Node,
    PoolWindows,
    graph_op,
    linear_taps,
    nearest_indices,
    pool_windows,
)


class SpatialOps(abc.ABC):
    """Convolution, padding, pooling and interpolation; mixed into `GraphBuilder`."""

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
        # Per kernel tap: a 1x1 convolution of the input with that tap's weights (the products torch makes,
        # and no others: a convolution over a zero-interleaved input multiplied the interleaved zeros by
        # the weights, 0 * inf = nan where torch has a value), placed at stride s and offset k * d by
        # interleaving and padding with zeros, and summed; the pads then crop the full output.
        n = x.rank - 2
        c, o, *k = w.shape
        length = [
            (size - 1) * st + d * (kk - 1) + 1 + op
            for size, st, d, kk, op in zip(x.shape[2:], strides, dilations, k, output_padding, strict=True)
        ]
        y = None
        for tap in itertools.product(*(range(kk) for kk in k)):
            wk = self.slice(w, [0, 0, *tap], [c, o, *(t + 1 for t in tap)])
            wk = self.transpose(self.reshape(wk, (groups, c // groups, o)), (0, 2, 1))
            wk = self.reshape(wk, (groups * o, c // groups, *[1] * n))
            part = self.convolution(x, wk, None, [1] * n, [0] * n, [0] * n, [1] * n, groups)
            for i, st in enumerate(strides):
                part = self._interleave_zeros(part, 2 + i, st)
            offsets = [t * d for t, d in zip(tap, dilations, strict=True)]
            begin = [0, 0, *offsets]
            end = [0, 0, *(full - size - off for full, size, off in zip(length, part.shape[2:], offsets, strict=True))]
            part = self.pad(part, begin, end, 0.0)
            y = part if y is None else self.eltwise_add(y, part)
        assert y is not None
        stops = [*y.shape[:2], *(full - e for full, e in zip(length, pads_end, strict=True))]
        return self.slice(y, [0, 0, *pads_begin], stops).handle

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
            y = piece if y is None else self._max_pool_step(y, piece)
        assert y is not None
        return y.handle

    def _max_pool_step(self, y: Node, piece: Node) -> Node:
        """torch's running maximum over a window: a later element replaces it when greater or NaN, so the
        first of equal elements (0.0 and -0.0) stays and a NaN propagates."""
        take = self.greater(piece, y)
        unordered = self._unordered(piece, piece)
        if unordered is not None:
            take = self.eltwise_add(take, unordered)
        return self.select(take, piece, y)

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
        ``nearest`` gathers each axis at constant indices; ``linear``/``bilinear`` compute torch's two taps per
        axis, ``l0 * x[i0] + l1 * x[i1]`` (two constant-index gathers), the last axis first as torch nests
        them, in f32. Only the two taps are read, so a NaN or an infinity reaches the outputs torch's does,
        and zeros keep their sign."""
        x = self._own(x)
        size = [int(v) for v in size]
        if x.rank not in (3, 4) or len(size) != x.rank - 2 or min(size) < 1:
            raise ValueError(f"cannot resize {list(x.shape)} to spatial size {size}")
        if mode not in ("nearest", "linear", "bilinear"):
            raise ValueError(f"unknown interpolation mode {mode!r}")
        dtype = x.dtype
        if mode != "nearest" and dtype != np.float32:
            x = self.convert(x, np.float32)
        for axis, out in reversed(list(enumerate(size, start=2))):
            if mode == "nearest":
                if out != x.shape[axis]:  # an unresized axis is kept as it is
                    x = self.gather(x, nearest_indices(x.shape[axis], out), axis)
                continue
            # torch interpolates an unresized axis too (inf * 0 is NaN there)
            i0, i1, l0, l1 = linear_taps(x.shape[axis], out, bool(align_corners))
            shape = [out if a == axis else 1 for a in range(x.rank)]
            near = self.eltwise_mul(self.gather(x, self.constant(i0), axis), self.constant(l0.reshape(shape)))
            far = self.eltwise_mul(self.gather(x, self.constant(i1), axis), self.constant(l1.reshape(shape)))
            x = self.eltwise_add(near, far)
        return x if x.dtype == dtype else self.convert(x, dtype)

    # ---- primitives every runtime provides ----------------------------------------------

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
