"""Precision modes (forge.precision): every mode compiles, runs and stays within its stated bounds
against eager f32; reduced modes really differ from f32; int8/int4 weights are really emitted as
quantized constants; the runtime's thread/stream settings are explicit and reported; bad values
are clear errors.

Small configs (the small GPT-2 and Llama, 16 tokens) and `SEQUENCES` seeded inputs per mode (the
benchmark, bench/precision.py, uses the fixed 100 on the full-size models).
"""

from __future__ import annotations

import collections

import pytest
import torch

import forge
from backends.nnfactory.runtime.openvino_runtime import CAPABILITIES_ENV, cpu_capabilities
from backends.nnfactory.runtime.openvino_settings import cores
from forge import precision as P
from forge import quantize as Q
from forge.cli.main import main as cli_main
from forge.driver import accuracy as A
from forge.driver.compile_errors import CompileError
from forge.models import build_model, example_inputs
from tests.conftest import require_runtime

SEQUENCES = 8


@pytest.fixture(scope="module")
def gpt2():
    model = build_model("gpt2", small=True, attn="eager")
    return model, example_inputs("gpt2", seq_len=16, small=True)


@pytest.fixture(scope="module")
def compiled(gpt2):
    """One compile per mode, with its accuracy report (compiled lazily, once)."""
    model, inputs = gpt2
    cache: dict[tuple[str, str | None], forge.CompiledModel] = {}

    def get(precision: str = "f32", weights: str | None = None):
        key = (precision, weights)
        if key not in cache:
            cache[key] = forge.compile(model, inputs, precision=precision, weights=weights, accuracy=SEQUENCES)
        return cache[key]

    return get


def _runtime_ops(c) -> collections.Counter:
    """(layer type, weight input element type) of every FullyConnected OpenVINO compiled."""
    found: collections.Counter = collections.Counter()
    for seg in c.executor.program.segments:
        for node in seg.graph.compiled_model.get_runtime_model().get_ordered_ops():
            layer = node.get_rt_info()["layerType"].astype(str)
            if layer == "FullyConnected":
                found[node.input(1).get_element_type().get_type_name()] += 1
    return found


def test_default_is_f32_with_the_f32_contract(compiled):
    c = compiled()
    acc, cfg = c.report["accuracy"], c.report["runtime_config"]
    assert c.report["precision"] == "f32" and c.report["weights"] == "f32"
    assert acc["mode"] == "f32" and acc["sequences"] == SEQUENCES and acc["positions"] == SEQUENCES * 16
    assert acc["max_abs"] <= 2.1e-5 and acc["kl_mean"] <= 8.4e-9 and acc["top1"] == 1.0 and acc["within_bounds"]
    assert cfg["effective"]["INFERENCE_PRECISION_HINT"] == "f32"  # pinned: the CPU default here is bf16


def test_thread_and_stream_settings_are_explicit_and_reported(compiled):
    cfg = compiled().report["runtime_config"]
    expected = {
        "INFERENCE_NUM_THREADS": cores(),
        "NUM_STREAMS": 1,
        "PERFORMANCE_HINT": "LATENCY",
        "ENABLE_CPU_PINNING": False,
        "TBB_PARTITIONER": "AUTO",
    }
    for key, value in expected.items():
        assert cfg["requested"][key] == value and cfg["effective"][key] == value, key


def _runs_as(precision: str) -> str:
    """What this CPU (as OpenVINO reports it, or FORGE_CPU_CAPABILITIES' fake) computes `precision` in."""
    return P.resolve_precision(precision, cpu_capabilities()).runs_as


def _substitution(precision: str, runs_as: str) -> str:
    return f"{precision} requested; this CPU has no native {precision} arithmetic; OpenVINO runs it as {runs_as}"


