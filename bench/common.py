"""What every benchmark section shares: the models and the one input batch, host and version
records, summary statistics, markdown tables and figure files.

A section is a module with ``run(quick=False) -> dict`` (JSON-serialisable) and
``render(result, figures) -> str`` (markdown; PNGs written into ``figures``), and optionally
``targets(result) -> list[dict]`` (rows of the headline table, see :func:`target_row`).
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

SEQ_LEN = 128
"""The benchmark input: batch 1, sequence 128."""
QUICK_SEQ_LEN = 16
"""`--quick` (and the smoke test): the small zoo variants (2 layers, hidden 64) on 16 tokens."""
INPUT_SEED = 0


@dataclass(frozen=True)
class ModelSpec:
    name: str
    attn: str

    @property
    def label(self) -> str:
        return f"{self.name}-{self.attn}"


MODELS: tuple[ModelSpec, ...] = (ModelSpec("gpt2", "eager"), ModelSpec("llama", "sdpa"))
"""GPT-2 12-layer with eager attention (what fuse-attention has to recognise) and the Llama-style
zoo decoder with its default attention."""


def models(quick: bool) -> tuple[ModelSpec, ...]:
    """`--quick` measures the first family only: it checks that a section works, in CI time."""
    return MODELS[:1] if quick else MODELS


def seq_len(quick: bool) -> int:
    return QUICK_SEQ_LEN if quick else SEQ_LEN


def model_and_inputs(spec: ModelSpec, quick: bool, *, layers: int | None = None, seed: int = INPUT_SEED):
    """The zoo model (seeded weights, eval, fp32) and the one seeded token batch every system gets."""
    from forge.models import build_model

    model = build_model(spec.name, attn=spec.attn, small=quick, layers=layers)
    return model, token_batch(spec, quick, seed)


def token_batch(spec: ModelSpec, quick: bool, seed: int = INPUT_SEED) -> tuple[torch.Tensor]:
    """`(input_ids,)`: batch 1, `seq_len(quick)` tokens drawn uniformly from the vocabulary by `seed`."""
    from forge.models import example_inputs

    return example_inputs(spec.name, seq_len=seq_len(quick), seed=seed, small=quick)


# --- host and versions -----------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


ISA_FLAGS = ("avx2", "avx_vnni", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
             "amx_int8", "amx_fp16")
"""The /proc/cpuinfo flags that decide the kernels OpenVINO and torch pick (vector width, bf16/f16, AMX)."""


def isa_extensions() -> list[str]:
    """Which of `ISA_FLAGS` this CPU has (empty where /proc/cpuinfo is not readable)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return [f for f in ISA_FLAGS if f in flags]
    except OSError:
        pass
    return []


def precision_capabilities() -> dict[str, Any]:
    """What OpenVINO says this CPU computes natively, and what each precision mode runs as here."""
    from backends.nnfactory.runtime.openvino_runtime import CAPABILITIES_ENV, cpu_capabilities
    from forge.precision import PRECISIONS, resolve_precision

    caps = cpu_capabilities()
    return {"openvino": sorted(caps), "faked": CAPABILITIES_ENV in os.environ,
            "runs_as": {p: resolve_precision(p, caps).runs_as for p in PRECISIONS}}


