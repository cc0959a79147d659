"""Text generation with a KV cache (issue 17 items 4 and 6): prefill latency and decode tokens/s.

Per model (the zoo decoders at benchmark size, batch 1, a seeded prompt of `PROMPT` tokens,
`NEW` new tokens, greedy; `--quick`: GPT-2 small, 16 + 8), four systems generate:

* **forge**: `forge.driver.generation.compile_generator` (prefill + decode functions over one KV cache kept
  in state buffers: each layer's attention reads its cache in place plus the new rows, `cached-attention`,
  and the host writes the new rows after the device's work, so a step is one segment and moves only
  the new K/V rows);
* **forge-int8**, **forge-int4**: the same with `weights="int8"` / `"int4"` and `activations="int8"` (compressed
  weights, and the prefill's matmuls quantize their inputs at run time as GenAI's pipeline does by default; the
  decode step keeps float activations; their tokens may differ from eager's);
* **eager**: `transformers` `model.generate(do_sample=False, use_cache=True)` (DynamicCache);
* **openvino**: OpenVINO's stateful model, the way its API offers one: the same static-cache
  module with the cache as explicit inputs/outputs (`index_copy` on them), exported with a
  dynamic query length, `ov.convert_model`, then `apply_make_stateful_transformation` turns the
  cache inputs/outputs into internal states (ReadValue/Assign, what optimum-intel's stateful
  export does); one compiled model serves prefill and decode, the states live in the infer
  request. (Converting the exported program with the cache as *buffers* directly is not enough:
  `convert_model` keeps no state for buffer mutations, the cache would be a constant.)
* **genai**, **genai-int8**, **genai-int4**: OpenVINO GenAI's `LLMPipeline` over optimum-intel's stateful export
  of the same checkpoint, f32 and with int8 or int4 weights (bench/genai.py; not in `--quick`: the exporter's venv
  takes minutes to make once).

*The 1B-class Llama* (`LLAMA_1B`, 1.1 B parameters, random weights; not in `--quick`): Forge against GenAI alone,
one weight mode per fresh process (`python -m bench.generate --llama-1b --weights MODE --artifact`, `ROUNDS_1B`
interleaved rounds after one warm-up): the six systems of the zoo models held at once do not fit in 24 GiB at
this size, one mode of two systems does (under 14 GiB).

EOS is disabled for all three (every run generates exactly `NEW` tokens). Timing: `WARMUP`
generations, then `ROUNDS` interleaved rounds (each round runs every system once, in a rotating
order). *prefill ms* is the time to the first new token; *decode tokens/s* is the decode steps
divided by their total time; *per-token* the median decode step. All from the `generate` call: for eager
a logits processor stamps each step inside it, for Forge a streamer each token (the call's set-up and the
cache's reset count in its prefill), GenAI's own metrics start at its call too. The tokens of forge and
openvino are compared with eager's, and the prefill logits with eager's (max |diff|).

*Artifacts*: each Forge generator is saved (`Generator.save`) and loaded by a fresh interpreter; its size,
the load's wall time, and that process's resident memory before the load (imports, OpenVINO's CPU plugin) and
after it are reported,
with the compile the load replaces, also in a fresh interpreter (the checkpoint `save_pretrained` and built
with `from_pretrained`, untimed); both are timed from after `import torch`, so `import forge` and OpenVINO's
import count in both. The targets: the loaded process's memory within 1.2x the weights file, the load faster
than the compile.

*Bandwidth limit*: a decode step reads every weight once, so tokens/s cannot exceed the machine's memory
read bandwidth (`_bandwidth`: the best of 5 sums over a 1 GiB tensor, bytes over time) divided by
the bytes of weights a step reads (the decode graph's weights but the gathered embedding tables: compressed
bytes for int8); the
table gives each Forge decode rate as a fraction of that limit.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bench import common, peers
from bench import genai as bench_genai
from forge.frontend.decompose import quiet_treespec_deprecation

PROMPT, NEW = 128, 64
QUICK_PROMPT, QUICK_NEW = 16, 8
WARMUP, ROUNDS = 1, 7
"""Rounds after the warm-up: a prefill on this shared 2-core machine varies by up to 1.6x from call to call
(GPT-2 int8: 56-95 ms, none of it explained by which system ran before), and a round costs about 12 s a model."""
QUICK_WARMUP, QUICK_ROUNDS = 0, 1
SYSTEMS = ("forge", "forge-int8", "forge-int4", "eager", "openvino", "genai", "genai-int8", "genai-int4")
WEIGHT_MODES = {"forge": None, "forge-int8": "int8", "forge-int4": "int4"}
"""Forge's systems and their `weights=` (None: f32); each compressed mode quantizes the prefill's activations too."""
GENAI_PEER = {"forge": "genai", "forge-int8": "genai-int8", "forge-int4": "genai-int4"}
"""The GenAI system with the same weight mode as each Forge system."""
PARITY_SYSTEMS = ("forge", "forge-int8")
"""The Forge systems the issue holds to GenAI's speed (f32 and int8; int4 is measured beside them)."""
SYSTEM_OF_MODE = {mode or "f32": name for name, mode in WEIGHT_MODES.items()}
"""Forge's system of each weight mode's name (`--weights`: f32, int8, int4)."""
COMPARED = (("decode tokens/s", "decode_tokens_per_s", True), ("prefill ms", "prefill_ms", False))
"""The figures a target row compares: (words, summary key, higher is better)."""
ROUNDS_1B, NEW_1B = 3, 32
"""The 1B-class Llama's timed rounds and new tokens (a decode step there takes 30-130 ms)."""
EXACT = ("forge", "openvino", "genai")
"""The systems whose tokens must equal eager's (int8 weights change the logits)."""


