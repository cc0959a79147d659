"""Run the benchmarks and write `docs/benchmarks.md` (tables, headline targets) with its PNG plots.

    python bench/run_all.py                       # every section, full size (what `make bench` runs)
    python bench/run_all.py --quick               # small models, few repetitions (minutes -> seconds)
    python bench/run_all.py --only latency scaling
    python bench/run_all.py --render-only         # re-render docs from out/bench/results.json

Each section is a module of this package with `run(quick) -> dict` and `render(result, figures) ->
str` (and optionally `targets(result) -> list[dict]`). Results go to `<out>/results.json`; with
`--only`, the other sections' earlier results in that file are kept and rendered too; where that file lacks
some section (a fresh clone), the page is left as it is and this run's goes to `<out>/benchmarks.md`.
Benchmarks are never part of the test run's pass/fail (tests/bench only checks that they run).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/run_all.py` puts bench/, not the repository, on the path
    sys.path.insert(0, str(ROOT))

SECTIONS = ["compile_time", "latency", "scaling", "pass_profile", "fidelity", "fusion_gain", "dynamic_shapes",
            "precision", "node_profile", "generate", "weight_copies"]

DOC_HEADER = """# Benchmarks

Forge against OpenVINO's own PyTorch path, ONNX Runtime and `torch.compile` (and eager PyTorch), in
one run on one machine: same models (seeded random weights), same token batch, CPU, fp32.

