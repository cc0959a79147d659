"""`python -m forge.cli.emit in.mlir`: emit a buffer-IR file with the NNFactory backend, print the program.

    python -m forge.cli.emit model.buffer.mlir --random-weights 0 --no-timings --instructions
    python -m forge.cli.emit model.buffer.mlir --run 0          # run on seeded random inputs

`load_ir` reads a buffer-IR file with its weights (the companion `.safetensors`, else seeded
random weights on request); `forge.cli.pyemit` uses it too. Errors of the emitter (`EmitError`)
print as `error: ...` with exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import torch
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.parser import Parser

from backends.nnfactory.emitter import emit
from backends.nnfactory.program import EmitError, Program
from dialects import buffer as B
from dialects.torch_types import dtype_of, shape_of
from forge.driver.registry import make_context
from forge.weights import WeightStore, companion_weights_path


def load_ir(path: str, random_weights: int | None = None) -> tuple[ModuleOp, WeightStore | None]:
    """A buffer-IR file and its weights: the companion `.safetensors` when there is one, else
    seeded random tensors for every `buffer.weight` when `random_weights` is given."""
    text = Path(path).read_text()
    module = Parser(make_context(), text, name=path).parse_module()
    module.verify()
    companion = companion_weights_path(path)
    if companion.exists():
        return module, WeightStore.load(companion)
    if random_weights is None:
        return module, None
    store = WeightStore()
    g = torch.Generator().manual_seed(random_weights)
    for op in module.walk():
        if isinstance(op, B.WeightOp) and op.weight_name.data not in store:
            t = op.result.type
            assert isinstance(t, TensorType)
            value = torch.randn(shape_of(t), generator=g) * 0.5
            store.add(op.weight_name.data, value.to(dtype_of(t)))
    return module, store


def _random_inputs(program: Program, seed: int) -> list[torch.Tensor]:
    """Seeded inputs matching the program's signature (integers in {0, 1})."""
    g = torch.Generator().manual_seed(seed)
    inputs = []
    for ref in program.inputs:
        if ref.dtype == torch.bool:
            inputs.append(torch.rand(ref.shape, generator=g) < 0.5)
        elif ref.dtype.is_floating_point:
            inputs.append(torch.randn(ref.shape, generator=g).to(ref.dtype))
        else:
            inputs.append(torch.randint(0, 2, ref.shape, generator=g, dtype=ref.dtype))
    return inputs


def main(argv: Sequence[str] | None = None) -> int:
    """Emit a buffer-IR file, print the program (and its instructions, or a run's outputs)."""
    parser = argparse.ArgumentParser(prog="python -m forge.cli.emit", description=main.__doc__)
    parser.add_argument("input", help="buffer IR (weights from the companion .safetensors)")
    parser.add_argument("--runtime", default="openvino")
    parser.add_argument("--device", default="CPU")
    parser.add_argument(
        "--random-weights", type=int, metavar="SEED", help="random weights when there is no weights file"
    )
    parser.add_argument("--no-timings", action="store_true", help="leave timings out (reproducible output)")
    parser.add_argument("--instructions", action="store_true", help="print the executor's instruction list")
    parser.add_argument("--run", type=int, metavar="SEED", help="run on random inputs and print the outputs")
    args = parser.parse_args(argv)
    try:
        module, weights = load_ir(args.input, args.random_weights)
        program = emit(module, weights, runtime=args.runtime, device=args.device)
    except EmitError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(program.summary(timings=not args.no_timings))
    if args.instructions or args.run is not None:
        ex = program.executor()
        if args.instructions:
            print(ex.describe())
        if args.run is not None:
            for ref, out in zip(program.outputs, ex(*_random_inputs(program, args.run)), strict=True):
                values = out.flatten()[:4].tolist()
                print(f"output %{ref.name}: {str(out.dtype).removeprefix('torch.')}{list(out.shape)} {values}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
