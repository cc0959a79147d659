"""What the special-value corrections cost (issue 28 point 3: a correction is emitted only when it costs
<= 1% of latency on the zoo, else the deviation is documented).

The correction measured: a float max- or min-reduction gives torch's value over a row of infinities and
a row holding a NaN (OpenVINO's ReduceMax starts from the lowest finite value and skips NaN;
forge/kinds/elementwise.py `_extreme_as_torch`). For every zoo
family (benchmark size unless --small) the compile counts the corrections it emits; each family that has
any is compiled again with the correction left out (patched for that compile only, in this process) and
both programs are timed interleaved (OpenVINO runtime, CPU, f32), so the ratio comes from one run.

    python -m bench.special_values_cost [--small] [--runs N] [--families a,b]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from collections.abc import Iterator

import torch

import forge
import forge.kinds.elementwise as elementwise
from forge.models import ZOO, build_model, example_inputs


@contextlib.contextmanager
def _corrections(counted: list[int], *, emit: bool) -> Iterator[None]:
    """Count the max/min corrections a compile emits; with emit=False leave them out."""
    original = elementwise._extreme_as_torch

    def counting(em, x, out, axes, keep, sign):
        counted.append(1)
        return original(em, x, out, axes, keep, sign) if emit else out

    elementwise._extreme_as_torch = counting
    try:
        yield
    finally:
        elementwise._extreme_as_torch = original


def _interleaved_ms(programs: list, args: tuple, runs: int) -> list[float]:
    """Median ms per program, timed round-robin so drift in the machine's load hits both alike."""
    for p in programs:
        for _ in range(3):
            p(*args)
    samples: list[list[float]] = [[] for _ in programs]
    for _ in range(runs):
        for i, p in enumerate(programs):
            t0 = time.perf_counter()
            p(*args)
            samples[i].append((time.perf_counter() - t0) * 1e3)
    return [statistics.median(s) for s in samples]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.special_values_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the zoo's small variants")
    parser.add_argument("--runs", type=int, default=200, help="timed calls per program (default 200)")
    parser.add_argument("--families", help="comma-separated families (default: the whole zoo)")
    args = parser.parse_args(argv)
    families = args.families.split(",") if args.families else list(ZOO)
    print(f"{'family':<18} {'corrections':>11} {'with ms':>9} {'without ms':>10} {'cost':>7}")
    for family in families:
        torch.manual_seed(0)
        model = build_model(family, small=args.small)
        inputs = example_inputs(family, small=args.small)
        counted: list[int] = []
        with _corrections(counted, emit=True):
            corrected = forge.compile(model, inputs)
        if not counted:
            print(f"{family:<18} {0:>11} {'-':>9} {'-':>10} {'0':>7}", flush=True)
            continue
        with _corrections([], emit=False):
            plain = forge.compile(model, inputs)
        with_ms, without_ms = _interleaved_ms([corrected, plain], inputs, args.runs)
        cost = with_ms / without_ms - 1
        print(f"{family:<18} {len(counted):>11} {with_ms:>9.3f} {without_ms:>10.3f} {cost:>+7.2%}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