def _assert_ran_as(c, precision: str, runs_as: str) -> None:
    """The report says what ran (read back from OpenVINO), names a substitution, and the accuracy was
    checked against the bounds of what ran."""
    cfg, acc = c.report["runtime_config"], c.report["accuracy"]
    assert c.report["precision"] == precision
    assert cfg["effective"]["INFERENCE_PRECISION_HINT"] == runs_as == cfg["runs_as"]
    assert cfg.get("substitution") == (_substitution(precision, runs_as) if runs_as != precision else None)
    b = P.BOUNDS[runs_as]
    if runs_as != "f32":
        assert acc["max_abs"] > 10 * P.F32_BOUNDS.max_abs, "no rounding visible: not computing in reduced precision"
    assert acc["max_abs"] <= b.max_abs and acc["kl_mean"] <= b.kl_mean and acc["top1"] >= b.top1
    assert acc["mode"] == runs_as and acc["within_bounds"] and acc["bounds"]["top1"] == b.top1


@pytest.mark.parametrize("precision", ["bf16", "f16"])
def test_reduced_precision_differs_from_f32_within_its_bounds(compiled, precision):
    _assert_ran_as(compiled(precision), precision, _runs_as(precision))
    assert P.BOUNDS["bf16"].kl_mean <= 1e-3  # issue 15's KL bound; its top-1 >= 99% is bench/precision.py's target


@pytest.mark.parametrize(
    "missing, precision",
    [({"FP16"}, "f16"), ({"FP16", "BF16"}, "f16"), ({"FP16", "BF16"}, "bf16")],
    ids=["no-f16", "no-bf16-f16", "no-bf16"],
)
def test_a_cpu_without_native_arithmetic_substitutes_and_says_so(gpt2, monkeypatch, capsys, missing, precision):
    """The capability answer faked without `missing` (only removed, so this holds on any CPU): Forge
    requests the substitute, the report and the CLI name it, and accuracy is checked for what ran."""
    fake = cpu_capabilities() - missing
    monkeypatch.setenv(CAPABILITIES_ENV, ",".join(sorted(fake)))
    runs_as = P.resolve_precision(precision, fake).runs_as
    assert runs_as != precision
    model, inputs = gpt2
    _assert_ran_as(forge.compile(model, inputs, precision=precision, accuracy=2), precision, runs_as)
    code = cli_main(
        ["compile", "gpt2", "--small", "--layers", "1", "--seq-len", "8", "--precision", precision, "--quiet"]
    )
    assert code == 0 and f"note: {_substitution(precision, runs_as)}" in capsys.readouterr().out


@pytest.mark.parametrize(
    "capabilities, expected",
    [
        ({"FP32", "BF16", "FP16"}, {"f32": "f32", "bf16": "bf16", "f16": "f16"}),
        ({"FP32", "BF16"}, {"f32": "f32", "bf16": "bf16", "f16": "bf16"}),
        ({"FP32", "FP16"}, {"f32": "f32", "bf16": "f32", "f16": "f16"}),
        ({"FP32"}, {"f32": "f32", "bf16": "f32", "f16": "f32"}),
        (set(), {"f32": "f32", "bf16": "f32", "f16": "f32"}),
    ],
)
def test_resolve_precision_prefers_native_then_bf16_then_f32(capabilities, expected):
    for precision, runs_as in expected.items():
        resolution = P.resolve_precision(precision, frozenset(capabilities))
        assert resolution.runs_as == runs_as
        assert (resolution.note is None) == (runs_as == precision)


def test_the_capability_fake_replaces_the_runtime_answer(monkeypatch):
    monkeypatch.setenv(CAPABILITIES_ENV, " fp32, int8 ,")
    assert cpu_capabilities() == {"FP32", "INT8"}
    monkeypatch.delenv(CAPABILITIES_ENV)
    assert "FP32" in cpu_capabilities()  # OpenVINO's own answer (every CPU plugin computes f32)


