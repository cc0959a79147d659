"""Motifs for fuse-attention and fold: masks and position ids computed from constants, and eager
attention in the forms models export (with its negative variants)."""

from __future__ import annotations

import math

import torch
from xdsl.ir import SSAValue

from dialects import aten
from forge.testing.strategies.builder import BOOL, F32, FMIN, I64, GraphBuilder

# -- constant subgraphs (mask and position-id code) ----------------------------------------------


def _causal_bool(b: GraphBuilder, q: int, k: int) -> tuple[SSAValue, str]:
    """A [q, k] bool mask, True where key j may be seen by query i (j <= i + k - q), from constants."""
    how = b.choice(["arange_le", "tril_ones", "arange_diff_index"])
    offset = k - q
    if how == "tril_ones":
        return b.op(aten.TrilOp, b.op(aten.OnesOp, [q, k], dtype=BOOL), offset), how
    keys = b.op(aten.ArangeOp, k, name="kv_arange")
    if how == "arange_diff_index":  # positions from cumsum(ones) - 1, reordered by an identity index
        ones = b.op(aten.OnesOp, [k], dtype=I64)
        keys = b.op(aten.SubScalarOp, b.op(aten.CumsumOp, ones, 0), 1, name="position_ids")
        steps = b.op(aten.DiffOp, keys, prepend=b.const(torch.tensor([-1])))  # all ones
        keys = b.op(aten.MulTensorOp, keys, steps)
        keys = b.op(aten.IndexTensorOp, keys, [b.op(aten.ArangeOp, k)])
    queries = b.op(aten.ArangeStartOp, offset, offset + q, name="cache_position")
    mask = b.op(aten.LeTensorOp, b.op(aten.UnsqueezeOp, keys, 0), b.op(aten.UnsqueezeOp, queries, 1))
    return mask, how


def _padding_bool(b: GraphBuilder, k: int) -> SSAValue:
    """A [1, k] bool padding mask: an inline attention_mask constant (last key padded, first key
    always kept), or ``new_ones`` on some live value (a constant although it has an operand)."""
    if b.pool and b.chance(40):
        am = b.op(aten.NewOnesOp, b.choice(b.pool), [1, k], dtype=I64, name="attention_mask")
    else:
        value = torch.ones(1, k, dtype=I64)
        if k > 1:
            value[0, k - 1] = 0
        am = b.const(value, name="attention_mask")
    return b.op(aten.EqScalarOp, am, 1)


def mask_from_constants(b: GraphBuilder, q: int, k: int) -> tuple[SSAValue, bool, str]:
    """A causal and/or padding mask built only from constants; returns (mask, is_bool, recipe).

    A float mask is additive (0 or a large negative); a bool mask is True where allowed.
    """
    how = b.choice(["causal", "causal_and_padding", "padding_float", "triu_float", "causal_float"])
    if how == "triu_float":
        fill = b.choice([FMIN, float("-inf")])
        return b.op(aten.TriuOp, b.op(aten.FullOp, [q, k], fill), k - q + 1), False, f"triu(full({fill}))"
    if how == "padding_float":  # (1 - attention_mask) * finfo.min, as [1, 1, k]
        am = b.const(torch.ones(1, k, dtype=I64), name="attention_mask")
        inv = b.op(aten.RsubScalarOp, b.op(aten.ToDtypeOp, am, F32), 1.0)
        return b.op(aten.MulScalarOp, b.op(aten.UnsqueezeOp, inv, 1), FMIN), False, "padding_float"
    mask, recipe = _causal_bool(b, q, k)
    if how == "causal_and_padding":
        pad = _padding_bool(b, k)
        mask = b.op(b.choice([aten.BitwiseAndTensorOp, aten.LogicalAndOp, aten.AndTensorOp]), mask, pad)
        recipe += "&padding"
    if how == "causal_float":
        zero = b.const(0.0, F32)
        return b.op(aten.WhereScalarOtherOp, mask, zero, FMIN), False, recipe + "->where(0,min)"
    return mask, True, recipe


def apply_mask(b: GraphBuilder, scores: SSAValue, mask: SSAValue, is_bool: bool) -> tuple[SSAValue, str]:
    """Apply a mask the ways models do: add a float mask; where / masked_fill with a bool mask."""
    if not is_bool:
        return b.op(aten.AddTensorOp, scores, mask), "add"
    how = b.choice(["where", "masked_fill"])
    if how == "where":
        fill = b.const(b.choice([FMIN, float("-inf")]), F32, name="mask_value")
        return b.op(aten.WhereSelfOp, mask, scores, fill), "where"
    inverted = b.op(b.choice([aten.LogicalNotOp, aten.BitwiseNotOp]), mask)
    return b.op(aten.MaskedFillScalarOp, scores, inverted, b.choice([FMIN, float("-inf")])), "masked_fill"


