"""Text generation with a KV cache: `forge.generate(model, input_ids, max_new_tokens=K)`.

A `transformers` causal LM is compiled into two functions that share one KV cache:

* **prefill**: the prompt, `[B, P]` tokens at cache positions `0..P-1`;
* **decode**: one token per sequence, `[B, 1]` at cache position `P + j`.

Both are the same module, `StaticCacheLM`, exported at two shapes. It holds the cache as
buffers `key_cache_<layer>` / `value_cache_<layer>` of shape `[B, kv_heads, T, head_dim]` (`T`, the
cache length, is `P + K` unless given) and writes each step's new rows with
`cache[:, :, cache_position] = k` (`aten.index_put_`: the rows transformers' StaticLayer writes
with `index_copy_`, in an op the `aten` dialect has, so the import needs no decomposition and no
torch re-trace). The importer (`state=True`) makes those mutated buffers
*states*: function arguments and results named by `forge.state`; the memory planner gives each
state a buffer of its own (`buffer.state "key_cache_0" in %bS`) and writes the update into it in
place (the KV cache is a persistent buffer, not a new value per step); the executor takes the
state buffers from one `StateStore` shared by both programs, allocated once per `Generator`.

Why a wrapper of our own rather than transformers' `StaticCache` + its executorch recipe: in
transformers 5 the static cache layers keep their own write position (`cumulative_length`, a
second mutated buffer per layer, reset from `cache_position` at every call) and build the mask
from it, with no way to pass a left-padded batch's mask and positions. `StaticCacheLM` takes
them as inputs: `forward(input_ids [B, L], attention_mask [B, T], position_ids [B, L],
cache_position [L]) -> logits [B, 1, vocab]` (the last position only, as `generate` needs). The
additive 4-D mask (0 where key `k <= cache_position[q]` and `attention_mask[b, k]`, the float32
minimum elsewhere, what transformers' eager mask holds) is built inside the graph, and the model
gets it as a prepared mask, so transformers' own mask code is not traced.

Greedy decoding reproduces `model.generate(do_sample=False)`: for a left-padded batch the
positions are `cumsum(attention_mask) - 1` (1 on padding), as transformers computes them; a
sequence that emits the end-of-sequence token is padded with `pad_token_id` (the EOS token if
unset) and generation stops when every sequence has finished, so the result has the same
length as transformers' too.

`forge.generate` is this module's `generate`, exported lazily by the package (`forge/__init__.py`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from forge.driver.compilation import Compilation, Stage
from forge.driver.options import CompileOptions
from forge.driver.stages import EMIT, IMPORT_MODULE, LOWER, OPTIMIZE, PLAN
from forge.frontend.fx_importer import ImportedProgram

__all__ = ["GenerateError", "Generator", "StaticCacheLM", "compile_generator", "generate"]

Progress = Callable[[str], None]


class GenerateError(ValueError):
    """Bad arguments to generation (shapes, lengths, a model that is not a causal LM)."""


# --- the exported module ------------------------------------------------------------------------


def causal_lm(model: nn.Module) -> nn.Module:
    """The `transformers` causal LM inside `model` (a zoo wrapper's `.hf`, or the model itself)."""
    hf = getattr(model, "hf", model)
    config = getattr(hf, "config", None)
    if config is None or not hasattr(hf, "generation_config"):
        raise GenerateError(f"{type(model).__name__} is not a transformers causal LM (no config / generation_config)")
    if getattr(config, "is_encoder_decoder", False):
        raise GenerateError(f"{type(hf).__name__} is an encoder-decoder; forge.generate runs decoder-only LMs")
    return hf


def _head_shapes(config: Any) -> tuple[int, int, int]:
    """(layers, kv heads, head dim) of a decoder config."""
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return config.num_hidden_layers, kv_heads, head_dim


class _CacheView:
    """What the transformers attention layers call: `update(k, v, layer)` writes the new rows into
    the layer's cache buffers at `cache_position` (in place) and returns the whole buffers."""

    is_compileable = True

    def __init__(self, owner: StaticCacheLM, cache_position: torch.Tensor):
        self.owner = owner
        self.cache_position = cache_position

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any):
        keys = self.owner.get_buffer(f"key_cache_{layer_idx}")
        values = self.owner.get_buffer(f"value_cache_{layer_idx}")
        keys[:, :, self.cache_position] = key_states  # aten.index_put_ (StaticLayer's index_copy_, same rows)
        values[:, :, self.cache_position] = value_states
        return keys, values