@pytest.mark.parametrize("weights, element", [("int8", "i8"), ("int4", "i4")])
def test_quantized_weights_are_emitted_quantized_within_bounds(compiled, gpt2, weights, element):
    c = compiled("f32", weights)
    layers = gpt2[0].config.num_hidden_layers
    fc = _runtime_ops(c)
    assert fc[element] >= 4 * layers, f"FullyConnected weight types {dict(fc)}: the linear weights are not {weights}"
    assert fc["f32"] <= 1  # only the tied lm_head (also read by the embedding gather) stays f32
    acc, b = c.report["accuracy"], P.BOUNDS[f"f32+{weights}w"]
    assert acc["max_abs"] > 10 * P.F32_BOUNDS.max_abs
    assert acc["max_abs"] <= b.max_abs and acc["kl_mean"] <= b.kl_mean and acc["top1"] >= b.top1
    assert c.report["runtime_config"]["effective"]["DYNAMIC_QUANTIZATION_GROUP_SIZE"] == 0  # weight-only


def test_int8_weights_on_the_gated_mlp_of_a_llama():
    model = build_model("llama", small=True)
    inputs = example_inputs("llama", seq_len=16, small=True)
    c = forge.compile(model, inputs, weights="int8", accuracy=4)
    layers = model.config.num_hidden_layers
    assert _runtime_ops(c)["i8"] >= 6 * layers  # q, k, v, o, gate, up, down (some fused)
    assert c.report["accuracy"]["within_bounds"], c.report["accuracy"]


def test_accuracy_measures_a_model_called_with_kwargs(gpt2):
    """accuracy= with kwargs=: the token ids drawn per sequence, the mask and flags as given."""
    model, (ids,) = gpt2
    mask = torch.ones_like(ids)
    mask[0, :3] = 0
    c = forge.compile(model.hf, (ids,), kwargs={"attention_mask": mask, "use_cache": False}, weights="int8", accuracy=4)
    acc = c.report["accuracy"]
    assert acc["sequences"] == 4 and acc["positions"] == 4 * ids.numel() and acc["within_bounds"], acc
    assert acc["max_abs"] > 0  # int8 weights: not the f32 reference itself


def test_quantize_int8_is_per_output_channel_symmetric():
    gen = torch.Generator().manual_seed(0)
    w = torch.randn(32, 64, generator=gen) * (torch.rand(32, 1, generator=gen) * 9.9 + 0.1)
    cw = Q.quantize(w, "int8")
    assert cw.data.dtype == torch.int8 and cw.scale.shape == (32, 1) and cw.shape == (32, 64)
    torch.testing.assert_close(cw.scale[:, 0], w.abs().amax(1) / 127)
    assert cw.data.abs().max() == 127
    assert ((cw.dequantize() - w).abs() <= cw.scale / 2 + 1e-6).all()
    transposed = Q.quantize(w.t(), "int8", k_axis=0)  # a [K, N] weight: the same channels
    assert torch.equal(transposed.data, cw.data) and torch.equal(transposed.dequantize(), cw.dequantize().t())


def test_quantize_int4_is_groupwise_and_packs_low_nibble_first():
    w = torch.randn(8, 256, generator=torch.Generator().manual_seed(1))
    cw = Q.quantize(w, "int4")
    assert cw.data.shape == (8, 128) and cw.data.dtype == torch.uint8 and cw.scale.shape == (8, 2, 1)
    q = cw.values()
    assert q.min() >= -8 and q.max() <= 7 and cw.group == 128
    assert ((cw.dequantize() - w).abs() <= cw.scale[..., 0].repeat_interleave(128, 1) / 2 + 1e-6).all()
    assert Q.int4_group(96) == 32 and Q.int4_group(24) == 24
    packed = Q.pack_int4(torch.tensor([[-8, 7, 1, -1]], dtype=torch.int8))
    assert packed.tolist() == [[0x78, 0xF1]]
    assert Q.unpack_int4(packed, 4).tolist() == [[-8, 7, 1, -1]]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"precision": "fp8"}, r"precision: unknown precision 'fp8'; valid: f32, bf16, f16"),
        ({"weights": "int3"}, r"weights: unknown weight quantization 'int3'; valid: int8, int4"),
        ({"accuracy": 0}, r"accuracy: expected a number of sequences >= 1, got 0"),
    ],
)
def test_bad_precision_options_are_clear_errors(gpt2, kwargs, match):
    model, inputs = gpt2
    with pytest.raises(CompileError, match=match):
        forge.compile(model, inputs, **kwargs)