def host() -> dict[str, Any]:
    return {
        "cpu": cpu_model(),
        "isa": isa_extensions(),
        "capabilities": precision_capabilities(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def versions() -> dict[str, str]:
    from importlib.metadata import version

    import numpy
    import onnx
    import onnxruntime
    import openvino
    import transformers
    import xdsl

    found = {
        "forge": version("forge-compiler"),
        "torch": torch.__version__,
        "openvino": openvino.__version__,
        "onnxruntime": onnxruntime.__version__,
        "onnx": onnx.__version__,
        "transformers": transformers.__version__,
        "xdsl": getattr(xdsl, "__version__", None) or version("xdsl"),
        "numpy": numpy.__version__,
    }
    return {name: str(v) for name, v in found.items()}  # torch's is a TorchVersion, not a str


def rss_mib() -> float:
    """This process's resident set size (Linux /proc), MiB; 0 where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@contextmanager
def recorded(section: str, quick: bool, config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The envelope of a section's result: host, versions, load average before/after, wall time."""
    result: dict[str, Any] = {
        "section": section,
        "quick": quick,
        "config": config,
        "host": host(),
        "versions": versions(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "load_before": list(os.getloadavg()),
    }
    start = time.perf_counter()
    yield result
    result["wall_s"] = time.perf_counter() - start
    result["load_after"] = list(os.getloadavg())


# --- statistics ------------------------------------------------------------------------------------


def percentile(samples: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    ordered = sorted(samples)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def summary(samples: Sequence[float]) -> dict[str, float]:
    return {
        "median": median(samples),
        "p50": percentile(samples, 50),
        "p99": percentile(samples, 99),
        "min": min(samples),
        "max": max(samples),
        "n": len(samples),
    }


def fit_power_law(xs: Sequence[float], ys: Sequence[float]) -> dict[str, float]:
    """Least squares on log y = log a + k log x: the exponent k, the factor a and R^2."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    n = len(lx)
    mx, my = sum(lx) / n, sum(ly) / n
    sxx = sum((x - mx) ** 2 for x in lx)
    sxy = sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True))
    k = sxy / sxx
    log_a = my - k * mx
    ss_res = sum((y - (log_a + k * x)) ** 2 for x, y in zip(lx, ly, strict=True))
    ss_tot = sum((y - my) ** 2 for y in ly)
    return {"k": k, "a": math.exp(log_a), "r2": 1 - ss_res / ss_tot if ss_tot > 0 else 1.0}


# --- markdown and figures --------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A markdown table; a `|` inside a cell is escaped so it cannot split the cell."""
    def cells(values: Sequence[Any]) -> str:
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"

    lines = [cells(headers), "|" + "|".join("---" for _ in headers) + "|"]
    lines += [cells(row) for row in rows]
    return "\n".join(lines) + "\n"


def ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if value >= 100 else f"{value:,.1f}" if value >= 1 else f"{value:.3f}"


def ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def sci(value: float) -> str:
    return f"{value:.2e}"


def pyplot():
    """matplotlib with the file-only backend (benchmarks run headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, figures: Path, name: str, alt: str) -> str:
    """Write `fig` to figures/<name>.png and return its markdown image link (benchmarks/<name>.png)."""
    figures.mkdir(parents=True, exist_ok=True)
    fig.savefig(figures / f"{name}.png", dpi=110, bbox_inches="tight")
    pyplot().close(fig)
    return f"![{alt}](benchmarks/{name}.png)\n"


SYSTEM_COLORS = {
    "forge": "#d62728",
    "openvino": "#1f77b4",
    "onnxruntime": "#2ca02c",
    "torch.compile": "#ff7f0e",
    "eager": "#7f7f7f",
}


def target_row(metric: str, measured: float, target: float, *, higher_is_better: bool, unit: str = "",
               why: str = "") -> dict[str, Any]:
    """One row of the headline table. `gap` says how far a miss is (measured/target or target/measured)."""
    met = measured >= target if higher_is_better else measured <= target
    gap = None if met else (target / measured if higher_is_better else measured / target)
    return {"metric": metric, "measured": measured, "target": target, "unit": unit,
            "op": ">=" if higher_is_better else "<=", "met": met, "gap": gap, "why": "" if met else why}


def fresh_runs(module: str, args: Sequence[str], processes: int) -> list[dict[str, Any]]:
    """`python -m bench.<module> ARGS` in `processes` fresh interpreters, one after another; the JSON
    object each prints on its last line. Used where a verdict must not rest on one process's draw."""
    root = Path(__file__).resolve().parent.parent
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", f"bench.{module}", *args]
    out = []
    for _ in range(processes):
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": path},
                              check=False)
        if done.returncode:
            raise RuntimeError(f"{' '.join(cmd[1:])} failed:\n{done.stderr[-2000:]}")
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return out
