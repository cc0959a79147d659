"""Plug-in points: Forge inside xDSL's own xdsl-opt, and third-party passes inside forge-opt."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import EntryPoint

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.xdsl_opt_main import xDSLOptMain

import forge.driver.registry
from forge.cli.opt import main as forge_opt

DOUBLE_NEG = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = aten.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = aten.neg %a : (tensor<4xf32>) -> tensor<4xf32>
  %dead = aten.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}
"""


def test_xdsl_opt_runs_forge_dialects_and_passes(tmp_path, capsys):
    path = tmp_path / "f.mlir"
    path.write_text(DOUBLE_NEG)
    xDSLOptMain(args=[str(path), "-p", "fold,forge-dce"]).run()
    out = capsys.readouterr().out
    assert "aten.neg" not in out and "aten.exp" not in out
    assert "func.return %x" in out


@dataclass(frozen=True)
class TagFunctionsPass(ModulePass):
    """A third-party pass: marks every function (the plug-in test's witness)."""

    name = "tag-functions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.dialects import func
        from xdsl.dialects.builtin import UnitAttr

        for f in op.walk():
            if isinstance(f, func.FuncOp):
                f.attributes["tagged"] = UnitAttr()


def test_a_forge_passes_entry_point_shows_up_in_forge_opt(tmp_path, capsys, monkeypatch):
    plugin = EntryPoint(name="tag-functions", value=f"{__name__}:TagFunctionsPass", group="forge.passes")
    found = lambda group: [plugin] if group == "forge.passes" else []  # noqa: E731
    monkeypatch.setattr(forge.driver.registry, "entry_points", found)
    assert "tag-functions" in forge.driver.registry.get_all_passes()
    path = tmp_path / "f.mlir"
    path.write_text(DOUBLE_NEG)
    assert forge_opt([str(path), "-p", "tag-functions,dce"]) == 0
    out = capsys.readouterr().out
    assert "attributes {tagged}" in out and "aten.exp" not in out
    assert forge_opt(["--help"]) == 0
    assert "tag-functions" in capsys.readouterr().out
