"""Text generation with a KV cache: `forge.generate(model, input_ids, max_new_tokens=K)`.

A `transformers` causal LM is compiled into two functions that share one KV cache of `T` positions:

* **prefill chunk**: `[B, C]` tokens at cache positions `s..s+C-1` (`C`, the chunk, 32 by default);
* **decode**: one token per sequence, `[B, 1]` at cache position `P' + j`.

A prompt of `P` tokens is left-padded to `P'`, the next multiple of `C` (the pads masked out, the
positions of the real tokens `cumsum(attention_mask) - 1` as transformers computes them), and prefilled
chunk by chunk with the same compiled graph; decoding then writes positions `P'..`. So one `Generator`,
compiled once (two graphs), serves every `P` and `max_new_tokens` `N` with `P' + N - 1 <= T`, and
`forge.generate` keeps one per model and (batch, runtime, device, precision, weights): `T` is
`DEFAULT_CACHE_LEN` (capped at the model's positions), doubled when a call does not fit (the only other
compile).

Both graphs are the same module, `StaticCacheLM`, exported at two shapes. It holds the cache as
buffers `key_cache_<layer>` / `value_cache_<layer>` of shape `[B, kv_heads, T, head_dim]` (`T`, the
cache length, fixed at compile time) and writes each step's new rows with
`cache[:, :, cache_position] = k` (`aten.index_put_`: the rows transformers' StaticLayer writes
with `index_copy_`, in an op the `aten` dialect has, so the import needs no decomposition and no
torch re-trace). The importer (`state=True`) makes those mutated buffers
*states*: function arguments and results named by `forge.state`; the memory planner gives each
state a buffer of its own (`buffer.state "key_cache_0" in %bS`) and writes the update into it in
place (the KV cache is a persistent buffer, not a new value per step); the executor takes the
state buffers from one `StateStore` shared by both programs, allocated once per `Generator`.
`cached-attention` makes each layer's attention read its cache state in place plus the new rows
(`npuir.cached_sdpa`), so each graph is one compiled segment and a step moves only the new K/V rows
(its report: `transfer_bytes`, `state_bytes_moved`, `new_row_bytes`). A generator whose prompts all fit one
chunk (`prefills_in_one_chunk`: `2 * chunk > cache_len`, as `compile_generator(prompt_len=P,
max_new_tokens=N)` gives for `P > N`) prefills at cache position 0 only, where the cache holds nothing to
attend to: its prefill attends to the chunk's own rows (`sdpa`, report `reads_cache: False`), which skips
the all-masked cache part (GPT-2 12L, 128 tokens: 151 -> 131 ms, in-process A/B).

Why a wrapper of our own rather than transformers' `StaticCache` + its executorch recipe: in
transformers 5 the static cache layers keep their own write position (`cumulative_length`, a
second mutated buffer per layer, reset from `cache_position` at every call) and build the mask
from it, with no way to pass a left-padded batch's mask and positions. `StaticCacheLM` takes
them as inputs: `forward(input_ids [B, L], attention_mask [B, T], position_ids [B, L],
cache_position [L]) -> logits [B, 1, vocab]` (the last position only, as `generate` needs). The
additive 4-D mask (0 where key `k <= cache_position[q]` and `attention_mask[b, k]`, the float32
minimum elsewhere, what transformers' eager mask holds) is built inside the graph, and the model
gets it as a prepared mask, so transformers' own mask code is not traced. The decode step's `attention_mask` is
already that row of keys (`bool [B, T]`: the prompt's mask and every position decoded so far, one more set by the
host each step), so its graph has no integer compare, which the NPU does not run: before, a GPT-2 decode step ran
four small host ops (the compare, two reshapes, a cast: ~130 us of its ~720 us of host work) and two more
transfers.

Decoding (greedy, or sampling with temperature / top-k / top-p / repetition penalty, seeded; EOS tokens,
stop sequences, a streaming callback) is `forge.driver.sampling`'s, on the host, on the last logits row,
with transformers' own logits processors: the same options give transformers' tokens (for sampling, with
the same RNG stream). Greedy decoding reproduces `model.generate(do_sample=False)`: for a left-padded batch the
positions are `cumsum(attention_mask) - 1` (1 on padding), as transformers computes them; a
sequence that emits the end-of-sequence token is padded with `pad_token_id` (the EOS token if
unset) and generation stops when every sequence has finished, so the result has the same
length as transformers' too. A right-padded mask (padding after a row's tokens) is refused with a
`GenerateError` naming the fix, left padding: new tokens follow the last position, so transformers'
tokens for it are not what the caller means either (transformers only warns).

`forge.generate` is this module's `generate`, exported lazily by the package (`forge/__init__.py`).
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from forge.driver.compilation import Compilation, Stage
from forge.driver.emit import graph_group
from forge.driver.options import CompileOptions
from forge.driver.sampling import Decoding, GenerateError
from forge.driver.saved_kinds import GENERATOR_GRAPHS
from forge.driver.stages import EMIT, IMPORT_MODULE, LOWER, OPTIMIZE, PLAN
from forge.frontend.export import ExportError
from forge.frontend.fx_importer import ImportedProgram
from forge.mapped_pages import return_freed_heap

__all__ = ["GenerateError", "Generator", "StaticCacheLM", "compile_generator", "generate"]

Progress = Callable[[str], None]


# --- the exported module ------------------------------------------------------------------------


def causal_lm(model: nn.Module) -> nn.Module:
    """The `transformers` causal LM inside `model` (a zoo wrapper's `.hf`, or the model itself)."""
    hf = getattr(model, "hf", model)
    config = getattr(hf, "config", None)
    if config is None or not hasattr(hf, "generation_config"):
        raise GenerateError(f"{type(model).__name__} is not a transformers causal LM (no config / generation_config)")
    if getattr(config, "is_encoder_decoder", False):
        raise GenerateError(f"{type(hf).__name__} is an encoder-decoder; forge.generate runs decoder-only LMs")
    if getattr(_text_config(config), "num_attention_heads", None) is None:
        raise GenerateError(
            f"{type(hf).__name__} has no attention layers (a state-space or recurrent model): the generator keeps an "
            "attention key/value cache, so forge.generate runs attention decoders"
        )
    latent = getattr(_text_config(config), "kv_lora_rank", None)
    if latent is not None:
        raise GenerateError(
            f"{type(hf).__name__} caches compressed latents (multi-head latent attention, kv_lora_rank={latent}), "
            "not each head's keys and values: the generator's static cache holds the latter (forge.compile "
            "compiles its cache-free forward: kwargs={'use_cache': False})"
        )
    return hf


def attention_window(config: Any) -> tuple[int | None, str]:
    """(W, form): the sliding window of the model's windowed attention layers (a query at cache position p attends to
    keys at positions > p - W, transformers' rule for Mistral's `sliding_window`, the `"sliding_attention"` layers
    of `layer_types` and GPT-Neo's `"local"` layers) and how its layers use it: `"all"` (every layer: one mask),
    `"layer_types"` (`"sliding_attention"` and `"full_attention"` layers: a mask per type, which transformers takes
    as a dict: Gemma-2/3, Qwen2 with `use_sliding_window`), `"mixed"` (windowed and other layers otherwise: GPT-Neo's
    local/global, one mask only); (None, "none") without a window."""
    config = _text_config(config)
    layers = config.num_hidden_layers
    types = getattr(config, "layer_types", None)
    if types is not None:
        kinds = set(types[:layers])
        if "sliding_attention" not in kinds or getattr(config, "sliding_window", None) is None:
            return None, "none"
        if kinds == {"sliding_attention"}:
            return config.sliding_window, "all"
        return config.sliding_window, "layer_types" if kinds == {"sliding_attention", "full_attention"} else "mixed"
    local = getattr(config, "attention_layers", None)
    if local is not None and "local" in local[:layers]:
        return config.window_size, "all" if set(local[:layers]) == {"local"} else "mixed"
    window = getattr(config, "sliding_window", None)
    return (window, "all") if window is not None else (None, "none")


def _text_config(config: Any) -> Any:
    """The decoder's part of a config (a multimodal model's text config; the config itself otherwise)."""
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _head_shapes(config: Any) -> tuple[int, int, int]:
    """(layers, kv heads, head dim) of a decoder config."""
    config = _text_config(config)
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return config.num_hidden_layers, kv_heads, head_dim


class _CacheView:
    """What the transformers attention layers call: `update(k, v, layer)` writes the new rows into
    the layer's cache buffers at `cache_position` (in place) and returns the whole buffers, or only the new
    rows when the call attends to its own rows (`StaticCacheLM.chunk_reads_cache`)."""

    is_compileable = True

    def __init__(self, owner: StaticCacheLM, cache_position: torch.Tensor, reads_cache: bool = True):
        self.owner = owner
        self.cache_position = cache_position
        self.reads_cache = reads_cache

    def get_seq_length(self, layer_idx: int = 0) -> int:
        """0. Some models (OPT) ask the cache how many positions it holds, to derive position ids or a mask when
        none is given; the wrapper always gives both (`position_ids`, a 4-D mask), so the answer is never used."""
        return 0

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any, **kwargs: Any):
        keys = self.owner.get_buffer(f"key_cache_{layer_idx}")
        values = self.owner.get_buffer(f"value_cache_{layer_idx}")
        keys[:, :, self.cache_position] = key_states  # aten.index_put_ (StaticLayer's index_copy_, same rows)
        values[:, :, self.cache_position] = value_states
        return (keys, values) if self.reads_cache else (key_states, value_states)


