"""Compressed weights (`weights="int8"|"int4"`): the quantization maths and the stored form.

A `CompressedWeight` is what the `WeightStore` holds in place of a float weight that the compiled
program reads only as a matmul-like weight (or a gather table): integers and f32 scales, laid out
output-major `[N, K]` whatever the IR's layout (`k_axis` names the IR's contracted axis: the IR
shape is `[N, K]` when it is 1, `[K, N]` when it is 0). Its `dequantize()` is the f32 value the IR
means, made on demand (CPU steps, the interpreter); the runtime reads `data` and `scale` directly.

- int8: per output channel, symmetric: `scale[n] = max_k |w[n, k]| / 127`,
  `q = clip(round(w / scale), -127, 127)`; `data` int8 `[N, K]`, `scale` `[N, 1]`.
- int4: symmetric groups of `int4_group(K)` along K (128 when K allows), `scale = max |w| / 7`,
  `q = clip(round(w / scale), -8, 7)`; `data` uint8 `[N, K/2]`, two values a byte, low nibble first
  (OpenVINO's i4 packing), `scale` `[N, K/G, 1]`.

`round` is round-half-to-even (torch.round), and the maths is done in f32: deterministic, so a
reference can redo it exactly (tests/test_quantize.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from forge.precision import WEIGHT_MODES, PrecisionError

if TYPE_CHECKING:
    import torch

INT4_GROUP = 128
"""The largest int4 quantization group along K."""
LEVELS = {"int8": (-127, 127), "int4": (-8, 7)}
"""The integer range of each mode (symmetric scales: `max |w| / hi`)."""


def int4_group(k: int) -> int:
    """The largest power-of-two divisor of `k` up to `INT4_GROUP` (>= 16), else `k` (one group per row)."""
    g = INT4_GROUP
    while g >= 16:
        if k % g == 0:
            return g
        g //= 2
    return k


@dataclass(frozen=True, eq=False)
class CompressedWeight:
    """A quantized 2-D f32 weight (see the module docstring for the layout)."""

    mode: str
    data: torch.Tensor
    scale: torch.Tensor
    k_axis: int

    @property
    def n(self) -> int:
        return int(self.data.shape[0])

    @property
    def k(self) -> int:
        return int(self.data.shape[1]) * (2 if self.mode == "int4" else 1)

    @property
    def group(self) -> int:
        """Values sharing one scale along K (K for int8: one scale per output channel)."""
        return self.k if self.mode == "int8" else self.k // int(self.scale.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        """The IR's (logical) shape."""
        return (self.n, self.k) if self.k_axis == 1 else (self.k, self.n)

    @property
    def dtype(self) -> torch.dtype:
        """The IR's dtype: f32, what `dequantize` gives."""
        import torch

        return torch.float32

    @property
    def nbytes(self) -> int:
        return self.data.numel() * self.data.element_size() + self.scale.numel() * self.scale.element_size()

    def values(self) -> torch.Tensor:
        """The integers, int8 `[N, K]` (int4 unpacked; `[N, K/G, G]` would be `.reshape`)."""
        return self.data if self.mode == "int8" else unpack_int4(self.data, self.k)

    def dequantize(self) -> torch.Tensor:
        """The f32 weight the IR names, in the IR's layout (a new tensor each call)."""
        q = self.values().float()
        w = (
            q * self.scale
            if self.mode == "int8"
            else (q.reshape(self.n, -1, self.group) * self.scale).reshape(self.n, self.k)
        )
        return w if self.k_axis == 1 else w.t().contiguous()

    def describe(self) -> dict[str, object]:
        """What a weights file records beside the two tensors."""
        return {"mode": self.mode, "k_axis": self.k_axis, "shape": list(self.shape), "group": self.group}


def quantize(w: torch.Tensor, mode: str, k_axis: int = 1) -> CompressedWeight:
    """Quantize a 2-D float weight contracted on `k_axis` (see the module docstring)."""
    import torch

    if mode not in WEIGHT_MODES:
        raise PrecisionError(f"quantize: unknown weight mode {mode!r}; valid: {', '.join(WEIGHT_MODES)}")
    if w.ndim != 2 or k_axis not in (0, 1):
        raise ValueError(f"quantize: expected a 2-D weight and k_axis 0 or 1, got shape {list(w.shape)}, {k_axis}")
    rows = w.detach().to(torch.float32)
    rows = rows if k_axis == 1 else rows.t()
    n, k = rows.shape
    lo, hi = LEVELS[mode]
    group = k if mode == "int8" else int4_group(k)
    if mode == "int4" and k % 2:
        raise ValueError(f"quantize: int4 needs an even K, got {k}")
    grouped = rows.reshape(n, k // group, group)
    amax = grouped.abs().amax(dim=2, keepdim=True)
    scale = torch.where(amax > 0, amax / hi, torch.ones_like(amax))
    q = torch.clamp(torch.round(grouped / scale), lo, hi).to(torch.int8).reshape(n, k)
    if mode == "int8":
        return CompressedWeight("int8", q.contiguous(), scale.reshape(n, 1).contiguous(), k_axis)
    return CompressedWeight("int4", pack_int4(q), scale.contiguous(), k_axis)


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """int4 values (int8 `[N, K]`, K even) as uint8 `[N, K/2]`, low nibble first (OpenVINO's i4)."""
    import torch

    if q.shape[-1] % 2:
        raise ValueError("pack_int4: an even number of values per row is needed")
    v = q.to(torch.int16) & 0xF
    return (v[..., 0::2] | (v[..., 1::2] << 4)).to(torch.uint8).contiguous()


def unpack_int4(packed: torch.Tensor, k: int) -> torch.Tensor:
    """The int8 `[N, k]` values of `pack_int4`'s bytes (sign-extended nibbles)."""
    import torch

    b = packed.to(torch.int16)
    both = torch.stack((b & 0xF, b >> 4), dim=-1).reshape(*packed.shape[:-1], k)
    return torch.where(both > 7, both - 16, both).to(torch.int8)


def compressed_from(
    mode: str, data: torch.Tensor, scale: torch.Tensor, k_axis: int, shape: tuple[int, ...]
) -> CompressedWeight:
    """A `CompressedWeight` read back from a file, checked against the layout it records (ValueError)."""
    import torch

    cw = CompressedWeight(mode, data, scale, k_axis)
    ok = (
        mode in WEIGHT_MODES
        and k_axis in (0, 1)
        and data.ndim == 2
        and scale.dtype == torch.float32
        and data.dtype == (torch.int8 if mode == "int8" else torch.uint8)
        and tuple(cw.shape) == tuple(shape)
        and tuple(scale.shape) == ((cw.n, 1) if mode == "int8" else (cw.n, cw.k // cw.group, 1))
    )
    if not ok:
        raise ValueError(
            f"inconsistent {mode} weight: data {data.dtype}{list(data.shape)}, "
            f"scale {scale.dtype}{list(scale.shape)}, shape {list(shape)}, k_axis {k_axis}"
        )
    return cw
