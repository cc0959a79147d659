"""An import-linter contract whose layers are folders: a module is in the layer of the longest package
that contains it, so a new file is in a layer by where it is saved, not by being added to a list.

import-linter's own `layers` contract names modules, and a module it does not name is in no layer: a new
`forge/newcore.py` could import `lowering` and nothing would notice. Here every module of the root
packages must fall under exactly one declared package (else the contract is broken, naming it), and every
direct import must point to the same layer or one below. Packages joined by `|` in one layer are
independent siblings: neither may import the other. Checking direct imports suffices: a chain of
imports that each point down (or sideways within a layer) cannot end above where it began.

    [[tool.importlinter.contracts]]
    type = "folder_layers"  # contract_types = ["folder_layers: scripts.folder_layers.FolderLayersContract"]
    layers = ["drivers: forge.driver forge.cli", "passes: forge.transforms | forge.frontend", "core: forge"]
"""

from __future__ import annotations

from dataclasses import dataclass

from importlinter import Contract, ContractCheck, fields, output
from importlinter.domain.contract import InvalidContractOptions


@dataclass(frozen=True)
class Folder:
    """One declared package: its layer's rank (0 = top), its layer's name, its sibling group."""

    package: str
    rank: int
    layer: str
    group: int


def parse_layers(declared: list[str]) -> list[Folder]:
    """`"name: a.b c | d"` per layer, top first: packages separated by spaces, independent groups by `|`."""
    folders: list[Folder] = []
    for rank, line in enumerate(declared):
        name, _, body = line.partition(":")
        for group, packages in enumerate(body.split("|")):
            folders += [Folder(package, rank, name.strip(), group) for package in packages.split()]
    return folders


def folder_of(module: str, folders: list[Folder]) -> Folder | None:
    """The most specific declared package containing `module`."""
    holding = [f for f in folders if module == f.package or module.startswith(f.package + ".")]
    return max(holding, key=lambda f: len(f.package), default=None)


def allowed(importer: Folder, imported: Folder) -> bool:
    """Down the layers, or within one layer's group (siblings split by `|` stay independent)."""
    if importer.rank != imported.rank:
        return importer.rank < imported.rank  # rank 0 is the top layer
    return importer.group == imported.group


class FolderLayersContract(Contract):
    """Layers declared as folders, top first; every module in exactly one by its path."""

    type_name = "folder_layers"
    layers = fields.ListField(subfield=fields.StringField())

    def validate(self) -> None:
        packages = [f.package for f in parse_layers(self.layers)]  # type: ignore[arg-type]
        twice = sorted({p for p in packages if packages.count(p) > 1})
        if twice:
            raise InvalidContractOptions({"layers": f"declared in more than one layer: {', '.join(twice)}"})

    def check(self, graph, verbose: bool) -> ContractCheck:
        folders = parse_layers(self.layers)  # type: ignore[arg-type]
        squashed = {m for m in graph.modules if graph.is_module_squashed(m)}
        modules = sorted(m for m in graph.modules if m not in squashed)
        homeless = [m for m in modules if folder_of(m, folders) is None]
        upward = []
        for importer in modules:
            source = folder_of(importer, folders)
            for imported in sorted(graph.find_modules_directly_imported_by(importer)):
                target = folder_of(imported, folders)
                if source is None or target is None or allowed(source, target):
                    continue
                lines = [d["line_number"] for d in graph.get_import_details(importer=importer, imported=imported)]
                upward.append({
                    "importer": importer, "imported": imported, "lines": lines,
                    "from": f"{source.layer} ({source.package})", "to": f"{target.layer} ({target.package})",
                })
        return ContractCheck(kept=not homeless and not upward, metadata={"homeless": homeless, "upward": upward})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for module in check.metadata["homeless"]:
            output.print_error(f"{module} is in no layer: no declared package contains it")
            output.new_line()
        for found in check.metadata["upward"]:
            lines = ", ".join(f"l.{n}" for n in found["lines"])
            output.print_error(
                f"{found['importer']} -> {found['imported']} ({lines}): "
                f"{found['from']} may not import {found['to']}"
            )
            output.new_line()
