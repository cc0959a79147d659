"""Deterministic robustness fuzz test for forge-opt (issue 8, item 7).

Every input is built by mutating the IR of the `filecheck/` tests (split on `// -----`
and on top-level functions, RUN/CHECK lines stripped) or by corrupting the pass pipeline.
forge-opt runs in-process and must end each run with exit code 0 (valid input) or 1 (a
diagnostic), never a traceback, exit code 70 (internal error) or a hang. Exit code 2 is
only accepted for the command-line errors generated on purpose (`CLI_ERRORS`).
"""

from __future__ import annotations

import io
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path

from forge.cli.opt import main

ROOT = Path(__file__).resolve().parents[2]
FILECHECK = ROOT / "filecheck"
SEED = 20261130
PER_INPUT_SECONDS = 10.0

# Two bugs this test found are fixed and their inputs now run like any other: xDSL 0.75's
# lexer hung on an unterminated string literal (forge/xdsl_fixes.py), and IR using a value
# before its definition crashed lower-aten-to-npuir (forge/analysis/dominance.py).


ATEN_PASSES = "dce,cse,fold,fuse-attention,fuse-ops,layout"
LOWER_PASSES = "lower-aten-to-npuir,schedule-device-affinity,lower-npuir-to-buffer"

BAD_PIPELINES = [
    "fold{max-inline-elements=abc}",
    "fold{max-inline-elements=-1}",
    "fold{max-inline-elements=99999999999999999999999}",
    "fold{max-inline-elements=1.5}",
    "fold{max-inline-elements=}",
    "fold{max-inline-elements}",
    "no-such-pass",
    "fuse-ops{bogus=1}",
    "fuse-ops{",
    "fuse-ops}",
    "fuse-ops{{}}",
    "dce,,cse",
    ",",
    "dce{",
    "cse{a=1,b=2}",
    "layout{=1}",
    "fold{max-inline-elements=1 max-inline-elements=2}",
    "lower-aten-to-npuir{x=[1,2}",
    "dce{}}",
    "  ",
    "dce cse",
    "fold{max-inline-elements=\"abc\"}",
    "fold{max-inline-elements=true}",
    "fold{max-inline-elements=[1,2]}",
    "x" * 300,
    "dce,no-such-pass,cse",
    "{}",
    "dce}{",
    "fuse-attention{bogus}",
    "schedule-device-affinity{devices=abc}",
]

# Command lines that argparse rejects (exit code 2 is fine for these only).
CLI_ERRORS = [
    ["--no-such-flag"],
    ["-p"],
    ["--print-ir-before"],
    ["--split-input-file=3"],
    ["-f"],
]

STRUCTURAL = ["{", "}", "(", ")", "<", ">", "[", "]", ":", ",", "=", "->", "%", "@", "\"", "^bb0:"]
TYPES = [
    "tensor<?xf32>",
    "tensor<4xi7>",
    "tensor<99999999999x99999999999xf32>",
    "tensor<0xf32>",
    "tensor<f32>",
    "tensor<*xf32>",
    "tensor<4x4xcomplex<f32>>",
    "memref<4xf32>",
    "i1",
    "f16",
    "index",
    "tensor<-1xf32>",
    "tensor<4xf32, #foo>",
    "!aten.nothing",
    "none",
]
NUMBERS = [
    "99999999999999999999999999",
    "-1",
    "-99999999999",
    "0",
    "1.5",
    "-0.0",
    "1e309",
    "nan",
    "0x7FC00000",
    "9223372036854775808",
    "-9223372036854775809",
]
VALUES = [
    '"str"', "[]", "[1, [2]]", "true", "unit", "{a = 1}", "f32", "@sym",
    "dense<1.0> : tensor<2xf32>", "#builtin.int<3>", "-1", "1.5",
]
OP_NAMES = ["aten.no_such_op", "npuir.bogus", "buffer.nope", "foo.bar", "func.nope", "aten", "aten."]