def run(quick: bool = False) -> dict[str, Any]:
    prompt, new = (QUICK_PROMPT, QUICK_NEW) if quick else (PROMPT, NEW)
    warmup, rounds = (QUICK_WARMUP, QUICK_ROUNDS) if quick else (WARMUP, ROUNDS)
    config = {"prompt": prompt, "new_tokens": new, "batch": 1, "warmup": warmup, "rounds": rounds,
              "small_models": quick, "models": [m.label for m in common.models(quick)], "systems": list(SYSTEMS)}
    with common.recorded("generate", quick, config) as result:
        result["models"] = {spec.label: _measure(spec, quick, prompt, new, warmup, rounds)
                            for spec in common.models(quick)}
        if not quick:
            result["llama_1b"] = {mode: common.fresh_runs("generate", [
                "--llama-1b", "--weights", mode, "--rounds", str(ROUNDS_1B), "--new", str(NEW_1B), "--artifact"], 1)[0]
                for mode in SYSTEM_OF_MODE}
    return result


# --- the systems -------------------------------------------------------------------------------------


class _Eager:
    """transformers generate, timed per step by a logits processor."""

    def __init__(self, hf: nn.Module):
        self.hf = hf
        self.config = copy.deepcopy(hf.generation_config)
        self.config.eos_token_id = None
        self.config.pad_token_id = self.config.pad_token_id if self.config.pad_token_id is not None else 0
        self.config.do_sample, self.config.use_cache = False, True

    def generate(self, ids: torch.Tensor, new: int) -> tuple[torch.Tensor, dict[str, Any]]:
        stamps: list[float] = []

        def stamp(input_ids, scores):
            stamps.append(time.perf_counter())
            return scores

        from transformers import LogitsProcessorList

        self.config.max_new_tokens = new
        start = time.perf_counter()
        with torch.no_grad():
            out = self.hf.generate(ids, attention_mask=torch.ones_like(ids), generation_config=self.config,
                                   logits_processor=LogitsProcessorList([stamp]))
        return out, {"prefill_ms": (stamps[0] - start) * 1e3,
                     "decode_ms": [(b - a) * 1e3 for a, b in zip(stamps, stamps[1:], strict=False)]}


class _ExplicitCache:
    """The cache as explicit tensors: `update` returns `index_copy`s (new values, not writes)."""

    is_compileable = True

    def __init__(self, kv: tuple[torch.Tensor, ...], cache_position: torch.Tensor):
        self.kv, self.cache_position = kv, cache_position
        self.new: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def update(self, key_states, value_states, layer_idx, *args, **kwargs):
        keys = self.kv[2 * layer_idx].index_copy(2, self.cache_position, key_states)
        values = self.kv[2 * layer_idx + 1].index_copy(2, self.cache_position, value_states)
        self.new[layer_idx] = (keys, values)
        return keys, values


