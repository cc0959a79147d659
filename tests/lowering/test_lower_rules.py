"""aten -> npuir rules, one hand-built graph each: every stage verifies and computes the same
values, and the op lowers to the npuir kinds it should (no fallback where a family exists)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest
import torch

from dialects import aten
from forge.testing.strategies import GraphBuilder, GraphCase
from lowering.affinity import AffinityPolicy
from tests.lowering.lowering_util import assert_lowering_preserves

A = aten


def _no_draw(strategy):  # the hand-built graphs make no random choices
    raise AssertionError("unexpected draw")


def build(fn: Callable[[GraphBuilder], object]) -> GraphCase:
    b = GraphBuilder(_no_draw, seed=0)
    out = fn(b)
    for v in out if isinstance(out, tuple) else (out,):
        b.ret(v)
    return b.finish()


def kinds(module) -> Counter[str]:
    return Counter(op.name.removeprefix("npuir.") for op in module.walk() if op.name.startswith("npuir."))


def fallbacks(module) -> list[str]:
    return [op.properties["op"].data for op in module.walk() if op.name == "npuir.aten"]


def x(b: GraphBuilder, *shape: int) -> object:
    return b.input(shape)


CASES: dict[str, tuple[Callable[[GraphBuilder], object], set[str]]] = {
    # name: (graph, npuir kinds that must appear)
    "addmm": (lambda b: b.op(A.AddmmOp, b.weight((6,), kind="bias"), x(b, 3, 4), b.weight((4, 6))), {"linear"}),
    "addmm_alpha_beta": (
        lambda b: b.op(A.AddmmOp, x(b, 3, 6), x(b, 3, 4), x(b, 4, 6), beta=0.5, alpha=2.0),
        {"matmul", "binary"},
    ),
    "baddbmm": (
        lambda b: b.op(A.BaddbmmOp, x(b, 2, 3, 5), x(b, 2, 3, 4), x(b, 2, 4, 5), beta=2, alpha=0.5),
        {"matmul", "binary"},
    ),
    "matmul_vec": (
        lambda b: (b.op(A.MatmulOp, x(b, 2, 3, 4), x(b, 4)), b.op(A.MatmulOp, x(b, 4), x(b, 4, 5))),
        {"matmul", "reshape"},
    ),
    "matmul_dot": (lambda b: b.op(A.MatmulOp, x(b, 4), x(b, 4)), {"matmul"}),
    "bmm_broadcast": (lambda b: b.op(A.MatmulOp, x(b, 2, 1, 3, 4), x(b, 5, 4, 2)), {"matmul"}),
    "linear_nobias": (lambda b: b.op(A.LinearOp, x(b, 2, 3, 4), b.weight((5, 4)), None), {"linear"}),
    "fused_linear": (
        lambda b: b.op(A.FusedLinearOp, x(b, 3, 4), b.weight((5, 4)), b.weight((5,), kind="bias"), "silu"),
        {"linear"},
    ),
    "gated_mlp": (lambda b: b.op(A.GatedMlpOp, x(b, 3, 4), b.weight((6, 4)), b.weight((6, 4)), "silu"), {"gated_mlp"}),
    "matmul_transposed": (
        lambda b: b.op(A.MatmulTransposedOp, x(b, 2, 4, 3), x(b, 2, 5, 4), True, True),
        {"matmul"},
    ),
    "repeat": (lambda b: b.op(A.RepeatOp, x(b, 2, 3), [2, 1, 3]), {"broadcast", "reshape"}),
    "stack": (lambda b: b.op(A.StackOp, [x(b, 2, 3), x(b, 2, 3)], -1), {"concat", "reshape"}),
    "cat_promote": (lambda b: b.op(A.CatOp, [x(b, 2, 3), b.input((2, 1), torch.int64)], 1), {"concat", "convert"}),
    "select_split": (
        lambda b: (lambda v: (b.op(A.SelectIntOp, v, 1, -1), *b.op(A.SplitWithSizesOp, v, [1, 3], -1)))(x(b, 2, 3, 4)),
        {"slice", "reshape"},
    ),
    "slice_step": (lambda b: b.op(A.SliceTensorOp, x(b, 5, 7), 1, -6, None, 2), {"slice"}),
    "permute_t_expand": (
        lambda b: (
            b.op(A.PermuteOp, x(b, 2, 3, 4), [-1, 0, 1]),
            b.op(A.TOp, x(b, 2, 3)),
            b.op(A.ExpandOp, x(b, 3, 1), [2, -1, 4]),
        ),
        {"transpose", "broadcast"},
    ),
    "flatten_squeeze": (
        lambda b: (b.op(A.FlattenUsingIntsOp, x(b, 2, 3, 4), 1), b.op(A.SqueezeDimOp, x(b, 2, 1, 4), 1)),
        {"reshape"},
    ),
    "index_select_embedding": (
        lambda b: (
            b.op(A.IndexSelectOp, x(b, 5, 3), 0, b.input((4,), torch.int64)),
            b.op(A.EmbeddingOp, b.weight((10, 3)), b.input((2, 4), torch.int64)),
        ),
        {"gather"},
    ),
    "index_one_tensor": (
        lambda b: b.op(A.IndexTensorOp, x(b, 3, 5), [None, b.input((2, 2), torch.int64)]),
        {"gather"},
    ),
    "scalars": (
        lambda b: (lambda v: (
            b.op(A.AddScalarOp, v, 2, alpha=3),
            b.op(A.SubTensorOp, v, v, alpha=2),
            b.op(A.RsubScalarOp, v, 1.5, alpha=2),
            b.op(A.DivScalarOp, v, 4),
            b.op(A.PowTensorScalarOp, v, 2),
            b.op(A.ClampOp, v, -0.5, 0.5),
        ))(x(b, 2, 3)),
        {"binary", "constant"},
    ),
    "int_arith": (
        lambda b: (lambda i: (
            b.op(A.AddScalarOp, i, 2.5),
            b.op(A.DivTensorOp, i, b.op(A.AddScalarOp, i, 1)),
            b.op(A.BitwiseNotOp, i),
            b.op(A.MulTensorOp, i, i),
        ))(b.input((2, 3), torch.int64)),
        {"convert", "binary"},
    ),
    "unary": (
        lambda b: (
            lambda v: tuple(
                b.op(c, v)
                for c in (
                    A.NegOp, A.AbsOp, A.ExpOp, A.SinOp, A.CosOp, A.ErfOp, A.TanhOp, A.SigmoidOp, A.ReluOp, A.SiluOp
                )
            )
            + (b.op(A.GeluOp, v, approximate="tanh"), b.op(A.RsqrtOp, b.op(A.AbsOp, v)))
        )(x(b, 2, 3)),
        {"unary"},
    ),
    "compare_bool": (
        lambda b: (lambda v, i: (
            b.op(A.LtTensorOp, v, i),
            b.op(A.GeScalarOp, i, 2),
            b.op(A.LogicalNotOp, i),
            b.op(A.LogicalAndOp, i, b.op(A.GtScalarOp, v, 0.0)),
            b.op(A.BitwiseOrTensorOp, b.op(A.EqScalarOp, i, 1), b.op(A.NeScalarOp, i, 2)),
            b.op(A.AddTensorOp, b.op(A.EqScalarOp, i, 1), b.op(A.EqScalarOp, i, 3)),
        ))(x(b, 2, 3), b.input((2, 3), torch.int64)),
        {"compare", "binary"},
    ),
    "where_masked_fill": (
        lambda b: (lambda v, m: (
            b.op(A.WhereSelfOp, m, v, b.input((3,))),
            b.op(A.WhereScalarOtherOp, m, v, -1.0),
            b.op(A.WhereScalarSelfOp, m, 2.0, v),
            b.op(A.MaskedFillScalarOp, v, m, float("-inf")),
            b.op(A.MaskedFillTensorOp, v, m, b.const(7.0, torch.float32)),
        ))(x(b, 2, 3), b.input((2, 3), torch.bool)),
        {"select"},
    ),
    "triu_tril": (lambda b: (b.op(A.TriuOp, x(b, 2, 4, 5), 1), b.op(A.TrilOp, x(b, 4, 5), -1)), {"select", "compare"}),
    "reductions": (
        lambda b: (lambda v: (
            b.op(A.MeanDimOp, v, [-1], True),
            b.op(A.MeanOp, v),
            b.op(A.SumDimIntListOp, v, [0, 2]),
            b.op(A.SumOp, b.input((2, 3), torch.bool)),
            b.op(A.AmaxOp, v, [1]),
            b.op(A.AmaxOp, v),
        ))(x(b, 2, 3, 4)),
        {"reduce"},
    ),
    "softmax_family": (
        lambda b: (
            lambda v: (b.op(A.SoftmaxIntOp, v, -1), b.op(A.SoftmaxOp, v, 0, False), b.op(A.LogSoftmaxIntOp, v, 1))
        )(x(b, 2, 3)),
        {"softmax", "reduce", "unary"},
    ),
    "cumsum_diff": (
        lambda b: (
            lambda i, v: (b.op(A.CumsumOp, i, -1), b.op(A.DiffOp, v, 1, 0, None, x(b, 1, 4)), b.op(A.DiffOp, i))
        )(b.input((2, 4), torch.int64), x(b, 3, 4)),
        {"cumsum", "concat", "slice", "binary"},
    ),
    "norms": (
        lambda b: (lambda v: (
            b.op(A.LayerNormOp, v, [4], b.weight((4,), kind="norm"), b.weight((4,), kind="bias")),
            b.op(A.LayerNormOp, v, [3, 4], None, b.weight((3, 4), kind="bias")),
            b.op(A.RmsNormOp, v, [4], b.weight((4,), kind="norm")),
            b.op(A.RmsNormOp, v, [4], None, 1e-3),
            b.op(A.NativeLayerNormOp, v, [4], None, None, 1e-5)[0],
        ))(x(b, 2, 3, 4)),
        {"layer_norm", "rms_norm"},
    ),
    "sdpa": (
        lambda b: (lambda q, k, v: (
            b.op(A.ScaledDotProductAttentionOp, q, k, v, is_causal=True),
            b.op(
                A.ScaledDotProductAttentionOp,
                q,
                k,
                v,
                b.input((4, 4), torch.bool, value=torch.tril(torch.ones(4, 4, dtype=torch.bool))),
                scale=0.3,
            ),
            b.op(A.ScaledDotProductAttentionOp, q, k, v, x(b, 1, 1, 4, 4)),
        ))(x(b, 1, 2, 4, 8), x(b, 1, 2, 4, 8), x(b, 1, 2, 4, 8)),
        {"sdpa"},
    ),
    "sdpa_gqa": (
        lambda b: b.op(
            A.ScaledDotProductAttentionOp, x(b, 1, 4, 3, 8), x(b, 1, 2, 3, 8), x(b, 1, 2, 3, 8), enable_gqa=True
        ),
        {"sdpa"},
    ),
    "factories": (
        lambda b: (lambda v: (
            b.op(A.AddTensorOp, v, b.op(A.ArangeStartStepOp, 0, 6, 2, dtype=torch.float32)),
            b.op(A.MulTensorOp, v, b.op(A.OnesLikeOp, v)),
            b.op(A.AddTensorOp, v, b.op(A.FullOp, [2, 3], 0.25, dtype=torch.float32)),
            b.op(A.AddTensorOp, v, b.op(A.ScalarTensorOp, 3.0, dtype=torch.float32)),
        ))(x(b, 2, 3)),
        {"constant", "binary"},
    ),
    "identities": (
        lambda b: (
            lambda v: b.op(
                A.AddTensorOp,
                b.op(A.CloneOp, b.op(A.ContiguousOp, b.op(A.AliasOp, v))),
                b.op(A.DropoutOp, b.op(A.ToDtypeOp, v, torch.float32), 0.1, False),
            )
        )(x(b, 2, 3)),
        {"binary"},
    ),
    "to_dtype": (lambda b: b.op(A.ToDtypeOp, x(b, 2, 3), torch.float16), {"convert"}),
    "conv1d": (lambda b: b.op(A.Conv1dOp, x(b, 2, 3, 9), b.weight((4, 3, 3)), b.weight((4,), kind="bias")), {"conv"}),
    "conv2d_strided_grouped": (
        lambda b: b.op(A.Conv2dOp, x(b, 1, 4, 7, 6), b.weight((6, 2, 3, 3)), None, [2, 1], [1, 0], [2, 1], 2),
        {"conv"},
    ),
    "conv_transpose2d": (
        lambda b: b.op(
            A.ConvTranspose2dInputOp, x(b, 1, 4, 3, 5), b.weight((4, 3, 3, 2)), None, [2, 2], [1, 0], [1, 1]
        ),
        {"conv"},
    ),
    "convolution_transposed": (
        lambda b: b.op(
            A.ConvolutionOp, x(b, 1, 4, 6), b.weight((4, 1, 3)), b.weight((2,), kind="bias"),
            [2], [1], [1], True, [1], 2,
        ),
        {"conv"},
    ),
    "conv2d_same": (
        lambda b: b.op(A.Conv2dPaddingOp, x(b, 1, 2, 5, 6), b.weight((3, 2, 2, 3)), None, [1, 1], "same", [1, 2]),
        {"conv"},
    ),
    "fused_conv": (
        lambda b: b.op(
            A.FusedConvOp, x(b, 1, 4, 6), b.weight((4, 2, 3)), b.weight((4,), kind="bias"), [2], [1], [1], 2, "gelu"
        ),
        {"conv"},
    ),
    "constant_pad_nd": (lambda b: b.op(A.ConstantPadNdOp, x(b, 2, 3, 4), [1, -1, 2, 0], 0.25), {"pad"}),
    "pad_constant": (lambda b: b.op(A.PadOp, x(b, 2, 3), [0, 2], "constant", 1.5), {"pad"}),
    "max_pool2d_ceil": (
        lambda b: b.op(A.MaxPool2dOp, x(b, 1, 3, 9, 8), [3, 3], [2, 2], [1, 1], [1, 1], True),
        {"pool"},
    ),
    "max_pool1d_dilated": (lambda b: b.op(A.MaxPool1dOp, x(b, 2, 3, 9), [2], [1], [1], [2]), {"pool"}),
    "avg_pool2d_exclude_pad": (
        lambda b: b.op(A.AvgPool2dOp, x(b, 1, 2, 7, 6), [3, 3], [2, 2], [1, 1], True, False),
        {"pool"},
    ),
    "avg_pool1d": (lambda b: b.op(A.AvgPool1dOp, x(b, 2, 3, 8), [2]), {"pool"}),
    "adaptive_avg_pool2d": (lambda b: b.op(A.AdaptiveAvgPool2dOp, x(b, 1, 4, 6, 9), [2, 3]), {"pool"}),
    "batch_norm_eval": (
        lambda b: b.op(
            A.BatchNormOp, x(b, 2, 3, 4, 5), b.weight((3,), kind="norm"), b.weight((3,), kind="bias"),
            b.weight((3,), kind="bias"), b.weight((3,), kind="positive"), False, 0.1, 1e-5, False,
        ),
        {"binary", "unary", "reshape"},
    ),
    "upsample_nearest2d_scale": (
        lambda b: b.op(A.UpsampleNearest2dVecOp, x(b, 1, 2, 3, 4), None, [2.0, 3.0]),
        {"resize"},
    ),
    "upsample_bilinear2d_corners": (
        lambda b: b.op(A.UpsampleBilinear2dVecOp, x(b, 1, 2, 3, 4), [5, 7], True, None),
        {"resize"},
    ),
    "upsample_linear1d": (lambda b: b.op(A.UpsampleLinear1dVecOp, x(b, 2, 3, 5), [9], False, None), {"resize"}),
    "group_norm": (
        lambda b: b.op(A.GroupNormOp, x(b, 2, 6, 3, 4), 3, b.weight((6,), kind="norm"), b.weight((6,), kind="bias"),
                       1e-5, False),
        {"layer_norm", "reshape", "binary"},
    ),
    "native_group_norm_per_channel": (
        lambda b: b.op(A.NativeGroupNormOp, x(b, 1, 4, 7), b.weight((4,), kind="norm"), None, 1, 4, 7, 4, 1e-5)[0],
        {"layer_norm", "reshape", "binary"},
    ),
    "batch_norm_legit_no_training": (
        lambda b: b.op(
            A._NativeBatchNormLegitNoTrainingOp, x(b, 2, 3, 4, 5), b.weight((3,), kind="norm"),
            b.weight((3,), kind="bias"), b.weight((3,), kind="bias"), b.weight((3,), kind="positive"), 0.1, 1e-5,
        )[0],
        {"binary", "unary", "reshape"},
    ),
    "hardtanh_relu6": (lambda b: b.op(A.HardtanhOp, x(b, 2, 3), 0.0, 6.0), {"binary"}),
    "roll_two_dims": (lambda b: b.op(A.RollOp, x(b, 1, 4, 5, 3), [-2, 7], [1, 2]), {"slice", "concat"}),
    "roll_flat": (lambda b: b.op(A.RollOp, x(b, 2, 3), [4], []), {"slice", "concat", "reshape"}),
    "convolution_mode_same": (
        lambda b: b.op(A._ConvolutionModeOp, x(b, 1, 3, 6, 7), b.weight((4, 3, 3, 2)), None, [1, 1], "same",
                       [1, 1], 1),
        {"conv"},
    ),
    "max_pool2d_with_indices": (
        lambda b: b.op(A.MaxPool2dWithIndicesOp, x(b, 1, 2, 6, 6), [3, 3], [2, 2], [1, 1], [1, 1], False)[0],
        {"pool"},
    ),
    "adaptive_avg_pool2d_private": (lambda b: b.op(A._AdaptiveAvgPool2dOp, x(b, 1, 3, 4, 6), [1, 1]), {"pool"}),
    # issue 31: what used to fall back to the host
    "unbind": (lambda b: b.op(A.UnbindIntOp, x(b, 2, 3, 4), -2), {"slice", "reshape"}),
    "unflatten": (lambda b: b.op(A.UnflattenIntOp, x(b, 2, 12), -1, [3, 4]), {"reshape"}),
    "expand_as": (lambda b: b.op(A.ExpandAsOp, x(b, 3, 1), x(b, 2, 3, 4)), {"broadcast"}),
    "clamp_min_max": (
        lambda b: b.op(A.ClampMaxOp, b.op(A.ClampMinOp, x(b, 2, 3), -0.5), 0.25), {"binary"}
    ),
    "clamp_tensor": (lambda b: b.op(A.ClampTensorOp, x(b, 2, 3), x(b, 3), None), {"binary"}),
    "copy_broadcast_convert": (lambda b: b.op(A.CopyOp, x(b, 2, 3), b.input((3,), torch.int64)), {"convert"}),
    "slice_scatter": (lambda b: b.op(A.SliceScatterOp, x(b, 4, 6), x(b, 4, 3), -1, 1, 4), {"slice", "concat"}),
    "slice_scatter_step": (
        lambda b: b.op(A.SliceScatterOp, x(b, 7, 2), x(b, 3, 2), 0, 1, None, 2), {"concat", "gather"}
    ),
    "select_scatter": (lambda b: b.op(A.SelectScatterOp, x(b, 3, 5), x(b, 3), 1, -1), {"slice", "concat"}),
    "vector_norm_2": (lambda b: b.op(A.LinalgVectorNormOp, x(b, 2, 3, 4), 2, [-1], True), {"reduce", "unary"}),
    "vector_norm_orders": (
        lambda b: tuple(b.op(A.LinalgVectorNormOp, v, o, [0, 2]) for v in [x(b, 2, 3, 4)] for o in (1, 0, 3.0, -1.5)),
        {"reduce", "binary", "compare"},
    ),
    "vector_norm_inf_all": (
        lambda b: (lambda v: tuple(b.op(A.LinalgVectorNormOp, v, o) for o in (float("inf"), float("-inf"))))(
            x(b, 3, 4)
        ),
        {"reduce", "unary"},
    ),
    "vector_norm_half": (
        lambda b: b.op(A.LinalgVectorNormOp, b.input((2, 8), torch.float16), 2, [1]), {"reduce", "convert"}
    ),
    "var_correction": (lambda b: b.op(A.VarCorrectionOp, x(b, 3, 5), [1], correction=0, keepdim=True), {"reduce"}),
    "var_dim": (lambda b: b.op(A.VarDimOp, x(b, 3, 5, 2), [0, -1]), {"reduce", "binary"}),
    "var_mean": (lambda b: b.op(A.VarMeanCorrectionOp, x(b, 4, 3), [0]), {"reduce", "binary", "reshape"}),
    "log1p": (lambda b: b.op(A.Log1pOp, x(b, 2, 3)), {"unary"}),
    "topk": (lambda b: b.op(A.TopkOp, x(b, 3, 7), 3), {"topk", "gather_elements"}),
    "topk_smallest_dim0": (lambda b: b.op(A.TopkOp, x(b, 5, 4), 2, 0, False)[1], {"topk"}),
    "max_dim": (lambda b: b.op(A.MaxDimOp, x(b, 3, 4), -1, True), {"reduce", "topk"}),
    "min_dim_indices": (lambda b: b.op(A.MinDimOp, x(b, 3, 4), 0)[1], {"topk", "reshape"}),
    "argmax_flat": (lambda b: b.op(A.ArgmaxOp, x(b, 3, 4)), {"topk", "reshape"}),
    "argmin_keepdim": (lambda b: b.op(A.ArgminOp, x(b, 3, 4), 1, True), {"topk"}),
    "gather_elements": (
        lambda b: b.op(
            A.GatherOp, x(b, 3, 4), 1, b.input((2, 3), torch.int64, value=torch.tensor([[0, 3, 2], [1, 1, 0]]))
        ),
        {"gather_elements"},
    ),
    "gather_elements_0d": (
        lambda b: b.op(A.GatherOp, x(b), 0, b.input((), torch.int64, value=torch.tensor(0))), {"gather_elements"}
    ),
    "index_two_tensors": (
        lambda b: b.op(
            A.IndexTensorOp,
            x(b, 3, 5),
            [
                b.input((2,), torch.int64, value=torch.tensor([2, -1])),
                b.input((2,), torch.int64, value=torch.tensor([4, 0])),
            ],
        ),
        {"gather", "gather_elements"},
    ),
    "index_apart_broadcast": (
        lambda b: b.op(
            A.IndexTensorOp,
            x(b, 3, 2, 5),
            [
                b.input((2, 1), torch.int64, value=torch.tensor([[2], [-3]])),
                None,
                b.input((4,), torch.int64, value=torch.tensor([4, 0, -1, 1])),
            ],
        ),
        {"gather", "gather_elements", "transpose"},
    ),
    "index_adjacent_constant": (
        lambda b: b.op(
            A._UnsafeIndexTensorOp,
            x(b, 2, 3, 4, 2),
            [None, b.const(torch.tensor([[0], [2]])), b.const(torch.tensor([3, 1, -4]))],
        ),
        {"gather", "gather_elements"},
    ),
}

FALLBACK_CASES: dict[str, tuple[Callable[[GraphBuilder], object], str]] = {
    "max_dim_bool_indices": (
        lambda b: b.op(A.MaxDimOp, b.input((3, 4), torch.bool), 1)[1],
        "aten.max.dim",
    ),
    "floor_div": (
        lambda b: b.op(A.DivTensorModeOp, x(b, 2, 3), x(b, 2, 3), rounding_mode="floor"),
        "aten.div.Tensor_mode",
    ),
    "diff_n2": (lambda b: b.op(A.DiffOp, x(b, 2, 5), 2), "aten.diff"),
    "native_layer_norm_stats": (
        lambda b: b.op(A.NativeLayerNormOp, x(b, 2, 4), [4], None, None, 1e-5),
        "aten.native_layer_norm",
    ),
    "big_arange": (lambda b: b.op(A.ArangeOp, 5000, dtype=torch.int64), "aten.arange"),
    "pad_reflect": (lambda b: b.op(A.PadOp, x(b, 1, 2, 5), [2, 1], "reflect"), "aten.pad"),
    "adaptive_avg_pool2d_uneven": (
        lambda b: b.op(A.AdaptiveAvgPool2dOp, x(b, 1, 2, 7, 8), [3, 3]),
        "aten.adaptive_avg_pool2d",
    ),
    "upsample_fractional_scale": (
        lambda b: b.op(A.UpsampleNearest1dVecOp, x(b, 1, 2, 4), None, [1.5]),
        "aten.upsample_nearest1d.vec",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule(name: str) -> None:
    graph, expected_kinds = CASES[name]
    case = build(graph)
    stages = assert_lowering_preserves(case.module, case.weights, case.inputs, case.expected)
    found = kinds(stages.npuir)
    assert expected_kinds <= set(found), f"{name}: lowered to {dict(found)}"
    assert not fallbacks(stages.npuir), f"{name}: unexpected fallback {fallbacks(stages.npuir)}"


@pytest.mark.parametrize("name", sorted(FALLBACK_CASES))
def test_fallback_keeps_aten_semantics(name: str) -> None:
    graph, op_name = FALLBACK_CASES[name]
    case = build(graph)
    stages = assert_lowering_preserves(case.module, case.weights, case.inputs, case.expected)
    assert op_name in fallbacks(stages.npuir)
    for op in stages.npuir.walk():
        if op.name == "npuir.aten":
            assert op.properties["device"].data.value == "cpu"


def test_cpu_only_policy_runs_everything_on_the_host() -> None:
    case = build(CASES["sdpa"][0])
    stages = assert_lowering_preserves(
        case.module, case.weights, case.inputs, case.expected, AffinityPolicy.of("cpu-only")
    )
    devices = {op.properties["device"].data.value for op in stages.buffer.walk() if op.name == "buffer.exec"}
    assert devices == {"cpu"}
    assert stages.plan.transfers == 0


def test_dead_ops_and_unused_results_are_dropped() -> None:
    def graph(b: GraphBuilder):
        v = x(b, 2, 6)
        b.mark_dead(b.op(A.ExpOp, v))
        first, _second, _third = b.op(A.SplitTensorOp, v, 2, 1)
        return first

    case = build(graph)
    stages = assert_lowering_preserves(case.module, case.weights, case.inputs, case.expected)
    assert stages.lowering.dropped == 1
    assert kinds(stages.npuir)["slice"] == 1 and "unary" not in kinds(stages.npuir)


def test_policy_pins_by_npuir_kind_or_aten_name() -> None:
    from xdsl.passes import PassPipeline

    from forge.driver.registry import get_all_passes

    case = build(CASES["index_select_embedding"][0])

    def devices(spec: str) -> list[str]:
        module = case.module.clone()
        PassPipeline.parse_spec(get_all_passes(), spec).apply(None, module)
        return [op.properties["device"].data.value for op in module.walk() if op.name == "npuir.gather"]

    assert devices("lower-aten-to-npuir") == ["npu", "npu"]
    assert devices("lower-aten-to-npuir{cpu-ops=gather}") == ["cpu", "cpu"]
    assert devices('lower-aten-to-npuir{cpu-ops="embedding"}') == ["npu", "cpu"]
    assert devices('lower-aten-to-npuir{cpu-ops="aten.index_select"}') == ["cpu", "npu"]
    assert devices("lower-aten-to-npuir{policy=cpu-only}") == ["cpu", "cpu"]
    with pytest.raises(ValueError, match="unknown affinity policy"):
        AffinityPolicy.of("gpu-first")


def test_predict_devices_reports_each_aten_ops_devices_and_leaves_the_module_alone() -> None:
    from lowering.aten_to_npuir import predict_devices

    def graph(b: GraphBuilder):
        v = x(b, 2, 6)
        copy = b.op(A.CloneOp, v)  # becomes no op: absent from the prediction
        return b.op(A.ExpOp, copy), b.op(A.CumsumOp, b.input((2, 4), torch.int64), -1)

    case = build(graph)
    printed = str(case.module)

    def predicted(policy: AffinityPolicy) -> dict[str, frozenset[str]]:
        found = predict_devices(case.module, policy)
        assert set(found) <= set(case.module.walk())  # keyed by the ops of the module given
        return {op.name: devices for op, devices in found.items()}

    assert predicted(AffinityPolicy()) == {"aten.exp": {"npu"}, "aten.cumsum": {"cpu"}}
    assert predicted(AffinityPolicy.of(cpu_ops=["unary"])) == {"aten.exp": {"cpu"}, "aten.cumsum": {"cpu"}}
    assert predicted(AffinityPolicy.of("npu-only")) == {}  # the lowering rejects cumsum: no half prediction
    assert str(case.module) == printed