Regenerate everything with `make bench` ({total_min:.0f} minutes for this page's sections on its machine;
each section's wall time is in the table below), or `python bench/run_all.py [--only SECTION ...] [--quick]`;
re-render this page from the saved results with `python bench/run_all.py --render-only`.
Sections: {sections}. Raw samples of every measurement are in `out/bench/results.json`.
Benchmarks are not part of `make test`.
"""


def section_module(name: str):
    return importlib.import_module(f"bench.{name}")


def run_sections(names: list[str], quick: bool, results: dict[str, Any], results_path: Path) -> dict[str, Any]:
    """Run each section and save all results after each one (a late failure loses nothing)."""
    results_path.parent.mkdir(parents=True, exist_ok=True)
    for name in names:
        print(f"[bench] {name}{' (quick)' if quick else ''} ...", flush=True)
        start = time.perf_counter()
        results[name] = section_module(name).run(quick=quick)
        results_path.write_text(json.dumps(results, indent=1))
        print(f"[bench] {name} done in {time.perf_counter() - start:.0f} s", flush=True)
    return results


def render(results: dict[str, Any], docs: Path) -> str:
    """The whole page; figures go to `<docs dir>/benchmarks/`."""
    figures = docs.parent / "benchmarks"
    order = [s for s in SECTIONS if s in results] + [s for s in results if s not in SECTIONS]
    total_min = sum(results[name]["wall_s"] for name in order) / 60
    parts = [DOC_HEADER.format(sections=", ".join(f"`{s}`" for s in SECTIONS), total_min=total_min),
             _machine(results, order),
             _headline(results, order)]
    for name in order:
        parts.append(section_module(name).render(results[name], figures))
    parts.append(_method(results, order))
    return "\n".join(parts)


def _machine(results: dict[str, Any], order: list[str]) -> str:
    from bench import common

    first = results[order[0]]
    h, v = first["host"], first["versions"]
    text = (f"**Machine**: {h['cpu']}, {h['cores']} logical cores (torch threads {h['torch_threads']}), "
            f"{h['platform']}, Python {h['python']}.  \n"
            + _capabilities(h) +
            "**Versions**: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".\n\n")
    rows = [[f"`{name}`", results[name]["date"], "quick" if results[name]["quick"] else "full",
             f"{results[name]['wall_s']:.0f}", " / ".join(f"{x:.2f}" for x in results[name]["load_before"]),
             " / ".join(f"{x:.2f}" for x in results[name]["load_after"])] for name in order]
    text += common.table(["section", "run at", "size", "wall s", "load avg before (1/5/15 min)", "after"], rows)
    if any(results[name]["quick"] for name in order):
        text += "\n> **Some sections ran with `--quick`** (small 2-layer models, few repetitions): their numbers " \
                "only show that the benchmark works, not how Forge performs.\n"
    return text


def _capabilities(h: dict[str, Any]) -> str:
    """The CPU's vector/bf16/f16/AMX extensions and OpenVINO's answer: the figures depend on them."""
    caps = h.get("capabilities")
    if caps is None:  # results written before the capabilities were recorded
        return ""
    runs = ", ".join(f"{p} as {r}" for p, r in caps["runs_as"].items() if p != r) or "every precision natively"
    return (f"**CPU capabilities**: ISA {', '.join(h.get('isa') or ['(not read)'])}; OpenVINO "
            f"OPTIMIZATION_CAPABILITIES {', '.join(caps['openvino'])}{' (faked)' if caps['faked'] else ''}; "
            f"runs {runs}.  \n")


def _headline(results: dict[str, Any], order: list[str]) -> str:
    from bench import common

    rows = []
    for name in order:
        module = section_module(name)
        if not hasattr(module, "targets"):
            continue
        quick = results[name]["quick"]
        for t in module.targets(results[name]):
            measured = _fmt(t["measured"], t["unit"])
            target = f"{t['op']} {_fmt(t['target'], t['unit'])}"
            gap = "" if t["met"] else f"{t['gap']:.2f}x off"
            status = "met" if t["met"] else "**missed**"
            if quick:  # small models, few repetitions: shows the benchmark works, says nothing of Forge
                status, gap = "not measured (`--quick` run)", ""
            rows.append([t["metric"], measured, target, status, gap, "" if quick else t["why"]])
    met = sum(1 for r in rows if r[3] == "met")
    return (f"## Headline: targets ({met} of {len(rows)} met)\n\n"
            "Each target of the issue, measured in this run. *miss by* is how far off it is (the factor by which "
            "the measured value would have to improve); *why* comes from this run's profiles.\n\n"
            + common.table(["target", "measured", "target", "status", "miss by", "why (from the profile)"], rows))


def _fmt(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return f"{value:.2e}"
    return f"{value:.3g}"


def _method(results: dict[str, Any], order: list[str]) -> str:
    parts = ["## How each section measures\n"]
    for name in order:
        doc = (section_module(name).__doc__ or "").strip()
        parts.append(f"**`{name}`** (config: `{json.dumps(results[name]['config'])}`)\n\n{doc}\n")
    from bench import peers

    parts.append(f"**Systems** (`bench/peers.py`)\n\n{(peers.__doc__ or '').strip()}\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", metavar="SECTION", help=f"sections to run (of {', '.join(SECTIONS)})")
    parser.add_argument("--quick", action="store_true", help="small models and few repetitions (a smoke run)")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench", help="where results.json goes")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs" / "benchmarks.md", help="the page to write")
    parser.add_argument("--render-only", action="store_true", help="render from <out>/results.json, run nothing")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only or ()) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; valid: {', '.join(SECTIONS)}")
    results_path = args.out / "results.json"
    results: dict[str, Any] = {}
    if args.render_only or args.only:
        if results_path.exists():
            results = json.loads(results_path.read_text())
        elif args.render_only:
            print(f"error: {results_path} does not exist; run the benchmarks first", file=sys.stderr)
            return 1
    if not args.render_only:
        run_sections(args.only or SECTIONS, args.quick, results, results_path)
    missing = [s for s in SECTIONS if s not in results]
    if missing and args.docs.exists():  # a page with only some sections would drop the others' measurements
        partial = args.out / args.docs.name
        print(f"[bench] no results for {', '.join(missing)} in {results_path} (measured on another machine, or not "
              f"yet): {args.docs} is left as it is; this run's page is {partial}")
        args.docs = partial
    args.docs.parent.mkdir(parents=True, exist_ok=True)
    args.docs.write_text(render(results, args.docs))
    print(f"[bench] wrote {args.docs} and {args.docs.parent / 'benchmarks'}/*.png (results: {results_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
