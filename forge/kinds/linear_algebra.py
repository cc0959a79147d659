"""Linear algebra kinds: matmul, linear, gated_mlp, sdpa (the last three are fused kernels).

Also the activation table a linear layer or gated MLP applies in its epilogue: how the reference,
the in-place CPU kernel, the torch source and the NPU graph spell each activation, and its FLOPs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute

from dialects import npuir as N
from dialects.shapes import static_shape
from dialects.torch_types import dtype_of, shape_of
from forge.kinds import CpuKernel, Example, KindSpec, SegmentHelpers, all_floating, elements, is_i1
from forge.kinds.normalization import Softmax

if TYPE_CHECKING:
    import torch

# ================================================================================ activations


@dataclass(frozen=True)
class Activation:
    """One epilogue activation in every form its consumers need (in place on torch: `inplace_activation`)."""

    source: str
    """Torch source around `{}`."""
    builder: str | None
    """The GraphBuilder method (None: identity)."""
    flops: float
    """Per output element."""


ACTIVATIONS: dict[str, Activation] = {
    "none": Activation("{}", None, 0.0),
    "relu": Activation("torch.relu({})", "relu", 1.0),
    "gelu": Activation("F.gelu({})", "gelu_erf", 8.0),
    "gelu_tanh": Activation('F.gelu({}, approximate="tanh")', "gelu", 8.0),
    "silu": Activation("F.silu({})", "swish", 5.0),
    "sigmoid": Activation("torch.sigmoid({})", "sigmoid", 4.0),
    "relu6": Activation("torch.clamp({}, 0.0, 6.0)", "relu6", 2.0),
}
"""The activations (`dialects.fused_kernels.apply_activation` is their reference semantics)."""


def inplace_activation(activation: str) -> Callable[[torch.Tensor], Any] | None:
    """What applies `activation` in place to the CPU kernel's output (None: identity; imports torch)."""
    import torch

    inplace: dict[str, Callable[[torch.Tensor], Any] | None] = {
        "none": None,
        "relu": torch.relu_,
        "gelu": lambda y: torch.ops.aten.gelu_(y, approximate="none"),
        "gelu_tanh": lambda y: torch.ops.aten.gelu_(y, approximate="tanh"),
        "silu": torch.ops.aten.silu_,
        "sigmoid": torch.sigmoid_,
        "relu6": lambda y: y.clamp_(0.0, 6.0),
    }
    return inplace[activation]


def _activate(g: Any, y: Any, activation: str) -> Any:
    method = ACTIVATIONS[activation].builder
    return y if method is None else getattr(g, method)(y)


def _epilogue_flops(activation: str) -> float:
    found = ACTIVATIONS.get(activation)
    return 1.0 if found is None else found.flops


def _mat(w: torch.Tensor, transpose: bool) -> torch.Tensor:
    return w.transpose(-1, -2) if transpose else w


# ===================================================================================== matmul


