"""The pass table reads the plug-ins' entry points only when it has to (`forge.driver.registry.PassTable`).

Reading the `forge.passes` entry points scans every installed package's metadata (tens of ms in each
`forge.compile` and `forge-opt` start-up), so a lookup of one of Forge's own or a registered pass answers
without them, while a miss or a listing reads them once; the precedence is the eager table's (Forge's
own, then the registered passes, then the plug-ins). In-process and fast: the entry points are faked.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

import forge.driver.registry

PLUGINS = [
    EntryPoint(name="plugin-only", value="forge.transforms.dce:DeadCodeElimination", group="forge.passes"),
    EntryPoint(name="dce", value="forge.transforms.cse:CommonSubexpressionElimination", group="forge.passes"),
]


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(forge.driver.registry, "entry_points", lambda group: seen.append(group) or PLUGINS)
    return seen


def test_forge_and_registered_passes_need_no_entry_points(reads):
    table = forge.driver.registry.get_all_passes()
    assert "dce" in table and "fold" in table and "lower-aten-to-npuir" in table
    assert table["dce"] is table.known["dce"]  # Forge's own wins the clash with the plug-in's `dce`
    assert reads == []


def test_a_miss_or_a_listing_reads_them_once(reads):
    table = forge.driver.registry.get_all_passes()
    assert "plugin-only" in table and reads == ["forge.passes"]
    assert "no-such-pass" not in table and reads == ["forge.passes"]
    with pytest.raises(KeyError):
        table["no-such-pass"]
    names = list(table)
    assert names[0] == "plugin-only" and set(table.known) <= set(names) and len(table) == len(names)
    assert names.count("dce") == 1 and dict(table.items())["dce"] is table.known["dce"]
    assert reads == ["forge.passes"]
    assert len(forge.driver.registry.get_all_passes()) == len(names) and reads == ["forge.passes"] * 2  # per table