def constant_subgraph(b: GraphBuilder) -> None:
    """Mask and position-id code computed from constants only (arange, full, ones, comparisons,
    cumsum, diff, index, bitwise_and, where, triu/tril), as transformers writes it, then used by
    the main graph: a masked softmax, or learned position embeddings indexed by position ids."""
    if b.chance(30):
        x = b.pick_rank(2, 4)
        s, d = b.shape_of(x)[-2:]
        if b.chance(50):
            pos = b.op(aten.ArangeOp, s, name="position_ids")
        else:
            pos = b.op(aten.SubScalarOp, b.op(aten.CumsumOp, b.op(aten.OnesOp, [1, s], dtype=I64), 1), 1)
        emb = b.op(aten.EmbeddingOp, b.weight((s + b.integer(0, 3), d), "wpe.weight", kind="bias"), pos)
        b.to_pool(b.op(aten.AddTensorOp, x, emb))
        b.note("constant_subgraph[position_ids->embedding]", "constant_subgraph")
        return
    x = b.pick_rank(2, 4)
    q, k = b.shape_of(x)[-2:]
    if k < q:  # a causal mask needs a key for every query
        x = b.input((*b.shape_of(x)[:-2], q, q + b.integer(0, 2)))
        q, k = b.shape_of(x)[-2:]
    mask, is_bool, recipe = mask_from_constants(b, q, k)
    masked, how = apply_mask(b, x, mask, is_bool)
    b.to_pool(b.op(aten.SoftmaxIntOp, masked, -1))
    b.note(f"constant_subgraph[{recipe}, {how}]", "constant_subgraph")


# -- attention ------------------------------------------------------------------------------------

_ATTN_NEGATIVES = ("k_not_transposed", "k_batch_permuted", "softmax_dim", "mask_after_softmax",
                   "scale_after_softmax")