class StaticCacheLM(nn.Module):
    """A causal LM with its KV cache as buffers (see the module docstring)."""

    def __init__(self, hf: nn.Module, batch: int, cache_len: int):
        super().__init__()
        self.hf = hf
        self.cache_len = cache_len
        layers, kv_heads, head_dim = _head_shapes(hf.config)
        dtype = next(hf.parameters()).dtype
        for i in range(layers):
            shape = (batch, kv_heads, cache_len, head_dim)
            self.register_buffer(f"key_cache_{i}", torch.zeros(shape, dtype=dtype), persistent=False)
            self.register_buffer(f"value_cache_{i}", torch.zeros(shape, dtype=dtype), persistent=False)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache_position: torch.Tensor,
    ) -> torch.Tensor:
        keys = torch.arange(self.cache_len, device=input_ids.device)
        causal = keys[None, :] <= cache_position[:, None]
        allowed = causal[None, None, :, :] & attention_mask[:, None, None, :].bool()
        dtype = self.get_buffer("key_cache_0").dtype
        zero, lowest = torch.zeros((), dtype=dtype), torch.full((), torch.finfo(dtype).min, dtype=dtype)
        mask = torch.where(allowed, zero, lowest)  # where.self: the dialect has it (where.Scalar it lacks)
        out = self.hf(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            cache=_CacheView(self, cache_position),
            use_cache=True,
            logits_to_keep=1,
            return_dict=True,
        )
        return out.logits


# --- compiling -----------------------------------------------------------------------------------


@dataclass
class CompiledStep:
    """One compiled function of a generator (prefill or decode) and what its compile reported."""

    name: str
    executor: Any
    buffer_module: Any
    imported: ImportedProgram
    compile_ms: float
    report: dict[str, Any] = field(default_factory=dict)


def _register_states(c: Compilation) -> None:
    """The cache buffers' initial values, into the StateStore both graphs share (before the emit binds them)."""
    for spec in c.imported.states:
        c.extras["states"].initial.setdefault(spec.name, spec.initial)


STEP = (IMPORT_MODULE, OPTIMIZE, LOWER, PLAN, Stage("cache states", _register_states), EMIT)
"""One generator graph (prefill or decode): `compile`'s stages on the cache wrapper, its buffers as states."""


def _compile_step(name: str, wrapper: StaticCacheLM, args: tuple[torch.Tensor, ...], states: Any,
                  options: CompileOptions) -> CompiledStep:
    c = Compilation(options, model=wrapper, args=args)
    c.extras.update(state=True, states=states)
    c.run(STEP)
    ms = (time.perf_counter() - c.started) * 1e3
    program = c.executor.program
    stats = program.stats()
    report = {
        "compile_ms": round(ms, 1),
        "segments": stats["segments"],
        "npu_ops": stats["npu_ops"],
        "cpu_ops": stats["cpu_ops"],
        "transfers": stats["transfers"],
        "planned_bytes": stats["planned_bytes"],
        "states": len(program.states),
        "state_bytes": sum(program.buffers[b].nbytes for b in program.states.values()),
        "cpu_fallback": _fallbacks(c.module),
    }
    return CompiledStep(name, c.executor, c.module, c.imported, ms, report)


def _fallbacks(module: Any) -> dict[str, int]:
    found: dict[str, int] = {}
    for op in module.walk():
        if op.name == "buffer.exec" and op.kind.data == "aten":
            name = op.params.data["op"].data
            found[name] = found.get(name, 0) + 1
    return dict(sorted(found.items()))


