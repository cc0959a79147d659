"""`forge generate MODEL --prompt-len N --new-tokens K`: text generation with a KV cache.

Builds the zoo decoder's `transformers` causal LM (random seeded weights), compiles its prefill
and decode functions over one KV cache (`forge.driver.generation.compile_generator`, at `--precision` /
`--weights`), generates from a seeded prompt (greedy, or sampled with `--do-sample --temperature --top-k
--top-p --repetition-penalty`, `--seed` seeding the draws too; `--repetition-penalty` also applies greedily)
and prints the prefill latency, decode tokens/s and per-token latency. Generation runs `--new-tokens`
tokens unless `--eos` (token ids) or `--stop` (token-id sequences: the prompt is random ids, there is no
tokenizer) end it; `--check` compares the tokens with `transformers` `generate` given the same options
(and, when sampling, the same seed: `torch.manual_seed(--seed)`).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from typing import Any

DECODER_KINDS = ("decoder", "moe")


def add_generate_parser(sub: Any) -> None:
    p = sub.add_parser("generate", help="text generation with a KV cache: prefill latency, decode tokens/s")
    p.add_argument(
        "model",
        help="zoo decoder (gpt2, llama, opt, mistral, ...; see `forge models`) or a checkpoint folder "
        "(config.json + *.safetensors, as save_pretrained writes; built on the meta device, weights memory-mapped)",
    )
    p.add_argument("--prompt-len", type=int, default=128, help="prompt tokens (default 128)")
    p.add_argument("--new-tokens", type=int, default=64, help="tokens to generate (default 64)")
    p.add_argument("--batch", type=int, default=1, help="sequences per batch (default 1)")
    p.add_argument("--layers", type=int, help="number of layers (default: the zoo default)")
    p.add_argument("--attn", help="attention implementation (default: the family's default)")
    p.add_argument("--small", action="store_true", help="the small test-size variant")
    p.add_argument("--seed", type=int, default=0, help="seed for weights, the prompt and sampling")
    p.add_argument("--device", default="CPU", help="OpenVINO device string (CPU, NPU, ...)")
    p.add_argument("--runtime", default="openvino", help="a registered runtime: openvino (default), nnfactory")
    p.add_argument("--precision", help="compute precision of both graphs (f32, bf16, f16; as forge compile)")
    p.add_argument("--weights", help="weight-only quantization of both graphs (int8, int4; as forge compile)")
    p.add_argument("--activations", help="int8: with --weights, the prefill's matmuls quantize their inputs at "
                                         "run time (as forge compile; decode at one row keeps them float)")
    p.add_argument("--share-weights", choices=("auto", "yes", "no"), default="auto",
                   help="both graphs one device program holding the weights once (yes, auto), or one each, the "
                        "weights twice (no); one program runs its decode step outside its If (no copy of the KV "
                        "cache per step, a decode step per prefill call) where that is the cheaper")
    p.add_argument("--do-sample", action="store_true", help="sample (seeded by --seed) instead of greedy decoding")
    p.add_argument("--temperature", type=float, help="sampling temperature (> 0; default 1.0)")
    p.add_argument("--top-k", type=int, help="sample among the k likeliest tokens (0: all; default 50)")
    p.add_argument("--top-p", type=float, help="nucleus sampling: the smallest set with this mass (0, 1]")
    p.add_argument("--repetition-penalty", type=float, help="divide repeated tokens' logits (> 0; 1.0: none)")
    p.add_argument("--eos", type=_ids, help="end-of-sequence token ids, comma-separated (default: none, a benchmark)")
    p.add_argument(
        "--stop", type=_ids, action="append", help="a stop sequence of token ids, comma-separated (repeatable)"
    )
    p.add_argument("--check", action="store_true", help="compare the tokens with transformers generate")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def _ids(text: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated token ids, got {text!r}") from None


def _decoding(args: argparse.Namespace) -> dict[str, Any]:
    """`Generator.generate`'s decoding options from the flags (None: the model's or transformers' default)."""
    options: dict[str, Any] = {
        "do_sample": args.do_sample or None,
        "temperature": args.temperature,
        "top_k": args.top_k,
        "top_p": args.top_p,
        "repetition_penalty": args.repetition_penalty,
        "eos_token_id": args.eos or [],  # a benchmark: --new-tokens tokens unless --eos is given
        "stop": args.stop,
    }
    if args.do_sample:
        options["seed"] = args.seed
    if args.eos or args.stop:
        options["pad_token_id"] = 0 if not args.eos else args.eos[0]
    return {k: v for k, v in options.items() if v is not None}


def _model(args: argparse.Namespace) -> Any:
    from forge.models import build_model, family  # lazy: start-up cost (torch)

    f = family(args.model)
    if f.kind not in DECODER_KINDS:
        raise ValueError(
            f"{args.model} is not a decoder (its kind is {f.kind}); forge generate runs the "
            f"{' and '.join(DECODER_KINDS)} families (see `forge models`)"
        )
    return build_model(args.model, layers=args.layers, attn=args.attn, small=args.small, seed=args.seed).hf


