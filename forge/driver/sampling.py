"""How generation picks each next token and when a sequence ends (on the host, on the last logits row).

`Decoding.build(hf, batch, prompt_mask, ...)` resolves the options as `transformers` `generate` does (the
caller's value, else the model's `generation_config`, else transformers' defaults: temperature 1.0, top_k 50,
top_p 1.0, repetition_penalty 1.0, do_sample False; an option passed as None is off, as transformers has it:
`eos_token_id=None` stops on no token, `top_k=None` filters nothing) and checks them (`GenerateError` naming the
option). The logits are processed by transformers' own classes, in its order: `RepetitionPenaltyLogitsProcessor` (the
prompt's left padding ignored, as transformers does), then, when sampling, `TemperatureLogitsWarper`,
`TopKLogitsWarper`, `TopPLogitsWarper`; a token is `torch.multinomial(softmax(scores), 1)` (sampling) or the
argmax. So with the same RNG stream (`torch.manual_seed(s)` before transformers' `generate`, `seed=s` or a
`torch.Generator` here) the draws are the same calls on the same generator state as transformers'.

A sequence ends on an end-of-sequence token (`eos_token_id`: one or several; the model's by default) or a
stop sequence (`stop`: token-id sequences matched against the sequence's new tokens; strings only with a
`tokenizer`, matched in the decoded new text, so a string ends generation however it was tokenized); a finished
row gets `pad_token_id` (the model's `generation_config.pad_token_id` when not given, the first EOS token if
that is unset too) from then on, as transformers pads it, and generation
ends when every row has finished. `streamer` is called `streamer(row, token)` for each new token of each
unfinished row, in order; an object with `put`/`end` (a transformers streamer) gets transformers' calls.

`GenerateError` lives here because generation imports this module (and re-exports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["Decoding", "GenerateError"]

DEFAULTS = {"do_sample": False, "temperature": 1.0, "top_k": 50, "top_p": 1.0, "repetition_penalty": 1.0}
"""transformers' defaults (`GenerationConfig._get_default_generation_params`) for what neither caller nor model sets."""

_NUMPY_ARGMAX = frozenset({torch.float32, torch.float16})
"""Logits dtypes whose greedy argmax `Decoding.next_token` takes through numpy (bf16 has no numpy dtype)."""

OFF = {"do_sample": False, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "repetition_penalty": 1.0}
"""What an option passed as None does in transformers' `generate`: it overrides the model's value with None (its
`GenerationConfig.update` sets what the call gives, None included), and a None setting adds no processor (greedy,
no temperature, no top-k, no top-p, no penalty). An option not passed takes the model's value, else `DEFAULTS`."""

SAMPLING_ONLY = ("temperature", "top_k", "top_p")
OPTIONS = frozenset({*DEFAULTS, "seed", "generator", "eos_token_id", "pad_token_id", "stop", "tokenizer", "streamer"})
"""The keyword options of `Decoding.build` a caller passes (through `forge.generate` and `Generator.generate`)."""


class GenerateError(ValueError):
    """Bad arguments to generation (shapes, lengths, options, a model that is not a causal LM)."""


def _number(name: str, value: Any, kind: type) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float else int):
        raise GenerateError(f"{name} must be {'a number' if kind is float else 'an int'}, got {value!r}")
    return kind(value)


