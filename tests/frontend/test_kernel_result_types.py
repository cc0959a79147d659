"""Result types the importer gives where torch.export's metadata (fake tensors) or the meta kernel
differ from torch's CPU kernel (dialects/aten.py: KERNEL_TYPED, EXPORT_TYPES_DIFFER): every result
is typed as the kernel gives it, so the interpreter and the runtimes return torch's dtypes."""

from __future__ import annotations

import pytest
import torch

import dialects.fused_kernels  # noqa: F401 - registers torch.ops.forge
from forge.frontend.export import cast_policy
from forge.frontend.fx_importer import import_module
from forge.frontend.import_errors import FrontendError
from forge.interpreter import interpret

A = torch.ops.aten
BF16, F16, F32 = torch.bfloat16, torch.float16, torch.float32


class Call(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        out = self.fn(*xs)
        return tuple(out) if isinstance(out, (tuple, list)) else out


def _check(fn, *xs) -> None:
    """Imported, verified and interpreted, every result has the dtype and shape of torch's kernel."""
    want = Call(fn)(*(x.clone() for x in xs))
    want = list(want) if isinstance(want, tuple) else [want]
    imported = import_module(Call(fn), tuple(x.clone() for x in xs))
    imported.module.verify()
    got = interpret(imported.module, imported.weights, *xs)
    assert [(t.dtype, tuple(t.shape)) for t in got] == [(t.dtype, tuple(t.shape)) for t in want]


@pytest.mark.parametrize("dtype", [BF16, F16])
def test_a_half_layer_norm_keeps_its_dtype_for_the_statistics(dtype):
    _check(lambda x: A.native_layer_norm(x, [2, 5], None, None, 1e-5), torch.randn(1, 2, 5, dtype=dtype))


@pytest.mark.parametrize("train", [True, False])
def test_a_half_batch_norm_with_float_parameters_has_float_statistics(train):
    c = torch.ones(3)
    x = torch.randn(2, 3, 4, dtype=BF16)
    _check(lambda x, m, v: A.native_batch_norm(x, c, c, m, v, train, 0.1, 1e-5), x, c.clone(), c.clone())
    _check(lambda x, m, v: A._native_batch_norm_legit_functional(x, None, None, m, v, train, 0.1, 1e-5), x, c, c)
    _check(lambda x: A._native_batch_norm_legit.no_stats(x, c, None, True, 0.1, 1e-5), x)
    _check(lambda x: A._native_batch_norm_legit.no_stats(x, None, None, True, 0.1, 1e-5), x)
    _check(lambda x, m, v: A._native_batch_norm_legit_no_training(x, None, None, m, v, 0.1, 1e-5), x, c, c)


def test_a_group_norm_and_a_dropout_of_nothing_are_typed_as_the_kernel_types_them():
    _check(lambda x: A.native_group_norm(x, None, torch.ones(1), 3, 1, 3, 1, 0.1), torch.ones(3, 1, 3, 1, dtype=BF16))
    _check(lambda x: A.native_dropout(x, 0.0, False), torch.zeros(0))


def test_ldexp_and_a_bool_power_promote_as_the_kernel_does():
    _check(lambda x, e: A.ldexp.Tensor(x, e), torch.tensor(1, dtype=torch.uint8), torch.tensor(0.0, dtype=F16))
    _check(lambda x, e: A.ldexp.Tensor(x, e), torch.tensor(True), torch.tensor(-8.0, dtype=BF16))
    _check(lambda x: A.pow.Tensor_Scalar(x, False), torch.tensor(True))


def test_arange_diff_and_an_empty_mask_have_the_kernels_shapes():
    _check(lambda x: x + A.arange.default(7.25, dtype=torch.int64), torch.zeros((), dtype=torch.int64))
    _check(lambda x: x + A.arange.start(0.0, 0.5, dtype=torch.int64), torch.zeros((), dtype=torch.int64))
    _check(lambda x: x + A.arange.start_step(7.25, 0, -1, dtype=torch.int64), torch.zeros((), dtype=torch.int64))
    _check(lambda x: x + A.arange.default(7.25, dtype=torch.int32), torch.zeros((), dtype=torch.int32))
    u8 = torch.zeros(1, 1, dtype=torch.uint8)
    _check(lambda x, a: A.diff(x, 0, 1, None, a), u8, u8 + 1)
    _check(lambda x, m: A.index.Tensor(x, [m]), torch.zeros(0, 1, dtype=BF16), torch.zeros(0, dtype=torch.bool))


def test_a_batch_norm_statistic_longer_than_the_channels_is_refused_at_import():
    x, mean, var = torch.zeros(1, 1, 1), torch.ones(1), torch.ones(2)
    fn = Call(lambda x, m, v: A._native_batch_norm_legit_no_training(x, None, None, m, v, 0.5, 0.1))
    with pytest.raises(FrontendError, match=r"running_var has shape \[2\].*1 channels"):
        import_module(fn, (x, mean, var))


def test_a_cast_models_outputs_go_back_to_the_kernels_dtypes():
    """A half model compiles in float32 and its outputs are cast back to the dtypes the model gives:
    those of torch's kernel, not of fake tensors (a bf16 batch norm's float32 statistics, ldexp of a
    uint8 by a float16 exponent)."""
    c = torch.ones(3)
    x = torch.randn(2, 3, 4, dtype=BF16)
    fn = Call(lambda x, m, v: A._native_batch_norm_legit_no_training(x, None, None, m, v, 0.1, 1e-5))
    _, policy = cast_policy(fn, (x, c, c), {}, torch.float32)
    assert policy.output_dtypes == (BF16, F32, F32) == tuple(t.dtype for t in fn(x, c, c))
    u8, e = torch.tensor(1, dtype=torch.uint8), torch.tensor(0.5, dtype=F16)
    _, policy = cast_policy(Call(lambda x, e: A.ldexp.Tensor(x, e)), (u8, e), {}, torch.float32)
    assert policy.output_dtypes == (F16,)


def test_a_fused_linear_of_integers_has_its_activations_dtype():
    """sigmoid and relu6 (a clamp to float bounds) of an integer linear give float32, as the reference
    kernel does; gelu of integers, which the kernel refuses, is refused by the meta kernel too."""
    x, w = torch.ones(1, 1, 1, dtype=torch.uint8), torch.full((1, 1), 7, dtype=torch.uint8)
    F = torch.ops.forge
    _check(lambda x, w: F.fused_linear(x, w, None, "relu6"), x, w)
    _check(lambda x, w: F.gated_mlp(x, w, w, "sigmoid"), x.long(), w.long())
    _check(lambda x, w: F.fused_linear(x, w, None, "relu"), x, w)
    with pytest.raises(RuntimeError, match="gelu of uint8"):
        F.fused_linear(x.to("meta"), w.to("meta"), None, "gelu")


@pytest.mark.parametrize("result", [1, 2, 3])
def test_a_used_embedding_bag_bookkeeping_result_is_refused_by_name(result):
    """offset2bag, bag_size and max_indices have mode-dependent CPU shapes (max_indices: (0,) in sum
    mode where the meta kernel says (1,)); returning meta-shaped zeros was a silent wrong value."""
    weight, indices, offsets = torch.randn(5, 3), torch.tensor([0, 4, 1]), torch.tensor([0])
    fn = Call(lambda w, i, o: A._embedding_bag(w, i, o, False, 0)[result])
    with pytest.raises(FrontendError, match=rf"result {result} \(\w+\) of aten._embedding_bag.default is used"):
        import_module(fn, (weight, indices, offsets))


def test_an_embedding_bag_whose_bookkeeping_is_unused_matches_torch():
    weight, indices, offsets = torch.randn(5, 3), torch.tensor([0, 4, 1, 1]), torch.tensor([0, 1, 4])
    for mode in range(3):
        fn = Call(lambda w, i, o, mode=mode: A._embedding_bag(w, i, o, False, mode, False, None, True)[0])
        imported = import_module(fn, (weight, indices, offsets))
        got = interpret(imported.module, imported.weights, weight, indices, offsets)
        torch.testing.assert_close(got[0] if isinstance(got, (list, tuple)) else got, fn(weight, indices, offsets))
