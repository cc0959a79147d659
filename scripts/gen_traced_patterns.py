"""Trace the PyTorch patterns of forge/transforms/traced_patterns.py (SOURCES) into its TRACED table.

    .venv/bin/python scripts/gen_traced_patterns.py          # rewrite the table in place
    .venv/bin/python scripts/gen_traced_patterns.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from forge.frontend.torch_patterns import traced_mlir
from forge.transforms import traced_patterns

PATH = Path(traced_patterns.__file__)
BLOCK = re.compile(r"(# BEGIN TRACED[^\n]*\n).*?(# END TRACED)", re.S)


def table() -> str:
    lines = ["TRACED: dict[str, str] = {"]
    for key, (search, replacement, examples) in traced_patterns.SOURCES.items():
        lines.append(f'    "{key}": """\\')
        lines += traced_mlir(search, replacement, examples).rstrip("\n").splitlines()
        lines.append('""",')
    lines.append("}")
    return "\n".join(lines) + "\n"


def regenerated() -> str:
    text = PATH.read_text()
    return BLOCK.sub(lambda m: m.group(1) + table() + m.group(2), text, count=1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the checked-in table is stale")
    args = parser.parse_args(argv)
    new = regenerated()
    if args.check:
        stale = new != PATH.read_text()
        if stale:
            print(f"{PATH} is stale: run scripts/gen_traced_patterns.py", file=sys.stderr)
        return int(stale)
    PATH.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
