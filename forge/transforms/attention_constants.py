"""The compile-time values behind attention scales and masks, and what a constant mask does.

Not a pass: `fuse-attention` asks it. `Constants` evaluates the small input-free subgraph behind a
value (an `aten.constant`, a weight of the attached WeightStore, or arange/compare/where code that
`fold` would fold), each value once per pass run, so the pass does not depend on fold having run.
`Constants.mask_verdict` then says whether a constant mask keeps every score, is sdpa's causal
pattern, or hides every key of some query with -inf (where the decomposed form gives NaN and sdpa 0).
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.traits import Pure

from dialects import aten
from dialects.shapes import static_shape
from forge.transforms.ir_queries import producer
from forge.weights import WeightStore

if TYPE_CHECKING:
    import torch

_EVAL_LIMIT = 1 << 20
"""Largest value (in elements) the pass evaluates when it looks for constant masks and scales."""


class Constants:
    """Compile-time values of the values the matcher asks about, cached for one pass run."""

    def __init__(self, weights: WeightStore | None):
        self.weights = weights
        self._values: dict[SSAValue, torch.Tensor | None] = {}
        self._verdicts: dict[tuple, str] = {}

    def scalar(self, value: SSAValue) -> float | None:
        """The value of a one-element constant tensor (0-d or all dims 1), else None."""
        import torch

        if not isinstance(value.type, TensorType) or math.prod(static_shape(value)) != 1:
            return None
        tensor = self.value(value)
        if tensor is None or tensor.dtype == torch.bool:
            return None
        return float(tensor.reshape(-1)[0].item())

    def value(self, value: SSAValue) -> torch.Tensor | None:
        """The compile-time value of `value`, when it is a constant (cached per value)."""
        if value in self._values:
            return self._values[value]
        return self._evaluate(value)

    def mask_verdict(self, mask: SSAValue, kind: str, fill: float | None, L: int, S: int) -> str:
        """'keeps-all', 'causal', 'nan-rows' or 'constant' for a constant mask; 'runtime' otherwise.

        `kind` is 'additive', 'keep' or 'drop'; masks shared by the layers are analysed once.
        """
        key = (mask, kind, fill, L, S)
        if key not in self._verdicts:
            self._verdicts[key] = self._classify(self.value(mask), kind, fill, L, S)
        return self._verdicts[key]

    @staticmethod
    def _classify(tensor: torch.Tensor | None, kind: str, fill: float | None, L: int, S: int) -> str:
        if tensor is None:
            return "runtime"
        keep = _keep_pattern(tensor, kind)
        if keep is not None:
            if bool(keep.all()):
                return "keeps-all"
            if tensor.dim() >= 2 and tuple(tensor.shape[-2:]) == (L, S):
                if bool((keep == _causal_pattern(L, S)).all()):
                    return "causal"
        if _has_nan_rows(tensor, kind, fill):
            return "nan-rows"
        return "constant"

    def _evaluate(self, value: SSAValue) -> torch.Tensor | None:
        """Evaluate the input-free subgraph behind `value` (what `fold` would produce).

        Iterative post-order walk; every visited value is cached, so each op is evaluated at most
        once per pass run. Only small values (≤ _EVAL_LIMIT elements) and pure single-result ops
        are evaluated; anything reaching a function argument is not constant.
        """
        import torch

        values = self._values
        stack = [value]
        while stack:
            top = stack[-1]
            if top in values:
                stack.pop()
                continue
            op = producer(top)
            if op is None or math.prod(static_shape(top)) > _EVAL_LIMIT:
                values[top] = None
                stack.pop()
                continue
            if isinstance(op, aten.ConstantOp):
                values[top] = op.to_tensor()
                stack.pop()
                continue
            if isinstance(op, aten.WeightOp):
                values[top] = self._weight(op.weight_name.data)
                stack.pop()
                continue
            if not isinstance(op, aten.AtenOp) or len(op.results) != 1 or not op.has_trait(Pure):
                values[top] = None
                stack.pop()
                continue
            pending = [v for v in op.operands if v not in values]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            args = [values[v] for v in op.operands]
            if any(a is None for a in args):
                values[top] = None
                continue
            try:
                out = op.call(args)
            except Exception:  # an op the evaluator cannot run: simply not a known constant
                out = None
            values[top] = out if isinstance(out, torch.Tensor) else None
        return values[value]

    def _weight(self, name: str) -> torch.Tensor | None:
        if self.weights is None or name not in self.weights or not self.weights.has_data(name):
            return None  # an external (meta) weight has no value at compile time
        return self.weights[name]


def fill_masks_out(fill: float, dtype: torch.dtype) -> bool:
    """Whether a score set to `fill` is exactly out of the softmax (and absorbs any added score)."""
    import torch

    if math.isnan(fill):
        return False
    if fill == -math.inf:
        return True
    return dtype.is_floating_point and fill <= torch.finfo(dtype).min / 2


def _keep_pattern(tensor: torch.Tensor, kind: str) -> torch.Tensor | None:
    """Which scores a constant mask keeps (bool tensor), or None if it does not just keep/mask."""
    import torch

    if kind == "keep":
        return tensor.to(torch.bool)
    if kind == "drop":
        return ~tensor.to(torch.bool)
    if not tensor.dtype.is_floating_point:
        return None
    keep = tensor == 0
    masked_out = (tensor == -math.inf) | (tensor <= torch.finfo(tensor.dtype).min / 2)
    return keep if bool((keep | masked_out).all()) else None


@functools.cache
def _causal_pattern(L: int, S: int) -> torch.Tensor:
    """sdpa's is_causal keep pattern: query i sees keys j <= i (top-left aligned, like tril)."""
    import torch

    return torch.arange(S).unsqueeze(0) <= torch.arange(L).unsqueeze(1)


def _has_nan_rows(tensor: torch.Tensor, kind: str, fill: float | None) -> bool:
    """Whether some query row of a constant mask is all -inf (the softmax of that row is NaN)."""
    if kind == "additive":
        masked = tensor == -math.inf
    elif fill == -math.inf:
        keep = _keep_pattern(tensor, kind)
        assert keep is not None
        masked = ~keep
    else:
        return False
    if masked.dim() == 0:
        return bool(masked)
    return bool(masked.all(dim=-1).any())
