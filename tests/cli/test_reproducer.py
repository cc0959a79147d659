"""forge/cli/reproducer.py: the reproduce command runs from any directory, and the header says what failed."""

from __future__ import annotations

import os

from forge.cli.reproducer import _TITLE, absolute_paths


def test_relative_paths_in_pass_options_become_absolute(tmp_path, monkeypatch):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "table.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    spec = "my-pass{table=cfg/table.json out=cfg/new.json n=3 ratio=1.5 name=fast}"
    fixed = absolute_paths(spec)
    assert f"table={os.path.join(tmp_path, 'cfg', 'table.json')}" in fixed
    assert f"out={os.path.join(tmp_path, 'cfg', 'new.json')}" in fixed  # a new file in an existing directory
    assert "n=3 ratio=1.5 name=fast}" in fixed
    assert absolute_paths("fold") == "fold"


def test_the_header_names_the_kind_of_failure():
    assert _TITLE == {"raised": "crash reproducer", "verify": "invalid-IR reproducer",
                      "semantics": "wrong-results reproducer"}
