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
