"""What the harness writes: docs/coverage.md, the failure list, and the suite's expectations file.

* `render_page(results, zoo, meta)`: the page -- totals in samples and entries, the pass rates, the
  wrong values (each sample: there should be none), the documented deviations, failures by class,
  the model zoo table, and one row per OpInfo entry (samples run, passed, failures by class).
* `write_failures(path, results)`: one line per sample that did not pass, grouped by class.
* `read_expected(path)` / `write_expected(path, results)`: tests/coverage/expected_failures.txt,
  `op<TAB>status<TAB>counts<TAB>stage<TAB>reason` for every entry recorded (passing ones too). An
  entry with a wrong value is never written there: it is a bug, and the suite fails on it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forge.coverage.opinfo import (
    DEVIATION,
    JUDGED,
    NOT_EXPORTABLE,
    PASS,
    STATUSES,
    WRONG,
    OpResult,
    SampleResult,
    summary,
)
from forge.coverage.zoo import ZooResult
from forge.testing.fuzz.reduce import failure_kind

LABELS = {NOT_EXPORTABLE: "not exportable"}


def is_wrong_value(result: OpResult) -> bool:
    """An entry that shows a bug, never an accepted failure: a sample's value, shape, dtype or count differs."""
    return bool(result.counts.get(WRONG))


def failure_class(sample: SampleResult) -> str:
    """The cause without sample-specific details, for grouping: `interpret refused: import: ...`."""
    return f"{sample.stage} {failure_kind(sample.status, sample.reason)}"


# --- expectations ---------------------------------------------------------------------------------


def _parse_counts(text: str) -> dict[str, int]:
    pairs = (part.rsplit(" ", 1) for part in text.split(", ") if part)
    return {k: int(v) for k, v in pairs}


def read_expected(path: str | Path) -> dict[str, OpResult]:
    expected = {}
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 5:
            raise ValueError(f"{path}:{n}: expected op<TAB>status<TAB>counts<TAB>stage<TAB>reason, got {line!r}")
        op, status, counts, stage, reason = parts
        expected[op] = OpResult(op, status, stage, reason, counts=_parse_counts(counts))
    return expected


def write_expected(path: str | Path, results: Sequence[OpResult], note: str = "") -> list[OpResult]:
    """Write every entry's result, passing ones too (an entry absent from the file has not been
    recorded yet), except those with a wrong value; returns those."""
    wrong = [r for r in results if is_wrong_value(r)]
    kept = [r for r in results if not is_wrong_value(r)]
    s = summary(results)
    lines = [
        "# OpInfo entries' results on their first samples, and why they do not pass (tests/coverage/test_opinfo.py",
        "# checks each; an entry not listed is only checked for wrong values). Regenerate: python -m forge.coverage",
        "# --update-expected (a wrong value is never written here).",
        f"# {s['sample_counts'][PASS]} of {s['judged_samples']} judged samples pass "
        f"({100 * s['sample_pass_rate']:.1f}%), {s['entry_counts'][PASS]} of {s['judged_entries']} entries.",
        *([f"# {note}"] if note else []),
        "# op\tstatus\tsamples by class\tstage\treason (of the first sample of the entry's status)",
    ]
    lines += [r.line() for r in sorted(kept, key=lambda r: r.op)]
    Path(path).write_text("\n".join(lines) + "\n")
    return wrong


# --- the failure list -----------------------------------------------------------------------------


def write_failures(path: str | Path, results: Sequence[OpResult]) -> None:
    """One line per sample that did not pass (op#index, status, stage, reason), grouped by class."""
    rows = [(r.op, s) for r in results for s in r.samples]
    rows.sort(key=lambda row: (STATUSES.index(row[1].status), failure_class(row[1]), row[0], row[1].index))
    lines = [f"# {summary(results)}", "# op#sample\tstatus\tstage\treason"]
    groups = Counter(failure_class(s) for _, s in rows)
    current = None
    for op, sample in rows:
        group = failure_class(sample)
        if group != current:
            lines += ["", f"## {group} ({groups[group]})"]
            current = group
        lines.append(f"{op}#{sample.index}\t{sample.status}\t{sample.stage}\t{sample.reason}")
    Path(path).write_text("\n".join(lines) + "\n")


# --- the page -------------------------------------------------------------------------------------


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _label(status: str) -> str:
    return LABELS.get(status, status)


def _rate(x: float) -> str:
    return f"**{100 * x:.1f}%**"


