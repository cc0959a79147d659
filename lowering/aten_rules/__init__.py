"""The aten -> npuir conversion rules, one module per op family.

Each module registers its rules into `lowering.function_lowering.RULES` (with `@rule(...)` or a
`register_family` table) when imported; importing this package registers them all.
`lowering/aten_to_npuir.py` states what the conversion guarantees; `FunctionLowering` is the
emission API a rule builds npuir with.
"""

from lowering.aten_rules import convolution, elementwise, linalg, movement, normalization, pooling, reductions, vision

__all__ = ["convolution", "elementwise", "linalg", "movement", "normalization", "pooling", "reductions", "vision"]
