"""`python -m forge.cli.pyemit in.mlir -o prog.py`: write a buffer-IR file as a standalone program.

    python -m forge.cli.pyemit model.buffer.mlir --random-weights 0 -o model.py [--runtime nnfactory]

The program and its weights (`prog.safetensors`, beside it) come from
`backends.nnfactory.pyemit.emit_python`; the IR and its weights are read by `forge.cli.emit.load_ir`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from backends.nnfactory.program import EmitError
from backends.nnfactory.pyemit import emit_python
from forge.cli.emit import load_ir


def main(argv: Sequence[str] | None = None) -> int:
    """Write the standalone program of a buffer-IR file (weights beside it)."""
    parser = argparse.ArgumentParser(prog="python -m forge.cli.pyemit", description=main.__doc__)
    parser.add_argument("input", help="buffer IR (weights from the companion .safetensors)")
    parser.add_argument("-o", "--output", required=True, help="the .py file to write (weights beside it)")
    parser.add_argument("--runtime", default="openvino", help="a registered runtime: openvino (default), nnfactory")
    parser.add_argument("--device", default="CPU")
    parser.add_argument(
        "--random-weights", type=int, metavar="SEED", help="random weights when there is no weights file"
    )
    args = parser.parse_args(argv)
    try:
        module, weights = load_ir(args.input, args.random_weights)
        path = emit_python(module, weights, args.output, runtime=args.runtime, device=args.device)
    except (EmitError, ValueError) as e:  # ValueError: a runtime name nobody registered
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {path} and {path.with_suffix('.safetensors')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
