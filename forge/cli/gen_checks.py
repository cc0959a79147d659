"""`forge-gen-checks`: turn forge-opt output into FileCheck lines, like MLIR's generate-test-checks.py.

    forge-opt in.mlir -p fuse-ops | forge-gen-checks            # CHECK lines on stdout
    forge-gen-checks out.mlir --prefix FUSED                     # from a file, another prefix

Each `func.func` starts a `CHECK-LABEL` (its arguments on a `CHECK-SAME`: FileCheck allows no
captures on a label); the ops of its body follow as `CHECK-NEXT` lines. Every SSA
value becomes a named FileCheck capture: its definition `%[[NAME:.*]]`, each later use `%[[NAME]]`,
so the checks survive renumbering; function arguments are captured on the label line. Names come
from the IR's own names (`%h` -> `H`, `%0` -> `V0`), made unique per function. Lines that only
close a region (`}`) are kept as `CHECK-NEXT`; the module wrapper is dropped.
Review the output before pasting it into a test: it pins everything, including what the test
does not care about.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence

SSA = re.compile(r"%([A-Za-z0-9_$.-]+)((?:#\d+)?)")
DEF = re.compile(r"^\s*((?:%[A-Za-z0-9_$.-]+(?::\d+)?(?:,\s*)?)+)\s*=")
FUNC = re.compile(r"^\s*func\.func\s+(?:\w+\s+)?@([\w$.-]+)")


def capture_name(ssa: str, taken: set[str]) -> str:
    """A FileCheck variable name for SSA value `%ssa`, unique within `taken` (which it joins)."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", ssa).upper()
    if not base or base[0].isdigit():
        base = f"V{base}"
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


class _Function:
    """The captures of one function: SSA name -> FileCheck variable."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.taken: set[str] = set()

    def substitute(self, line: str, defined: Iterable[str]) -> str:
        defined = set(defined)
        line = line.replace("[[", "{{\\[\\[}}").replace("]]", "{{\\]\\]}}")  # FileCheck's variable syntax

        def repl(m: re.Match[str]) -> str:
            ssa, suffix = m.group(1), m.group(2)
            if ssa in self.names and ssa not in defined:
                return f"%[[{self.names[ssa]}]]{suffix}"
            if ssa not in self.names:
                self.names[ssa] = capture_name(ssa, self.taken)
                return f"%[[{self.names[ssa]}:[A-Za-z0-9_.$-]+]]{suffix}"
            return m.group(0)

        return SSA.sub(repl, line)


def _defined(line: str) -> list[str]:
    m = DEF.match(line)
    if not m:
        return []
    return [v.split(":")[0].strip().lstrip("%") for v in m.group(1).split(",") if v.strip()]


def generate(text: str, prefix: str = "CHECK") -> list[str]:
    """The CHECK lines for forge-opt output `text`."""
    out: list[str] = []
    function: _Function | None = None
    pad = " " * (len(prefix) + len("-LABEL") - len(prefix) - len("-NEXT"))
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("//") or stripped in ("builtin.module {", "module {"):
            continue
        if FUNC.match(line):
            function = _Function()
            # FileCheck forbids captures on a LABEL line: the arguments follow on a CHECK-SAME.
            head, paren, rest = stripped.partition("(")
            out.append(f"// {prefix}-LABEL: {head}{paren}")
            if rest:
                out.append(f"// {prefix}-SAME:{pad} {function.substitute(rest, _arguments(stripped))}")
            continue
        if function is None:
            continue  # outside functions (the closing brace of the module)
        if stripped == "}" and raw.startswith("  }") and not raw.startswith("   "):
            function = None  # the end of the function
            continue
        body = function.substitute(line[4:] if line.startswith("    ") else stripped, _defined(line))
        out.append(f"// {prefix}-NEXT:{pad} {body}")
    return out


def _arguments(line: str) -> list[str]:
    head = line.split(")", 1)[0]
    return [m.group(1) for m in SSA.finditer(head)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="forge-gen-checks", description=__doc__.splitlines()[0])
    parser.add_argument("input", nargs="?", help="forge-opt output (default: stdin)")
    parser.add_argument("--prefix", default="CHECK", help="FileCheck prefix (default CHECK)")
    args = parser.parse_args(argv)
    try:
        text = open(args.input).read() if args.input else sys.stdin.read()
    except OSError as e:
        print(f"forge-gen-checks: error: cannot read '{args.input}': {e.strerror}", file=sys.stderr)
        return 1
    for line in generate(text, args.prefix):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
