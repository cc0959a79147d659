"""`forge compile` / `forge run` from the command line (in-process)."""

from __future__ import annotations

import json

import pytest

from forge.cli.main import main


def test_compile_prints_the_report_and_writes_json(tmp_path, capsys):
    report = tmp_path / "r.json"
    code = main(["compile", "gpt2", "--small", "--seq-len", "16", "--check", "--report", str(report), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "fuse-attention" in out and "parity vs eager" in out
    data = json.loads(report.read_text())
    assert data["parity"]["max_abs"] <= 2.1e-5
    assert data["ops_optimized"] < data["ops_imported"]


@pytest.mark.parametrize(
    "stage, marker",
    [("aten", "aten.scaled_dot_product_attention"), ("npuir", "npuir.sdpa"), ("buffer", "buffer.exec")],
)
def test_emit_writes_the_ir_of_a_stage(tmp_path, stage, marker):
    out = tmp_path / f"m.{stage}.mlir"
    assert main(["compile", "llama", "--small", "--seq-len", "8", "--emit", stage, "-o", str(out), "--quiet"]) == 0
    assert marker in out.read_text()


def test_run_reports_latency(capsys):
    assert main(["run", "bert", "--small", "--seq-len", "8", "--iterations", "3", "--quiet"]) == 0
    assert "latency over 3 runs" in capsys.readouterr().out


def test_bad_pipeline_is_a_one_line_error(capsys):
    code = main(["compile", "gpt2", "--small", "--seq-len", "8", "--pipeline", "dce,no-such-pass", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("forge: error:") and "no-such-pass" in err and "Traceback" not in err


# --- the grown zoo ---------------------------------------------------------------------------------


def test_models_lists_every_family_with_kind_attention_and_inputs(capsys):
    from forge.models import ZOO, attn_impls, input_names, kind, output_kind

    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["model", "kind", "attention", "inputs", "output"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert list(rows) == list(ZOO)
    for name, row in rows.items():
        assert row == [name, kind(name), ",".join(attn_impls(name)), ",".join(input_names(name)), output_kind(name)]
    assert rows["resnet"][2] == "none" and rows["gpt-neo"][2] == "eager"
    assert rows["t5"][3] == "input_ids,decoder_input_ids"


def test_cpu_fallback_line():
    from forge.cli.main import format_cpu_fallback

    assert format_cpu_fallback({}) == "CPU fallback: none"
    assert format_cpu_fallback({"aten.gather": 1}) == "CPU fallback: 1 op (aten.gather x1)"
    assert format_cpu_fallback({"aten.topk": 1, "aten.roll": 2}) == "CPU fallback: 3 ops (aten.roll x2, aten.topk x1)"


@pytest.mark.parametrize(("model", "extra"), [("whisper-decoder", ["--seq-len", "8"]), ("convnext", [])])
def test_compile_a_non_text_or_two_input_family(tmp_path, capsys, model, extra):
    """Families with two inputs or image inputs compile from the command line; the default
    attention is the family's own (eager where offered, `none` for a conv net); the report ends
    with the CPU-fallback line, consistent with the JSON report."""
    from forge.cli.main import format_cpu_fallback

    report = tmp_path / "r.json"
    assert main(["compile", model, "--small", "--check", "--quiet", "--report", str(report), *extra]) == 0
    out = capsys.readouterr().out
    data = json.loads(report.read_text())
    attn = "eager" if model == "whisper-decoder" else "none"
    assert out.startswith(f"Forge report: {model}-small ({attn}) on openvino/CPU")
    assert "parity vs eager" in out
    assert out.rstrip().splitlines()[-1] == format_cpu_fallback(data["cpu_fallback"])


def test_attention_a_family_lacks_is_a_one_line_error(capsys):
    assert main(["compile", "resnet", "--small", "--attn", "sdpa", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("forge: error:") and "resnet; valid: none" in err and "Traceback" not in err