class Matmul(KindSpec):
    """Batched matrix product, either operand's last two dims optionally swapped."""

    name = "matmul"
    transposable_operands = (0, 1)
    example = Example(("2x4x3xf32", "1x5x4xf32"), "2x3x5xf32", {"transpose_a": True, "transpose_b": True})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch

        a, b = ins
        if p.get_flag("transpose_a"):
            a = a.transpose(-1, -2)
        if p.get_flag("transpose_b"):
            b = b.transpose(-1, -2)
        return torch.matmul(a, b)

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        import torch

        if not all_floating(in_types, out_type):
            return self.reference_kernel(p, out_type)
        ta, tb = p.get_flag("transpose_a"), p.get_flag("transpose_b")
        return CpuKernel(lambda a, b, out: torch.matmul(_mat(a, ta), _mat(b, tb), out=out), True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        a, b = args
        a = f"{a}.transpose(-1, -2)" if p.get_flag("transpose_a") else a
        b = f"{b}.transpose(-1, -2)" if p.get_flag("transpose_b") else b
        return f"torch.matmul({a}, {b})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        a, b = ins
        return em.g.matmul(a, b, em.flag(a, p.get_flag("transpose_a")), em.flag(b, p.get_flag("transpose_b")))

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        lhs = static_shape(in_types[0])
        k = lhs[-2] if p.get_flag("transpose_a") else lhs[-1]
        return 2.0 * elements(out_type) * k


# ===================================================================================== linear


class Linear(KindSpec):
    """activation(x · wᵀ + bias); `transpose_w` false means w is [K, N] (GPT-2's Conv1D)."""

    name = "linear"
    fused = True
    transposable_operands = (1,)
    example = Example(("3x8xf32", "8x6xf32", "6xf32"), "3x6xf32", {"activation": "gelu", "transpose_w": False})

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        from dialects.fused_kernels import apply_activation

        x, w, *bias = ins
        if not p.get_flag("transpose_w"):
            w = w.t()
        return apply_activation(F.linear(x, w, bias[0] if bias else None), p.get_str("activation"))

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        import torch

        if not all_floating(in_types, out_type):
            return self.reference_kernel(p, out_type)
        tw = p.get_flag("transpose_w")
        act = inplace_activation(p.get_str("activation"))

        def linear(x: torch.Tensor, w: torch.Tensor, *rest: torch.Tensor) -> None:
            *bias, out = rest
            torch.matmul(x, _mat(w, tw), out=out)
            if bias:
                out.add_(bias[0])
            if act is not None:
                act(out)

        return CpuKernel(linear, True)

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        x, w, *bias = args
        w = w if p.get_flag("transpose_w") else f"{w}.t()"
        inner = f"F.linear({x}, {w}{', ' + bias[0] if bias else ''})"
        return ACTIVATIONS[p.get_str("activation")].source.format(inner)

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        x, w, *bias = ins
        if em.flag(w, p.get_flag("transpose_w")):  # w is [N, K] like torch's Linear
            y = em.g.linear(x, w, bias[0] if bias else None)
        else:  # w is [K, N] (GPT-2's Conv1D)
            y = em.g.matmul(x, w)
            if bias:
                y = em.g.eltwise_add(y, bias[0])
        return _activate(em.g, y, p.get_str("activation"))

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        k = static_shape(in_types[0])[-1]
        bias = 1.0 if len(in_types) > 2 else 0.0
        return elements(out_type) * (2.0 * k + bias + _epilogue_flops(p.get_str("activation")))


# ================================================================================= gated_mlp


class GatedMlp(KindSpec):
    """activation(x · w_gateᵀ) * (x · w_upᵀ): the gated half of SwiGLU."""

    name = "gated_mlp"
    fused = True
    transposable_operands = (1, 2)
    example = Example(("1x3x8xf32", "6x8xf32", "6x8xf32"), "1x3x6xf32")

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        from dialects.fused_kernels import apply_activation

        x, wg, wu = ins
        if not p.get_flag("transpose_w"):
            wg, wu = wg.t(), wu.t()
        return apply_activation(F.linear(x, wg), p.get_str("activation")) * F.linear(x, wu)

    def cpu_kernel(self, p: N.Params, in_types: Sequence[TensorType], out_type: TensorType) -> CpuKernel:
        """The up projection goes to a scratch tensor allocated here, once."""
        import torch

        if not all_floating(in_types, out_type):
            return self.reference_kernel(p, out_type)
        tw = p.get_flag("transpose_w")
        act = inplace_activation(p.get_str("activation"))
        up = torch.empty(shape_of(out_type), dtype=dtype_of(out_type))

        def gated_mlp(x: torch.Tensor, wg: torch.Tensor, wu: torch.Tensor, out: torch.Tensor) -> None:
            torch.matmul(x, _mat(wg, tw), out=out)
            if act is not None:
                act(out)
            torch.matmul(x, _mat(wu, tw), out=up)
            out.mul_(up)

        return CpuKernel(gated_mlp, True, (up,))

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        x, wg, wu = args
        if not p.get_flag("transpose_w"):
            wg, wu = f"{wg}.t()", f"{wu}.t()"
        gate = ACTIVATIONS[p.get_str("activation")].source.format(f"F.linear({x}, {wg})")
        return f"{gate} * F.linear({x}, {wu})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        x, wg, wu = ins
        tw = p.get_flag("transpose_w")
        gate = _activate(em.g, em.g.matmul(x, wg, False, em.flag(wg, tw)), p.get_str("activation"))
        return em.g.eltwise_mul(gate, em.g.matmul(x, wu, False, em.flag(wu, tw)))

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        """Two products, the activation and the gating multiply."""
        k = static_shape(in_types[0])[-1]
        return elements(out_type) * (4.0 * k + _epilogue_flops(p.get_str("activation")) + 1.0)


# ====================================================================================== sdpa


class Sdpa(KindSpec):
    """softmax(q · kᵀ · scale + mask) · v, grouped-query attention when K/V have fewer heads."""

    name = "sdpa"
    fused = True
    example = Example(
        ("1x2x5x8xf32", "1x2x6x8xf32", "1x2x6x8xf32", "1x1x5x6xf32"), "1x2x5x8xf32", {"scale": 0.3}
    )

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        q, k, v, *mask = ins
        return F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask[0] if mask else None,
            is_causal=p.get_flag("is_causal"),
            scale=p.get_float("scale"),
            enable_gqa=q.shape[-3] != k.shape[-3],
        )

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        q, k, v, *mask = args
        gqa = shape_of(in_types[0])[-3] != shape_of(in_types[1])[-3]
        extra = f", attn_mask={mask[0]}" if mask else ""
        if p.get_flag("is_causal"):
            extra += ", is_causal=True"
        if p.get_float("scale") is not None:
            extra += f", scale={p.get_float('scale')!r}"
        if gqa:
            extra += ", enable_gqa=True"
        return f"F.scaled_dot_product_attention({q}, {k}, {v}{extra})"

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        import numpy as np

        q, k, v, *mask = ins
        m = attends = None
        if mask:
            m = mask[0]
            if is_i1(in_types[3]):  # keep-mask -> additive 0 / -inf
                cond = m if m.dtype == np.bool_ else em.num01(m)
                m = em.g.select(cond, em.scalar(0.0, q.dtype), em.scalar(-math.inf, q.dtype))
                # rows that attend to no key: torch's sdpa gives 0 there (softmax of all -inf is NaN)
                keep = em.g.select(cond, em.scalar(1.0, q.dtype), em.scalar(0.0, q.dtype))
                attends = em.g.greater(em.g.reduce_max(keep, -1, keep_dims=True), em.scalar(0.0, q.dtype))
            elif m.dtype != q.dtype:
                m = em.g.convert(m, q.dtype)
        out = em.g.scaled_dot_product_attention(
            q, k, v, m, is_causal=p.get_flag("is_causal"), scale=p.get_float("scale")
        )
        return out if attends is None else em.g.select(attends, out, em.scalar(0.0, q.dtype))

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        """The two products plus a softmax over the scores."""
        q, key, v = (static_shape(t) for t in in_types[:3])
        scores = math.prod(q[:-1]) * key[-2]
        return scores * (2.0 * q[-1] + 2.0 * v[-1] + Softmax.flops_per_element)


