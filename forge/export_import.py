"""The compile's front half: a model and its example inputs become a call signature and an imported
`aten` module (forge/frontend; export, decomposition and import charge `export_ms`, `decompose_ms` and
`import_ms` of the running compile's clock).

With `reuse_blocks`, each distinct repeated block is traced and imported once (forge/frontend/blocks.py),
or the whole model is exported as usual when that is not proven sound. A `transformers` model whose
default (cache-returning) forward fails is compiled as its cache-free forward (`use_cache=False`, a
default of the call, said in a note).
"""

from __future__ import annotations

import inspect
from dataclasses import replace
from typing import Any

import torch

from forge.diagnostics import one_line
from forge.errors import CompileError
from forge.frontend.errors import ImportError_
from forge.frontend.export import ExportError, export_model
from forge.frontend.fx_importer import import_program


def example_inputs(args: Any, kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """torch.export's forms: args a tuple (a list is taken as one), kwargs a dict of str keys."""
    if isinstance(args, torch.Tensor):
        raise CompileError("args: expected a tuple of example inputs, got a tensor (write (x,) for one input)")
    if not isinstance(args, (tuple, list)):
        raise CompileError(f"args: expected a tuple of example inputs, got {type(args).__name__}")
    if kwargs is not None and (not isinstance(kwargs, dict) or not all(isinstance(k, str) for k in kwargs)):
        raise CompileError(f"kwargs: expected a dict of keyword inputs by name, got {type(kwargs).__name__}")
    return tuple(args), dict(kwargs or {})


def export_and_import(model, args, kwargs, reuse_blocks: bool = False):
    """(signature, imported, note): export and import; the note (None unless the cache-free forward was
    compiled instead) says why. `reuse_blocks`: each distinct repeated block traced once, else as usual.
    Export, decomposition and import charge the running compile's stage clock themselves."""

    def once(call_kwargs):
        reused, off = _reusing_blocks(model, args, call_kwargs) if reuse_blocks else (None, "off")
        if reused is not None:
            return reused
        program, signature = _export(model, args, call_kwargs)
        imported = import_program(program)
        imported.blocks = {"distinct": 0, "instances": 0, "reused": 0, "off": off}
        return signature, imported

    try:
        signature, imported = once(kwargs)
        return signature, imported, None
    except (CompileError, ImportError_) as err:
        if not _may_drop_cache(model, kwargs):
            raise
        why = one_line(str(err))
    signature, imported = once({**kwargs, "use_cache": False})
    note = (
        f"the cache-returning forward (use_cache default) did not compile ({why}); compiled the cache-free "
        "forward: use_cache=False is a default of the call"
    )
    return replace(signature, defaults={"use_cache": False}), imported, note


def _export(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]):
    try:
        program, signature, _ = export_model(model, args, kwargs)
    except ExportError as err:
        raise CompileError(str(err)) from err
    return program, signature


def _reusing_blocks(model, args, kwargs):
    """(signature, imported) exported and imported with block reuse, or (None, why not): the caller exports
    the whole model (the time spent counts in the export stage)."""
    from forge.frontend import blocks  # lazy: imported by the first compile that reuses blocks

    try:
        return blocks.export_and_import(model, args, kwargs), None
    except Exception as err:  # not provably sound, or the skeleton failed: the whole export decides
        return None, f"{type(err).__name__}: {one_line(str(err))}"


def _may_drop_cache(model: torch.nn.Module, kwargs: dict[str, Any]) -> bool:
    """A transformers model called without use_cache, whose forward takes it."""
    if "use_cache" in kwargs or not any(c.__module__.startswith("transformers.") for c in type(model).__mro__):
        return False
    try:
        return "use_cache" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