def _checkpoint_model(args: argparse.Namespace, folder: Any) -> Any:
    """A checkpoint folder's causal LM on the meta device (its weights bound from the folder, memory-mapped,
    when the graphs are emitted), with the folder's generation_config.json when it has one."""
    from forge.cli.checkpoint import CheckpointError, meta_model  # lazy: start-up cost

    refused = [
        flag
        for flag, value in (
            ("--layers", args.layers),
            ("--attn", args.attn),
            ("--small", args.small),
            ("--check", args.check),
        )
        if value
    ]
    if refused:
        raise CheckpointError(f"{folder}: a checkpoint folder is generated from as saved; drop {', '.join(refused)}")
    hf = meta_model(folder, causal_lm=True)
    if (folder / "generation_config.json").is_file():
        from transformers import GenerationConfig  # lazy: start-up cost

        hf.generation_config = GenerationConfig.from_pretrained(folder)
    return hf


_FLAGS = {
    "do_sample=True": "--do-sample",
    "do_sample=False": "no --do-sample",
    **{name: f"--{name.replace('_', '-')}" for name in ("temperature", "top_k", "top_p", "repetition_penalty", "seed")},
}
"""Python option words of `Decoding.build`'s messages -> the flags a CLI user types."""


def _check_decoding(hf: Any, args: argparse.Namespace, decoding: dict[str, Any]) -> None:
    """The decoding flags checked before compiling (a bad combination was refused only after both graphs were
    compiled), the message in flags: `temperature` -> `--temperature`, `do_sample=True` -> `--do-sample`."""
    from forge.driver.generation import GenerateError, check_decoding

    try:
        check_decoding(hf, args.batch, args.prompt_len, **decoding)
    except GenerateError as err:
        pattern = "|".join(re.escape(word) for word in sorted(_FLAGS, key=len, reverse=True))
        raise GenerateError(re.sub(rf"\b({pattern})\b", lambda m: _FLAGS[m.group(1)], str(err))) from None


def _check_args(args: argparse.Namespace) -> None:
    for name in ("prompt_len", "new_tokens", "batch"):
        value = getattr(args, name)
        if value < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


def cmd_generate(args: argparse.Namespace) -> int:
    import torch  # lazy: start-up cost

    from forge.cli.checkpoint import checkpoint_folder  # lazy: start-up cost
    from forge.driver.generation import compile_generator  # lazy: start-up cost (torch)

    _check_args(args)
    decoding = _decoding(args)
    folder = checkpoint_folder(args.model)
    hf = _model(args) if folder is None else _checkpoint_model(args, folder)
    _check_decoding(hf, args, decoding)
    progress = None if args.quiet else (lambda stage: print(f"{stage} ...", file=sys.stderr, flush=True))
    start = time.perf_counter()
    gen = compile_generator(
        hf,
        batch=args.batch,
        prompt_len=args.prompt_len,
        max_new_tokens=args.new_tokens,
        runtime=args.runtime,
        device=args.device,
        precision=args.precision,
        weights=args.weights,
        activations=args.activations,
        progress=progress,
        weights_from=folder,
        share_weights={"auto": None, "yes": True, "no": False}[args.share_weights],
    )
    compile_s = time.perf_counter() - start
    vocab = hf.config.vocab_size
    ids = torch.randint(0, vocab, (args.batch, args.prompt_len), generator=torch.Generator().manual_seed(args.seed))
    tokens = gen.generate(ids, args.new_tokens, **decoding)
    timings = gen.last_timings
    print(_summary(args, hf, gen, compile_s, timings))
    print(f"tokens[0]: {' '.join(str(int(t)) for t in tokens[0, args.prompt_len :])}")
    if args.check:
        return _check(hf, ids, tokens, args.new_tokens, decoding, _reduced_mode(args))
    return 0


def _summary(args: argparse.Namespace, hf: Any, gen: Any, compile_s: float, timings: dict[str, Any]) -> str:
    report = gen.report()
    decode = timings["decode_ms"]
    state_kib = report["decode"]["state_bytes"] / 2**10
    program = report.get("device_program") or {}
    device = f", device program {program['compile_ms'] / 1e3:.1f} s" if program.get("one_program") else ""
    sharing = program.get("sharing")
    if sharing is not None:  # one program (weights once) or two; where the decode step runs, and why
        form = "one device program" if sharing["one_program"] else "a device program per graph"
        if sharing.get("top_level") == "decode":
            form += " with the decode step on top (each prefill call runs it too: the cache is not copied)"
        device += f"; {form}, KV cache {sharing['cache_to_weights']:.1%} of the weights"
    lines = [
        f"{args.model} ({type(hf).__name__}, {hf.config.num_hidden_layers} layers, {_weights_note(args)}): "
        f"batch {args.batch}, prompt {args.prompt_len}, {args.new_tokens} new tokens, KV cache "
        f"{gen.cache_len} positions ({report['decode']['states']} state buffers, {state_kib:,.0f} KiB, "
        "allocated once, updated in place)",
        f"compile: {compile_s:.1f} s (prefill {report['prefill']['compile_ms'] / 1e3:.1f} s, decode "
        f"{report['decode']['compile_ms'] / 1e3:.1f} s{device}); cpu fallback per step: "
        + (", ".join(f"{k} x{v}" for k, v in report["decode"]["cpu_fallback"].items()) or "none"),
        _mode_line(report),
        f"prefill: {timings['prefill_ms']:.1f} ms ({args.batch} x {args.prompt_len} tokens, first new token; "
        f"{_prefill_attention(gen, report)})",
    ]
    if decode:
        per_s = len(decode) * args.batch / (sum(decode) / 1e3)
        host = gen.decode_host_ms()
        lines.append(
            f"decode: {per_s:.1f} tokens/s ({len(decode)} steps x batch {args.batch}); per-token latency "
            f"median {statistics.median(decode):.2f} ms (min {min(decode):.2f}, max {max(decode):.2f}), of which "
            f"the host {statistics.median(host) * 1e3:.0f} us (inputs, the cache's row writes, the token's choice)"
        )
    else:
        lines.append("decode: no decode step (--new-tokens 1)")
    return "\n".join(lines)


