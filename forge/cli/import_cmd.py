"""`forge import MODEL` and `forge compile --emit STAGE`: the IR of one stage, with its weights.

    forge import gpt2 --small -o gpt2.mlir            # raw aten IR + gpt2.safetensors, nothing else
    forge import mypkg.models:make -o mine.mlir       # a user's factory returning (model, example_args)
    forge compile gpt2 --small --emit aten -o o.mlir  # stops after the optimization passes

Contract:
- `forge import` exports and imports the model (`forge.frontend.fx_importer.import_module`, the
  compiler's own import) and writes the aten module exactly as imported, no pass run, with the
  weights it names in the companion file (`out.mlir` -> `out.safetensors`, `forge.weights`).
- `forge compile --emit aten|npuir|buffer` runs the compiler's stages up to STAGE and stops: no
  emission, no device compile. The passes are the compiler's (`forge.pipelines`: DEFAULT_PIPELINE,
  or `--pipeline`/`--disable`; then LOWER_TO_NPUIR, PLAN_MEMORY), run by `forge.pass_stages.run_passes`,
  so `forge-opt raw.mlir -p <stage_pipeline(...)>` on `forge import`'s output prints the same IR.
  The command that reproduces the stage is printed on stderr.
- MODEL is a zoo name (`forge.models.ZOO`) or `module:callable`; the callable takes no argument
  and returns `(model, example_args)`. A bad spec is an `ImportCommandError` (one line, exit 1).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

IR_STAGES = ("aten", "npuir", "buffer")
"""The `--emit` stages that are IR: the compile stops right after them."""


class ImportCommandError(ValueError):
    """A bad MODEL spec or factory: reported as `forge: error: ...` with exit 1."""


def add_import_parser(sub: Any) -> None:
    """The `forge import` subcommand (its model options are those of `forge compile`)."""
    p = sub.add_parser("import", help="write a model's imported aten IR and its weights; run no pass")
    p.add_argument("model", help="zoo model (see `forge models`) or module:callable returning (model, example_args)")
    p.add_argument("-o", "--output", type=Path, help="IR file (default: stdout); weights go beside it (.safetensors)")
    p.add_argument("--layers", type=int, help="number of layers (zoo models; default: the zoo default)")
    p.add_argument("--attn", help="attention implementation (zoo models; default: eager where offered)")
    p.add_argument("--seq-len", type=int, default=128, help="sequence length (zoo token inputs)")
    p.add_argument("--small", action="store_true", help="the small test-size variant (zoo models)")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and inputs (zoo models)")


# --- the model -------------------------------------------------------------------------------------


def build(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...], str]:
    """(model in eval mode, example args, label) for a zoo name or a `module:callable` spec."""
    from forge.models import ZOO, build_model, default_attn, example_inputs  # lazy: start-up cost (torch)

    if args.model in ZOO:
        attn = args.attn or default_attn(args.model, "eager")
        model = build_model(args.model, layers=args.layers, attn=attn, small=args.small, seed=args.seed)
        inputs = example_inputs(args.model, seq_len=args.seq_len, small=args.small, seed=args.seed)
        return model.eval(), tuple(inputs), args.model
    if ":" not in args.model:
        raise ImportCommandError(
            f"unknown model '{args.model}': not a zoo model ({', '.join(ZOO)}) nor module:callable"
        )
    model, inputs = load_factory(args.model)()
    return model.eval(), tuple(inputs), args.model


def load_factory(spec: str):
    """The callable named by `module:callable` (a dotted attribute path is allowed after the colon)."""
    module_name, _, attr = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise ImportCommandError(f"cannot import '{module_name}' (from '{spec}'): {err}") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ImportCommandError(f"'{module_name}' has no attribute '{attr}' (from '{spec}')")
        target = getattr(target, part)
    if not callable(target):
        raise ImportCommandError(f"'{spec}' is not callable")

    def call() -> tuple[Any, Sequence[Any]]:
        result = target()
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], (tuple, list))):
            raise ImportCommandError(f"'{spec}' must return (model, example_args), got {type(result).__name__}")
        return result

    return call


# --- stages ----------------------------------------------------------------------------------------


def stage_pipeline(stage: str, pipeline: str | None = None, disable: Sequence[str] = ()) -> list[str]:
    """The pass specs the compiler runs from the imported module up to the end of `stage`."""
    from forge.pass_stages import parse_pipeline  # lazy: start-up cost (xDSL)
    from forge.pipelines import DEFAULT_PIPELINE, LOWER_TO_NPUIR, PLAN_MEMORY

    _, names = parse_pipeline(pipeline if pipeline is not None else DEFAULT_PIPELINE, disable)
    if stage in ("npuir", "buffer"):
        names += list(LOWER_TO_NPUIR)
    if stage == "buffer":
        names += list(PLAN_MEMORY)
    return names


def _import(args: argparse.Namespace, until: str | None = None):
    """The imported module (and, with `until`, the compile's stages up to that IR run on it)."""
    from forge.driver.compilation import Compilation  # lazy: start-up cost (torch, xDSL)
    from forge.driver.options import CompileOptions
    from forge.driver.stages import IMPORT_MODULE, stages_until

    model, inputs, _ = build(args)
    options = CompileOptions.of(pipeline=getattr(args, "pipeline", None), disable=tuple(getattr(args, "disable", ())))
    c = Compilation(options, model=model, args=inputs)
    return c.run((IMPORT_MODULE, *(stages_until(until) if until else ()))).imported


def _write(module, weights, output: Path | None) -> str:
    """Write the IR (and the weights beside it); returns where it went, for the summary line."""
    from forge.weights import save_module  # lazy: start-up cost (torch)

    if output is None:
        print(module)
        return "stdout (no weights file: pass -o FILE)"
    ir_path, weights_path = save_module(module, weights, output)
    return f"{ir_path} and {weights_path}"


def _model_flags(args: argparse.Namespace) -> str:
    flags = [args.model]
    for flag, value in (("--layers", args.layers), ("--attn", args.attn)):
        if value is not None:
            flags += [flag, str(value)]
    if args.small:
        flags.append("--small")
    flags += ["--seq-len", str(args.seq_len)]
    if args.seed:
        flags += ["--seed", str(args.seed)]
    return " ".join(flags)


def cmd_import(args: argparse.Namespace) -> int:
    """`forge import`: the imported module, no pass run."""
    imported = _import(args)
    where = _write(imported.module, imported.weights, args.output)
    print(f"forge import: wrote {where}", file=sys.stderr)
    return 0


def cmd_emit_stage(args: argparse.Namespace) -> int:
    """`forge compile --emit STAGE` for an IR stage: run the compiler's passes up to it and stop."""
    for flag in ("check", "save", "plot_memory", "autotune", "report"):
        if getattr(args, flag, None):
            raise ImportCommandError(
                f"--emit {args.emit} stops after that stage; --{flag.replace('_', '-')} needs the whole compile"
            )
    names = stage_pipeline(args.emit, args.pipeline, args.disable)
    imported = _import(args, until=args.emit)
    where = _write(imported.module, imported.weights, args.output)
    target = args.output or "out.mlir"
    raw = Path(target).with_name(Path(target).stem + ".raw.mlir")
    print(
        f"forge compile: stopped after {args.emit}; wrote {where}\n"
        f"  reproduce: forge import {_model_flags(args)} -o {raw} && forge-opt {raw} -p '{','.join(names)}'",
        file=sys.stderr,
    )
    return 0
