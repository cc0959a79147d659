"""The OpenVINO oracle: does a difference from torch come from OpenVINO's CPU kernels or from the graph
Forge emits? `classify(case)` converts the case's single torch call with OpenVINO's own PyTorch frontend
(`openvino.convert_model(module, example_input=...)`), compiles it on the CPU with
{"INFERENCE_PRECISION_HINT": "f32"} (as Forge's runtimes), runs it, and looks at the positions where
Forge's runtime result differs from torch's:

- `kernel`: OpenVINO's own conversion gives Forge's values there (same NaN, infinity, zero sign, or a
  value within the op's tolerance of Forge's): the difference comes from OpenVINO's kernels, so it is a
  deviation to document (forge.testing.fuzz.deviations) unless a correction in the graph is cheap;
- `forge`: OpenVINO's own conversion matches torch there: Forge's graph is wrong, a bug to fix;
- `mixed`: some of each (or OpenVINO differs from both);
- `half-in-float32`: not OpenVINO's, but torch's own call with its float16/bfloat16 tensors upcast to
  float32 gives Forge's values (rounded back): Forge computes half types in float32, and torch's half
  kernel differs from its float32 one there (a signed zero, an inf - inf);
- `pass`: Forge matches torch (nothing to classify);
- `unavailable`: OpenVINO's frontend cannot convert or run the call (the reason is the detail).

`python -m forge.testing.fuzz.oracle [NAME_PART ...] [--runtime nnfactory]` classifies the regression
files (tests/fuzz/regressions) whose names contain one of the parts, one line each, so a
classification in the docs or a deviation's comment can be reproduced.
"""

from __future__ import annotations

import argparse
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from forge.testing.fuzz.cases import BatchModule, Case, flat_results
from forge.testing.fuzz.compare import computed_in_float32, differs_where, mismatch

KERNEL, FORGE, MIXED, PASS, UNAVAILABLE = "kernel", "forge", "mixed", "pass", "unavailable"
HALF_IN_FLOAT32 = "half-in-float32"
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


@dataclass
class Verdict:
    kind: str
    """KERNEL, FORGE, MIXED, PASS or UNAVAILABLE."""
    forge: str
    """Forge's difference from torch (compare's wording), or "" when it matches."""
    openvino: str
    """OpenVINO's own conversion's difference from torch, or "" (the reason when UNAVAILABLE)."""
    positions: int = 0
    """How many elements Forge gets wrong."""
    reproduced: int = 0
    """How many of those OpenVINO's own conversion gives the same."""

    def __str__(self) -> str:
        counts = f" ({self.reproduced} of {self.positions} differing elements reproduced)" if self.positions else ""
        return f"{self.kind}{counts}: forge {self.forge or 'matches'}; openvino {self.openvino or 'matches'}"


class _Call(torch.nn.Module):
    """`forward(*tensors)`: the case's call with its tensor arguments; a Forge fused op calls its kernel
    (torch ops OpenVINO's frontend converts) instead of the opaque `forge::` op."""

    def __init__(self, case: Case, frozen: Sequence[torch.Tensor] = ()):
        super().__init__()
        self.case = case
        self.frozen = list(frozen)
        """Tensor arguments after the inputs, held as constants (OpenVINO's CPU plugin compiles a
        convolution only over constant weights)."""
        self.fn = case.target
        if case.op.startswith("forge::"):
            from dialects.fused_kernels import FUSED_OPS

            self.fn = {f"forge::{op.name}": op.kernel for op in FUSED_OPS}[case.op.partition(".")[0]]

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args, kwargs = self.case.bind([*tensors, *self.frozen])
        return tuple(flat_results(self.fn(*args, **kwargs)))


