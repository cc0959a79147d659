"""The model compiler end to end: parity with eager on every zoo model, the report, save/load,
torch.compile, and user errors."""

from __future__ import annotations

import json

import pytest
import torch

import forge
from forge.driver.compile_errors import LoadError
from forge.driver.compiler import compile as forge_compile
from forge.driver.load import load
from forge.driver.parity import parity
from tests.conftest import small_model

MAX_ABS = 2.1e-5  # the published fidelity of the reference compiler (fp32)
MAX_KL = 8.4e-9

REPORT_KEYS = {
    "model", "export_ms", "import_ms", "passes", "lower_ms", "emit_ms", "device_compile_ms",
    "ops_imported", "ops_optimized", "fused_attention", "vregs", "buffers", "peak_bytes_naive",
    "peak_bytes_planned", "transitions_before", "transitions_after", "cpu_fallback", "cpu_ops", "segments",
}


def runtimes():
    from backends.nnfactory.runtime import available_runtimes

    return available_runtimes()


@pytest.mark.parametrize("runtime", runtimes())
def test_zoo_model_compiles_and_matches_eager(zoo_case, runtime):
    model, inputs, expected = small_model(*zoo_case)
    compiled = forge_compile(model, inputs, runtime=runtime)
    got = compiled(*inputs)
    measured = parity(expected, got)
    assert got.shape == expected.shape
    assert measured["max_abs"] <= MAX_ABS, measured
    assert measured["kl"] <= MAX_KL, measured
    assert compiled.report["cpu_fallback"] == {}  # every op of the zoo has an NPU lowering
    assert compiled.report["cpu_ops"] == 0


class _CumprodAfterRelu(torch.nn.Module):
    """relu has an NPU rule; cumprod has none, so it runs as the `aten` kind on the CPU (gather, the op
    this test used before issue 31, runs on the NPU now)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumprod(x.relu(), 1) * 2 + torch.cumprod(x, 1)


def test_report_counts_cpu_fallback_ops_by_aten_name():
    x = torch.randn(2, 5, generator=torch.Generator().manual_seed(0))
    compiled = forge_compile(_CumprodAfterRelu(), (x,))
    assert compiled.report["cpu_fallback"] == {"aten.cumprod": 2}
    assert compiled.report["cpu_ops"] >= 2
    assert compiled.report["transitions_after"] <= compiled.report["transitions_before"]
    torch.testing.assert_close(compiled(x), _CumprodAfterRelu()(x))


def test_report_has_every_stage_and_metric():
    model, inputs, _ = small_model("gpt2", "eager")
    compiled = forge_compile(model, inputs, check=True)
    report = compiled.report
    assert REPORT_KEYS <= set(report)
    assert [p["name"] for p in report["passes"]] == [
        "dce", "cse", "fold", "fuse-attention", "fuse-ops", "layout", "dce", "cse"
    ]
    assert report["ops_optimized"] < report["ops_imported"]
    assert report["fused_attention"] == 2
    assert report["buffers"] < report["vregs"]
    assert report["parity"]["max_abs"] <= MAX_ABS
    json.dumps(report)  # the --report file


def test_disabling_a_pass_removes_it_from_the_pipeline():
    model, inputs, _ = small_model("llama", "eager")
    compiled = forge_compile(model, inputs, disable=["fuse-attention"])
    assert "fuse-attention" not in [p["name"] for p in compiled.report["passes"]]
    assert compiled.report["fused_attention"] == 0


def test_save_and_load_round_trip(tmp_path):
    model, inputs, expected = small_model("bert", "sdpa")
    compiled = forge_compile(model, inputs)
    compiled.save(tmp_path / "bert")
    loaded = forge.load(tmp_path / "bert")
    # the mapped weights' pages were given back after the device compile (read again from the file if touched)
    assert loaded.report["released_weight_bytes"] > compiled.report["weight_bytes"] // 2
    assert torch.equal(loaded(*inputs), compiled(*inputs))
    assert parity(expected, loaded(*inputs))["max_abs"] <= MAX_ABS


def test_load_reports_a_corrupt_directory(tmp_path):
    model, inputs, _ = small_model("gpt2", "sdpa")
    forge_compile(model, inputs).save(tmp_path / "m")
    (tmp_path / "m" / "model.mlir").write_text("builtin.module { this is not IR")
    with pytest.raises(LoadError, match="model.mlir"):
        load(tmp_path / "m")
    with pytest.raises(LoadError, match="no meta.json"):
        load(tmp_path / "missing")


def test_wrong_input_shape_is_a_clear_error():
    model, inputs, _ = small_model("gpt2", "sdpa")
    compiled = forge_compile(model, inputs)
    with pytest.raises(ValueError, match="compiled for torch.int64"):
        compiled(inputs[0][:, :4])


def test_torch_compile_backend_matches_eager():
    model, inputs, expected = small_model("gpt2", "sdpa")
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="forge")
    with torch.no_grad():
        got = compiled(*inputs)
    measured = parity(expected, got)
    assert measured["max_abs"] <= MAX_ABS and measured["kl"] <= MAX_KL


class _VectorDot(torch.nn.Module):
    """matmul of two vectors: a 0-d result, reshaped from the 1x1 matmul on the NPU."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


