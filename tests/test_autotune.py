"""The autotuner: its scores are the cost model's scores of the real compiles, and its choice runs."""

from __future__ import annotations

import functools
import subprocess
import sys
from dataclasses import replace

import pytest

from forge.driver import autotune as at
from forge.driver.pass_stages import parse_pipeline, run_passes
from forge.testing.check import working_copy
from tests.conftest import imported_small_model, small_model


def _imported(name: str):
    imported, _, _ = imported_small_model(name, "eager")
    return working_copy(imported.module, imported.weights)


@functools.cache
def _deep_import(name: str, layers: int):
    """A small zoo model with more layers (what the tuner's 1-/2-layer extrapolation needs)."""
    from forge.frontend.fx_importer import import_module
    from forge.models import build_model, example_inputs

    model = build_model(name, attn="eager", small=True, layers=layers)
    return import_module(model, example_inputs(name, seq_len=16, small=True))


def _deep(name: str, layers: int = 4):
    imported = _deep_import(name, layers)
    return working_copy(imported.module, imported.weights)


def test_search_space_is_about_45_real_pipelines() -> None:
    space = at.search_space()
    assert len(space) == 45
    assert len(set(space)) == len(space)
    assert space[0] == at.DEFAULT
    for config in space:
        parse_pipeline(config.pipeline())
        parse_pipeline(config.lowering())


# Configurations that exercise every shortcut the tuner takes: shared lowerings, idle families,
# re-scored affinity knobs (the final norm with and without its residual add), alpha.
KEY_CONFIGS = [
    at.DEFAULT,
    replace(at.DEFAULT, pin_final_norm=True),
    replace(at.DEFAULT, cpu_gather=True, pin_final_norm=True),
    replace(at.DEFAULT, fuse_ops=at.DEFAULT.fuse_ops - {"residual_norm"}, pin_final_norm=True),
    replace(at.DEFAULT, fuse_ops=at.DEFAULT.fuse_ops - {"gated_mlp"}),
    replace(at.DEFAULT, alpha=0.5, cpu_gather=True),
    replace(at.DEFAULT, alpha=0.25),
    replace(at.DEFAULT, layout=False, pin_final_norm=True),
    replace(at.DEFAULT, attention=False, cpu_gather=True),
    replace(at.NO_FUSION, pin_final_norm=True),
    replace(at.DEFAULT, cpu_only=True),
]


@pytest.mark.parametrize(("name", "layers"), [("gpt2", 4), ("llama", 4), ("bert", 3), ("gpt2", 2)])
def test_tuner_scores_equal_the_cost_model_of_the_compiled_configuration(name: str, layers: int) -> None:
    """The key property: shared work, layer extrapolation and re-scored placements change nothing."""
    module, weights = _deep(name, layers) if layers != 2 else _imported(name)
    report = at.tune(module, weights, KEY_CONFIGS)
    assert len(report.scored) == len(KEY_CONFIGS)
    assert report.layers == (layers if layers >= 3 else None)
    assert report.lowerings < len(KEY_CONFIGS)  # work is shared
    for scored in report.scored:
        compiled = at.score_compiled(module, scored.config, weights)
        assert scored.total_us == pytest.approx(compiled.total_us, rel=1e-9), scored.config.label()
        assert scored.cost.dispatches == compiled.dispatches
        assert scored.cost.transfers == compiled.transfers


def test_tuning_leaves_the_module_unchanged() -> None:
    module, weights = _deep("gpt2")
    before = str(module)
    at.tune(module, weights, KEY_CONFIGS[:3])
    assert str(module) == before


def _fused_ops(module, alpha: float) -> int:
    run_passes(module, f"dce,cse,fold,fuse-ops{{aggressiveness={alpha}}}")
    return sum(1 for op in module.walk() if op.name in
               ("aten.fused_linear", "aten.gated_mlp", "aten.rms_norm", "aten.add_layer_norm", "aten.gelu"))


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_alpha_zero_fuses_nothing_and_one_everything(name: str) -> None:
    counts = {a: _fused_ops(_imported(name)[0], a) for a in (0.0, 0.25, 0.5, 1.0)}
    assert counts[0.0] == 0
    default, _ = _imported(name)
    run_passes(default, "dce,cse,fold,fuse-ops")
    assert counts[1.0] == sum(
        1
        for op in default.walk()
        if op.name in ("aten.fused_linear", "aten.gated_mlp", "aten.rms_norm", "aten.add_layer_norm", "aten.gelu")
    )
    assert counts[0.0] <= counts[0.25] <= counts[0.5] <= counts[1.0]
    assert counts[0.25] < counts[1.0]


def test_alpha_outside_the_unit_interval_is_a_pipeline_error() -> None:
    from forge.driver.compile_errors import CompileError

    with pytest.raises(CompileError, match="aggressiveness"):
        parse_pipeline("fuse-ops{aggressiveness=1.5}")


def test_the_chosen_configuration_compiles_and_matches_eager() -> None:
    model, inputs, _ = small_model("gpt2", "eager")
    compiled, report = at.compile_tuned(model, inputs)
    assert report.verification["ok"], report.verification
    assert report.best.total_us <= report.default.total_us
    assert compiled.report["autotune"]["chosen"]["pipeline"] == report.best.config.pipeline()
    assert len(report.scored) == len(at.search_space())


def _forge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "forge.cli.main", *args], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--pipeline", "dce"), "--autotune chooses the pipeline itself"),
        (("--precision", "bf16"), "--autotune tunes f32 compiles only; drop --precision/--weights"),
    ],
)
def test_cli_autotune_rejects_options_it_would_ignore(flags, message) -> None:
    result = _forge("compile", "gpt2", "--small", "--seq-len", "16", "--autotune", *flags, "--quiet")
    assert result.returncode == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_pin_final_norm_pins_the_norm_that_absorbed_its_residual_add() -> None:
    """GPT-2's ln_f becomes add_layer_norm under fuse-ops: it is still the final norm."""
    module, _ = _imported("gpt2")
    run_passes(module, "dce,cse,fold,fuse-ops")
    assert any(op.name == "aten.add_layer_norm" for op in module.walk())
    run_passes(module, "lower-aten-to-npuir{pin-final-norm=true}")
    norms = [op for op in module.walk() if op.name == "npuir.layer_norm"]
    devices = [op.properties["device"].data.value for op in norms]
    assert devices[-1] == "cpu" and set(devices[:-1]) == {"npu"}
    residual_add = norms[-1].operands[0].owner
    assert residual_add.name == "npuir.binary" and residual_add.properties["device"].data.value == "cpu"