def openvino_results(case: Case) -> tuple[list[torch.Tensor], str]:
    """The case's results through OpenVINO's own PyTorch frontend, compiled for the CPU in f32, and how the
    call was converted: "traced" (TorchScript, static shapes), "decomposed" (torch.export and torch's
    default decompositions, for overloads the frontend has no rule for: the oracle then runs torch's
    decomposition on OpenVINO's kernels) or "decomposed further" (torch._decomp's wider table too);
    ", weights constant" when only the first tensor is an input; ", half as float32" when the frontend
    takes the call only with its float16/bfloat16 tensors upcast (a half input beside float32 weights),
    as Forge computes it."""
    tensors = [t.clone() for t in case.tensors()]
    expected = case.call()
    failures: list[str] = []
    compiled = how = inputs = None
    for variant in _variants(tensors):
        for n_inputs in (len(variant), 1):  # every tensor an input; else the first only, the others constants
            module, inputs = _Call(case, variant[n_inputs:]), tuple(variant[:n_inputs])
            for how in ("traced", "decomposed", "decomposed further"):
                try:
                    compiled = _compile(module, inputs, how)
                    break
                except Exception as err:  # the next way
                    failures.append(f"{how}: {type(err).__name__}: {_last_line(err)}")
            if compiled is not None:
                how += ", weights constant" if n_inputs < len(variant) else ""
                how += ", half as float32" if variant is not tensors else ""
                break
        if compiled is not None:
            break
    if compiled is None:
        raise RuntimeError("; ".join(failures))
    request = compiled.create_infer_request()
    request.infer([_ov_tensor(t) for t in _fed(compiled, inputs)])
    out = [_torch(request.get_output_tensor(i)) for i in range(len(compiled.outputs))]
    if len(out) != len(expected):
        raise ValueError(f"{len(out)} results, torch gives {len(expected)}")
    return [o.reshape(e.shape).to(e.dtype) for o, e in zip(out, expected, strict=True)], how


def _variants(tensors: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """The call's tensors as they are, then (when some are float16/bfloat16) with those upcast."""
    half = (torch.float16, torch.bfloat16)
    if not any(t.dtype in half for t in tensors):
        return [tensors]
    return [tensors, [t.to(torch.float32) if t.dtype in half else t for t in tensors]]


def _compile(module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], how: str):
    import openvino as ov

    with warnings.catch_warnings():  # tracing and export warn about what the oracle does on purpose
        warnings.simplefilter("ignore")
        if how == "traced":
            model = ov.convert_model(module, example_input=inputs)
            model.reshape({port: ov.PartialShape(list(t.shape)) for port, t in zip(model.inputs, inputs, strict=True)})
        elif how == "decomposed":
            model = ov.convert_model(torch.export.export(module, inputs).run_decompositions())
        else:
            model = ov.convert_model(_decomposed_further(torch.export.export(module, inputs)))
        return ov.Core().compile_model(model, "CPU", CONFIG)


def _decomposed_further(program):
    """The program with its calls decomposed by torch._decomp's wider table too (addbmm, addmv, fmax:
    overloads neither the frontend nor core ATen's decompositions convert)."""
    from torch._decomp import decomposition_table

    table = torch.export.default_decompositions()
    for node in program.graph.nodes:
        if node.op == "call_function" and node.target in decomposition_table:
            table[node.target] = decomposition_table[node.target]
    return program.run_decompositions(table)


def _fed(compiled, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
    """The tensors for the compiled model's inputs: an exported call's placeholders are `tensors_<i>`
    (`_Call.forward(*tensors)`), and OpenVINO drops those the call does not use (baddbmm with beta=0);
    a traced model keeps every input in order."""
    wanted = []
    for port in compiled.inputs:
        index = next((int(n.rpartition("_")[2]) for n in port.get_names() if re.fullmatch(r"tensors_\d+", n)), None)
        if index is None:
            return list(inputs)
        wanted.append(inputs[index])
    return wanted


def _last_line(err: BaseException) -> str:
    lines = [line for line in str(err).splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _ov_tensor(t: torch.Tensor):
    import openvino as ov

    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(t.shape)))
        tensor.data.view(np.int16)[...] = t.view(torch.int16).numpy()
        return tensor
    return ov.Tensor(t.numpy().copy())


