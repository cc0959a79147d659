"""`python -m forge.coverage`: run the OpInfo harness (and the zoo), print each entry, write the
page, the failure list or the suite's expectations (see forge/coverage/__init__.py)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from forge.coverage import opinfo
from forge.coverage.isolated import run_isolated, worker_main
from forge.coverage.opinfo import (
    DTYPES,
    RUNTIMES,
    SUITE_SAMPLES,
    OpResult,
    entry_result,
    op_database,
    op_id,
    run_op,
    summary,
)

EXPECTED = "tests/coverage/expected_failures.txt"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forge.coverage", description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names or ids (default: every entry)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--failures", metavar="FILE", help="write the failing entries, grouped by class")
    parser.add_argument("--write", metavar="PAGE", help="write the coverage page (runs the zoo too)")
    parser.add_argument(
        "--update-expected",
        action="store_true",
        help=f"rewrite {EXPECTED} from each entry's first {SUITE_SAMPLES} samples "
        "(with --ops: only those entries' lines)",
    )
    parser.add_argument("--in-process", action="store_true", help="no workers (a runtime crash ends the run)")
    parser.add_argument("--debug", action="store_true", help="tracebacks of unexpected errors (with --in-process)")
    parser.add_argument("--quiet", action="store_true", help="print only the totals")
    parser.add_argument(
        "--samples",
        type=int,
        default=None,
        metavar="N",
        help="run only each entry's first N samples (a quick look; not for the page)",
    )
    parser.add_argument(
        "--dtypes",
        default="float32",
        help=f"comma-separated sample dtypes, of {', '.join(DTYPES)} (default float32; "
        "other dtypes' entries are `op@dtype`)",
    )
    parser.add_argument(
        "--runtimes", default=",".join(RUNTIMES), help=f"the compiled stages (default {','.join(RUNTIMES)})"
    )
    parser.add_argument(
        "--keep-zoo", action="store_true", help="with --write: keep the page's model zoo section instead of running it"
    )
    parser.add_argument("--save", metavar="FILE", help="write every entry's result (JSON, with each failing sample)")
    parser.add_argument(
        "--load",
        metavar="FILE",
        help="the results of an earlier run's --save instead of a run (to write the page again)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    runtimes = [r for r in args.runtimes.split(",") if r]
    if args.worker:
        return worker_main(args.samples, runtimes)
    dtypes = args.dtypes.split(",")
    if not set(dtypes) <= set(DTYPES):
        parser.error(f"unknown dtype in {args.dtypes}")
    if (args.samples or dtypes != ["float32"] or runtimes != list(RUNTIMES)) and (args.update_expected or args.write):
        parser.error(
            "--samples, --dtypes and --runtimes are for a look: the page and the expectations run "
            "the float32 samples on every runtime"
        )
    if args.update_expected and args.write:
        parser.error(f"--update-expected runs the first {SUITE_SAMPLES} samples, --write every one: run them apart")
    limit = SUITE_SAMPLES if args.update_expected else args.samples
    opinfo.DEBUG = args.debug
    ops = op_database()
    if args.ops:
        wanted = set(args.ops.split(","))
        ops = [o for o in ops if o.name in wanted or op_id(o) in wanted]
    start = time.perf_counter()
    if args.load:
        saved = json.loads(Path(args.load).read_text())
        results = [OpResult.from_json(r) for r in saved["results"]]
        print(f"{summary(results)} (loaded from {args.load})", flush=True)
        return _write(args, results, saved["seconds"], saved.get("note", ""))

    def show(r: OpResult) -> None:
        if not args.quiet:
            print(r.line(), f"{r.seconds:.2f}s", flush=True)

    if args.in_process:
        results = []
        for info in ops:
            for d in dtypes:
                results.append(run_op(info, dtype=DTYPES[d], limit=limit, runtimes=runtimes))
                show(results[-1])
    else:
        ids = [op_id(o) + ("" if d == "float32" else f"@{d}") for o in ops for d in dtypes]
        results = run_isolated(ids, workers=args.jobs, progress=show, limit=limit, runtimes=runtimes)
    seconds = time.perf_counter() - start
    print(f"{summary(results)} in {seconds:.1f} s", flush=True)
    return _write(args, results, seconds)


def _write(args: argparse.Namespace, results: list[OpResult], seconds: float, note: str = "") -> int:
    from forge.coverage import page  # the writers

    if args.save:
        Path(args.save).write_text(json.dumps({"seconds": seconds, "results": [r.to_json() for r in results]}) + "\n")
    if args.failures:
        page.write_failures(args.failures, results)
    if args.update_expected:
        if args.ops:  # the other entries keep their expectation (absent: they pass)
            results = _merged(page.read_expected(EXPECTED), results)
        wrong = page.write_expected(EXPECTED, results)
        for r in wrong:
            print(f"WRONG VALUE (a bug, not written to {EXPECTED}): {r.line()}", file=sys.stderr)
    if args.write:
        _write_page(args.write, results, seconds, args.keep_zoo, note)
    return 0


def _merged(expected: dict[str, OpResult], fresh: list[OpResult]) -> list[OpResult]:
    """Every entry: the fresh result where there is one, else the expectation, else a pass."""
    by_op = {r.op: r for r in fresh}
    return [by_op.get(i) or expected.get(i) or entry_result(i, [], 1) for i in (op_id(o) for o in op_database())]


def _write_page(path: str, results: list[OpResult], seconds: float, keep_zoo: bool = False, note: str = "") -> None:
    import datetime

    import torch

    from forge.coverage import page, zoo

    start = time.perf_counter()
    old = Path(path).read_text() if Path(path).exists() else ""
    kept_zoo = page.zoo_section_of(old) if keep_zoo else None
    if keep_zoo and kept_zoo is None:
        raise SystemExit(f"--keep-zoo: {path} has no model zoo section to keep")
    rows = (
        []
        if kept_zoo is not None
        else zoo.zoo_results(progress=lambda z: print(f"zoo {z.family}: {z.status} {z.reason}", flush=True))
    )
    meta = {
        "when": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": seconds + time.perf_counter() - start,
        "torch": torch.__version__,
        "note": note,
    }
    from forge.testing.fuzz.report import MARKER  # the fuzzer's section (python -m forge.testing.fuzz --docs)

    kept = MARKER + old.split(MARKER, 1)[1] if MARKER in old else ""
    with open(path, "w") as f:
        f.write(page.render_page(results, rows, meta, kept_zoo) + ("\n" + kept if kept else ""))
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
