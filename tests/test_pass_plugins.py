"""forge.driver.plugins / forge-opt --load-pass-plugin: passes from a Python file, registered by name."""

from __future__ import annotations

import re

import pytest
from xdsl.passes import ModulePass

from forge.cli.opt import main as forge_opt
from forge.driver import registry as pass_registry
from forge.driver.plugins import PluginError, load_pass_plugin

PLUGIN = '''
from dataclasses import dataclass
from xdsl.passes import ModulePass
from forge.driver.registry import register_pass

@register_pass
@dataclass(frozen=True)
class First(ModulePass):
    """Plug-in test pass one."""
    name = "plugin-test-first"
    def apply(self, ctx, op):
        op.attributes.clear()

@register_pass
@dataclass(frozen=True)
class Second(ModulePass):
    name = "plugin-test-second"
    def apply(self, ctx, op):
        pass
'''


@pytest.fixture
def registry(monkeypatch):
    """A registry that forgets what the test registered."""
    monkeypatch.setattr(pass_registry, "_REGISTERED_PASSES", {})


def test_a_plugin_registers_its_passes_and_loading_it_again_is_harmless(tmp_path, registry):
    path = tmp_path / "plugin.py"
    path.write_text(PLUGIN)
    assert load_pass_plugin(str(path)) == ["plugin-test-first", "plugin-test-second"]
    assert load_pass_plugin(str(path)) == ["plugin-test-first", "plugin-test-second"]
    assert pass_registry.get_all_passes()["plugin-test-first"]().__doc__ == "Plug-in test pass one."


def test_another_file_cannot_take_a_registered_name(tmp_path, registry):
    (tmp_path / "a.py").write_text(PLUGIN)
    (tmp_path / "b.py").write_text(PLUGIN)
    load_pass_plugin(str(tmp_path / "a.py"))
    with pytest.raises(PluginError, match="a pass named 'plugin-test-first' is already registered") as e:
        load_pass_plugin(str(tmp_path / "b.py"))
    assert e.value.location() == f"{tmp_path / 'b.py'}:6"


def test_register_pass_wants_a_named_module_pass(registry):
    with pytest.raises(TypeError, match="ModulePass subclass"):
        pass_registry.register_pass(int)
    with pytest.raises(ValueError, match="'dce' is already registered"):
        pass_registry.register_pass(type("MyDce", (ModulePass,), {"name": "dce", "apply": lambda s, c, o: None}))


def test_forge_opt_runs_and_lists_plugin_passes(tmp_path, capsys, registry):
    path = tmp_path / "plugin.py"
    path.write_text(PLUGIN)
    model = tmp_path / "m.mlir"
    model.write_text('builtin.module attributes {tag} {\n}\n')
    assert forge_opt([f"--load-pass-plugin={path}", str(model), "-p", "plugin-test-first"]) == 0
    assert "tag" not in capsys.readouterr().out
    assert forge_opt(["--load-pass-plugin", str(path), "--help"]) == 0
    assert re.search(r"^  plugin-test-first +Plug-in test pass one\.$", capsys.readouterr().out, re.M)