def _torch(tensor) -> torch.Tensor:
    import openvino as ov

    if tensor.element_type == ov.Type.bf16:
        return torch.from_numpy(np.array(tensor.data).view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.array(tensor.data).copy())


def classify(case: Case, got: Sequence[torch.Tensor]) -> Verdict:
    """The verdict on Forge's results `got` for `case` (see the module docstring)."""
    expected = case.call()
    problem = mismatch(case.op, expected, got) or ""
    if not problem:
        return Verdict(PASS, "", "")
    try:
        oracle, how = _remembered_openvino_results(case)
    except Exception as err:  # any failure of the frontend: no oracle
        return Verdict(UNAVAILABLE, problem, f"{type(err).__name__}: {_last_line(err)}")
    ov_problem = mismatch(case.op, expected, oracle) or ""
    ov_problem = f"({how}) {ov_problem or 'matches'}"
    positions = reproduced = agrees = 0
    for want, g, o in zip(expected, got, oracle, strict=True):
        if g.dtype != want.dtype or g.shape != want.shape:
            continue
        wrong = differs_where(case.op, want, g)
        positions += int(wrong.sum())
        reproduced += int((wrong & ~differs_where(case.op, g, o)).sum())
        agrees += int((wrong & ~differs_where(case.op, want, o)).sum())
    if positions == 0:
        kind = FORGE if ov_problem.endswith("matches") else MIXED  # a dtype or shape: Forge's
    elif reproduced == positions:
        kind = KERNEL
    elif computed_in_float32(case, expected, got):
        kind = HALF_IN_FLOAT32
    elif agrees == positions:
        kind = FORGE
    else:
        kind = MIXED
    return Verdict(kind, problem, ov_problem, positions, reproduced)


_REMEMBERED: dict[str, tuple[list[torch.Tensor], str] | Exception] = {}


def _remembered_openvino_results(case: Case) -> tuple[list[torch.Tensor], str]:
    """`openvino_results`, converted once for the few cases a fuzz batch asks about at each runtime."""
    key = case.key()
    if key not in _REMEMBERED:
        if len(_REMEMBERED) >= 16:
            _REMEMBERED.clear()
        try:
            _REMEMBERED[key] = openvino_results(case)
        except Exception as err:  # remembered too: the frontend fails alike the second time
            _REMEMBERED[key] = err
    found = _REMEMBERED[key]
    if isinstance(found, Exception):
        raise found
    return found


def reproduced_by_openvino(case: Case, expected: Sequence[torch.Tensor], got: Sequence[torch.Tensor]) -> bool:
    """Whether OpenVINO's own conversion of the call gives `got` at every element where it differs
    from torch (the `kernel` verdict): the difference comes from OpenVINO's CPU kernels."""
    if not isinstance(case, Case):
        return False
    return classify(case, got).kind == KERNEL


def forge_results(case: Case, runtime: str) -> list[torch.Tensor]:
    """The case's results on one of Forge's runtimes."""
    import forge

    module = BatchModule([case])
    inputs = module.inputs()
    out = forge.compile(module, tuple(t.clone() for t in inputs), runtime=runtime)(*inputs)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def main(argv: Sequence[str] | None = None) -> int:
    from forge.testing.fuzz.regression_files import load

    parser = argparse.ArgumentParser(prog="python -m forge.testing.fuzz.oracle", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="parts of regression file names (default: every open failure)")
    parser.add_argument("--runtime", default="openvino", help="Forge's runtime to classify (default openvino)")
    args = parser.parse_args(argv)
    for r in load():
        if args.names and not any(n in r.path.name for n in args.names):
            continue
        if not args.names and args.runtime not in r.open:
            continue
        try:
            verdict = str(classify(r.case, forge_results(r.case, args.runtime)))
        except Exception as err:  # a Forge failure is not a value to classify
            verdict = f"error: {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
        print(f"{r.path.stem}: {verdict}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Verdict", "classify", "forge_results", "openvino_results", "reproduced_by_openvino"]