def _processors(sample: bool, t: float, k: int, p: float, penalty: float, prompt_mask: torch.Tensor) -> Any:
    """transformers' processors of these settings, in its order; None when there is none (greedy decoding, or
    sampling at temperature 1 with no top-k or top-p): then transformers is not imported, which a loaded
    generator's process would otherwise do for them alone (0.6 s and 21 MiB in a fresh process)."""
    if penalty == 1.0 and not (sample and (t != 1.0 or k != 0 or p < 1.0)):
        return None
    from transformers import (  # lazy: start-up cost
        LogitsProcessorList,
        RepetitionPenaltyLogitsProcessor,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    processors = LogitsProcessorList()
    if penalty != 1.0:  # transformers ignores the prompt's left padding when penalizing
        padding = (prompt_mask != 0).int().argmax(dim=1)
        processors.append(RepetitionPenaltyLogitsProcessor(penalty, prompt_ignore_length=padding))
    if sample:
        if t != 1.0:
            processors.append(TemperatureLogitsWarper(t))
        if k != 0:
            processors.append(TopKLogitsWarper(top_k=k, min_tokens_to_keep=1))
        if p < 1.0:
            processors.append(TopPLogitsWarper(top_p=p, min_tokens_to_keep=1))
    return processors


def _token_list(name: str, value: Any) -> list[int]:
    values = [value] if isinstance(value, int) else list(value)
    if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
        raise GenerateError(f"{name} must be a token id or a list of token ids (ints >= 0), got {value!r}")
    return values


def _rng(seed: Any, generator: Any) -> torch.Generator | None:
    """The generator the draws use: a fresh one seeded `seed`, the caller's, or None (torch's global one)."""
    if seed is not None and generator is not None:
        raise GenerateError("give seed= or generator=, not both")
    if generator is not None:
        if not isinstance(generator, torch.Generator):
            raise GenerateError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        return generator
    if seed is None:
        return None
    return torch.Generator().manual_seed(_number("seed", seed, int))


@dataclass
class Decoding:
    """The resolved choice and stopping rules of one `generate` call (see the module docstring)."""

    do_sample: bool
    temperature: float
    top_k: int
    top_p: float
    repetition_penalty: float
    processors: Any
    """transformers' LogitsProcessorList for this call, None when nothing processes the logits."""
    rng: torch.Generator | None
    eos: list[int]
    pad: int | None
    stop_ids: list[list[int]]
    stop_strings: list[str]
    tokenizer: Any
    streamer: Any
    finished: int = 0
    """Rows `finish` has marked finished so far (a Python count: the decode loop asks it every step, and a numpy or
    torch reduction over the flags took ~30 us there, on the caches the step's weights evicted)."""

    @classmethod
    def build(
        cls,
        hf: Any,
        batch: int,
        prompt_mask: torch.Tensor,
        **options: Any,
    ) -> Decoding:
        unknown = sorted(set(options) - OPTIONS)
        if unknown:
            raise GenerateError(
                f"unknown generation option(s): {', '.join(unknown)}; known: {', '.join(sorted(OPTIONS))}"
            )
        seed, generator, tokenizer, streamer = (options.get(n) for n in ("seed", "generator", "tokenizer", "streamer"))
        eos_token_id, pad_token_id, stop = (options.get(n) for n in ("eos_token_id", "pad_token_id", "stop"))
        given = {name: options.get(name) for name in DEFAULTS}
        config = getattr(hf, "generation_config", None)
        resolved = {}
        for name, value in given.items():
            if name in options:  # passed, None included: what transformers makes of it (`OFF`)
                resolved[name] = OFF[name] if value is None else value
            else:
                value = getattr(config, name, None)
                resolved[name] = DEFAULTS[name] if value is None else value
        if not isinstance(resolved["do_sample"], bool):
            raise GenerateError(f"do_sample must be True or False, got {resolved['do_sample']!r}")
        sample = resolved["do_sample"]
        ignored = [n for n in SAMPLING_ONLY if given[n] is not None]
        if ignored and not sample:
            raise GenerateError(
                f"{', '.join(ignored)} {'is' if len(ignored) == 1 else 'are'} for sampling: pass do_sample=True "
                "(without it decoding is greedy)"
            )
        if not sample and (seed is not None or generator is not None):
            raise GenerateError("seed/generator only apply when sampling: pass do_sample=True")
        t = _number("temperature", resolved["temperature"], float)
        k = _number("top_k", resolved["top_k"], int)
        p = _number("top_p", resolved["top_p"], float)
        penalty = _number("repetition_penalty", resolved["repetition_penalty"], float)
        if sample and not t > 0:
            raise GenerateError(f"temperature must be > 0 when sampling, got {t} (greedy decoding: do_sample=False)")
        if k < 0:
            raise GenerateError(f"top_k must be >= 0 (0: no top-k filtering), got {k}")
        if not 0 < p <= 1:
            raise GenerateError(f"top_p must be in (0, 1], got {p}")
        if not penalty > 0:
            raise GenerateError(f"repetition_penalty must be > 0 (1.0: none), got {penalty}")

        processors = _processors(sample, t, k, p, penalty, prompt_mask)

        if "eos_token_id" not in options:  # the model's, read at each call as transformers reads it (None: none)
            eos_token_id = getattr(config, "eos_token_id", None)
        eos = [] if eos_token_id is None else _token_list("eos_token_id", eos_token_id)
        if "pad_token_id" not in options:  # transformers: the model's pad_token_id, else the first EOS token
            pad_token_id = getattr(config, "pad_token_id", None)
        pad = eos[0] if pad_token_id is None and eos else pad_token_id
        if pad is not None:
            pad = _token_list("pad_token_id", pad)[0]
        stop_ids: list[list[int]] = []
        stop_strings: list[str] = []
        if isinstance(stop, str):
            stop = [stop]
        for s in stop or ():
            if isinstance(s, int):
                raise GenerateError(
                    f"stop is a list of stop sequences, got the token {s!r} in it: stop=[[{s}, ...]] "
                    f"(a single token: stop=[[{s}]], or eos_token_id)"
                )
            if isinstance(s, str):
                if tokenizer is None:
                    raise GenerateError(f"stop string {s!r} needs tokenizer= (or give the stop sequence as token ids)")
                if not s:
                    raise GenerateError("an empty stop string would stop at once")
                stop_strings.append(s)
            else:
                ids = _token_list("a stop sequence", s)
                if not ids:
                    raise GenerateError("an empty stop sequence would stop at once")
                stop_ids.append(ids)
        if (stop_ids or stop_strings) and pad is None and batch > 1:
            raise GenerateError("stop sequences in a batch need pad_token_id= (the token of the finished rows)")
        if streamer is not None and not (callable(streamer) or hasattr(streamer, "put")):
            raise GenerateError("streamer must be callable(row, token) or have put()/end() (a transformers streamer)")
        rng = _rng(seed, generator)
        return cls(sample, t, k, p, penalty, processors, rng, eos, pad, stop_ids, stop_strings, tokenizer, streamer)

    @property
    def stops(self) -> bool:
        """Whether a row can finish before max_new_tokens (then finished rows are padded)."""
        return bool(self.eos or self.stop_ids or self.stop_strings)

    def next_token(
        self, sequences: torch.Tensor, logits: torch.Tensor, scores: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        """One token per row from the last logits row (`scores`, a list, receives the processed scores).

        Greedy with nothing to process takes numpy's argmax of the row itself, without the float32 copy: the same
        token (the first maximum; a NaN counts as the maximum, as in torch) in ~7 us against torch's ~46 for
        50,257 logits, which matters because the host work after a decode step runs on caches the step's weights
        evicted (3-4x slower than alone)."""
        last = logits[:, -1, :]
        if scores is None and not self.do_sample and not self.processors and last.dtype in _NUMPY_ARGMAX:
            return torch.from_numpy(np.argmax(last.numpy(), axis=-1))
        processed = self.scores(sequences, logits)
        if scores is not None:
            scores.append(processed)
        return self.choose(processed)

    def scores(self, sequences: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """The processed scores `[B, vocab]` of the last logits row (float32, as transformers)."""
        row = logits[:, -1, :].to(copy=True, dtype=torch.float32)
        return row if self.processors is None else self.processors(sequences, row)

    def choose(self, scores: torch.Tensor) -> torch.Tensor:
        """One token per row: a draw from softmax(scores) when sampling, else the argmax."""
        if self.do_sample:
            probs = torch.nn.functional.softmax(scores, dim=-1)
            return torch.multinomial(probs, num_samples=1, generator=self.rng).squeeze(1)
        return scores.argmax(-1)

    def start(self, input_ids: torch.Tensor) -> None:
        if self.streamer is not None and hasattr(self.streamer, "put"):
            self.streamer.put(input_ids)

    def keep(self, token: torch.Tensor, unfinished: torch.Tensor) -> torch.Tensor:
        """The token as kept (the rows `finish` has marked finished take the pad token), streamed."""
        if self.finished and self.pad is not None:
            token = torch.where(unfinished, token, torch.full_like(token, self.pad))
        if self.streamer is not None:
            if hasattr(self.streamer, "put"):
                self.streamer.put(token)
            else:
                for row, (t, live) in enumerate(zip(token.tolist(), unfinished.tolist(), strict=True)):
                    if live:
                        self.streamer(row, t)
        return token

    def finish(self, new: torch.Tensor, unfinished: torch.Tensor) -> bool:
        """Mark (in place) the rows whose new tokens `[B, n]` (the kept one last) end in EOS or a stop sequence;
        whether a row is still unfinished. (EOS is looked up in a Python set: `torch.isin` took ~100 us a step
        after the decode step's weights evicted the caches, the set a few.)"""
        rows = new.shape[0]
        if not self.stops:
            return True
        live = unfinished.numpy()
        eos = set(self.eos)
        stops = bool(self.stop_ids or self.stop_strings)
        for row, token in enumerate(new[:, -1].tolist()):
            if live[row] and (token in eos or (stops and self._stopped(new[row]))):
                live[row] = False
                self.finished += 1
        return self.finished < rows

    def _stopped(self, new: torch.Tensor) -> bool:
        ids = new.tolist()
        if any(len(ids) >= len(s) and ids[-len(s) :] == s for s in self.stop_ids):
            return True
        if self.stop_strings:
            text = self.tokenizer.decode(ids)
            return any(s in text for s in self.stop_strings)
        return False

    def end(self) -> None:
        if self.streamer is not None and hasattr(self.streamer, "end"):
            self.streamer.end()
