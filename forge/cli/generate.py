"""`forge generate MODEL --prompt-len N --new-tokens K`: greedy generation with a KV cache.

Builds the zoo decoder's `transformers` causal LM (random seeded weights), compiles its prefill
and decode functions over one KV cache (`forge.driver.generation.compile_generator`), generates from a
seeded prompt and prints the prefill latency, decode tokens/s and per-token latency;
`--check` compares the tokens with `transformers` `generate(do_sample=False)`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

DECODER_KINDS = ("decoder", "moe")


def add_generate_parser(sub: Any) -> None:
    p = sub.add_parser("generate", help="greedy text generation with a KV cache: prefill latency, decode tokens/s")
    p.add_argument("model", help="zoo decoder (gpt2, llama, opt, mistral, ...; see `forge models`)")
    p.add_argument("--prompt-len", type=int, default=128, help="prompt tokens (default 128)")
    p.add_argument("--new-tokens", type=int, default=64, help="tokens to generate (default 64)")
    p.add_argument("--batch", type=int, default=1, help="sequences per batch (default 1)")
    p.add_argument("--layers", type=int, help="number of layers (default: the zoo default)")
    p.add_argument("--attn", help="attention implementation (default: the family's default)")
    p.add_argument("--small", action="store_true", help="the small test-size variant")
    p.add_argument("--seed", type=int, default=0, help="seed for weights and the prompt")
    p.add_argument("--device", default="CPU", help="OpenVINO device string (CPU, NPU, ...)")
    p.add_argument("--runtime", default="openvino", help="a registered runtime: openvino (default), nnfactory")
    p.add_argument("--check", action="store_true", help="compare the tokens with transformers generate")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def _model(args: argparse.Namespace) -> Any:
    from forge.models import build_model, family  # lazy: start-up cost (torch)

    f = family(args.model)
    if f.kind not in DECODER_KINDS:
        raise ValueError(f"{args.model} is not a decoder (its kind is {f.kind}); forge generate runs the "
                         f"{' and '.join(DECODER_KINDS)} families (see `forge models`)")
    return build_model(args.model, layers=args.layers, attn=args.attn, small=args.small, seed=args.seed).hf


def _check_args(args: argparse.Namespace) -> None:
    for name in ("prompt_len", "new_tokens", "batch"):
        value = getattr(args, name)
        if value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


def cmd_generate(args: argparse.Namespace) -> int:
    import torch  # lazy: start-up cost

    from forge.driver.generation import compile_generator  # lazy: start-up cost (torch)

    _check_args(args)
    hf = _model(args)
    progress = None if args.quiet else (lambda stage: print(f"{stage} ...", file=sys.stderr, flush=True))
    start = time.perf_counter()
    gen = compile_generator(hf, batch=args.batch, prompt_len=args.prompt_len, max_new_tokens=args.new_tokens,
                            runtime=args.runtime, device=args.device, progress=progress)
    compile_s = time.perf_counter() - start
    gen.eos = []  # a benchmark: always generate --new-tokens tokens
    vocab = hf.config.vocab_size
    ids = torch.randint(0, vocab, (args.batch, args.prompt_len), generator=torch.Generator().manual_seed(args.seed))
    tokens = gen.generate(ids, args.new_tokens)
    timings = gen.last_timings
    print(_summary(args, hf, gen, compile_s, timings))
    print(f"tokens[0]: {' '.join(str(int(t)) for t in tokens[0, args.prompt_len:])}")
    if args.check:
        return _check(hf, ids, tokens, args.new_tokens)
    return 0


def _summary(args: argparse.Namespace, hf: Any, gen: Any, compile_s: float, timings: dict[str, Any]) -> str:
    report = gen.report()
    decode = timings["decode_ms"]
    state_kib = report["decode"]["state_bytes"] / 2**10
    lines = [
        f"{args.model} ({type(hf).__name__}, {hf.config.num_hidden_layers} layers, random seeded weights): "
        f"batch {args.batch}, prompt {args.prompt_len}, {args.new_tokens} new tokens, KV cache "
        f"{gen.cache_len} positions ({report['decode']['states']} state buffers, {state_kib:,.0f} KiB, "
        "allocated once, updated in place)",
        f"compile: {compile_s:.1f} s (prefill {report['prefill']['compile_ms'] / 1e3:.1f} s, decode "
        f"{report['decode']['compile_ms'] / 1e3:.1f} s); cpu fallback per step: "
        + (", ".join(f"{k} x{v}" for k, v in report["decode"]["cpu_fallback"].items()) or "none"),
        f"prefill: {timings['prefill_ms']:.1f} ms ({args.batch} x {args.prompt_len} tokens, first new token)",
    ]
    if decode:
        per_s = len(decode) * args.batch / (sum(decode) / 1e3)
        lines.append(
            f"decode: {per_s:.1f} tokens/s ({len(decode)} steps x batch {args.batch}); per-token latency "
            f"median {statistics.median(decode):.2f} ms (min {min(decode):.2f}, max {max(decode):.2f})"
        )
    else:
        lines.append("decode: no decode step (--new-tokens 1)")
    return "\n".join(lines)


def _check(hf: Any, ids: Any, tokens: Any, new_tokens: int) -> int:
    import copy

    import torch  # lazy: start-up cost

    config = copy.deepcopy(hf.generation_config)
    config.eos_token_id = None  # as Forge ran: exactly new_tokens tokens
    config.pad_token_id = config.pad_token_id if config.pad_token_id is not None else 0
    config.max_new_tokens, config.do_sample, config.use_cache = new_tokens, False, True
    with torch.no_grad():
        expected = hf.generate(ids, attention_mask=torch.ones_like(ids), generation_config=config)
    if torch.equal(tokens, expected):
        print("check: tokens equal transformers generate(do_sample=False)")
        return 0
    first = (tokens != expected).nonzero()[0].tolist()
    print(f"check: FAILED: tokens differ from transformers generate at (sequence, position) {first}")
    return 1
