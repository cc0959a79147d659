"""A zero constant pad folded into the convolution that reads it (a `fold` pattern; not a pass).

    conv(constant_pad_nd(x, [l, l, t, t], 0), W, padding=[p, q])  =  conv(x, W, padding=[p + t, q + l])

`FoldPadIntoConv` rewrites a non-transposed `conv1d` / `conv2d` / `convolution` with integer
padding whose input is a `constant_pad_nd` (or a `pad` of mode "constant") with value 0, used by
nothing else, that pads only the spatial dims, symmetrically and by non-negative amounts: the
convolution then reads the unpadded input and pads it itself (one op instead of two; a
convolution pads for free on the NPU). MobileNetV2 pads every convolution's input this way.

Left alone: a non-zero value, negative (cropping) or asymmetric pads (torch's convolutions pad
symmetrically; the lowering keeps such a pad as an `npuir.pad`), pads of the batch or channel
dims, a shared pad, string padding ("same"/"valid"), transposed convolutions.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.pattern_rewriter import PatternRewriter, op_type_rewrite_pattern

from dialects import aten
from dialects.aten_schema import to_attribute
from forge.patterns import ForgePattern
from forge.transforms.batch_norm_folding import rebuilt
from forge.transforms.dce import erase_dead_operands

_CONVS = (aten.Conv1dOp, aten.Conv2dOp, aten.ConvolutionOp)
_PADS = (aten.ConstantPadNdOp, aten.PadOp)


def _spatial_pads(pad: Operation, n: int) -> list[int] | str:
    """The symmetric pad of each of the last `n` dims (first spatial dim first), or why not."""
    assert isinstance(pad, aten.AtenOp)
    if isinstance(pad, aten.PadOp) and pad.arg("mode") != "constant":
        return "not a constant pad"
    if float(pad.arg("value") or 0.0) != 0.0:
        return "pads with a non-zero value"
    pads = [int(v) for v in pad.arg("pad")]
    pads += [0] * (2 * n - len(pads))
    if len(pads) != 2 * n:
        return "pads the batch or channel dims"
    pairs = [(pads[2 * i], pads[2 * i + 1]) for i in range(n)]  # last dim first
    if any(b != e or b < 0 for b, e in pairs):
        return "asymmetric or negative pads"
    return [b for b, _ in reversed(pairs)]


class FoldPadIntoConv(ForgePattern):
    """conv(constant_pad_nd(x, symmetric, 0)) → conv(x) with the pads added to its padding."""

    ROOTS = _CONVS

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.Conv1dOp | aten.Conv2dOp | aten.ConvolutionOp,
                          rewriter: PatternRewriter) -> None:
        x = op.tensor_arg("input")
        pad = x.owner
        if not isinstance(pad, _PADS):
            return self.fail(op, "the input is not a constant pad")
        if isinstance(op, aten.ConvolutionOp) and op.arg("transposed"):
            return self.fail(op, "the convolution is transposed")
        if x.uses.get_length() != 1:
            return self.fail(op, "the pad has other users")
        n = len(x.type.get_shape()) - 2
        extra = _spatial_pads(pad, n)
        if isinstance(extra, str):
            return self.fail(op, extra)
        padding = op.arg("padding")
        if isinstance(padding, str):
            return self.fail(op, f"string padding {padding!r}")
        padding = [int(p) for p in padding] or [0]
        if len(padding) == 1:
            padding *= n
        new = rebuilt(op, input=pad.operands[0])
        kind = op.SIGNATURE.arg("padding").kind
        new.properties["padding"] = to_attribute(kind, [p + e for p, e in zip(padding, extra, strict=True)])
        rewriter.replace(op, [new])
        erase_dead_operands((x,))

