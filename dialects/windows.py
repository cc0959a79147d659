"""Sliding-window arithmetic shared by the npuir verifiers and the runtime graph API.

Plain integer functions with no imports, so that `backends.nnfactory.runtime.graph_values` (which the
standalone programs of `--emit nnfactory-py` load without xDSL or torch) can use them too.
"""


def pool_out_size(size: int, k: int, s: int, pb: int, pe: int, d: int, ceil: bool) -> int:
    """torch's pooled length of one spatial dim (a ceil window must start inside the input or
    the begin padding)."""
    span = size + pb + pe - (d * (k - 1) + 1)
    out = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= size + pb:
        out -= 1
    return out