class Generator:
    """A compiled prefill + decode pair over one KV cache (`compile_generator` makes it).

    `generate(input_ids, max_new_tokens, attention_mask=None)` -> `[B, P + new]` token ids (greedy);
    `prefill_logits` / `decode_logits` run one step (for parity checks); `reset()` zeroes the cache
    in place. After `generate`, `last_timings` holds the prefill and per-token decode times (ms).
    """

    def __init__(self, hf: nn.Module, batch: int, prompt_len: int, cache_len: int, prefill: CompiledStep,
                 decode: CompiledStep, states: Any):
        self.hf = hf
        self.batch, self.prompt_len, self.cache_len = batch, prompt_len, cache_len
        self.prefill, self.decode = prefill, decode
        self.states = states
        self.last_timings: dict[str, Any] = {}
        gen = getattr(hf, "generation_config", None)
        eos = getattr(gen, "eos_token_id", None)
        self.eos: list[int] = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        pad = getattr(gen, "pad_token_id", None)
        self.pad = pad if pad is not None else (self.eos[0] if self.eos else None)

    # ---- one step ---------------------------------------------------------------------------

    def reset(self) -> None:
        """The KV cache back to zeros, in place (the same memory)."""
        self.states.reset()

    def _check(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
            raise GenerateError("input_ids must be an int64 tensor [batch, prompt_len]")
        shape = (self.batch, self.prompt_len)
        if tuple(input_ids.shape) != shape:
            raise GenerateError(
                f"input_ids is {list(input_ids.shape)}, this generator was compiled for {list(shape)} "
                "(forge.generate compiles one per shape)"
            )
        if attention_mask is None:
            return torch.ones(shape, dtype=torch.long)
        if tuple(attention_mask.shape) != shape:
            raise GenerateError(f"attention_mask is {list(attention_mask.shape)}, expected {list(shape)}")
        return attention_mask.to(torch.long)

    def prefill_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits `[B, 1, vocab]` of the prompt's last position; fills the cache's first P rows."""
        mask = self._check(input_ids, attention_mask)
        full = torch.ones(self.batch, self.cache_len, dtype=torch.long)
        full[:, : self.prompt_len] = mask
        positions = (mask.cumsum(-1) - 1).masked_fill_(mask == 0, 1)
        return self.prefill.executor(input_ids, full, positions, torch.arange(self.prompt_len))[0]

    # ---- generation --------------------------------------------------------------------------

    def generate(
        self, input_ids: torch.Tensor, max_new_tokens: int, attention_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Greedy generation, token for token what `transformers` `generate(do_sample=False)` gives."""
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise GenerateError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        if self.prompt_len + max_new_tokens > self.cache_len:
            raise GenerateError(
                f"prompt {self.prompt_len} + {max_new_tokens} new tokens exceed the cache of {self.cache_len} positions"
            )
        mask = self._check(input_ids, attention_mask)
        self.reset()
        b = self.batch
        full = torch.ones(b, self.cache_len, dtype=torch.long)
        full[:, : self.prompt_len] = mask
        positions = (mask.cumsum(-1) - 1).masked_fill_(mask == 0, 1)
        start = time.perf_counter()
        logits = self.prefill.executor(input_ids, full, positions, torch.arange(self.prompt_len))[0]
        prefill_ms = (time.perf_counter() - start) * 1e3
        real = mask.sum(-1)
        unfinished = torch.ones(b, dtype=torch.bool)
        tokens = [self._next(logits, unfinished)]
        step_ids = torch.empty(b, 1, dtype=torch.long)
        step_pos = torch.empty(b, 1, dtype=torch.long)
        step_cache = torch.empty(1, dtype=torch.long)
        out = [torch.empty_like(logits)]
        decode_ms: list[float] = []
        for j in range(max_new_tokens - 1):
            if self.eos and not bool(unfinished.any()):
                break
            start = time.perf_counter()
            step_ids[:, 0] = tokens[-1]
            step_pos[:, 0] = real + j
            step_cache[0] = self.prompt_len + j
            self.decode.executor.run(step_ids, full, step_pos, step_cache, out=out)
            tokens.append(self._next(out[0], unfinished))
            decode_ms.append((time.perf_counter() - start) * 1e3)
        self.last_timings = {"prefill_ms": prefill_ms, "decode_ms": decode_ms}
        return torch.cat([input_ids, torch.stack(tokens, dim=1)], dim=1)

    def _next(self, logits: torch.Tensor, unfinished: torch.Tensor) -> torch.Tensor:
        """The greedy token of each sequence; finished ones get the pad token (as transformers)."""
        token = logits[:, -1, :].argmax(-1)
        if self.eos:
            if self.pad is not None:
                token = torch.where(unfinished, token, torch.full_like(token, self.pad))
            unfinished &= ~torch.isin(token, torch.tensor(self.eos))
        return token

    def report(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "prompt_len": self.prompt_len,
            "cache_len": self.cache_len,
            "prefill": self.prefill.report,
            "decode": self.decode.report,
        }


def compile_generator(
    model: nn.Module,
    *,
    batch: int = 1,
    prompt_len: int,
    max_new_tokens: int | None = None,
    cache_len: int | None = None,
    runtime: str = "openvino",
    device: str = "CPU",
    progress: Progress | None = None,
) -> Generator:
    """Compile `model`'s prefill (`[batch, prompt_len]`) and decode (`[batch, 1]`) functions over
    one KV cache of `cache_len` positions (default `prompt_len + max_new_tokens`)."""
    from backends.nnfactory.executor import StateStore  # lazy: start-up cost (openvino)

    hf = causal_lm(model).eval()
    if cache_len is None:
        if max_new_tokens is None:
            raise GenerateError("give max_new_tokens or cache_len")
        cache_len = prompt_len + max_new_tokens
    limit = getattr(hf.config, "max_position_embeddings", None) or getattr(hf.config, "n_positions", None)
    if prompt_len < 1 or cache_len <= prompt_len:
        raise GenerateError(f"need 1 <= prompt_len < cache_len, got prompt_len {prompt_len}, cache_len {cache_len}")
    if limit is not None and cache_len > limit:
        raise GenerateError(f"cache_len {cache_len} exceeds the model's {limit} positions")
    wrapper = StaticCacheLM(hf, batch, cache_len).eval()
    states = StateStore()
    mask = torch.ones(batch, cache_len, dtype=torch.long)
    prefill_args = (
        torch.zeros(batch, prompt_len, dtype=torch.long), mask,
        torch.arange(prompt_len).expand(batch, prompt_len).contiguous(), torch.arange(prompt_len),
    )
    decode_args = (
        torch.zeros(batch, 1, dtype=torch.long), mask,
        torch.full((batch, 1), prompt_len, dtype=torch.long), torch.tensor([prompt_len]),
    )
    options = CompileOptions(runtime=runtime, device=device, progress=progress)
    prefill = _compile_step("prefill", wrapper, prefill_args, states, options)
    decode = _compile_step("decode", wrapper, decode_args, states, options)
    return Generator(hf, batch, prompt_len, cache_len, prefill, decode, states)


_GENERATORS: weakref.WeakKeyDictionary[nn.Module, dict[tuple, Generator]] = weakref.WeakKeyDictionary()


def generate(
    model: nn.Module,
    input_ids: torch.Tensor,
    max_new_tokens: int = 32,
    attention_mask: torch.Tensor | None = None,
    *,
    runtime: str = "openvino",
    device: str = "CPU",
) -> torch.Tensor:
    """Greedy generation with Forge (see the module docstring): `[B, P + new]` token ids.

    The compiled generator is kept per model and (batch, prompt length, cache length, runtime,
    device): a second call with the same shapes compiles nothing."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise GenerateError("input_ids must be a tensor [batch, prompt_len]")
    batch, prompt_len = input_ids.shape
    key = (batch, prompt_len, prompt_len + max_new_tokens, runtime, device)
    cache = _GENERATORS.setdefault(model, {})
    gen = cache.get(key)
    if gen is None:
        gen = cache[key] = compile_generator(
            model, batch=batch, prompt_len=prompt_len, max_new_tokens=max_new_tokens, runtime=runtime, device=device
        )
    return gen.generate(input_ids, max_new_tokens, attention_mask)