def attention(b: GraphBuilder, *, negative: bool | str | None = None, gqa: bool | None = None) -> None:
    """Decomposed eager attention: ``softmax(Q·Kᵀ * scale + mask, -1) · V`` in the forms models
    export: Kᵀ via ``transpose(-2,-1)``/``transpose(2,3)``/``permute``; matmul or bmm on 3-d views;
    scale as div, mul, or √scale on both Q and Kᵀ (or none); an additive float mask, a causal
    ``where``/``masked_fill`` with a bool mask (from constants or an input); softmax with or without
    dtype; dropout(p=0); Q/K/V from inputs or from linear projections split into heads; GQA
    ``repeat_kv`` (unsqueeze + expand + reshape); output heads merged back.

    Negative variants (tag ``attention:negative``, never fused): K used without transpose (Sk == D),
    K permuted with its batch dims swapped (B == H), softmax over dim -2, a mask added after the
    softmax, a scale applied after the softmax.  ``negative`` may name one of them.
    """
    if negative is None:
        negative = b.chance(25)
    neg = (negative if isinstance(negative, str) else b.choice(_ATTN_NEGATIVES)) if negative else None
    bsz, heads, sq, sk, d = b.dim(1, 2), b.dim(1, 4), b.dim(), b.dim(), b.dim()
    if neg == "k_not_transposed":
        sk = d
    if neg == "k_batch_permuted":
        heads = bsz = b.dim(2, 3)
    kv_heads = heads
    if (gqa if gqa is not None else b.chance(30)) and neg != "k_batch_permuted":
        kv_heads = b.choice([h for h in range(1, heads + 1) if heads % h == 0])
    source = b.choice(["inputs", "projected", "bshd_inputs"])
    details = [source]

    def split_heads(v: SSAValue, n: int, s: int) -> SSAValue:
        return b.op(aten.TransposeIntOp, b.reshape(v, [bsz, s, n, d]), 1, 2)

    if source == "projected":
        sk = sq if neg != "k_not_transposed" else d
        sq = sk
        hidden = b.pick(lambda t: t.dim() == 3 and t.shape[0] == bsz and t.shape[1] == sq,
                        lambda: b.input((bsz, sq, b.dim())))
        e = b.shape_of(hidden)[-1]
        with_bias = b.chance(50)

        def project(n: int, tag: str) -> SSAValue:
            bias = b.weight((n * d,), f"attn.{tag}_proj.bias", kind="bias") if with_bias else None
            return b.op(aten.LinearOp, hidden, b.weight((n * d, e), f"attn.{tag}_proj.weight"), bias, name=tag)

        q = split_heads(project(heads, "q"), heads, sq)
        k = split_heads(project(kv_heads, "k"), kv_heads, sk)
        v = split_heads(project(kv_heads, "v"), kv_heads, sk)
    elif source == "bshd_inputs":
        q = split_heads(b.input((bsz, sq, heads * d), name="query", pool=False), heads, sq)
        k = split_heads(b.input((bsz, sk, kv_heads * d), name="key", pool=False), kv_heads, sk)
        v = split_heads(b.input((bsz, sk, kv_heads * d), name="value", pool=False), kv_heads, sk)
    else:
        q = b.input((bsz, heads, sq, d), name="query", pool=False)
        k = b.input((bsz, kv_heads, sk, d), name="key", pool=False)
        v = b.input((bsz, kv_heads, sk, d), name="value", pool=False)
    if kv_heads != heads:  # repeat_kv
        rep = heads // kv_heads

        def repeat_kv(t: SSAValue) -> SSAValue:
            e5 = b.op(aten.ExpandOp, b.op(aten.UnsqueezeOp, t, 2), [bsz, kv_heads, rep, sk, d])
            return b.op(aten.ReshapeOp, e5, [bsz, heads, sk, d])

        k, v = repeat_kv(k), repeat_kv(v)
        details.append(f"gqa {heads}/{kv_heads}")

    # Kᵀ
    if neg == "k_not_transposed":
        kt = k
    elif neg == "k_batch_permuted":
        kt = b.op(aten.PermuteOp, k, [1, 0, 3, 2])
    else:
        how = b.choice(["transpose-2-1", "transpose23", "permute"])
        kt = (b.op(aten.TransposeIntOp, k, -2, -1) if how == "transpose-2-1" else
              b.op(aten.TransposeIntOp, k, 2, 3) if how == "transpose23" else
              b.op(aten.PermuteOp, k, [0, 1, 3, 2]))
        details.append(how)
    scale_how = b.choice(["div", "mul", "split", "none", "div_tensor"])
    scale = 1.0 / math.sqrt(d)
    if scale_how == "split":
        root = math.sqrt(scale)
        q = b.op(aten.MulScalarOp, q, root)
        kt = b.op(aten.MulScalarOp, kt, root)
    use_bmm = b.chance(25) and neg != "k_batch_permuted"
    if use_bmm:
        q3 = b.reshape(q, [bsz * heads, sq, d])
        k3 = b.op(aten.ReshapeOp, kt, [bsz * heads, d, sk])
        scores = b.reshape(b.op(aten.BmmOp, q3, k3), [bsz, heads, sq, sk], name="attn_weights")
        details.append("bmm")
    else:
        scores = b.op(aten.MatmulOp, q, kt, name="attn_weights")
    if scale_how == "div":
        scores = b.op(aten.DivScalarOp, scores, math.sqrt(d))
    elif scale_how == "div_tensor":
        scores = b.op(aten.DivTensorOp, scores, b.const(math.sqrt(d), F32))
    elif scale_how == "mul":
        scores = b.op(aten.MulScalarOp, scores, scale)
    details.append(f"scale={scale_how}")

    mask_how = b.choice(["none", "float_input", "constants", "bool_input"])
    mask = None
    if mask_how == "float_input":
        shape = b.choice([(bsz, 1, sq, sk), (sq, sk), (1, 1, 1, sk)])
        value = torch.where(torch.rand(shape, generator=b.gen) < 0.3, FMIN, 0.0)
        value[..., 0] = 0.0  # every query sees at least one key
        mask, is_bool = b.input(shape, name="attention_mask", value=value, pool=False), False
    elif mask_how == "bool_input":
        value = torch.rand((bsz, 1, sq, sk), generator=b.gen) < 0.7
        value[..., 0] = True
        mask, is_bool = b.input(value.shape, BOOL, name="attention_mask", value=value, pool=False), True
    elif mask_how == "constants":
        mask, is_bool, recipe = mask_from_constants(b, sq, sk)
        details.append(recipe)
    if mask is not None and neg != "mask_after_softmax":
        scores, applied = apply_mask(b, scores, mask, is_bool)
        details.append(f"mask={mask_how}:{applied}")
    softmax_dim = -2 if neg == "softmax_dim" else b.choice([-1, 3])
    if b.chance(20):
        probs = b.op(aten.ToDtypeOp, b.op(aten.SoftmaxIntOp, scores, softmax_dim, F32), F32)
    elif b.chance(15):
        probs = b.op(aten.SoftmaxOp, scores, softmax_dim, False)
    else:
        probs = b.op(aten.SoftmaxIntOp, scores, softmax_dim, name="attn_probs")
    if neg == "mask_after_softmax":
        if mask is None or is_bool:
            mask = b.input((sq, sk), name="attention_mask", pool=False)
        probs = b.op(aten.AddTensorOp, probs, mask)
    elif neg == "scale_after_softmax":
        probs = b.op(aten.MulScalarOp, probs, 0.5)
    if b.chance(30):
        probs = b.op(aten.DropoutOp, probs, 0.0, b.chance(50))
        details.append("dropout")
    if use_bmm:
        out = b.reshape(b.op(aten.BmmOp, b.reshape(probs, [bsz * heads, sq, sk]),
                             b.op(aten.ReshapeOp, v, [bsz * heads, sk, d])), [bsz, heads, sq, d])
    else:
        out = b.op(aten.MatmulOp, probs, v, name="attn_output")
    if source != "inputs" or b.chance(40):  # merge heads
        out = b.op(aten.TransposeIntOp, out, 1, 2)
        if b.chance(60):
            out = b.op(aten.ContiguousOp, out)
        out = b.reshape(out, [bsz, sq, heads * d])
    b.to_pool(out)
    tags = ["attention"]
    if neg:
        tags += ["attention:negative", f"attention:negative:{neg}"]
        details.insert(0, f"NEGATIVE {neg}")
    b.note(f"attention[{', '.join(details)}]", *tags)
