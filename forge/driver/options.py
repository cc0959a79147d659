"""`CompileOptions`: every knob of a compile, validated once and frozen.

`forge.compile`'s keyword arguments (and `compile_meta`'s, generation's, the CLI's) become one
`CompileOptions`; the stages read it from the `Compilation` instead of forwarding parameters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import torch

from forge.driver.compile_errors import CompileError

Progress = Callable[[str], None]


@dataclass(frozen=True)
class CompileOptions:
    """What to compile for and how (the meaning of each is `forge.compile`'s docstring)."""

    pipeline: tuple[str, ...] | str | None = None
    """The optimization pipeline (`forge.pipelines.DEFAULT_PIPELINE` when None)."""
    disable: tuple[str, ...] = ()
    lowering: tuple[str, ...] | str | None = None
    """The aten -> npuir -> schedule pipeline (`forge.pipelines.LOWER_TO_NPUIR` when None)."""
    device: str = "CPU"
    runtime: str = "openvino"
    dtype: torch.dtype = torch.float32
    precision: str = "f32"
    weights: str | None = None
    """Weight-only quantization (int8, int4), None for float weights."""
    activations: str | None = None
    """Dynamic int8 quantization of the compressed-weight matmuls' inputs (`forge.precision.ACTIVATION_MODES`)."""
    accuracy: int | None = None
    check: bool = False
    name: str | None = None
    keep_stages: bool = False
    reuse_blocks: bool = True
    buckets: tuple[int, ...] | None = None
    pad_values: Mapping[str, float] | None = None
    progress: Progress | None = None
    cache_dir: str | None = None
    """OpenVINO's compiled-model cache (its CACHE_DIR property): a graph compiled once is imported from
    this folder by later compiles of the same graph (`forge.load` sets it; other runtimes ignore it)."""

    def __post_init__(self) -> None:
        from forge.precision import PrecisionError, check_activations, check_precision, check_weights

        for name in ("pipeline", "lowering", "disable", "buckets"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        try:
            object.__setattr__(self, "precision", check_precision(self.precision))
            object.__setattr__(self, "weights", check_weights(self.weights))
            object.__setattr__(self, "activations", check_activations(self.activations, self.weights))
        except PrecisionError as err:
            raise CompileError(str(err)) from None
        accuracy = self.accuracy
        if accuracy is not None and (not isinstance(accuracy, int) or isinstance(accuracy, bool) or accuracy < 1):
            raise CompileError(f"accuracy: expected a number of sequences >= 1, got {accuracy!r}")

    @classmethod
    def of(cls, **given: Any) -> CompileOptions:
        """Options from keyword arguments named as the fields (None for a field means its default)."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - names)
        if unknown:
            raise CompileError(f"unknown compile option(s): {', '.join(unknown)}")
        nullable = ("pipeline", "lowering", "weights", "activations")
        return cls(**{k: v for k, v in given.items() if v is not None or k in nullable})

    def but(self, **changes: Any) -> CompileOptions:
        """A copy with `changes` (validated again)."""
        return replace(self, **changes)

    @property
    def passes(self) -> Sequence[str] | str:
        from forge.pipelines import DEFAULT_PIPELINE

        return self.pipeline if self.pipeline is not None else DEFAULT_PIPELINE

    @property
    def lowering_passes(self) -> Sequence[str] | str:
        from forge.pipelines import LOWER_TO_NPUIR

        return self.lowering if self.lowering is not None else LOWER_TO_NPUIR
