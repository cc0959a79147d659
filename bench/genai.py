"""OpenVINO GenAI's `LLMPipeline` on the same random-weight checkpoint as Forge (issue 32 item 7): what users pick
for LLMs on Intel CPUs and NPUs.

The model goes the way GenAI's users take: `save_pretrained` of the benchmark's model (seeded random weights),
then optimum-intel's stateful export (`OVModelForCausalLM.from_pretrained(export=True, stateful=True)`), then
`openvino_genai.LLMPipeline(folder, "CPU", INFERENCE_PRECISION_HINT="f32", ...)` (its default backend, paged
attention; the f32 system's KV cache pinned to f32 as well, `peers.OV_LLM_F32_PROPERTIES`, the int8 and int4 ones
left at GenAI's u8 default) driven with token ids (`TokenizedInputs`: no tokenizer model is needed, none is
exported). Prefix caching is turned off: the benchmark repeats one prompt, and with it on every prefill after the
first read the prompt's cache back (GPT-2 12L: 20 ms against 124-130 ms computed). Timings are GenAI's own
`perf_metrics`: the time to the first token (prefill) and each later token's duration (decode).

optimum-intel 2.2.0 (the newest) pins transformers below the version Forge's lock installs, so the export runs
in a venv of its own, made once under `out/bench/optimum-venv` (`EXPORT_REQUIREMENTS`: torch from the same
local wheel, torchvision removed because its wheel does not load against this torch); `openvino-genai` itself
needs only openvino and is in the `bench` extra. `available()` says why the system cannot run, if it cannot.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench import peers

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "out" / "bench" / "optimum-venv"
EXPORT_REQUIREMENTS = ("torch==2.13.0", "optimum-intel[openvino]==2.2.0")
_EXPORT = """
import sys
from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig
# optimum-intel's weight-only compression (NNCF) as `optimum-cli export openvino --weight-format int8|int4` does it:
# int8 per channel; int4 asymmetric in groups of 128 (NNCF keeps the embeddings and the LM head in int8)
mode = sys.argv[3]
options = {"load_in_8bit": mode == "int8"}
if mode == "int4":
    options = {"quantization_config": OVWeightQuantizationConfig(bits=4, sym=False, group_size=128)}
model = OVModelForCausalLM.from_pretrained(sys.argv[1], export=True, compile=False, stateful=True, **options)
model.save_pretrained(sys.argv[2])
"""


def _venv_python() -> Path:
    return VENV / "bin" / "python"


@cache
def available() -> str | None:
    """None when GenAI and the exporter's venv are ready (the venv is made on first use), else why not."""
    try:
        import openvino_genai  # noqa: F401
    except ImportError as err:
        return f"openvino-genai is not installed ({err}; it is in the bench extra: make bench)"
    stamp = VENV / ".ready"
    if not stamp.exists():
        steps = ([sys.executable, "-m", "venv", str(VENV)],
                 [str(_venv_python()), "-m", "pip", "install", "-q", *EXPORT_REQUIREMENTS],
                 [str(_venv_python()), "-m", "pip", "uninstall", "-y", "-q", "torchvision"])
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            if done.returncode:
                return f"the optimum-intel export venv could not be made ({' '.join(step[2:5])}): {done.stderr[-300:]}"
        stamp.touch()
    return None


class GenAI:
    """One model exported by optimum-intel (`weights="int8"` or `"int4"`: that weight compression) and run by
    `LLMPipeline` (greedy, EOS ignored, `new` tokens)."""

    def __init__(self, hf: torch.nn.Module, new: int, weights: str | None = None):
        import openvino_genai

        start = time.perf_counter()
        self._tmp = tempfile.TemporaryDirectory()
        ckpt, exported = Path(self._tmp.name) / "ckpt", Path(self._tmp.name) / "ov"
        hf.save_pretrained(ckpt)
        done = subprocess.run([str(_venv_python()), "-c", _EXPORT, str(ckpt), str(exported), weights or "f32"],
                              capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"optimum-intel's export failed: {done.stderr[-500:]}")
        scheduler = openvino_genai.SchedulerConfig()
        scheduler.enable_prefix_caching = False  # on by default: a repeated prompt's prefill would be read back
        self.pipe = openvino_genai.LLMPipeline(str(exported), "CPU", scheduler_config=scheduler,
                                               **(peers.OV_CPU_PROPERTIES if weights else peers.OV_LLM_F32_PROPERTIES))
        self.config = openvino_genai.GenerationConfig()
        self.config.max_new_tokens = self.config.min_new_tokens = new
        self.config.do_sample, self.config.ignore_eos = False, True
        self.compile_ms = (time.perf_counter() - start) * 1e3  # the export and the pipeline's load

    def generate(self, ids: torch.Tensor, new: int) -> tuple[torch.Tensor, dict[str, Any]]:
        import openvino as ov
        import openvino_genai

        array = ids.numpy().astype(np.int64)
        inputs = openvino_genai.TokenizedInputs(ov.Tensor(array), ov.Tensor(np.ones_like(array)))
        result = self.pipe.generate(inputs, self.config)
        metrics = result.perf_metrics
        durations = metrics.raw_metrics.m_durations  # microseconds, each token after the first
        tokens = torch.cat([ids, torch.tensor([list(result.tokens[0])], dtype=ids.dtype)], dim=1)
        return tokens, {"prefill_ms": metrics.get_ttft().mean, "decode_ms": [d / 1e3 for d in durations]}