def written_cache(cache: torch.Tensor, index: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """`cache` with `new`'s rows written at `index` along dim -2: negative indices count from the end and
    a repeated index keeps its last row (what a serial `index_put_` leaves)."""
    import torch

    size = cache.shape[-2]
    idx = torch.remainder(index.to(torch.int64), size)
    later = idx[:, None] == idx[None, :]
    last = ~torch.triu(later, diagonal=1).any(dim=1)  # no later row writes the same position
    return cache.index_copy(-2, idx[last], new[..., last, :])


class CachedSdpa(KindSpec):
    """sdpa over a KV cache and its new rows (`npuir.cached_sdpa`): the value of `sdpa(q,
    written_cache(k_cache, index, k_new), written_cache(v_cache, index, v_new), mask)`, computed
    without building the written cache. On the npu the scores of the cache (its rewritten positions
    masked out) and of the new rows (the mask's columns at `index`; a row a later one overwrites masked
    out) go through one softmax, so the cache is read in place and never copied.

    Exact when the cache's rewritten value rows are finite: their probability is 0, and 0 * inf is NaN
    (reading them in place is the point, so they are not zeroed; a new row a later one overwrites is).
    A generator's cache is zeros at every position
    it writes (reset per sequence, each position written once), and `cached-attention` forms this op for
    states only."""

    name = "cached_sdpa"
    fused = True
    index_operands = (3,)
    example = Example(
        ("1x4x2x8xf32", "1x2x6x8xf32", "1x2x6x8xf32", "2xi64", "1x2x2x8xf32", "1x2x2x8xf32", "1x1x2x6xf32"),
        "1x4x2x8xf32",
        {"scale": 0.3},
        ("normal", "normal", "normal", "index6", "normal", "normal", "normal"),
    )

    def reference(self, p: N.Params, ins: Sequence[torch.Tensor], out_type: TensorType) -> torch.Tensor:
        import torch.nn.functional as F

        q, k, v, index, k_new, v_new, *mask = ins
        return F.scaled_dot_product_attention(
            q,
            written_cache(k, index, k_new),
            written_cache(v, index, v_new),
            attn_mask=mask[0] if mask else None,
            scale=p.get_float("scale"),
            enable_gqa=q.shape[-3] != k.shape[-3],
        )

    def torch_source(
        self, p: N.Params, args: Sequence[str], in_types: Sequence[TensorType], out_type: TensorType
    ) -> str:
        q, k, v, index, k_new, v_new, *mask = args
        extra = f", attn_mask={mask[0]}" if mask else ""
        if p.get_float("scale") is not None:
            extra += f", scale={p.get_float('scale')!r}"
        if shape_of(in_types[0])[-3] != shape_of(in_types[1])[-3]:
            extra += ", enable_gqa=True"
        return (
            f"F.scaled_dot_product_attention({q}, written_cache({k}, {index}, {k_new}), "
            f"written_cache({v}, {index}, {v_new}){extra})"
        )

    def build_npu(
        self, em: SegmentHelpers, p: N.Params, ins: Sequence[Any], in_types: Sequence[TensorType], out_type: TensorType
    ) -> Any:
        import numpy as np

        g = em.g
        q, k, v, index, k_new, v_new, *mask = ins
        *lead, hq, length, e = q.shape
        hkv, size, n = k.shape[-3], k.shape[-2], index.shape[0]
        grouped = (*lead, hkv, (hq // hkv) * length)  # q heads of one kv head side by side: no K/V repeat
        scale = p.get_float("scale")
        q = g.eltwise_mul(q, em.scalar(1.0 / math.sqrt(e) if scale is None else scale, q.dtype))
        q = g.reshape(q, (*grouped, e))
        ninf = em.scalar(-math.inf, q.dtype)
        wrapped = g.eltwise_add(index, em.scalar(size, index.dtype))
        idx = g.select(g.less(index, em.scalar(0, index.dtype)), wrapped, index)
        slots = g.constant(np.arange(size, dtype=index.dtype).reshape(size, 1))
        rewritten = g.reduce_max(em.num01(g.equal(slots, g.reshape(idx, (1, n)))), 1)  # [size]: 1 where written
        m = mask[0] if mask else None
        if m is not None and is_i1(in_types[6]):  # keep-mask -> additive 0 / -inf, as torch's kernel adds it
            m = g.select(m if m.dtype == np.bool_ else em.num01(m), em.scalar(0.0, q.dtype), ninf)
        elif m is not None and m.dtype != q.dtype:
            m = g.convert(m, q.dtype)
        if m is not None and m.shape[-1] != size:
            m = g.broadcast(m, (*m.shape[:-1], size))
        dropped = None
        if n > 1:  # a row a later one overwrites is not in the written cache
            same = em.num01(g.equal(g.reshape(idx, (n, 1)), g.reshape(idx, (1, n))))
            later = g.constant(np.triu(np.ones((n, n), dtype=same.dtype), 1))
            dropped = g.reduce_max(g.eltwise_mul(same, later), 1)
            v_new = g.select(g.reshape(dropped, (n, 1)), em.scalar(0.0, q.dtype), v_new)  # its 0 weight times a NaN
        scores = []
        for keys, rows, rows_mask, hidden in (
            (k, size, m, rewritten),
            (k_new, n, None if m is None else g.gather(m, idx, m.rank - 1), dropped),
        ):
            s = g.reshape(g.matmul(q, keys, False, True), (*lead, hq, length, rows))
            if rows_mask is not None:
                s = g.eltwise_add(s, rows_mask)
            scores.append(s if hidden is None else g.select(hidden, ninf, s))  # select: a stale NaN key is hidden too
        joined = g.concat(scores, -1)
        # torch's safe softmax: a row whose every score is -inf has probabilities 0, not NaN (a max-reduction of
        # -inf rows would not tell: OpenVINO's saturates to the lowest finite value)
        seen = g.reduce_max(em.num01(g.not_equal(joined, ninf)), -1, keep_dims=True)
        probs = g.select(seen, g.softmax(joined, -1), em.scalar(0.0, q.dtype))
        begin = [0] * (len(lead) + 3)
        parts = []
        for values, lo, hi in ((v, 0, size), (v_new, size, size + n)):
            part = g.slice(probs, [*begin[:-1], lo], [*probs.shape[:-1], hi])
            parts.append(g.matmul(g.reshape(part, (*grouped, hi - lo)), values))
        return g.reshape(g.eltwise_add(*parts), tuple(shape_of(out_type)))

    def flops(self, p: N.Params, in_types: Sequence[Attribute], out_type: Attribute) -> float:
        """sdpa's over the cache and the new rows."""
        q, key, v, index = (static_shape(t) for t in in_types[:4])
        scores = math.prod(q[:-1]) * (key[-2] + index[0])
        return scores * (2.0 * q[-1] + 2.0 * v[-1] + Softmax.flops_per_element)


SPECS: tuple[KindSpec, ...] = (Matmul(), Linear(), GatedMlp(), Sdpa(), CachedSdpa())