class StaticCacheLM(nn.Module):
    """A causal LM with its KV cache as buffers (see the module docstring)."""

    def __init__(self, hf: nn.Module, batch: int, cache_len: int, chunk_reads_cache: bool = True):
        super().__init__()
        self.hf = hf
        self.cache_len = cache_len
        self.chunk_reads_cache = chunk_reads_cache
        """False for a generator whose prompts fit one chunk (`prefills_in_one_chunk`): a call of several rows
        then only ever runs at cache positions 0.., before which the cache holds nothing to attend to, so its
        attention reads its own rows (`sdpa` over the chunk) instead of the cache and the rows
        (`cached_sdpa`, whose cache part would be all masked out). A decode step always reads the cache.
        A left-padding row then attends to itself: with every key masked its scores are all the float32 minimum,
        which at bf16/f16 becomes -inf, and OpenVINO's attention made the row NaN; its NaN K/V rows then reached
        every token through a 0 weight (`cached_sdpa` softmaxes such a row to 0). No token attends to a padding
        row, so the tokens' values are the same."""
        window, form = attention_window(hf.config)
        self.window = window if window is not None and window < cache_len else None
        """The sliding window when it binds (`attention_window`: a sequence of `cache_len` positions can exceed it),
        built into the mask; None otherwise."""
        self.per_layer_type = self.window is not None and form == "layer_types"
        """A mask per layer type (`{"full_attention": ..., "sliding_attention": ...}`, as transformers builds them)."""
        if self.window is not None and form == "mixed":
            raise GenerateError(
                f"{type(hf).__name__} attends within a {window}-token window in some layers and otherwise in "
                f"others, which the generator's one mask cannot express once a sequence exceeds the window; this "
                f"generator's cache has {cache_len} positions: keep the prompt (padded) plus the new tokens within "
                f"{window}"
            )
        layers, kv_heads, head_dim = _head_shapes(hf.config)
        first = next(hf.parameters())
        dtype, device = first.dtype, first.device  # a meta model's cache is on meta too (zeros when emitted)
        for i in range(layers):
            shape = (batch, kv_heads, cache_len, head_dim)
            self.register_buffer(f"key_cache_{i}", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
            self.register_buffer(f"value_cache_{i}", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def reads_cache(self, rows: int) -> bool:
        """Whether a call of `rows` new rows attends to the cache (a decode step always; a chunk unless
        `chunk_reads_cache` is off) rather than to its own rows only."""
        return self.chunk_reads_cache or rows == 1

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        position_ids: torch.Tensor,
        cache_position: torch.Tensor,
    ) -> torch.Tensor:
        reads_cache = self.reads_cache(input_ids.shape[1])
        length = self.cache_len if reads_cache else input_ids.shape[1]  # own rows: cache positions 0..L-1
        # the keys' positions; the own rows' are the inputs (not an arange the decode graph folds too)
        keys = torch.arange(length, device=input_ids.device) if reads_cache else cache_position
        if attention_mask.dtype == torch.bool:  # the keys themselves (a decode step: the host's running mask)
            full = attention_mask[:, None, None, :length]
        else:  # the prompt's padding (0/1), made causal here
            causal = keys[None, :] <= cache_position[:, None]
            full = causal[None, None, :, :] & attention_mask[:, None, None, :length].bool()
        # transformers' sliding window: keys less than `window` positions back
        windowed = None if self.window is None else full & (keys[None, :] > cache_position[:, None] - self.window)
        dtype = self.get_buffer("key_cache_0").dtype
        zero, lowest = torch.zeros((), dtype=dtype), torch.full((), torch.finfo(dtype).min, dtype=dtype)

        def additive(allowed: torch.Tensor) -> torch.Tensor:
            if not reads_cache:  # a padding row attends to itself: a row with no key is NaN at bf16/f16 (see below)
                allowed = allowed | (keys[None, :] == cache_position[:, None])[None, None, :, :]
            return torch.where(allowed, zero, lowest)  # where.self: the dialect has it (where.Scalar it lacks)

        if self.per_layer_type:
            mask: Any = {"full_attention": additive(full), "sliding_attention": additive(windowed)}
        else:
            mask = additive(full if windowed is None else windowed)
        out = self.hf(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            cache=_CacheView(self, cache_position, reads_cache),
            use_cache=True,
            logits_to_keep=1,
            return_dict=True,
        )
        return out.logits


def prefills_in_one_chunk(chunk: int, cache_len: int) -> bool:
    """Whether every prompt a generator serves is prefilled in one call, at cache position 0: two chunks and one
    new token need `2 * chunk <= cache_len` positions (`Generator.fits`)."""
    return 2 * chunk > cache_len


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
        if spec.initial is not None and spec.initial.device.type == "meta":
            continue  # a meta model's cache: the StateStore's zeros, what StaticCacheLM holds
        c.extras["states"].initial.setdefault(spec.name, spec.initial)


def _bind_checkpoint(c: Compilation) -> None:
    """A model on the meta device (`compile_generator(weights_from=...)`): the weights the planned graph reads,
    bound memory-mapped from the safetensors files before the emit (never copied). The wrapper's names are
    the checkpoint's under `hf.`; a tied weight is found under its other name (`save_pretrained` keeps one)."""
    source = c.extras.get("weights_source")
    if source is None:
        return
    from forge.driver.report import used_weights
    from forge.frontend.meta_weights import WeightBindError, bind, external_names

    store = c.imported.weights
    names = external_names(store, used_weights(c.module))
    aliases: dict[str, list[str]] = {}
    for alias, canonical in store.aliases.items():
        aliases.setdefault(canonical, []).append(alias)
    keys = {}
    for name in names:
        candidates = [k for n in (name, *sorted(aliases.get(name, ()))) for k in (n, n.removeprefix("hf."))]
        keys[name] = next((k for k in candidates if k in source.entries), name)
    try:
        c.imported.weights = bind(store, source, names, keys)
    except WeightBindError as err:
        raise GenerateError(f"{err}") from None


STEP = (
    IMPORT_MODULE,
    OPTIMIZE,
    LOWER,
    PLAN,
    Stage("cache states", _register_states),
    Stage("checkpoint weights", _bind_checkpoint),
    EMIT,
)
"""One generator graph (prefill or decode): `compile`'s stages on the cache wrapper, its buffers as states
(and, for a model on the meta device, its weights bound from the checkpoint before the emit)."""


def _compile_step(
    name: str,
    wrapper: StaticCacheLM,
    args: tuple[torch.Tensor, ...],
    states: Any,
    options: CompileOptions,
    source: Any = None,
    group: Any = None,
) -> CompiledStep:
    """One graph; its report says what a call moves between the devices: `transfer_bytes` in all, of which
    `state_bytes_moved` are the KV cache's (`new_row_bytes`: the rows the call writes, what a cache kept on
    the device must still receive)."""
    c = Compilation(options, model=wrapper, args=args)
    c.extras.update(state=True, states=states, weights_source=source, graph_group=group)
    try:
        c.run(STEP)
    except ExportError as err:
        rows = args[0].shape[1]
        keys = wrapper.cache_len if wrapper.reads_cache(rows) else rows
        raise GenerateError(
            f"{type(wrapper.hf).__name__}'s {name} step does not trace with the generator's inputs ({rows} new "
            f"token(s) over a static KV cache of {wrapper.cache_len} positions, an additive attention mask "
            f"[batch, 1, {rows}, {keys}] and position_ids): {err}"
        ) from err
    ms = (time.perf_counter() - c.started) * 1e3
    program = c.executor.program
    stats = program.stats()
    state_bytes = sum(program.buffers[b].nbytes for b in program.states.values())
    report = {
        "compile_ms": round(ms, 1),
        "segments": stats["segments"],
        "npu_ops": stats["npu_ops"],
        "cpu_ops": stats["cpu_ops"],
        "transfers": stats["transfers"],
        "planned_bytes": stats["planned_bytes"],
        "states": len(program.states),
        "state_bytes": state_bytes,
        "transfer_bytes": stats["transfer_bytes"],
        "state_bytes_moved": stats["state_bytes_moved"],
        "new_row_bytes": state_bytes * args[0].shape[1] // wrapper.cache_len,
        "reads_cache": wrapper.reads_cache(args[0].shape[1]),
        "cpu_fallback": _fallbacks(c.module),
        "runtime_config": program.runtime.config(),  # `runs_as`: the precision the device computes in
    }
    return CompiledStep(name, c.executor, c.module, c.imported, ms, report)


def _fallbacks(module: Any) -> dict[str, int]:
    found: dict[str, int] = {}
    for op in module.walk():
        if op.name == "buffer.exec" and op.kind.data == "aten":
            name = op.params.data["op"].data
            found[name] = found.get(name, 0) + 1
    return dict(sorted(found.items()))


DEFAULT_CHUNK = 32
"""Prefill chunk length when no prompt length is given: a prompt is left-padded to a multiple of it."""
DEFAULT_CACHE_LEN = 256
"""KV-cache positions of `forge.generate`'s first generator for a model (capped at the model's positions);
doubled, once per doubling, when a call needs more."""


@contextmanager
def host_threads(count: int = 1) -> Iterator[None]:
    """torch's intra-op threads for the host work between device steps (the cache's row writes, the token's
    choice): one by default. That work is small, and torch's pool keeps spinning after it while the next
    segment runs: on 2 cores a 1B Llama's decode step took 138 ms with torch's 2 threads, 100 ms with 1 (the
    segment alone). `FORGE_GENERATE_HOST_THREADS` overrides the count; torch's own count is restored after."""
    count = int(os.environ.get("FORGE_GENERATE_HOST_THREADS", count))
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, count))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Generator:
    """A compiled prefill chunk + decode step over one KV cache (`compile_generator` makes it).

    It serves any prompt length `P` and `max_new_tokens` `N` with `padded_len(P) + N - 1 <= cache_len`
    (`fits`), compiling nothing more: the prompt is left-padded to a multiple of `chunk` and prefilled
    chunk by chunk (one compiled `[B, chunk]` graph, called at cache positions `0..`), then decoded one
    token at a time (one compiled `[B, 1]` graph). `compiles` counts its graph compiles (2).

    `generate(input_ids, max_new_tokens, attention_mask=None, **decoding)` -> `[B, P + new]` token ids (greedy,
    or sampled: `forge.driver.sampling`); the decoding options are per call, so they never compile anything;
    `prefill_logits(input_ids, attention_mask=None)` runs the prefill alone (for parity checks) and
    returns the last prompt position's logits; `reset()` zeroes the cache in place. After `generate`,
    `last_timings` holds the prefill and per-token decode times (ms), and of each the part spent in the device
    calls (`prefill_device_ms`, `decode_device_ms`): the rest is the host's (inputs, the cache's row writes, the
    token's choice).
    """

    def __init__(
        self,
        hf: nn.Module,
        batch: int,
        chunk: int,
        cache_len: int,
        prefill: CompiledStep,
        decode: CompiledStep,
        states: Any,
        options: CompileOptions | None = None,
        group: Any = None,
        sharing: dict[str, Any] | None = None,
    ):
        self.hf = hf
        self.group = group
        """The GraphGroup both graphs belong to (one device program holding the weights once, or each graph its
        own: `sharing`), if any."""
        self.sharing = sharing or {"one_program": True}
        """`weight_sharing`'s decision: `one_program`, `top_level`, what was requested, the cache-to-weights ratio."""
        self.options = options or CompileOptions()
        self.batch, self.chunk, self.cache_len = batch, chunk, cache_len
        self.prefill, self.decode = prefill, decode
        self.states = states
        self.compiles = 2
        self.last_timings: dict[str, Any] = {}

    # ---- sizes ------------------------------------------------------------------------------

    def padded_len(self, prompt_len: int) -> int:
        """The cache positions a prompt of `prompt_len` tokens takes: left-padded to a multiple of `chunk`."""
        return -(-prompt_len // self.chunk) * self.chunk

    def fits(self, prompt_len: int, max_new_tokens: int) -> bool:
        """Whether this generator serves the request (the last decode step writes position padded + new - 2)."""
        needed = self.padded_len(prompt_len) + max_new_tokens - 1
        return prompt_len >= 1 and max_new_tokens >= 1 and needed <= self.cache_len

    # ---- one step ---------------------------------------------------------------------------

    def reset(self) -> None:
        """The KV cache back to zeros, in place (the same memory)."""
        self.states.reset()

    def _check(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_new_tokens: int) -> torch.Tensor:
        if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2 or input_ids.dtype != torch.long:
            got = (f"{str(input_ids.dtype).removeprefix('torch.')} {list(input_ids.shape)}"
                   if isinstance(input_ids, torch.Tensor) else type(input_ids).__name__)
            raise GenerateError(f"input_ids must be an int64 tensor [batch, prompt_len], got {got}")
        batch, prompt_len = input_ids.shape
        if batch != self.batch:
            raise GenerateError(f"input_ids has batch {batch}, this generator was compiled for batch {self.batch}")
        if not self.fits(prompt_len, max_new_tokens):
            raise GenerateError(
                f"prompt {prompt_len} (padded to {self.padded_len(prompt_len)}) + {max_new_tokens} new tokens exceed "
                f"the cache of {self.cache_len} positions (compile a generator with a larger cache_len; "
                "forge.generate grows its cache by doubling)"
            )
        if attention_mask is None:
            return torch.ones(batch, prompt_len, dtype=torch.long)
        if tuple(attention_mask.shape) != (batch, prompt_len):
            raise GenerateError(f"attention_mask is {list(attention_mask.shape)}, expected {[batch, prompt_len]}")
        mask = attention_mask.to(torch.long)
        if not bool(((mask == 0) | (mask == 1)).all()):
            raise GenerateError("attention_mask must hold 0 (padding) and 1 (tokens) only")
        empty = (mask.sum(-1) == 0).nonzero().flatten().tolist()
        if empty:
            raise GenerateError(f"attention_mask row {empty[0]} has no tokens")
        right = (mask[:, 1:] < mask[:, :-1]).any(-1).nonzero().flatten().tolist()
        if right:
            raise GenerateError(
                f"attention_mask row {right[0]} has padding after its tokens (right padding): new tokens follow the "
                "last position, so pad on the left (tokenizer.padding_side = 'left'), as transformers asks"
            )
        return mask

    def _prefill(self, input_ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Left-pad the prompt to `padded_len` and run the prefill chunks: (last logits, cache mask, padded length)."""
        b, p = input_ids.shape
        padded = self.padded_len(p)
        ids = torch.zeros(b, padded, dtype=torch.long)
        ids[:, padded - p :] = input_ids
        full = torch.ones(b, self.cache_len, dtype=torch.long)
        full[:, :padded] = 0
        full[:, padded - p : padded] = mask
        prompt_mask = full[:, :padded]
        positions = (prompt_mask.cumsum(-1) - 1).masked_fill_(prompt_mask == 0, 1)  # transformers' positions
        logits = None
        assert padded == self.chunk or self.prefill.report.get("reads_cache", True), "a one-chunk prefill graph"
        for start in range(0, padded, self.chunk):
            end = start + self.chunk
            logits = self.prefill.executor(
                ids[:, start:end], full, positions[:, start:end].contiguous(), torch.arange(start, end)
            )[0]
        assert logits is not None
        return logits, full, padded

    def prefill_logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Logits `[B, 1, vocab]` of the prompt's last position; fills the cache's first `padded_len(P)` rows."""
        mask = self._check(input_ids, attention_mask, 1)
        self.reset()
        with host_threads():
            return self._prefill(input_ids, mask)[0]

    # ---- generation --------------------------------------------------------------------------

    def generate(
        self,
        input_ids: torch.Tensor,
        max_new_tokens: int,
        attention_mask: torch.Tensor | None = None,
        *,
        scores: list[torch.Tensor] | None = None,
        **decoding: Any,
    ) -> torch.Tensor:
        """`[B, P + new]` token ids, as `transformers` `generate` gives them with the same options.

        Greedy by default; `decoding` are `forge.driver.sampling.Decoding.build`'s options: `do_sample`,
        `temperature`, `top_k`, `top_p`, `repetition_penalty`, `seed` or `generator`, `eos_token_id`,
        `pad_token_id`, `stop` (+ `tokenizer` for strings) and `streamer`. `scores`, a list, receives each
        step's processed scores `[B, vocab]` (transformers' `output_scores`)."""
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise GenerateError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
        mask = self._check(input_ids, attention_mask, max_new_tokens)
        with host_threads():
            return self._generate(input_ids, max_new_tokens, mask, scores, decoding)

    def _generate(
        self,
        input_ids: torch.Tensor,
        max_new_tokens: int,
        mask: torch.Tensor,
        scores: list[torch.Tensor] | None,
        decoding: dict[str, Any],
    ) -> torch.Tensor:
        b, p = input_ids.shape
        rules = Decoding.build(self.hf, b, mask, **decoding)
        self.reset()
        sequences = torch.empty(b, p + max_new_tokens, dtype=torch.long)
        sequences[:, :p] = input_ids
        rules.start(input_ids)
        clocks = self.prefill.executor.clock, self.decode.executor.clock
        before = clocks[0].ns + clocks[1].ns
        start = time.perf_counter()
        logits, full, padded = self._prefill(input_ids, mask)
        prefill_ms = (time.perf_counter() - start) * 1e3
        prefill_device_ms = (clocks[0].ns + clocks[1].ns - before) / 1e6
        real = mask.sum(-1).numpy()
        unfinished = torch.ones(b, dtype=torch.bool)
        step_ids = torch.empty(b, 1, dtype=torch.long)
        step_pos = torch.empty(b, 1, dtype=torch.long)
        step_cache = torch.empty(1, dtype=torch.long)
        # the step's bookkeeping through numpy views of the same memory: a few us per write where torch's
        # indexing took tens, on the caches the decode step's weights evicted
        seq, ids, pos, cache = (t.numpy() for t in (sequences, step_ids, step_pos, step_cache))
        attended = torch.zeros(b, self.cache_len, dtype=torch.bool)  # the decode step's keys: the prompt's, then
        attended[:, :padded] = full[:, :padded].bool()  # each position as it is written
        keys = attended.numpy()
        out = [torch.empty_like(logits)]
        decode_ms: list[float] = []
        decode_device_ms: list[float] = []
        n, start = 0, None
        while True:
            token = rules.next_token(sequences[:, : p + n], logits, scores)
            seq[:, p + n] = rules.keep(token, unfinished).numpy()
            if start is not None:  # a decode step: the graph, then the token's choice
                decode_ms.append((time.perf_counter() - start) * 1e3)
                decode_device_ms.append((clocks[1].ns - before) / 1e6)
            n += 1
            if not rules.finish(sequences[:, p : p + n], unfinished) or n == max_new_tokens:
                break
            start, before = time.perf_counter(), clocks[1].ns
            ids[:, 0] = seq[:, p + n - 1]
            pos[:, 0] = real + (n - 1)
            cache[0] = padded + n - 1
            keys[:, padded + n - 1] = True
            self.decode.executor.run(step_ids, attended, step_pos, step_cache, out=out)
            logits = out[0]
        rules.end()
        self.last_timings = {"prefill_ms": prefill_ms, "decode_ms": decode_ms, "prefill_device_ms": prefill_device_ms,
                             "decode_device_ms": decode_device_ms}
        return sequences[:, : p + n].clone()

    def decode_host_ms(self) -> list[float]:
        """The last `generate`'s decode steps less their device calls (ms): the host's part of each step."""
        t = self.last_timings
        return [step - device for step, device in zip(t["decode_ms"], t["decode_device_ms"], strict=True)]

    def save(self, directory: Any) -> Any:
        """Write both graphs' buffer IR, their weights (once) and meta.json (batch, chunk, cache length,
        options, generation config); `forge.load` gives back a Generator (forge/driver/saved_kinds.py)."""
        from forge.driver.saved_kinds import save_generator

        return save_generator(self, directory)

    def report(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "chunk": self.chunk,
            "cache_len": self.cache_len,
            "compiles": self.compiles,
            "precision": self.options.precision,
            "weights": self.options.weights,
            "activations": self.options.activations,
            "prefill": self.prefill.report,
            "decode": self.decode.report,
            **({"device_program": {**self.group.report(), "sharing": self.sharing}} if self.group is not None else {}),
        }


POSITION_LIMITS = ("max_position_embeddings", "n_positions", "max_seq_len")
"""Config attributes that bound a model's positions, by family (`max_seq_len`: MPT, whose ALiBi bias is built for
that many keys: a longer cache fails its trace)."""


def _positions(config: Any) -> int | None:
    """The model's position limit (None when it has none)."""
    return next((v for v in (getattr(config, a, None) for a in POSITION_LIMITS) if v), None)


def compile_generator(
    model: nn.Module,
    *,
    batch: int = 1,
    prompt_len: int | None = None,
    max_new_tokens: int | None = None,
    cache_len: int | None = None,
    chunk: int | None = None,
    runtime: str = "openvino",
    device: str = "CPU",
    precision: str | None = None,
    weights: str | None = None,
    progress: Progress | None = None,
    weights_from: Any = None,
    share_weights: bool | None = None,
    activations: str | None = None,
) -> Generator:
    """Compile `model`'s prefill chunk (`[batch, chunk]`) and decode step (`[batch, 1]`) over one KV cache of
    `cache_len` positions: two compiles, then any prompt length and max_new_tokens that fit (`Generator.fits`).

    `chunk` defaults to `prompt_len` when given (that prompt is prefilled in one call), else `DEFAULT_CHUNK`;
    `cache_len` to `padded prompt_len + max_new_tokens` when both are given, else `DEFAULT_CACHE_LEN`
    (capped at the model's positions). `precision`, `weights` and `activations` are `forge.compile`'s, for both
    graphs (`activations="int8"` quantizes where a matmul has several rows: the prefill, and in one device
    program the decode step too).
    `weights_from`: the safetensors checkpoint (a file, a folder, a list) of a model whose parameters are on
    the meta device (`forge.init_empty_weights`): both graphs read its weights memory-mapped.
    `share_weights`: both graphs one device program holding the weights once (True), or each its own (False);
    None chooses by `weight_sharing`'s cost model."""
    from backends.nnfactory.executor import StateStore  # lazy: start-up cost (openvino)

    if share_weights is not None and not isinstance(share_weights, bool):
        raise GenerateError(f"share_weights must be True, False or None (choose), got {share_weights!r}")
    hf = causal_lm(model).eval()
    limit = _positions(hf.config)
    if chunk is None:
        chunk = prompt_len if prompt_len is not None else DEFAULT_CHUNK
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise GenerateError(f"chunk (or prompt_len) must be a positive int, got {chunk!r}")
    if cache_len is None:
        if prompt_len is not None and max_new_tokens is not None:
            cache_len = -(-prompt_len // chunk) * chunk + max_new_tokens
        elif prompt_len is not None or max_new_tokens is not None:
            raise GenerateError("give both prompt_len and max_new_tokens, or cache_len")
        else:
            cache_len = min(DEFAULT_CACHE_LEN, limit or DEFAULT_CACHE_LEN)
            chunk = min(chunk, cache_len - 1)
    if cache_len <= chunk:
        raise GenerateError(f"need chunk < cache_len, got chunk {chunk}, cache_len {cache_len}")
    if limit is not None and cache_len > limit:
        raise GenerateError(f"cache_len {cache_len} exceeds the model's {limit} positions")
    wrapper = StaticCacheLM(hf, batch, cache_len, not prefills_in_one_chunk(chunk, cache_len)).eval()
    states = StateStore()
    mask = torch.ones(batch, cache_len, dtype=torch.long)
    prefill_args = (
        torch.zeros(batch, chunk, dtype=torch.long),
        mask,
        torch.arange(chunk).expand(batch, chunk).contiguous(),
        torch.arange(chunk),
    )
    decode_args = (
        torch.zeros(batch, 1, dtype=torch.long),
        torch.ones(batch, cache_len, dtype=torch.bool),  # the keys a step attends (`Generator._generate`)
        torch.full((batch, 1), chunk, dtype=torch.long),
        torch.tensor([chunk]),
    )
    options = CompileOptions.of(runtime=runtime, device=device, precision=precision, weights=weights,
                                activations=activations, progress=progress)
    source = None
    if weights_from is not None:
        from forge.frontend.meta_weights import SafetensorsSource, WeightBindError  # lazy: only a meta model

        try:
            source = SafetensorsSource.open(weights_from)
        except WeightBindError as err:
            raise GenerateError(str(err)) from None
    if source is not None:  # traced on the meta device with the model (the importer's IR is the host's)
        prefill_args = tuple(a.to("meta") for a in prefill_args)
        decode_args = tuple(a.to("meta") for a in decode_args)
    sharing = weight_sharing(wrapper, options.weights, share_weights, chunk)
    group = generator_group(options, sharing)
    prefill = _compile_step("prefill", wrapper, prefill_args, states, options, source, group)
    decode = _compile_step("decode", wrapper, decode_args, states, options, source, group)
    group.compile()
    return_freed_heap()
    return Generator(hf, batch, chunk, cache_len, prefill, decode, states, options, group, sharing)


IF_COPY_COST = 1.6
"""What OpenVINO's `If` copying the KV cache into the decode body adds to a decode step, as a fraction of the step
per unit of the cache's bytes over the weight bytes a step streams: GPT-2 12L int8 (cache 11.4% of them) decoded
in 8.64 ms in an `If` against 7.32 ms alone, one process, 15 interleaved rounds (+18%: 1.6 x 0.114).
backends/nnfactory/runtime/openvino_group.py has the measurements."""
_STREAMED_FRACTION = {None: 1.0, "int8": 0.25, "int4": 0.125}
"""The weight bytes a step streams per f32 parameter byte, by weight mode (the matmul weights dominate)."""


def weight_sharing(wrapper: StaticCacheLM, weights: str | None, requested: bool | None, chunk: int) -> dict[str, Any]:
    """How a generator's graphs hold the weights, and why. `one_program`: one device program, the weights held
    once (unless `requested` is False: each graph its own program and its own copy of the weights, no call
    paying for the other graph). `top_level`: "decode" when the decode step runs outside the program's `If`, so
    that nothing copies the cache, at the price of a decode step in every prefill call; None when both graphs
    are `If` bodies. The cheaper form for a request that fills the cache, half prompt and half new tokens:
    `prefill_calls` decode steps on top, against the `If`'s copies over as many decode steps (`if_copies`, in
    decode steps: `IF_COPY_COST` x the cache's share of the streamed weights x the steps)."""
    cache = sum(b.numel() * b.element_size() for b in wrapper.buffers(recurse=False))
    streamed = sum(p.numel() * p.element_size() for p in wrapper.hf.parameters()) * _STREAMED_FRACTION[weights]
    ratio = cache / max(streamed, 1)
    steps = wrapper.cache_len // 2
    prefill_calls = -(-(wrapper.cache_len - steps) // chunk)
    if_copies = IF_COPY_COST * ratio * steps
    one = requested is not False
    top = "decode" if one and prefill_calls < if_copies else None
    return {"one_program": one, "top_level": top, "requested": requested, "cache_to_weights": round(ratio, 4),
            "prefill_calls": prefill_calls, "if_copies": round(if_copies, 2)}


def generator_group(options: CompileOptions, sharing: dict[str, Any]) -> Any:
    """The GraphGroup of a generator's graphs (compiled or loaded) as `sharing` (`weight_sharing`) says; they
    join it in `GENERATOR_GRAPHS` order."""
    top = sharing.get("top_level")
    return graph_group(options, bool(sharing.get("one_program", True)),
                       GENERATOR_GRAPHS.index(top) if top is not None else None)


_GENERATORS: weakref.WeakKeyDictionary[nn.Module, dict[tuple, Generator]] = weakref.WeakKeyDictionary()
"""forge.generate's generators: one per model and (batch, runtime, device, precision, weights, activations,
share_weights), whatever the prompt length."""


def generate(
    model: nn.Module,
    input_ids: torch.Tensor,
    max_new_tokens: int = 32,
    attention_mask: torch.Tensor | None = None,
    *,
    runtime: str = "openvino",
    device: str = "CPU",
    precision: str | None = None,
    weights: str | None = None,
    share_weights: bool | None = None,
    activations: str | None = None,
    **decoding: Any,
) -> torch.Tensor:
    """Generation with Forge (see the module docstring): `[B, P + new]` token ids.

    Greedy by default, or sampled as transformers samples (`do_sample=True`, `temperature`, `top_k`, `top_p`,
    `repetition_penalty`, `seed=` or `generator=`), ending on `eos_token_id` or `stop` sequences, each new
    token passed to `streamer(row, token)`: `forge.driver.sampling` says what each option does.
    `precision`, `weights` and `activations` are `forge.compile`'s (both graphs are compiled with them);
    `share_weights` is `compile_generator`'s.

    One generator is kept per model and (batch, runtime, device, precision, weights, activations,
    share_weights): its first call compiles it (a prefill chunk of `DEFAULT_CHUNK` tokens and a decode step over
    a cache of `DEFAULT_CACHE_LEN` positions, capped at the model's), and every later call whose prompt and
    max_new_tokens fit its cache compiles nothing, whatever its decoding options. A call that does not fit
    replaces it by one with the cache doubled (as often as needed, up to the model's positions): a bounded number
    of compiles per model."""
    if not isinstance(input_ids, torch.Tensor) or input_ids.dim() != 2:
        raise GenerateError("input_ids must be a tensor [batch, prompt_len]")
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise GenerateError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")
    options = CompileOptions.of(runtime=runtime, device=device, precision=precision, weights=weights,
                                activations=activations)
    batch, prompt_len = input_ids.shape
    check_decoding(model, batch, prompt_len, **decoding)
    key = (batch, runtime, device, options.precision, options.weights, options.activations, share_weights)
    cache = _GENERATORS.setdefault(model, {})
    gen = cache.get(key)
    if gen is None or not gen.fits(prompt_len, max_new_tokens):
        cache_len, chunk = _geometry_for(model, gen, prompt_len, max_new_tokens)
        cache.pop(key, None)  # the old generator's graphs and cache are freed before the new compile
        gen = cache[key] = compile_generator(
            model,
            batch=batch,
            cache_len=cache_len,
            chunk=chunk,
            runtime=runtime,
            device=device,
            precision=options.precision,
            weights=options.weights,
            share_weights=share_weights,
            activations=options.activations,
        )
    return gen.generate(input_ids, max_new_tokens, attention_mask, **decoding)


def check_decoding(model: nn.Module, batch: int, prompt_len: int, **decoding: Any) -> None:
    """The decoding options checked for `model` (`GenerateError` naming the option), before anything compiles."""
    Decoding.build(causal_lm(model), batch, torch.ones(batch, prompt_len), **decoding)


def _geometry_for(model: nn.Module, old: Generator | None, prompt_len: int, max_new_tokens: int) -> tuple[int, int]:
    """(cache_len, chunk): `DEFAULT_CACHE_LEN` (or the old generator's), doubled until the request fits, capped at
    the model's positions (and at the window of a model mixing windowed and full attention layers:
    `StaticCacheLM` refuses more); `DEFAULT_CHUNK`, below the cache length."""
    config = causal_lm(model).config
    limit = _positions(config)
    window, form = attention_window(config)
    bound = f"the model's {limit} positions"
    if form == "mixed" and window is not None and (limit is None or window < limit):
        limit, bound = window, f"the {window}-token window of the model's windowed attention layers"
    cache_len = old.cache_len if old is not None else DEFAULT_CACHE_LEN
    if limit is not None:
        cache_len = min(cache_len, limit)
    chunk = min(DEFAULT_CHUNK, cache_len - 1)
    needed = -(-prompt_len // chunk) * chunk + max_new_tokens - 1
    while cache_len < needed and (limit is None or cache_len < limit):
        cache_len = min(2 * cache_len, limit) if limit is not None else 2 * cache_len
    if cache_len < needed:
        raise GenerateError(
            f"prompt {prompt_len} (padded to a multiple of {chunk}) + {max_new_tokens} new tokens exceed {bound}"
        )
    return cache_len, chunk