TYPE_RE = re.compile(r"(?:tensor|memref|vector)<[^<>]*(?:<[^<>]*>[^<>]*)*>|\b[if]\d+\b|\bindex\b")
NUMBER_RE = re.compile(r"(?<![%\w#@.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?\b")
PROP_RE = re.compile(r"(\w+ = )([^,}\]]+)")
OPNAME_RE = re.compile(r"\b(?:aten|npuir|buffer|arith|func)\.[\w.]+")
SSA_RE = re.compile(r"%[\w.$-]+")


def _strip(text: str) -> str:
    lines = [
        line
        for line in text.splitlines()
        if not re.match(r"\s*//\s*(RUN|CHECK|expected-|COM)", line)
    ]
    return "\n".join(lines) + "\n"


def _chunks(path: Path) -> list[str]:
    """The file's `// -----` chunks, large ones split into top-level functions."""
    out: list[str] = []
    for chunk in path.read_text().split("// -----"):
        chunk = _strip(chunk)
        if not chunk.strip():
            continue
        if len(chunk) <= 3000:
            out.append(chunk)
            continue
        parts = re.split(r"(?m)^(?=func\.func|builtin\.module|module)", chunk)
        out += [p for p in parts if p.strip() and len(p) <= 6000]
    return out


def _corpus() -> dict[str, list[str]]:
    groups = {
        "aten": sorted((FILECHECK / "dialects" / "aten").glob("*.mlir")),
        "npuir": sorted((FILECHECK / "dialects" / "npuir").glob("*.mlir")),
        "buffer": sorted((FILECHECK / "dialects" / "buffer").glob("*.mlir")),
        "transforms": sorted((FILECHECK / "transforms").glob("*.mlir")),
        "lowering": sorted((FILECHECK / "lowering").glob("*.mlir")),
        "cli": sorted((FILECHECK / "cli").glob("*.mlir")),
    }
    return {k: [c for p in paths for c in _chunks(p)] for k, paths in groups.items()}


def _sub_one(rng: random.Random, text: str, pattern: re.Pattern[str], choices) -> str:
    matches = list(pattern.finditer(text))
    if not matches:
        return text
    m = rng.choice(matches)
    new = choices(m) if callable(choices) else rng.choice(choices)
    return text[: m.start()] + new + text[m.end() :]


def mutate(rng: random.Random, text: str) -> tuple[str, str]:
    """One random mutation of `text`: (kind, mutated text)."""
    lines = text.splitlines(keepends=True)
    kind = rng.choice(
        [
            "truncate",
            "truncate",
            "delete-line",
            "duplicate-line",
            "swap-lines",
            "type",
            "type",
            "number",
            "number",
            "property",
            "property",
            "op-name",
            "ssa-undefined",
            "ssa-swap",
            "structural",
            "delete-char",
            "binary",
        ]
    )
    if kind == "truncate":
        return kind, text[: rng.randrange(len(text) + 1)]
    if kind == "delete-line" and lines:
        del lines[rng.randrange(len(lines))]
        return kind, "".join(lines)
    if kind == "duplicate-line" and lines:
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
        return kind, "".join(lines)
    if kind == "swap-lines" and len(lines) > 1:
        i, j = rng.sample(range(len(lines)), 2)
        lines[i], lines[j] = lines[j], lines[i]
        return kind, "".join(lines)
    if kind == "type":
        return kind, _sub_one(rng, text, TYPE_RE, TYPES)
    if kind == "number":
        return kind, _sub_one(rng, text, NUMBER_RE, NUMBERS)
    if kind == "property":
        return kind, _sub_one(
            rng, text, PROP_RE, lambda m: m.group(1) + rng.choice(VALUES)
        )
    if kind == "op-name":
        return kind, _sub_one(rng, text, OPNAME_RE, OP_NAMES)
    if kind == "ssa-undefined":
        return kind, _sub_one(rng, text, SSA_RE, ["%undefined", "%0", "%arg99", "%"])
    if kind == "ssa-swap":
        names = sorted(set(SSA_RE.findall(text)))
        if len(names) > 1:
            return kind, _sub_one(rng, text, SSA_RE, names)
    if kind == "structural" and text:
        i = rng.randrange(len(text))
        return kind, text[:i] + rng.choice(STRUCTURAL) + text[i:]
    if kind == "delete-char" and text:
        i = rng.randrange(len(text))
        return kind, text[:i] + text[i + 1 :]
    # binary (or a mutation that found nothing to change): non-UTF-8 / control bytes
    half = len(text) // 2
    return "binary", text[:half] + rng.choice(["\x00", "\udcff", "\x1b[0m", "\u202e"]) + text[half:]


