"""The compiled model, in memory and on disk: `CompiledModel` (called as the model is, `.report`,
`.save(dir)`); forge/driver/load.py's `load(dir)` re-emits a saved model for a device without compiling it again.

A saved model is a directory (forge/driver/artifact_files.py reads it back): the planned buffer IR, its weights,
and meta.json (call signature, cast policy, report, checksums). A model compiled by `compile_meta`
references its external weights by manifest instead of copying them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from forge.driver.artifact_files import (
    SAVED_FORMAT,
    SAVED_IR,
    SAVED_META,
    SAVED_WEIGHTS,
    sha256,
)
from forge.driver.report import used_weights
from forge.frontend.export import CallError, CallSignature, CastPolicy
from forge.frontend.fx_importer import InputSpec
from forge.weights import WeightStore


@dataclass
class CompiledModel:
    """A compiled model: callable like the original, with `.report` and `.save(dir)`."""

    executor: Any
    buffer_module: ModuleOp
    weights: WeightStore
    inputs: list[InputSpec]
    report: dict[str, Any] = field(default_factory=dict)
    runtime: str = "openvino"
    device: str = "CPU"
    stages: dict[str, str] = field(default_factory=dict)
    """Printed IR after optimization (`aten`), scheduling (`npuir`) and planning (`buffer`),
    when compiled with `keep_stages=True`."""
    signature: CallSignature | None = None
    """How the model is called and what it returns (None: a program compiled from an import, called
    with its positional tensors)."""
    cast: CastPolicy | None = None
    external_weights: dict[str, Any] | None = None
    """The manifest of the weights bound from safetensors files at load time (`compile_meta`): saved
    in meta.json instead of their data (forge/frontend/meta_weights.py)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run as the model runs: the same arguments (checked against the compiled ones), the same
        output structure; a reduced-precision model's float outputs come back in its dtype."""
        return self.run(args, kwargs)

    def run(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None, *, cast_back: bool = True) -> Any:
        """`__call__` with the arguments as a tuple and a dict (`cast_back=False`: outputs in the compute dtype)."""
        if self.signature is None:
            if kwargs:
                raise CallError(f"this compiled program takes positional inputs only, got keyword(s) {sorted(kwargs)}")
            _check_inputs(self.inputs, args)
            outputs = self.executor(*args)
            return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs
        tensors = self.signature.flatten(tuple(args), kwargs)
        tensors = [t if t.dtype == s.dtype else t.to(s.dtype) for t, s in zip(tensors, self.inputs, strict=True)]
        outputs = self.executor(*tensors)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if self.cast is not None and cast_back:
            outputs = self.cast.restore(outputs)
        return self.signature.unflatten(outputs)

    def save(self, directory: str | Path, *, shared_weights: dict[str, Any] | None = None) -> Path:
        """Write the buffer-level IR, its weights and the plan's metadata to `directory`.

        meta.json records the call signature (input names and structure, the output TreeSpec) and the
        cast policy, so the loaded model is called and returns as this one; and the SHA-256 of the IR
        and weights files: `load` refuses changed files (a flipped weight byte is otherwise
        invisible); drop its "files" entry to load edited IR. External weights (`compile_meta`) are
        referenced by their manifest, not copied. `shared_weights` (`{"file": path relative to `directory`,
        "sha256": its digest, "names": [...]}`): those weights are in that file, written once for several
        models (a dynamic model's buckets), and not here; meta.json records the entry.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / SAVED_IR).write_text(str(self.buffer_module))
        external = set(self.external_weights["tensors"]) if self.external_weights else set()
        shared = set(shared_weights["names"]) if shared_weights else set()
        self.weights.subset(used_weights(self.buffer_module) - external - shared).save(directory / SAVED_WEIGHTS)
        meta = {
            "format": SAVED_FORMAT,
            "runtime": self.runtime,
            "device": self.device,
            "inputs": [{"name": s.name, "shape": list(s.shape), "dtype": str(s.dtype)} for s in self.inputs],
            **({"call": self.signature.to_json()} if self.signature is not None else {}),
            **({"cast": self.cast.to_json()} if self.cast is not None else {}),
            **({"external_weights": self.external_weights} if self.external_weights else {}),
            **({"shared_weights": shared_weights} if shared_weights else {}),
            "files": {name: sha256(directory / name) for name in (SAVED_IR, SAVED_WEIGHTS)},
            "report": self.report,
        }
        (directory / SAVED_META).write_text(json.dumps(meta, indent=2))
        return directory


def _check_inputs(specs: Sequence[InputSpec], args: Sequence[Any]) -> None:
    """Static shapes are part of the compiled program: say which input differs, and how."""
    if len(args) != len(specs):
        raise ValueError(f"expected {len(specs)} input(s) ({', '.join(s.name for s in specs)}), got {len(args)}")
    for spec, arg in zip(specs, args, strict=True):
        if not isinstance(arg, torch.Tensor) or tuple(arg.shape) != spec.shape or arg.dtype != spec.dtype:
            got = f"{arg.dtype} {tuple(arg.shape)}" if isinstance(arg, torch.Tensor) else type(arg).__name__
            raise ValueError(
                f"input '{spec.name}' was compiled for {spec.dtype} {spec.shape}, got {got} "
                "(Forge compiles static shapes; recompile for a new shape)"
            )