class _ExplicitKV(nn.Module):
    """`forge.driver.generation.StaticCacheLM`'s forward with the cache as inputs and outputs."""

    def __init__(self, hf: nn.Module, cache_len: int):
        super().__init__()
        self.hf, self.cache_len = hf, cache_len

    def forward(self, input_ids, attention_mask, position_ids, cache_position, *kv):
        keys = torch.arange(self.cache_len)
        allowed = (keys[None, :] <= cache_position[:, None])[None, None] & attention_mask[:, None, None, :].bool()
        mask = torch.where(allowed, 0.0, torch.finfo(torch.float32).min)
        cache = _ExplicitCache(kv, cache_position)
        out = self.hf(input_ids=input_ids, attention_mask=mask, position_ids=position_ids, cache=cache,
                      use_cache=True, logits_to_keep=1, return_dict=True)
        return (out.logits, *[t for i in range(len(kv) // 2) for t in cache.new[i]])


class _OpenVINOStateful:
    """OpenVINO's stateful model (see the module docstring); `generate` resets the states first."""

    def __init__(self, hf: nn.Module, prompt: int, cache_len: int):
        import openvino as ov
        from openvino._offline_transformations import apply_make_stateful_transformation

        from forge.driver.generation import _head_shapes

        start = time.perf_counter()
        layers, heads, head_dim = _head_shapes(hf.config)
        self.prompt, self.cache_len, self.shape = prompt, cache_len, (1, heads, cache_len, head_dim)
        kv = tuple(torch.zeros(self.shape) for _ in range(2 * layers))
        args = (torch.zeros(1, prompt, dtype=torch.long), torch.ones(1, cache_len, dtype=torch.long),
                torch.arange(prompt)[None], torch.arange(prompt), *kv)
        q = torch.export.Dim("q", min=1, max=cache_len)
        with torch.no_grad():
            program = torch.export.export(_ExplicitKV(hf, cache_len).eval(), args,
                                          dynamic_shapes=({1: q}, None, {1: q}, {0: q}, tuple([None] * len(kv))))
        with quiet_treespec_deprecation():  # convert_model runs torch's run_decompositions
            model = ov.convert_model(program)
        names_in = [i.get_any_name() for i in model.inputs][4:]
        names_out = [o.get_any_name() for o in model.outputs][1:]
        apply_make_stateful_transformation(model, dict(zip(names_in, names_out, strict=True)))
        self.compiled = ov.Core().compile_model(model, "CPU", peers.OV_LLM_F32_PROPERTIES)
        self.request = self.compiled.create_infer_request()
        self.zeros = ov.Tensor(np.zeros(self.shape, dtype=np.float32))
        self.states = len(self.request.query_state())
        self.compile_ms = (time.perf_counter() - start) * 1e3

    def reset(self) -> None:
        for state in self.request.query_state():
            state.state = self.zeros  # the initial value is a zero cache (copied into the state)

    def step(self, ids: np.ndarray, mask: np.ndarray, pos: np.ndarray, cache_pos: np.ndarray) -> np.ndarray:
        return self.request.infer({0: ids, 1: mask, 2: pos, 3: cache_pos})[0]

    def generate(self, ids: torch.Tensor, new: int) -> tuple[torch.Tensor, dict[str, Any]]:
        self.reset()
        mask = np.ones((1, self.cache_len), dtype=np.int64)
        start = time.perf_counter()
        logits = self.step(ids.numpy(), mask, np.arange(self.prompt)[None], np.arange(self.prompt))
        tokens = [int(logits[0, -1].argmax())]
        prefill_ms = (time.perf_counter() - start) * 1e3
        decode_ms = []
        for j in range(new - 1):
            start = time.perf_counter()
            p = self.prompt + j
            logits = self.step(np.array([[tokens[-1]]]), mask, np.array([[p]]), np.array([p]))
            tokens.append(int(logits[0, -1].argmax()))
            decode_ms.append((time.perf_counter() - start) * 1e3)
        return torch.cat([ids, torch.tensor([tokens])], dim=1), {"prefill_ms": prefill_ms, "decode_ms": decode_ms}


class _Forge:
    def __init__(self, hf: nn.Module, prompt: int, new: int, weights: str | None = None):
        from forge.driver.generation import compile_generator
        from forge.driver.report import used_weights

        start = time.perf_counter()
        self.weights, self.activations = weights, None if weights is None else "int8"
        self.gen = compile_generator(hf, batch=1, prompt_len=prompt, max_new_tokens=new, weights=weights,
                                     activations=self.activations)
        self.compile_ms = (time.perf_counter() - start) * 1e3
        self.weight_bytes = _streamed_weight_bytes(self.gen.decode, used_weights)

    def generate(self, ids: torch.Tensor, new: int) -> tuple[torch.Tensor, dict[str, Any]]:
        """Timed as a user sees it, as GenAI's own metrics and eager are: from the call to each token (a streamer
        stamps them), so the call's set-up (the checks, the cache's reset) counts in the prefill."""
        stamps: list[float] = []
        start = time.perf_counter()
        out = self.gen.generate(ids, new, eos_token_id=[],  # every system generates `new` tokens, EOS or not
                                streamer=lambda row, token: stamps.append(time.perf_counter()))
        return out, {"prefill_ms": (stamps[0] - start) * 1e3,
                     "decode_ms": [(b - a) * 1e3 for a, b in zip(stamps, stamps[1:], strict=False)],
                     "host_ms": self.gen.decode_host_ms()}  # the generator's own split of each step


# --- measuring ---------------------------------------------------------------------------------------


def _measure(spec: common.ModelSpec, quick: bool, prompt: int, new: int, warmup: int, rounds: int) -> dict[str, Any]:
    model, _ = common.model_and_inputs(spec, quick)
    return measure_model(model.hf.eval(), prompt, new, warmup, rounds, genai=not quick)


LLAMA_1B = {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
            "num_key_value_heads": 8, "vocab_size": 32000, "max_position_embeddings": 2048}
"""A 1B-class Llama shape (1.1 B parameters, Llama-3.2-1B's widths with a 32k vocabulary), random weights."""


def llama_1b() -> nn.Module:
    """The `LLAMA_1B` shape with seeded random weights (f32, eval)."""
    import transformers

    torch.manual_seed(common.INPUT_SEED)
    config = transformers.LlamaConfig(**LLAMA_1B, attn_implementation="sdpa")
    return transformers.LlamaForCausalLM(config).eval()


def _prompt_ids(hf: nn.Module, prompt: int) -> torch.Tensor:
    """The benchmark's seeded prompt of `prompt` token ids, batch 1."""
    seeded = torch.Generator().manual_seed(common.INPUT_SEED)
    return torch.randint(0, hf.config.vocab_size, (1, prompt), generator=seeded)


def measure_model(hf: nn.Module, prompt: int, new: int, warmup: int, rounds: int, genai: bool = True) -> dict[str, Any]:
    """The systems on one causal LM (see the module docstring); `genai=False` leaves GenAI out."""
    ids = _prompt_ids(hf, prompt)
    forges = {name: _Forge(hf, prompt, new, weights=mode) for name, mode in WEIGHT_MODES.items()}
    forge = forges["forge"]
    ov = _OpenVINOStateful(hf, prompt, prompt + new)
    systems = {**forges, "eager": _Eager(hf), "openvino": ov}
    missing = {"genai": "left out (--quick)"} if not genai else {}
    if genai and (why := bench_genai.available()) is not None:
        missing["genai"] = why
    elif genai:
        for name, mode in WEIGHT_MODES.items():
            systems[GENAI_PEER[name]] = bench_genai.GenAI(hf, new, weights=mode)
    names = tuple(s for s in SYSTEMS if s in systems)
    samples: dict[str, list[dict[str, Any]]] = {s: [] for s in names}
    tokens: dict[str, torch.Tensor] = {}
    for r in range(warmup + rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            out, timing = systems[name].generate(ids, new)
            tokens[name] = out
            if r >= warmup:
                samples[name].append(timing)
    with torch.no_grad():
        eager_logits = hf(input_ids=ids, use_cache=False).logits[:, -1]
    forge_logits = forge.gen.prefill_logits(ids)[:, -1]
    report = forge.gen.report()
    return {
        "samples": samples,
        "summary": {name: _summary(runs, new) for name, runs in samples.items()},
        "tokens_equal_eager": {n: bool(torch.equal(tokens[n], tokens["eager"])) for n in EXACT if n in tokens},
        "prefill_max_abs": float((forge_logits - eager_logits).abs().max()),
        "compile_ms": {n: systems[n].compile_ms for n in names if hasattr(systems[n], "compile_ms")},
        "not_measured": missing,
        "weight_bytes": {name: system.weight_bytes for name, system in forges.items()},
        "bandwidth_gb_s": _bandwidth() / 1e9,
        "forge": {"prefill": report["prefill"], "decode": report["decode"], "cache_len": report["cache_len"],
                  "sharing": {name: system.gen.sharing for name, system in forges.items()}},
        "openvino_states": ov.states,
        "artifacts": {name: _artifact(system, hf, prompt, new) for name, system in forges.items()},
    }


def measure_pair(hf: nn.Module, prompt: int, new: int, rounds: int, weights: str | None = None,
                 genai: bool = True, artifact: bool = False) -> dict[str, Any]:
    """Forge against GenAI at one weight mode (int8 or int4 weights: GenAI's mode of the same name), the two built
    in one process and called alternately, which goes first swapping each round (the first round a warm-up).
    What `--llama-1b` runs: `measure_model`'s six systems of a 1.1B model held at once exceeded 24 GiB (the
    OOM killer ended it at 20.6 GB anonymous RSS); one mode of two systems stays under 14 GiB. `artifact`:
    Forge's generator saved and loaded in a fresh process too (`_artifact`), where the weights, not the
    process's imports, make most of the loaded memory."""
    ids = _prompt_ids(hf, prompt)
    forge = _Forge(hf, prompt, new, weights=weights)
    systems: dict[str, Any] = {"forge": forge}
    why = "left out" if not genai else bench_genai.available()
    if why is None:
        systems["genai"] = bench_genai.GenAI(hf, new, weights=weights)
    names = tuple(systems)
    samples: dict[str, list[dict[str, Any]]] = {s: [] for s in names}
    for r in range(1 + rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            timing = systems[name].generate(ids, new)[1]
            if r:
                samples[name].append(timing)
    return {"weights": weights or "f32", "summary": {n: _summary(runs, new) for n, runs in samples.items()},
            "samples": samples, "not_measured": {} if why is None else {"genai": why},
            "sharing": forge.gen.sharing, "weight_bytes": forge.weight_bytes, "bandwidth_gb_s": _bandwidth() / 1e9,
            "compile_ms": {n: s.compile_ms for n, s in systems.items()},
            **({"artifact": _artifact(forge, hf, prompt, new)} if artifact else {})}


_LOAD = """
import json, sys, time
import torch  # untimed, as in _COMPILE (where building the model imports it)
start = time.perf_counter()
import forge
import openvino
openvino.Core().get_versions("CPU")  # the CPU plugin loaded: the baseline is what any compiled program needs
base = int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]) * 1024
gen = forge.load(sys.argv[1])
seconds = time.perf_counter() - start
rss = int([l for l in open("/proc/self/status") if l.startswith("VmRSS")][0].split()[1]) * 1024
print(json.dumps({"seconds": seconds, "rss_bytes": rss, "import_rss_bytes": base,
                  "released": gen.decode.report.get("released_weight_bytes")}))
"""

_COMPILE = """
import json, sys, time
import transformers
args = json.loads(sys.argv[2])
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], attn_implementation=args.pop("attn")).eval()
start = time.perf_counter()  # the model built (untimed): what a user has before compiling or loading
import forge
from forge.driver.generation import compile_generator
gen = compile_generator(model, batch=1, **args)  # the device program compiled too
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def _artifact(system: _Forge, hf: nn.Module, prompt: int, new: int) -> dict[str, Any]:
    """The generator saved (`Generator.save`): its size and weights file, a first `forge.load` in a fresh process
    and the compile that load replaces, in a fresh process too (both timed from after `import torch`, the compile
    from the model built: `import forge` and OpenVINO's import are in both), and the loading process's resident
    memory after the load and before it (its imports and OpenVINO's CPU plugin loaded)."""
    import json
    import subprocess
    import sys
    import tempfile

    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        saved, ckpt = Path(tmp) / "gen", Path(tmp) / "ckpt"
        system.gen.save(saved)
        size = sum(f.stat().st_size for f in saved.rglob("*") if f.is_file())
        weights = sum(f.stat().st_size for f in saved.rglob("*.safetensors"))
        out = subprocess.run([sys.executable, "-c", _LOAD, str(saved)], capture_output=True, text=True,
                             check=True, cwd=root)
        hf.save_pretrained(ckpt)
        args = {"attn": hf.config._attn_implementation, "prompt_len": prompt, "max_new_tokens": new,
                "weights": system.weights, "activations": system.activations}
        compiled = subprocess.run([sys.executable, "-c", _COMPILE, str(ckpt), json.dumps(args)],
                                  capture_output=True, text=True, check=True, cwd=root)
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    return {"bytes": size, "weight_bytes": weights, "load_s": loaded["seconds"],
            "compile_s": json.loads(compiled.stdout.strip().splitlines()[-1])["seconds"],
            "loaded_rss_bytes": loaded["rss_bytes"], "import_rss_bytes": loaded["import_rss_bytes"],
            "released_bytes": loaded["released"]}


def _streamed_weight_bytes(step: Any, used_weights: Any) -> int:
    """The weight bytes one decode step reads: every weight the graph reads, except a table only gathered from
    (an embedding: one row per token)."""
    module = step.buffer_module
    gathered_only = used_weights(module)
    for op in module.walk():
        if op.name != "buffer.weight":
            continue
        value = op.results[0]
        users = [u.operation for u in value.uses]
        if not all(u.name == "buffer.exec" and u.kind.data == "gather" and u.operands[0] is value for u in users):
            gathered_only.discard(op.properties["name"].data)
    store = step.imported.weights
    return store.subset(used_weights(module) - gathered_only).nbytes


def _bandwidth(nbytes: int = 1024 * 2**20, repeats: int = 5) -> float:
    """Memory read bandwidth in bytes/s: the best of `repeats` sums over an `nbytes` tensor (a decode step
    streams its weights the same way: reads only; a copy would also pay the writes and their read-for-ownership)."""
    src = torch.ones(nbytes // 4)
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        src.sum()
        best = min(best, time.perf_counter() - start)
    return nbytes / best


def bandwidth_fraction(m: dict[str, Any], system: str) -> float:
    """A Forge system's decode tokens/s over the bandwidth limit (bandwidth / weight bytes per token)."""
    limit = m["bandwidth_gb_s"] * 1e9 / m["weight_bytes"][system]
    return m["summary"][system]["decode_tokens_per_s"] / limit


def _summary(runs: list[dict[str, Any]], new: int) -> dict[str, float]:
    rates = [len(r["decode_ms"]) / (sum(r["decode_ms"]) / 1e3) for r in runs if r["decode_ms"]]
    steps = [ms for r in runs for ms in r["decode_ms"]]
    host = [ms for r in runs for ms in r.get("host_ms", ())]
    return {
        "prefill_ms": statistics.median(r["prefill_ms"] for r in runs),
        "decode_tokens_per_s": statistics.median(rates) if rates else 0.0,
        "per_token_ms": statistics.median(steps) if steps else 0.0,
        "total_ms": statistics.median(r["prefill_ms"] + sum(r["decode_ms"]) for r in runs),
        **({"host_us_per_step": statistics.median(host) * 1e3} if host else {}),
    }


# --- rendering ---------------------------------------------------------------------------------------


def _host_note(summary: dict[str, Any]) -> str:
    """What Forge's host does per decode step (the generator's own split: the step less its device call)."""
    host = [f"{name} {s['host_us_per_step']:.0f} us" for name, s in summary.items() if "host_us_per_step" in s]
    return ("Forge's host work per decode step (its inputs, the cache's row writes, the token's choice; the rest "
            f"is the device call): {', '.join(host)}.") if host else ""


def render(result: dict[str, Any], figures: Path) -> str:
    cfg = result["config"]
    out = [f"## Text generation (KV cache): prompt {cfg['prompt']}, {cfg['new_tokens']} new tokens, batch 1\n",
           f"Greedy, EOS disabled; {cfg['rounds']} interleaved rounds after {cfg['warmup']} warm-up "
           "generation(s); medians. *tokens = eager*: the generated tokens are exactly eager transformers'.\n"]
    rows = []
    for label, m in result["models"].items():
        s = m["summary"]
        for name in SYSTEMS:
            if name not in s:
                continue
            equal = m["tokens_equal_eager"].get(name)
            equal = "yes" if name == "eager" or equal else "-" if equal is None else "**no**"
            limit = f"{bandwidth_fraction(m, name):.0%}" if name in m.get("weight_bytes", {}) else "-"
            rows.append([label, name, common.ms(s[name]["prefill_ms"]), f"{s[name]['decode_tokens_per_s']:.1f}",
                         f"{s[name]['per_token_ms']:.2f}",
                         common.ratio(s[name]["decode_tokens_per_s"] / s["eager"]["decode_tokens_per_s"]),
                         common.ratio(s[name]["decode_tokens_per_s"] / s["openvino"]["decode_tokens_per_s"]),
                         limit, equal, common.ms(m["compile_ms"].get(name))])
    out.append(common.table(["model", "system", "prefill ms", "decode tokens/s", "per-token ms",
                             "decode vs eager", "decode vs openvino", "of bandwidth limit", "tokens = eager",
                             "compile ms"], rows))
    notes = []
    for label, m in result["models"].items():
        f = m["forge"]
        notes.append(f"{label}: Forge prefill logits max |diff| vs eager {common.sci(m['prefill_max_abs'])}; KV cache "
                     f"{f['cache_len']} positions in {f['decode']['states']} state buffers "
                     f"({f['decode']['state_bytes'] / 2**20:.1f} MiB, allocated once); decode step: "
                     f"{f['decode']['segments']} NPU segments, {f['decode']['cpu_ops']} cpu ops "
                     f"({', '.join(f'{k} x{v}' for k, v in f['decode']['cpu_fallback'].items()) or 'no fallback'}), "
                     f"{f['decode']['transfers']} transfers moving {f['decode']['transfer_bytes']:,} bytes, of which "
                     f"{f['decode'].get('state_bytes_moved', 0):,} are the cache's (the new rows: "
                     f"{f['decode'].get('new_row_bytes', 0):,}); memory bandwidth "
                     f"{m.get('bandwidth_gb_s', 0):.1f} GB/s; OpenVINO: {m['openvino_states']} states. "
                     + _host_note(m["summary"])
                     + "".join(f" {_artifact_note(name, a)}" for name, a in m.get("artifacts", {}).items())
                     + "".join(f" Not measured: {n} ({why})." for n, why in m.get("not_measured", {}).items()))
    out.append("\n".join(f"- {n}" for n in notes) + "\n")
    if "llama_1b" in result:
        out.append(_render_1b(result["llama_1b"]))
    out.append(_figure(result, figures))
    return "\n".join(out)


def _artifact_note(name: str, a: dict[str, Any]) -> str:
    """A saved generator's size, its first load in a fresh process against the compile it replaces, and that
    process's resident memory after and before the load."""
    return (f"Saved {name}: {a['bytes'] / 2**20:,.0f} MiB, a fresh process loads it in {a['load_s']:.1f} s "
            f"(compiling it in one: {a.get('compile_s', math.nan):.1f} s) and holds "
            f"{a['loaded_rss_bytes'] / 2**20:,.0f} MiB after ({a.get('import_rss_bytes', 0) / 2**20:.0f} MiB before "
            "the load: imports, CPU plugin).")


def _as_model(pair: dict[str, Any], name: str) -> dict[str, Any]:
    """`measure_pair`'s result shaped as `measure_model`'s for the rows both have: Forge's system is `name`, GenAI's
    its peer of the same weight mode."""
    renamed = {"forge": name, "genai": GENAI_PEER[name]}
    return {"summary": {renamed[k]: v for k, v in pair["summary"].items()},
            "bandwidth_gb_s": pair["bandwidth_gb_s"], "weight_bytes": {name: pair["weight_bytes"]},
            "artifacts": {name: pair["artifact"]} if "artifact" in pair else {},
            "forge": {"sharing": {name: pair["sharing"]}}}


def _render_1b(pairs: dict[str, dict[str, Any]]) -> str:
    """The 1B-class Llama: each weight mode's Forge and GenAI systems, and the saved generator."""
    rows, notes = [], []
    for mode, pair in pairs.items():
        name = SYSTEM_OF_MODE[mode]
        m = _as_model(pair, name)
        for system in (name, GENAI_PEER[name]):
            s = m["summary"].get(system)
            if s is None:
                continue
            limit = f"{bandwidth_fraction(m, system):.0%}" if system == name else "-"
            rows.append([mode, system, common.ms(s["prefill_ms"]), f"{s['decode_tokens_per_s']:.2f}",
                         f"{s['per_token_ms']:.1f}", limit,
                         common.ms(pair["compile_ms"].get("forge" if system == name else "genai"))])
        notes.append(f"{name}: {program_form(pair['sharing'])}; memory bandwidth {pair['bandwidth_gb_s']:.1f} GB/s."
                     + "".join(f" {_artifact_note(name, a)}" for name, a in m["artifacts"].items())
                     + "".join(f" Not measured: {n} ({why})." for n, why in pair.get("not_measured", {}).items()))
    head = (f"### The 1B-class Llama ({LLAMA_1B['num_hidden_layers']} layers, hidden {LLAMA_1B['hidden_size']}, "
            f"random weights): Forge against GenAI, one weight mode per fresh process\n\n"
            f"Prompt {PROMPT}, {NEW_1B} new tokens, {ROUNDS_1B} interleaved rounds after one warm-up; medians.\n")
    table = common.table(["weights", "system", "prefill ms", "decode tokens/s", "per-token ms", "of bandwidth limit",
                          "compile ms"], rows)
    return "\n".join([head, table, "\n".join(f"- {n}" for n in notes) + "\n"])


def _figure(result: dict[str, Any], figures: Path) -> str:
    plt = common.pyplot()
    labels = list(result["models"])
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    width = 0.8 / len(SYSTEMS)
    for i, name in enumerate(SYSTEMS):
        if any(name not in result["models"][m]["summary"] for m in labels):
            continue
        xs = [k + i * width for k in range(len(labels))]
        color = common.SYSTEM_COLORS.get(name, "#9467bd")
        axes[0].bar(xs, [result["models"][m]["summary"][name]["prefill_ms"] for m in labels], width, label=name,
                    color=color)
        axes[1].bar(xs, [result["models"][m]["summary"][name]["decode_tokens_per_s"] for m in labels], width,
                    label=name, color=color)
    for ax, title in zip(axes, ("prefill ms (lower is better)", "decode tokens/s (higher is better)"), strict=True):
        ax.set_xticks([k + width for k in range(len(labels))], labels, fontsize=8)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return common.save_figure(fig, figures, "generate", "prefill latency and decode throughput")


def _against(ours: dict[str, Any], theirs: dict[str, Any], key: str) -> str:
    """The figure a decode or prefill row compares, both sides."""
    if key == "prefill_ms":
        return f"prefill {ours['prefill_ms']:.0f} ms against {theirs['prefill_ms']:.0f}"
    return f"per-token {ours['per_token_ms']:.2f} ms against {theirs['per_token_ms']:.2f}"


def _form(sharing: dict[str, Any] | None) -> str:
    """The generator's program form for a row's why (results before it was recorded have none)."""
    return f"; Forge's generator: {program_form(sharing)}" if sharing else ""


def program_form(sharing: dict[str, Any]) -> str:
    """How a generator's two graphs run (`weight_sharing`'s choice), in words."""
    if not sharing["one_program"]:
        return "two device programs (the weights twice)"
    if sharing.get("top_level") == "decode":
        return "one program, the decode step on top (every prefill call runs one too)"
    return "one program, both graphs as If bodies (a decode step copies the cache in)"


def targets(result: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for label, m in result["models"].items():
        s = m["summary"]
        rows.append(common.target_row(
            f"{label} decode tokens/s vs eager transformers", s["forge"]["decode_tokens_per_s"],
            s["eager"]["decode_tokens_per_s"], higher_is_better=True, unit="tokens/s",
            why=f"per-token {s['forge']['per_token_ms']:.2f} ms vs eager {s['eager']['per_token_ms']:.2f} ms"))
        for what, key, higher in COMPARED:
            rows.append(common.target_row(
                f"{label} {what} vs OpenVINO's stateful model (issue 32)", s["forge"][key], s["openvino"][key],
                higher_is_better=higher, unit=what.split()[-1],
                why=f"decode step: {m['forge']['decode']['segments']} segment(s), "
                    f"{m['forge']['decode'].get('state_bytes_moved', 0):,} cache bytes moved"))
            rows += [_genai_row(label, m, ours, what, key, higher) for ours in PARITY_SYSTEMS
                     if ours in s and GENAI_PEER[ours] in s]
        rows += _compression_targets(label, m)
        rows += _artifact_targets(label, m)
    for mode, pair in result.get("llama_1b", {}).items():
        name = SYSTEM_OF_MODE[mode]
        m = _as_model(pair, name)
        if name in PARITY_SYSTEMS and GENAI_PEER[name] in m["summary"]:
            rows += [_genai_row("llama-1b", m, name, what, key, higher) for what, key, higher in COMPARED]
        rows += _artifact_targets("llama-1b", m)
    return rows


def _genai_row(label: str, m: dict[str, Any], ours: str, what: str, key: str, higher: bool) -> dict[str, Any]:
    """Forge system `ours` against GenAI's system of its weight mode on one figure (issue 32's parity target)."""
    s, theirs = m["summary"], GENAI_PEER[ours]
    return common.target_row(
        f"{label} {ours} {what} vs OpenVINO GenAI's LLMPipeline ({theirs}, issue 32)", s[ours][key], s[theirs][key],
        higher_is_better=higher, unit=what.split()[-1],
        why=_against(s[ours], s[theirs], key) + _form(m["forge"].get("sharing", {}).get(ours)))


COMPRESSED_ARTIFACT_LIMITS = {"forge-int8": 0.3, "forge-int4": 0.2}
"""The issue's bounds on a compressed generator's saved size against the f32 one's."""
INT8_DECODE_SPEEDUP = 1.6
"""The issue's bound: int8 decode tokens/s at least 1.6x f32's (it reads a quarter of the weight bytes)."""


def _compression_targets(label: str, m: dict[str, Any]) -> list[dict[str, Any]]:
    """Compressed weights really shrinking the artifact, and int8 decoding faster than f32 (rows only for the
    systems a run measured)."""
    rows = []
    artifacts, s = m.get("artifacts", {}), m["summary"]
    for name, limit in COMPRESSED_ARTIFACT_LIMITS.items():
        if name in artifacts and "forge" in artifacts:
            rows.append(common.target_row(
                f"{label} {name} saved generator / the f32 one's, bytes (issue 32)",
                artifacts[name]["bytes"] / artifacts["forge"]["bytes"], limit, higher_is_better=False, unit="x",
                why=f"{artifacts[name]['bytes'] / 2**20:.0f} MiB against {artifacts['forge']['bytes'] / 2**20:.0f}"))
    if "forge-int8" in s:
        rows.append(common.target_row(
            f"{label} forge-int8 decode tokens/s / forge's (f32) (issue 32)",
            s["forge-int8"]["decode_tokens_per_s"] / s["forge"]["decode_tokens_per_s"], INT8_DECODE_SPEEDUP,
            higher_is_better=True, unit="x",
            why=f"per-token {s['forge-int8']['per_token_ms']:.2f} ms against {s['forge']['per_token_ms']:.2f}"))
    return rows


LOADED_RSS_LIMIT = 1.2
"""The issue's bound: a loaded artifact's resident memory within 1.2x its weight bytes."""


def _artifact_targets(label: str, m: dict[str, Any]) -> list[dict[str, Any]]:
    """Per saved generator: the loading process's resident memory over the weights file, and the first load in a
    fresh process against the compile it replaces (rows only for runs that measured both)."""
    rows = []
    for name, a in m.get("artifacts", {}).items():
        if "compile_s" not in a:
            continue
        imports, sharing = a["import_rss_bytes"] / 2**20, m["forge"].get("sharing", {}).get(name)
        rows.append(common.target_row(
            f"{label} {name}: resident memory after a fresh forge.load / weight bytes (issue 32)",
            a["loaded_rss_bytes"] / a["weight_bytes"], LOADED_RSS_LIMIT, higher_is_better=False, unit="x",
            why=f"{imports:.0f} MiB of the process is its imports and OpenVINO's CPU plugin; the load added "
                f"{(a['loaded_rss_bytes'] - a['import_rss_bytes']) / a['weight_bytes']:.2f}x the weights"
                + (" (2 device programs, each packing the weights)" if sharing and not sharing["one_program"] else "")))
        rows.append(common.target_row(
            f"{label} {name}: first forge.load in a fresh process, s, vs compiling it there (issue 32)",
            a["load_s"], a["compile_s"], higher_is_better=False, unit="s",
            why="both timed after `import torch`; the load reads the saved IR and maps the weights, then compiles "
                "the device program as the compile does"))
    return rows


if __name__ == "__main__":  # python -m bench.generate --llama-1b [--weights int8] [--new N] [--rounds R]
    import argparse
    import json

    parser = argparse.ArgumentParser(description="Forge against GenAI on the 1B-class Llama shape, one weight mode")
    parser.add_argument("--llama-1b", action="store_true", required=True)
    parser.add_argument("--weights", choices=("f32", "int8", "int4"), default="f32")
    parser.add_argument("--new", type=int, default=NEW_1B)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--artifact", action="store_true", help="also save the generator and load it in a fresh "
                        "process: size, load time against the compile it replaces, loaded resident memory")
    args = parser.parse_args()
    result = measure_pair(llama_1b(), PROMPT, args.new, args.rounds, None if args.weights == "f32" else args.weights,
                          artifact=args.artifact)
    print(json.dumps({k: v for k, v in result.items() if k != "samples"}))