def cases() -> Iterator[tuple[str, list[str], str, bool]]:
    """(description, extra argv, input text, argparse error expected)."""
    rng = random.Random(SEED)
    corpus = _corpus()
    every = [c for group in corpus.values() for c in group]
    aten = corpus["aten"] + [c for c in corpus["transforms"] if "aten." in c]
    small_aten = [c for c in aten if len(c) <= 1500]

    # 1. Parse/verify-level mutations of every file (the bulk).
    for i in range(900):
        text = rng.choice(every)
        for _ in range(rng.choice([1, 1, 1, 2, 3])):
            kind, text = mutate(rng, text)
        yield f"parse#{i}:{kind}", [], text, False
    # 2. Mutated aten IR through the real pipelines.
    for i in range(80):
        kind, text = mutate(rng, rng.choice(small_aten))
        yield f"aten-passes#{i}:{kind}", ["-p", ATEN_PASSES], text, False
    for i in range(60):
        kind, text = mutate(rng, rng.choice(small_aten))
        yield f"lowering#{i}:{kind}", ["-p", LOWER_PASSES], text, False
    # 3. Bad pipelines (on valid and mutated input) and bad options.
    for i, pipeline in enumerate(BAD_PIPELINES):
        yield f"pipeline#{i}", ["-p", pipeline], rng.choice(small_aten), False
    for i in range(30):
        p = rng.choice(BAD_PIPELINES)
        cut = p[: rng.randrange(len(p) + 1)]
        yield f"pipeline-cut#{i}", ["-p", cut], rng.choice(small_aten), False
    for i, argv in enumerate(CLI_ERRORS):
        yield f"cli#{i}", argv, rng.choice(small_aten), True
    # 4. Flags that change how input is read, on mutated input.
    for i in range(40):
        kind, text = mutate(rng, rng.choice(every))
        flag = rng.choice(
            [["--split-input-file"], ["--print-op-generic"], ["--verify-each", "-p", "dce"], ["--no-implicit-module"]]
        )
        yield f"flags#{i}:{kind}", flag, text, False


def test_forge_opt_fuzz(tmp_path: Path) -> None:
    failures: list[str] = []
    count = 0
    path = tmp_path / "input.mlir"
    for desc, argv, text, cli_error in cases():
        path.write_bytes(text.encode("utf-8", "surrogateescape"))
        err = io.StringIO()
        start = time.perf_counter()
        code = main(
            [str(path), *argv, "--no-reproducer", "-o", str(tmp_path / "out.mlir")],
            stderr=err,
        )
        elapsed = time.perf_counter() - start
        count += 1
        stderr = err.getvalue()
        allowed = {0, 1, 2} if cli_error else {0, 1}
        problem = None
        if code not in allowed:
            problem = f"exit code {code}"
        elif "Traceback" in stderr:
            problem = "traceback"
        elif elapsed > PER_INPUT_SECONDS:
            problem = f"took {elapsed:.1f}s"
        if problem:
            failures.append(
                f"--- {desc} {argv}: {problem}\n{stderr[-1500:]}\n--- input:\n{text[:1500]}"
            )
    assert count >= 1000, f"only {count} inputs run"
    assert not failures, f"{len(failures)} of {count} inputs failed:\n" + "\n".join(failures[:20])
