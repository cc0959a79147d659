"""`forge bisect MODEL|module:callable`: the first op whose value diverges from PyTorch, with its stage.

    forge bisect vit --small
    forge bisect my_models.py:build            # build() returns (model, args) or (model, args, kwargs)
    forge bisect my_package.models:build --pipeline dce,cse,my-pass --load-pass-plugin my_pass.py

Prints the first divergent op (`aten.div.Scalar at model.py:41, import: max |diff| 0.5 (scale 3.2)`) and
what each stage showed; exits 1 when it found a divergence (as a failing test does), 0 when none.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from forge.driver.compile_errors import CompileError


def add_bisect_parser(sub: Any) -> None:
    p = sub.add_parser("bisect", help="name the first op whose value diverges from eager PyTorch, and its stage")
    p.add_argument("target", help="a zoo model, or module:callable returning (model, args[, kwargs]); "
                   "module is a dotted name or a .py file")
    p.add_argument("--layers", type=int, help="zoo model: number of layers")
    p.add_argument("--attn", help="zoo model: attention implementation (default: eager where offered)")
    p.add_argument("--seq-len", type=int, default=128, help="zoo model: sequence length")
    p.add_argument("--small", action="store_true", help="zoo model: the small test-size variant")
    p.add_argument("--seed", type=int, default=0, help="zoo model: seed for weights and inputs")
    p.add_argument("--device", default="CPU", help="OpenVINO device string")
    p.add_argument("--runtime", default="openvino", help="a registered runtime: openvino (default), nnfactory")
    p.add_argument("--pipeline", help="comma-separated pass pipeline (default: the compile's)")
    p.add_argument("--disable", action="append", default=[], metavar="PASS", help="skip a pass (repeatable)")
    p.add_argument("--load-pass-plugin", action="append", default=[], metavar="FILE",
                   help="import FILE so that --pipeline can name its passes (repeatable)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the result as JSON")


def cmd_bisect(args: argparse.Namespace) -> int:
    from forge.driver.bisect import bisect  # lazy: start-up cost (torch)
    from forge.driver.options import CompileOptions

    model, inputs, kwargs = _target(args)
    options = CompileOptions.of(pipeline=args.pipeline, disable=tuple(args.disable), device=args.device,
                                runtime=args.runtime)
    result = bisect(model, inputs, kwargs, options=options)
    print(result.summary())
    if args.json:
        args.json.write_text(json.dumps(result.to_json(), indent=2))
    return 1 if result.first else 0


def _target(args: argparse.Namespace) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """(model, args, kwargs) of a zoo name or of `module:callable`."""
    from forge.models import ZOO, build_model, default_attn, example_inputs  # lazy: start-up cost

    if args.target in ZOO:
        attn = args.attn or default_attn(args.target, "eager")
        model = build_model(args.target, layers=args.layers, attn=attn, small=args.small, seed=args.seed)
        return model.eval(), tuple(example_inputs(args.target, seq_len=args.seq_len, small=args.small,
                                                  seed=args.seed)), {}
    module_name, sep, attr = args.target.rpartition(":")
    if not sep or not module_name or not attr:
        raise CompileError(f"forge bisect: {args.target!r} is neither a zoo model nor module:callable")
    built = getattr(_module(module_name), attr, None)
    if not callable(built):
        raise CompileError(f"forge bisect: {module_name} has no callable {attr!r}")
    made = built()
    if not isinstance(made, tuple) or len(made) not in (2, 3):
        raise CompileError(f"forge bisect: {args.target}() must return (model, args) or (model, args, kwargs)")
    model, inputs, kwargs = (*made, {}) if len(made) == 2 else made
    return model, tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,), dict(kwargs)


def _module(name: str) -> Any:
    """A dotted module, or a .py file imported under its stem."""
    if name.endswith(".py"):
        path = Path(name)
        if not path.is_file():
            raise CompileError(f"forge bisect: no file {name}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise CompileError(f"forge bisect: cannot import {name}: {err}") from None
