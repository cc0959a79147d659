"""Weight-only quantization (`weights="int8"|"int4"`): the maths and the dequantizing graph.

`quantize` turns a weight, laid out output-major `[N, K]`, into integers and f32 scales:

- int8: per-output-channel symmetric, `scale[n] = max_k |w[n, k]| / 127`,
  `q = clip(round(w / scale), -127, 127)`.
- int4: group-wise symmetric over `K` in groups of `int4_group(K)` (the largest power-of-two
  divisor of K up to 128; the whole row when K has none >= 16), `scale = max |w| / 7`,
  `q = clip(round(w / scale), -8, 7)`.

`weight_node(g, w, mode)` builds the dequantizing subgraph from a runtime's graph builder:
`Constant(i8) -> Convert(f32) -> Multiply(scale)` (int4: `Constant(i4)[N, K/G, G] -> Convert ->
Multiply(scale[N, K/G, 1]) -> Reshape[N, K]`), the pattern OpenVINO's CPU plugin turns into a
FullyConnected with compressed weights (decompressed inside the kernel).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from forge.precision import WEIGHT_MODES, PrecisionError

INT4_GROUP = 128
"""The largest int4 quantization group along K."""


@dataclass(frozen=True)
class QuantizedWeight:
    """`q` (int8 values; int4 values held in int8, shape `[N, K/G, G]`), f32 `scale` broadcastable
    against `q`, and the weight's `[N, K]` shape."""

    mode: str
    q: np.ndarray
    scale: np.ndarray
    shape: tuple[int, int]

    def dequantize(self) -> np.ndarray:
        return (self.q.astype(np.float32) * self.scale).reshape(self.shape)


def int4_group(k: int) -> int:
    """The largest power-of-two divisor of `k` up to `INT4_GROUP` (>= 16), else `k` (one group per row)."""
    g = INT4_GROUP
    while g >= 16:
        if k % g == 0:
            return g
        g //= 2
    return k


def _scales(w: np.ndarray, levels: int, axis: int) -> np.ndarray:
    amax = np.abs(w).max(axis=axis, keepdims=True).astype(np.float32)
    return np.where(amax > 0, amax / levels, np.float32(1.0)).astype(np.float32)


def quantize(w: np.ndarray, mode: str) -> QuantizedWeight:
    """Quantize an output-major `[N, K]` float weight (see the module docstring)."""
    if w.ndim != 2:
        raise ValueError(f"quantize: expected a 2-D [out, in] weight, got shape {list(w.shape)}")
    w = np.asarray(w, dtype=np.float32)
    n, k = w.shape
    if mode == "int8":
        scale = _scales(w, 127, axis=1)
        q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
        return QuantizedWeight("int8", q, scale, (n, k))
    if mode == "int4":
        g = int4_group(k)
        grouped = w.reshape(n, k // g, g)
        scale = _scales(grouped, 7, axis=2)
        q = np.clip(np.rint(grouped / scale), -8, 7).astype(np.int8)
        return QuantizedWeight("int4", q, scale, (n, k))
    raise PrecisionError(f"quantize: unknown weight mode {mode!r}; valid: {', '.join(WEIGHT_MODES)}")


def pack_int4(q: np.ndarray) -> np.ndarray:
    """int4 values (in int8, even count in the last dim) as bytes, low nibble first (OpenVINO's i4)."""
    flat = q.reshape(-1).astype(np.int16)
    if flat.size % 2:
        raise ValueError("pack_int4: an even number of values is needed")
    lo = flat[0::2] & 0xF
    hi = flat[1::2] & 0xF
    return (lo | (hi << 4)).astype(np.uint8)


def weight_node(g: Any, w: np.ndarray, mode: str) -> Any:
    """The dequantized `[N, K]` f32 weight as nodes of graph builder `g` (quantized constant,
    convert, multiply by the scales). int4 needs a builder with `int4_constant` (openvino)."""
    qw = quantize(w, mode)
    if mode == "int8":
        values = g.constant(qw.q)
    else:
        make = getattr(g, "int4_constant", None)
        if make is None:
            raise PrecisionError(f"int4 weights: the {g.runtime.name} runtime has no int4 element type; use int8")
        values = make(pack_int4(qw.q), qw.q.shape)
    node = g.eltwise_mul(g.convert(values, np.float32), g.constant(qw.scale))
    return node if mode == "int8" else g.reshape(node, list(qw.shape))