@pytest.mark.parametrize("flag, value", [("--precision", "fp8"), ("--weights", "int3")])
def test_bad_cli_values_are_usage_errors(flag, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["compile", "gpt2", "--small", flag, value])
    assert exit_info.value.code == 2
    assert f"argument {flag}: invalid choice: '{value}'" in capsys.readouterr().err


def test_cli_reports_the_mode_its_settings_and_accuracy(capsys):
    code = cli_main(
        [
            "compile",
            "gpt2",
            "--small",
            "--layers",
            "1",
            "--seq-len",
            "8",
            "--precision",
            "bf16",
            "--accuracy",
            "2",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    runs_as = _runs_as("bf16")
    assert code == 0
    assert f"precision bf16, weights f32; runtime settings: INFERENCE_PRECISION_HINT={runs_as}" in out
    assert "NUM_STREAMS=1" in out and f"accuracy vs eager f32 (2 sequences, {runs_as})" in out and "within" in out


def test_nnfactory_runtime_runs_int8_weights_and_refuses_what_it_cannot_run(gpt2):
    require_runtime("nnfactory")
    model, inputs = gpt2
    with pytest.raises(CompileError, match=r"nnfactory runtime's CPU build computes in f32 only"):
        forge.compile(model, inputs, runtime="nnfactory", precision="bf16")
    with pytest.raises(CompileError, match=r"cannot express an i4 constant"):
        forge.compile(model, inputs, runtime="nnfactory", weights="int4")
    c = forge.compile(model, inputs, runtime="nnfactory", weights="int8", accuracy=2)  # int8 weights run there
    acc = c.report["accuracy"]
    assert acc["max_abs"] > 10 * P.F32_BOUNDS.max_abs and acc["within_bounds"], acc


def test_evaluate_accuracy_counts_disagreement():
    class Flip(torch.nn.Module):
        def forward(self, x):
            return -x

    ident = torch.nn.Identity()
    acc = A.evaluate_accuracy(ident, Flip(), (torch.randn(2, 5),), sequences=3)
    assert acc["sequences"] == 3 and acc["positions"] == 6 and acc["top1"] == 0.0 and acc["kl_mean"] > 0.1
    same = A.evaluate_accuracy(ident, ident, (torch.randn(2, 5),), sequences=3)
    assert same["max_abs"] == 0.0 and same["top1"] == 1.0 and same["kl_mean"] == 0.0


def test_evaluate_accuracy_draws_token_kwargs_and_keeps_the_rest():
    seen = []

    class Model(torch.nn.Module):
        config = type("Config", (), {"vocab_size": 50})()

        def forward(self, input_ids, attention_mask):
            seen.append((input_ids.clone(), attention_mask.clone()))
            return torch.nn.functional.one_hot(input_ids, 50).float() * attention_mask[..., None]

    mask = torch.tensor([[1, 1, 0]])
    acc = A.evaluate_accuracy(
        Model(),
        Model(),
        (),
        sequences=2,
        kwargs={"input_ids": torch.zeros(1, 3, dtype=torch.long), "attention_mask": mask},
    )
    assert acc["max_abs"] == 0.0 and acc["positions"] == 6
    assert all(torch.equal(m, mask) for _, m in seen)  # masks keep their example value
    assert not torch.equal(seen[0][0], seen[2][0]) and seen[0][0].max() < 50  # ids drawn per sequence, in vocab