def render_page(
    results: Sequence[OpResult], zoo: Sequence[ZooResult], meta: dict[str, Any], zoo_section: list[str] | None = None
) -> str:
    """The page; `zoo_section`: the zoo's lines as they are (an earlier page's), instead of `zoo`'s table."""
    s = summary(results)
    runtimes = ", ".join(meta.get("runtimes", ("openvino", "nnfactory")))
    heads = " | ".join(_label(c) for c in STATUSES)
    out = [
        "# Coverage: OpInfo ops and the model zoo",
        "",
        "Generated by `make coverage` (`python -m forge.coverage --write docs/coverage.md`); do not edit.",
        f"Run: {meta.get('when', '?')}, {meta.get('seconds', 0):.0f} s, torch {meta.get('torch', '?')}.",
        *(["", f"**{meta['note']}**"] if meta.get("note") else []),
        "",
        "Every OpInfo entry of PyTorch's `op_db` that supports float32 on the CPU, with *every* one of its",
        "float32 samples (not only the first: a `div` by a tensor can pass while a `div` by a Python number",
        "is wrong). An entry's samples are one module (forge.testing.fuzz's batch): each sample's tensors",
        "are the module's inputs, its other arguments (Python numbers, shapes, dtypes) are baked into the",
        "call as they are. The module is exported (torch.export), imported, run by the reference",
        f"interpreter and compiled by `forge.compile` for each runtime ({runtimes}, CPU); a stage that fails",
        "for the whole module splits it until the failing samples stand alone. Each sample's outputs are",
        "compared with eager PyTorch on their own, by the fuzzer's rules (forge/testing/fuzz/compare.py):",
        "the same number of outputs, dtypes and shapes, integers and booleans exactly, NaN at the same",
        "places, the same infinities and signed zeros, other floats within atol = rtol = 1e-5 (or the",
        "OpInfo's own looser float32 tolerance). Each sample ends as one of:",
        "",
        "- **pass**: the interpreter and every runtime match eager;",
        "- **wrong**: a value, dtype or shape differs from eager at some stage: a silent wrong result, always",
        "  a bug (listed below, one by one);",
        "- **deviation**: a difference listed in forge/testing/fuzz/deviations.py (a runtime kernel on",
        "  special values), not a pass;",
        "- **refused**: Forge refuses it and names why (an unsupported aten op, a data-dependent shape, a",
        "  dtype the runtime cannot hold);",
        "- **error**: Forge or a runtime crashed (an exception that is not a refusal, or the process died);",
        "- **not exportable**: torch.export itself refuses the sample (the reason is kept);",
        "- **random**: its values change with the seed: OpInfo seeds eager inside the op's wrapper, which an",
        "  exported graph cannot replay, so values are not comparable;",
        "- **skipped**: there is nothing deterministic to compare: an output that is not dense tensors, an",
        "  uninitialized output (`empty`, `new_empty`...), a sample eager itself cannot run on the CPU or",
        "  that gives other values on a second run.",
        "",
        "An entry's status is its worst sample's (in the order of the columns below). The pass rate is",
        "pass / (pass + wrong + deviation + refused + error): not exportable, random and skipped are",
        "outside it, since no compiler could match eager on them.",
        "",
        "## Totals",
        "",
        f"| | total | judged | pass rate | {heads} |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in STATUSES) + " |",
        f"| samples | {s['samples']} | {s['judged_samples']} | {_rate(s['sample_pass_rate'])} | "
        + " | ".join(str(s["sample_counts"][c]) for c in STATUSES)
        + " |",
        f"| entries | {s['entries']} | {s['judged_entries']} | {_rate(s['entry_pass_rate'])} | "
        + " | ".join(str(s["entry_counts"][c]) for c in STATUSES)
        + " |",
        "",
        f"**Wrong values: {s['wrong_values']}** (samples).",
        "",
        *_samples_section(
            "Wrong values",
            results,
            WRONG,
            "None: every judged sample that ran matches eager or is refused with a reason.",
        ),
        "",
        *_samples_section("Documented deviations", results, DEVIATION, "None."),
        "",
        "## Failures by class",
        "",
        "Samples that did not pass, by stage and kind (the numbers of a reason dropped), with their entries.",
        "",
        "| class | samples | entries |",
        "| --- | ---: | ---: |",
    ]
    by_class: Counter[str] = Counter()
    entries: dict[str, set[str]] = {}
    for r in results:
        for sample in r.samples:
            if sample.status in JUDGED:
                by_class[failure_class(sample)] += 1
                entries.setdefault(failure_class(sample), set()).add(r.op)
    out += [f"| {_cell(c)} | {n} | {len(entries[c])} |" for c, n in by_class.most_common()]
    out += ["", *(zoo_section if zoo_section is not None else _zoo_section(zoo)), "", *_per_op(results)]
    return "\n".join(out) + "\n"


