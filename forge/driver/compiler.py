"""The model compiler: `forge.compile(model, args, kwargs)` runs every stage and reports each one.

    export → import (aten) → optimization passes → lower to npuir → schedule → lower to buffer
           → emit NNFactory segments → device compile → CompiledNPUExecutor

Inputs and outputs are torch.export's (forge/frontend/export.py): `args` and `kwargs` are the example
inputs, the compiled model is called as the model is (`compiled(*args, **kwargs)`, checked against the
recorded in-spec) and returns the model's own structure (tensor, tuple, dict, `transformers` ModelOutput,
KV cache); `dynamic_shapes` hands over to `forge.driver.dynamic.compile_dynamic`. A bf16/f16 model compiles in
float32 (numpy, and so the runtime API, cannot hold bfloat16): its weights and float inputs are cast up,
its float outputs cast back, and `report["cast_policy"]` says so.

Every stage is timed, every pass is recorded through the pipeline's instrumentation hook, and
the result carries a report dict (the `forge compile --report` JSON) with the numbers a
researcher compares across runs; its stages add up to `total_ms` (`other_ms`: the rest of the wall
clock). Nothing here decides how a stage works: `compile` builds the `CompileOptions` and runs the
stage list of forge/driver/static_compile.py over one `Compilation` (forge/driver/compilation.py); the
stages are forge/driver/stages.py's (export and import: export_import.py; passes: pass_stages.py; the
program: emit.py; the report: report.py and parity.py), timed on forge/stage_clock.py's clock. The result
is artifact.py's `CompiledModel` (`save`; load.py is `forge.load`); meta_compile.py is `compile_meta`,
the same stages saved instead of emitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from forge.driver.artifact import CompiledModel
from forge.driver.compilation import Compilation
from forge.driver.compile_errors import CompileError
from forge.driver.options import CompileOptions, Progress
from forge.driver.report import count_body_ops
from forge.driver.stages import IMPORTED
from forge.driver.static_compile import compile_static
from forge.frontend.fx_importer import ImportedProgram


def compile(
    model: torch.nn.Module,
    args: Sequence[Any] = (),
    kwargs: dict[str, Any] | None = None,
    dynamic_shapes: Any = None,
    *,
    pipeline: Sequence[str] | str | None = None,
    disable: Sequence[str] = (),
    device: str = "CPU",
    runtime: str = "openvino",
    dtype: torch.dtype = torch.float32,
    check: bool = False,
    name: str | None = None,
    keep_stages: bool = False,
    progress: Progress | None = None,
    lowering: Sequence[str] | str | None = None,
    precision: str = "f32",
    weights: str | None = None,
    activations: str | None = None,
    accuracy: int | None = None,
    buckets: Sequence[int] | None = None,
    pad_values: dict[str, float] | None = None,
    reuse_blocks: bool = True,
) -> CompiledModel:
    """Compile `model` for the static shapes of its example inputs; see the module docstring.

    `reuse_blocks` (default on): trace, import and stitch one representative per distinct repeated block
    (forge/frontend/blocks.py: only where every instance is proven to trace alike; otherwise, or on any
    failure, the whole model is exported as usual); `report["blocks"]` = {distinct, instances, reused}.

    `args`, `kwargs` and `dynamic_shapes` mean what they mean to `torch.export.export` (the example
    positional and keyword inputs; `dynamic_shapes` not None: `forge.driver.dynamic.compile_dynamic`, which
    compiles shape buckets (`buckets`: their lengths, `pad_values`: what each named input is padded
    with; see forge/driver/dynamic.py) and returns a `DynamicCompiledModel`). The
    result is called as the model is and returns its output structure. `dtype` is the compute dtype
    of the compiled graph: floating weights and inputs of another dtype (a bf16/f16 model) are cast to
    it on a copy of the model (the model itself is not changed) and float outputs cast back.

    `precision` (f32, bf16, f16) and `weights` (None, int8, int4: weight-only quantization) are the
    reduced-precision modes of `forge.precision`; `activations="int8"` (with int8/int4 weights, OpenVINO only)
    also quantizes the inputs of those matmuls to int8 at run time where they have more than one row
    (OpenVINO's dynamic quantization, groups of 128: 2.5x faster at a 128-token prefill, less accurate);
    `accuracy=N` adds `report["accuracy"]`: the mode
    against eager f32 on N seeded inputs (`forge.driver.accuracy.evaluate_accuracy`, 100 is the fixed set;
    positional inputs drawn, keyword token ids drawn, other keyword inputs as given). Off by default here
    (it runs the model and the compiled model N times each); the CLI's `--accuracy` defaults to 100 for a
    reduced mode.
    """
    options = CompileOptions.of(
        pipeline=pipeline,
        disable=tuple(disable),
        device=device,
        runtime=runtime,
        dtype=dtype,
        check=check,
        name=name,
        keep_stages=keep_stages,
        progress=progress,
        lowering=lowering,
        precision=precision,
        weights=weights,
        activations=activations,
        accuracy=accuracy,
        buckets=buckets,
        pad_values=pad_values,
        reuse_blocks=reuse_blocks,
    )
    if dynamic_shapes is not None:
        from forge.driver.dynamic import compile_dynamic  # lazy: only for dynamic shapes

        return compile_dynamic(model, tuple(args), dict(kwargs or {}), dynamic_shapes, options)
    if buckets is not None or pad_values is not None:
        raise CompileError("buckets= and pad_values= need dynamic_shapes= (they shape the dynamic compile's buckets)")
    return compile_static(model, args, kwargs, options=options)


def compile_imported(
    model: torch.nn.Module,
    example_args: Sequence[torch.Tensor],
    imported: ImportedProgram,
    *,
    device: str = "CPU",
    runtime: str = "openvino",
    name: str | None = None,
) -> CompiledModel:
    """`compile` of a program already exported and imported (its module is consumed: the passes
    rewrite it in place). For callers that also run the imported IR, e.g. the coverage harness."""
    c = Compilation(
        CompileOptions(device=device, runtime=runtime, name=name),
        model=model.eval(),
        args=tuple(example_args),
        imported=imported,
    )
    c.clock.ms.update(export_ms=imported.export_ms, import_ms=imported.import_ms)  # measured by the import
    c.counts["ops_imported"] = count_body_ops(imported.module)
    c.run(IMPORTED)
    c.account_wall_clock()
    return c.result


# --- torch.compile(model, backend="forge") ---------------------------------------------------------


def dynamo_backend(graph_module: torch.fx.GraphModule, example_inputs: list[torch.Tensor], **options: Any):
    """A `torch.compile` backend: re-export Dynamo's graph to ATen and compile it with Forge.

    Registered under the entry point group `torch_dynamo_backends` as `forge`. Dynamo passes the
    model's parameters as graph inputs; they are baked back in as weights (inference: fixed at
    compile time), so they become constants of the NPU segments. Options passed with
    `torch.compile(..., options={...})` go to `forge.compile` (e.g. runtime, device).
    """
    is_param = [isinstance(t, torch.nn.Parameter) for t in example_inputs]
    module = _BakedParameters(graph_module, example_inputs, is_param)
    inputs = tuple(t for t, p in zip(example_inputs, is_param, strict=True) if not p)
    compiled = compile(module, inputs, name="torch.compile graph", **options)

    def run(*args: torch.Tensor):
        out = compiled(*(a for a, p in zip(args, is_param, strict=True) if not p))
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    run.forge_compiled = compiled
    return run


class _BakedParameters(torch.nn.Module):
    """Dynamo's graph with its parameter inputs held as parameters, the rest as inputs."""

    def __init__(self, graph_module: torch.fx.GraphModule, example_inputs: list[torch.Tensor], is_param: list[bool]):
        super().__init__()
        self.graph_module = graph_module
        self.is_param = is_param
        self.params = torch.nn.ParameterList([t for t, p in zip(example_inputs, is_param, strict=True) if p])

    def forward(self, *inputs: torch.Tensor):
        params, user = iter(self.params), iter(inputs)
        args = [next(params) if p else next(user) for p in self.is_param]
        return self.graph_module(*args)
