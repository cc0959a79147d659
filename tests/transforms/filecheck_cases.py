"""The FileCheck files of the passes as test inputs: one function at a time.

The pass tests interpret each FileCheck case before and after the pass, so every positive
case is also a parity check and every negative case is checked for the reason it was declined.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from forge.driver.registry import make_context

TRANSFORMS_FILECHECK = Path(__file__).parents[2] / "filecheck" / "transforms"


@functools.cache
def filecheck_text(path: Path) -> str:
    return path.read_text()


def filecheck_functions(path: Path) -> list[str]:
    """The names of the functions (the cases) of a FileCheck file, in order."""
    return re.findall(r"^func\.func @(\w+)", filecheck_text(path), flags=re.MULTILINE)


def filecheck_case(path: Path, name: str) -> ModuleOp:
    """FileCheck case `name` alone, renamed `forward` (what the interpreter helpers call)."""
    module = Parser(make_context(), filecheck_text(path)).parse_module()
    for op in list(module.ops):
        assert isinstance(op, func.FuncOp)
        if op.sym_name.data != name:
            op.detach()
            op.erase()
    (function,) = module.ops
    function.sym_name = type(function.sym_name)("forward")
    return module