@pytest.mark.parametrize("runtime", runtimes())
def test_zero_dim_result_of_a_matmul(runtime):
    # Reshape to [] after a MatMul crashed OpenVINO's CPU plugin (segfault) before the runtimes
    # built 0-d results another way (found by the OpInfo coverage harness: matmul, dot, vdot, inner).
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, generator=gen), torch.randn(5, generator=gen)
    got = forge_compile(_VectorDot(), (a, b), runtime=runtime)(a, b)
    assert got.shape == ()
    torch.testing.assert_close(got, torch.matmul(a, b))


class _EmptySliceThenCat(torch.nn.Module):
    """Phi-3's full rotary: `q[..., rotary_dim:]` is an empty slice, concatenated back; and the
    sum of an empty product (a 0-d zero)."""

    def forward(self, q: torch.Tensor, e: torch.Tensor) -> tuple[torch.Tensor, ...]:
        rot, rest = q[..., :4].relu(), q[..., 4:]
        # log_softmax of empty rows: a max over an empty axis into an empty result (amax refuses it)
        return torch.cat([rot * 2, rest], dim=-1), (e * e).sum(), torch.log_softmax(rest, dim=-1)


@pytest.mark.parametrize("runtime", runtimes())
def test_zero_size_tensors_run_on_the_cpu(runtime):
    # An NNFactory graph cannot have a zero-size tensor: ops on them go to the CPU (found by the
    # OpInfo harness: linalg.vecdot and svd of empty inputs, unfold to an empty result, log_softmax
    # of a 5x0x0 tensor).
    q, e = torch.randn(1, 2, 3, 4, generator=torch.Generator().manual_seed(0)), torch.randn(0)
    compiled = forge_compile(_EmptySliceThenCat(), (q, e), runtime=runtime)
    got, want = compiled(q, e), _EmptySliceThenCat()(q, e)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
    # the empty product's sum; the empty slice needs no op since the lowering drops what nothing reads and
    # a concatenation with an empty tensor is its other operand
    assert compiled.report["cpu_ops"] >= 1


class _Chunks(torch.nn.Module):
    """aten.chunk (Phi-3's gate/up split): uneven chunks, fewer results than asked for."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a, b, c = torch.ops.aten.chunk.default(x, 3, 1)  # 8 -> 3, 3, 2
        last = torch.ops.aten.chunk.default(x, 4, -1)[-1]  # 7 -> 2, 2, 2, 1
        return a * 2, b + 1, c.relu(), last, *torch.ops.aten.chunk.default(x, 3, 0)  # 2 -> 1, 1


def test_chunk_lowers_to_npu_slices():
    x = torch.randn(2, 8, 7, generator=torch.Generator().manual_seed(0))
    compiled = forge_compile(_Chunks(), (x,))
    assert compiled.report["cpu_fallback"] == {}
    for got, want in zip(compiled(x), _Chunks()(x), strict=True):
        torch.testing.assert_close(got, want)
