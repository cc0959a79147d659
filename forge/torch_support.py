"""The torch releases Forge supports, checked before anything relies on torch's internals.

Forge reads torch's op schemas (the generated `aten` table), its export internals
(`torch.fx.config.do_not_emit_stack_traces`, `torch._export` passes) and its decomposition table;
each torch release moves some of them. A torch outside `SUPPORTED` fails with one line naming the
supported release and the install command, not with an AttributeError deep in an export.
Supporting one minor release is a choice: the aten table is generated against it and only
torch 2.13 (the CPU build) is installable here to test against.
"""

from __future__ import annotations

from importlib import metadata

SUPPORTED = "2.13"
"""The supported torch minor release (any patch release of it)."""
INSTALL = "pip install 'torch==2.13.0'"


class UnsupportedTorchError(ImportError):
    """The installed torch is outside the supported release (its message is the one line to print)."""


def installed_torch_version() -> str | None:
    """The installed torch's version, from its distribution metadata (torch itself is not imported)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def check_torch(version: str | None = None) -> None:
    """Raise `UnsupportedTorchError` unless `version` (default: the installed torch) is a `SUPPORTED` release."""
    found = version if version is not None else installed_torch_version()
    if found is None:
        raise UnsupportedTorchError(f"Forge needs torch {SUPPORTED}.x; none is installed; install it with: {INSTALL}")
    release = found.split("+")[0].split(".")
    if ".".join(release[:2]) != SUPPORTED:
        raise UnsupportedTorchError(f"Forge supports torch {SUPPORTED}.x; found {found}; install it with: {INSTALL}")
