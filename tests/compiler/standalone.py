"""Run a compiled model's `--emit nnfactory-py` program in a subprocess: what it computes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from backends.nnfactory.pyemit import emit_python


def run_standalone(compiled, x: torch.Tensor, tmp_path: Path, runtime: str) -> torch.Tensor:
    """Write the standalone program of `compiled` and run it on `x`; returns its first output."""
    path = emit_python(compiled.buffer_module, compiled.weights, tmp_path / "prog.py", runtime=runtime)
    np.savez(tmp_path / "x.npz", x.numpy())
    proc = subprocess.run(
        [sys.executable, str(path), "--inputs", str(tmp_path / "x.npz"), "--out", str(tmp_path / "y.npz")],
        capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    with np.load(tmp_path / "y.npz") as out:
        return torch.from_numpy(out["output_0"])