def _mode_line(report: dict[str, Any]) -> str:
    """The precision, weights and activations both graphs run with, and what the device computes in when the CPU
    lacks the requested one (f16 runs as bf16 or f32 on a CPU without native f16; int8 activations stay f32 where
    OpenVINO's kernels do not quantize them, `cpu_quantizes_activations`)."""
    precision = report["precision"]
    config = report["decode"].get("runtime_config", {})
    runs_as = config.get("runs_as", precision)
    line = f"precision {precision}"
    if runs_as != precision:
        line += f" (this device has no native {precision} arithmetic: it runs as {runs_as})"
    activations = report["activations"] or "f32"
    if config.get("activations_run_as", activations) != activations:
        activations += f" (this device's kernels do not quantize them: they run as {config['activations_run_as']})"
    return f"{line}, weights {report['weights'] or 'f32'}, activations {activations}"


def _prefill_attention(gen: Any, report: dict[str, Any]) -> str:
    """What the prefill's attention reads: its own rows (a one-chunk generator) or the cache and the chunk's rows."""
    if report["prefill"].get("reads_cache", True):
        return f"{gen.chunk}-token chunks attending to the cache and their rows"
    return "one chunk attending to its own rows"


def _check(hf: Any, ids: Any, tokens: Any, new_tokens: int, decoding: dict[str, Any], reduced: str = "") -> int:
    import copy

    import torch  # lazy: start-up cost

    config = copy.deepcopy(hf.generation_config)
    config.eos_token_id = decoding["eos_token_id"] or None  # as Forge ran
    config.pad_token_id = decoding.get("pad_token_id", config.pad_token_id if config.pad_token_id is not None else 0)
    config.max_new_tokens, config.do_sample, config.use_cache = new_tokens, bool(decoding.get("do_sample")), True
    for name in ("temperature", "top_k", "top_p", "repetition_penalty"):
        if name in decoding:
            setattr(config, name, decoding[name])
    stop = decoding.get("stop")
    if stop:  # transformers matches stop strings, not token ids: a criterion of the same rule
        from transformers import StoppingCriteria, StoppingCriteriaList

        class StopIds(StoppingCriteria):
            eos_token_id = None  # transformers pads the finished rows when a criterion has this attribute

            def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
                new = input_ids[:, ids.shape[1] :].tolist()
                ended = [any(len(n) >= len(s) and n[-len(s) :] == s for s in stop) for n in new]
                return torch.tensor(ended)

        criteria: Any = StoppingCriteriaList([StopIds()])
    else:
        criteria = None
    if "seed" in decoding:
        torch.manual_seed(decoding["seed"])  # the RNG stream Forge drew from
    with torch.no_grad():
        expected = hf.generate(
            ids, attention_mask=torch.ones_like(ids), generation_config=config, stopping_criteria=criteria
        )
    what = "do_sample=True, the same seed" if config.do_sample else "do_sample=False"
    if torch.equal(tokens, expected):
        print(f"check: tokens equal transformers generate({what})")
        return 0
    if tokens.shape != expected.shape:
        print(f"check: FAILED: {list(tokens.shape)} tokens, transformers generate gives {list(expected.shape)}")
        return 1
    first = (tokens != expected).nonzero()[0].tolist()
    why = f" ({reduced} changes the logits, so a near tie can pick another token than f32's)" if reduced else ""
    print(f"check: FAILED: tokens differ from transformers generate at (sequence, position) {first}{why}")
    return 1


def _reduced_mode(args: argparse.Namespace) -> str:
    """The flags that make the logits differ from f32 transformers' (weights, precision, activations), or ''."""
    flags = [f"--{name} {value}" for name, value in (("weights", args.weights), ("activations", args.activations))
             if value]
    if args.precision not in (None, "f32"):
        flags.insert(0, f"--precision {args.precision}")
    return " ".join(flags)


def _weights_note(args: argparse.Namespace) -> str:
    from pathlib import Path

    return "checkpoint weights, memory-mapped" if Path(args.model).is_dir() else "random seeded weights"
