"""forge-opt's start-up as a user meets it: cold processes, median of N (issue 30's targets).

    python -m bench.forge_opt_cli [--runs 5] [--model llama]

Measures, each in fresh processes: `forge-opt --help`; `forge-opt model.mlir -o /dev/null` with and
without its companion `model.safetensors` (the model is `forge import MODEL --small`, written once to
out/bench/forge-opt-cli/); and `--timing` on the same file, whose "Total Execution Time" is compared
with the wall clock measured outside the process. Targets: --help <= 1 s, the file with its weights
<= 1 s, the --timing total within 5% of the outside wall clock. Not part of `make bench` (a few
seconds; run it by hand after touching forge-opt's start-up).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

BIN = Path(sys.executable).parent
OUT = Path(__file__).resolve().parents[1] / "out" / "bench" / "forge-opt-cli"


def wall(argv: list[str]) -> tuple[float, str]:
    """Seconds one process took, and its stderr."""
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, result.stderr


def median_wall(argv: list[str], runs: int) -> float:
    return statistics.median(wall(argv)[0] for _ in range(runs))


def model_files(model: str) -> tuple[Path, Path]:
    """(IR with its companion weights, the same IR without), imported once."""
    OUT.mkdir(parents=True, exist_ok=True)
    with_weights = OUT / f"{model}.mlir"
    if not with_weights.exists():
        subprocess.run([str(BIN / "forge"), "import", model, "--small", "-o", str(with_weights)], check=True)
    bare = OUT / f"{model}-bare.mlir"
    shutil.copyfile(with_weights, bare)
    return with_weights, bare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--model", default="llama")
    args = parser.parse_args(argv)
    opt = str(BIN / "forge-opt")
    with_weights, bare = model_files(args.model)
    rows = [
        ("forge-opt --help", median_wall([opt, "--help"], args.runs), 1.0),
        (f"forge-opt {with_weights.name} (+ .safetensors)", median_wall([opt, str(with_weights), "-o", "/dev/null"],
                                                                       args.runs), 1.0),
        (f"forge-opt {bare.name} (no weights)", median_wall([opt, str(bare), "-o", "/dev/null"], args.runs), None),
    ]
    for name, seconds, target in rows:
        verdict = "" if target is None else f" (target <= {target:g} s: {'met' if seconds <= target else 'MISSED'})"
        print(f"{name:<48} median of {args.runs}: {seconds:.2f} s{verdict}")
    ratios = []
    for _ in range(args.runs):
        seconds, stderr = wall([opt, str(with_weights), "-p", "fold,dce", "--timing", "-o", "/dev/null"])
        total = float(re.search(r"Total Execution Time: ([0-9.]+) ms", stderr).group(1)) / 1e3
        ratios.append(total / seconds)
    ratio = statistics.median(ratios)
    print(f"--timing total / outside wall clock (-p fold,dce): median {ratio:.3f} "
          f"({'within' if abs(1 - ratio) <= 0.05 else 'OUTSIDE'} 5%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
