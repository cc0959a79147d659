"""The dequantizing graph of a compressed weight (`weights="int8"|"int4"`; the maths and the stored form are
forge/quantize.py's `CompressedWeight`).

`weight_node(g, cw)` builds, from a runtime's graph builder, the f32 `[N, K]` (output-major) weight:

- int8: `Constant(i8)[N, K] -> Convert(f32) -> Multiply(scale[N, 1])`;
- int4: `Constant(i4)[N, K/G, G] -> Convert(f32) -> Multiply(scale[N, K/G, 1]) -> Reshape[N, K]`,

the patterns OpenVINO's CPU plugin turns into a FullyConnected with compressed weights (decompressed inside
the kernel; a Gather reading the int8 form of an embedding table decompresses the rows it picks). The
integer arrays are the store's own bytes (shared with the runtime, not copied).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from forge.precision import PrecisionError
from forge.quantize import CompressedWeight


def weight_node(g: Any, cw: CompressedWeight) -> Any:
    """The dequantized `[N, K]` f32 weight of `cw` as nodes of graph builder `g` (quantized constant,
    convert, multiply by the scales). int4 needs a builder with `int4_constant` (openvino)."""
    scale = cw.scale.numpy()
    if cw.mode == "int8":
        values = g.constant(cw.data.numpy())
    else:
        make = getattr(g, "int4_constant", None)
        if make is None:
            raise PrecisionError(f"int4 weights: the {g.runtime.name} runtime has no int4 element type; use int8")
        values = make(cw.data.numpy(), (cw.n, cw.k // cw.group, cw.group))
    node = g.eltwise_mul(g.convert(values, np.float32), g.constant(scale))
    return node if cw.mode == "int8" else g.reshape(node, [cw.n, cw.k])
