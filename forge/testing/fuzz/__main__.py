"""`python -m forge.testing.fuzz`: the fuzz campaign (`make fuzz`), its table, or one overload by hand.

    python -m forge.testing.fuzz                        # every overload to 200 cases, 2 workers, resumable
    python -m forge.testing.fuzz --ops aten::div.Scalar_mode --cases 400
    python -m forge.testing.fuzz --table                # the per-overload table of the state so far
    python -m forge.testing.fuzz --show aten::amax.default --seed 3   # one batch, every non-pass case
    python -m forge.testing.fuzz --replay [--refresh]  # the regression cases now (--refresh: rewrite `open`)
    python -m forge.testing.fuzz --docs                 # rewrite the fuzz section of docs/coverage.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from forge.testing.fuzz.campaign import DEFAULT_STATE, State, run_campaign, worker_main


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forge.testing.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--ops", help="comma-separated overloads (aten::add.Tensor); default: the whole table")
    parser.add_argument("--cases", type=int, default=200, help="cases per overload to reach (default 200)")
    parser.add_argument("--batch", type=int, default=50, help="cases per seed, run as one batch (default 50)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--hours", type=float, help="stop handing out work after this long")
    parser.add_argument("--state", type=Path, default=DEFAULT_STATE, help=f"state file (default {DEFAULT_STATE})")
    parser.add_argument("--table", action="store_true", help="print the per-overload table of the state")
    parser.add_argument("--show", metavar="OP", help="run one batch of OP in this process and print its failures")
    parser.add_argument("--seed", type=int, default=1, help="the seed of --show")
    parser.add_argument("--replay", action="store_true", help="replay tests/fuzz/regressions and say what changed")
    parser.add_argument("--refresh", action="store_true", help="with --replay: rewrite each file's open failures")
    parser.add_argument("--docs", type=Path, nargs="?", const=Path("docs/coverage.md"),
                        help="rewrite the fuzz section of this page (default docs/coverage.md)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main()
    if args.replay:
        return _replay(args.refresh)
    from forge.testing.fuzz.strategies import fuzzed_ops

    ops = args.ops.split(",") if args.ops else fuzzed_ops()
    unknown = [op for op in ops if op not in fuzzed_ops()]
    if unknown:
        parser.error(f"not in the aten table: {', '.join(unknown)}")
    if args.show:
        return _show(args.show, args.batch, args.seed)
    if args.table:
        from forge.testing.fuzz.report import campaign_table

        print(campaign_table(State(args.state), ops))
        return 0
    if args.docs:
        return _docs(args.docs, State(args.state) if args.state.exists() else None, ops)
    state = run_campaign(ops, target=args.cases, batch=args.batch, jobs=args.jobs, state_path=args.state,
                         hours=args.hours, progress=lambda line: print(line, flush=True))
    done = sum(1 for op in ops if state.op(op).cases >= args.cases)
    print(f"{done} of {len(ops)} overloads have run {args.cases} cases; state in {args.state}")
    return 0


def _show(op: str, batch: int, seed: int) -> int:
    from forge.testing.fuzz.run import PASS, run_cases
    from forge.testing.fuzz.strategies import draw_cases

    outcomes = run_cases(draw_cases(op, batch, seed))
    for o in outcomes:
        if o.status != PASS:
            print(o.summary())
    print(f"{len(outcomes)} cases, {sum(o.status == PASS for o in outcomes)} pass")
    return 0


def _docs(page: Path, state: State | None, ops: list[str]) -> int:
    from forge.testing.fuzz import regressions, report

    if state is None:
        note = "No campaign state here: run `make fuzz` (its table goes here)."
    else:
        ran = [s for s in state.ops.values() if s.cases]
        cases = sum(s.cases for s in ran)
        found = sum(len(s.failures) for s in ran)
        note = (f"{len(ran)} overloads, {cases} cases, {sum(s.seconds for s in ran) / 60:.0f} min of worker time; "
                f"{found} distinct failure kinds found (each shrunk and saved as a regression case, then fixed, "
                "documented as a deviation, or listed as open above). Statuses are each case's worst stage.")
    report.write_section(page, report.section(regressions.load(), state, ops, note))
    print(f"wrote the fuzz section of {page}")
    return 0


def _replay(refresh: bool) -> int:
    from forge.testing.fuzz import regressions

    entries = regressions.load()
    outcomes = regressions.replay(entries)
    changed = 0
    for r, o in zip(entries, outcomes, strict=True):
        now = regressions.failures_now(o)
        if now != r.open:
            changed += 1
            print(f"{r.path.name}: open {r.open or '{}'} -> now {now or '{}'}")
    still = sum(1 for o in outcomes if regressions.failures_now(o))
    print(f"{len(entries)} regression cases, {still} with an open failure, {changed} changed")
    print(_standing(outcomes))
    if refresh and changed:
        print(f"rewrote {regressions.refresh(entries, outcomes)} files")
    return 0


def _standing(outcomes: Sequence[object]) -> str:
    """Where the regression cases stand: fixed (every stage passes), documented (a deviation, the ids
    counted), refused (a clear error instead of a value), open (still wrong or an error)."""
    from collections import Counter

    from forge.testing.fuzz.run import DEVIATION, PASS, REFUSED

    kinds: Counter[str] = Counter()
    ids: Counter[str] = Counter()
    for o in outcomes:
        statuses = {status for status, _ in o.stages.values()}  # type: ignore[attr-defined]
        if o.failures():  # type: ignore[attr-defined]
            kinds["open"] += 1
        elif DEVIATION in statuses:
            kinds["documented"] += 1
            ids.update({d.partition(":")[0] for s, d in o.stages.values() if s == DEVIATION})  # type: ignore[attr-defined]
        elif statuses <= {PASS}:
            kinds["fixed"] += 1
        elif REFUSED in statuses:
            kinds["refused"] += 1
        else:
            kinds["other"] += 1
    by_id = ", ".join(f"{k} {n}" for k, n in ids.most_common())
    parts = ", ".join(f"{n} {k}" for k, n in kinds.most_common())
    return f"standing: {parts}" + (f" (deviations: {by_id})" if by_id else "")


if __name__ == "__main__":
    sys.exit(main())