def _samples_section(title: str, results: Sequence[OpResult], status: str, none: str) -> list[str]:
    rows = [(r.op, x) for r in results for x in r.samples if x.status == status]
    out = [f"## {title}", ""]
    if not rows:
        return [*out, none]
    out += ["| samples | stage | what differs (the first of them) |", "| --- | --- | --- |"]
    groups: dict[tuple[str, str, str], list[int]] = {}  # samples of an entry that differ alike: one row
    for op, x in rows:
        groups.setdefault((op, x.stage, _kind(x.reason)), []).append(x.index)
    firsts = {}
    for op, x in rows:
        firsts.setdefault((op, x.stage, _kind(x.reason)), x.reason)
    for (op, stage, kind), indices in groups.items():
        known = [f"#{i}" for i in indices if i >= 0]
        which = ", ".join(known) if len(known) == len(indices) else f"{len(indices)} samples"
        out.append(f"| `{_cell(op)}` {which} | {stage} | {_cell(firsts[(op, stage, kind)])} |")
    return out


def _kind(reason: str) -> str:
    return failure_kind("", reason)


def _per_op(results: Sequence[OpResult]) -> list[str]:
    out = [
        "## Per op",
        "",
        "Samples run and their classes; the first sample of the entry's worst class, its stage and reason.",
        "",
        "| op | status | samples | " + " | ".join(_label(c) for c in STATUSES) + " | first of its status | s |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in STATUSES) + " | --- | ---: |",
    ]
    order = {c: i for i, c in enumerate((PASS, *[c for c in STATUSES if c != PASS]))}
    for r in sorted(results, key=lambda r: (r.op, order.get(r.status, 9))):
        counts = " | ".join(str(r.counts.get(c, 0) or "") for c in STATUSES)
        first = "" if r.status == PASS else f"{r.stage}: {r.reason}" if r.stage else r.reason
        out.append(
            f"| `{_cell(r.op)}` | {_label(r.status)} | {r.total} | {counts} | {_cell(first)} | {r.seconds:.2f} |"
        )
    return out


def zoo_section_of(page: str) -> list[str] | None:
    """The model zoo section of a page `render_page` wrote, as lines (None: it has none)."""
    if "## Model zoo" not in page or "\n## Per op" not in page:
        return None
    body = page.split("## Model zoo", 1)[1].split("\n## Per op", 1)[0].rstrip("\n")
    return ("## Model zoo" + body).split("\n")


def _zoo_section(zoo: Sequence[ZooResult]) -> list[str]:
    out = [
        "## Model zoo",
        "",
        "Each family of `forge.models` (its small variant, seeded random weights, sequence 16),",
        "compiled by `forge.compile(check=True)`: ops after import and after the optimization passes,",
        "the ops that run on the CPU because they have no NPU lowering (`cpu_fallback`) and all CPU",
        "steps, the NPU's share of the compute steps and of their estimated time (the cost model's,",
        "`forge/driver/cost_model.py`; transfers left out), device transitions before/after",
        "affinity scheduling, parity with eager and compile time.",
        "",
        "| family | attn | result | ops imported | ops optimized | cpu_fallback | cpu ops "
        "| NPU share (ops / est. time) | transitions (before → after) | max abs | KL | compile s |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |",
    ]
    for z in zoo:
        if z.status == "error":
            out.append(f"| {z.family} | {z.attn} | error: {_cell(z.reason)} | | | | | | | | | |")
            continue
        fallback = ", ".join(f"{k}: {v}" for k, v in z.cpu_fallback.items()) or "{}"
        result = z.status if not z.reason else f"{z.status}: {_cell(z.reason)}"
        out.append(
            f"| {z.family} | {z.attn} | {result} | {z.ops_imported} | {z.ops_optimized} | {_cell(fallback)} "
            f"| {z.cpu_ops} | {_share(z.npu_op_share)} / {_share(z.npu_time_share)} "
            f"| {z.transitions_before} → {z.transitions_after} | {z.max_abs:.2e} | {z.kl:.2e} | {z.compile_s:.2f} |"
        )
    return out


def _share(value: float | None) -> str:
    return "?" if value is None else f"{100 * value:.1f}%"
