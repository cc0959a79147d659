"""What `forge.generate` costs across prompts (issue 32 item 1): in a fresh process, on the full-size zoo
GPT-2 (124M, random seeded weights), the first generate, a new prompt length, the first prompt again, a new
max_new_tokens and a longer prompt; per call the wall-clock seconds, the process RSS before and after, the
generator's prefill and median decode-step times and how many generators `forge.generate` holds.

Not a `make bench` section (it measures one process's history, not a steady state):
`python -m bench.generate_reuse`. Run it on two trees (`PYTHONPATH=<tree>`) for a before/after.
"""

from __future__ import annotations

import resource
import statistics
import time

import torch

from bench import common

STEPS = (
    ("first generate (prompt 20, new 16)", 20, 16),
    ("new prompt length (21, 16)", 21, 16),
    ("same prompt again (20, 16)", 20, 16),
    ("new max_new_tokens (20, 32)", 20, 32),
    ("longer prompt (100, 16)", 100, 16),
)


def main() -> None:
    import forge
    import forge.driver.generation as generation
    from forge.models import build_model

    model = build_model("gpt2").hf
    vocab = model.config.vocab_size
    print(f"{generation.__file__}\nmodel built: rss {common.rss_mib():.0f} MB")
    for name, prompt, new in STEPS:
        ids = torch.randint(0, vocab, (1, prompt), generator=torch.Generator().manual_seed(prompt))
        before, start = common.rss_mib(), time.perf_counter()
        forge.generate(model, ids, max_new_tokens=new)
        seconds = time.perf_counter() - start
        gens = generation._GENERATORS[model]
        # the generator this call used: keyed by shape before issue 32, by (batch, runtime, device) after
        gen = gens.get((1, prompt, prompt + new, "openvino", "CPU")) or gens.get((1, "openvino", "CPU"))
        t = gen.last_timings
        print(
            f"{name:36s} {seconds:6.2f} s  rss {before:6.0f} -> {common.rss_mib():6.0f} MB"
            f"  prefill {t['prefill_ms']:6.1f} ms"
            f"  decode median {statistics.median(t['decode_ms']):5.1f} ms  generators {len(gens)}"
        )
    print(f"peak rss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
