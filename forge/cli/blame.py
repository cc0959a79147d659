"""Whose bug is it? Tells an exception in a plug-in's pass or pattern from a bug in Forge.

forge-opt reports an exception raised by Forge's own code (or by xDSL on Forge's behalf) as an
internal error (traceback, exit 70). An exception whose raising frame is in the user's code (a file
loaded with `--load-pass-plugin`, or any module outside Forge's packages and the installed
libraries) is the user's: one diagnostic at the op being rewritten, naming the pass and the pattern,
exit 1 (forge/cli/opt_errors.py). The raising frame is the innermost frame of the traceback that is not
library code (the standard library, site-packages: xDSL, torch): `1 / 0` in a plug-in's pattern is
the plug-in's, a `KeyError` inside xDSL called by a Forge pass is Forge's.

`non_attribute_property` finds the other common plug-in bug: a Python value (`-1`) where an op
wants an attribute (`IntegerAttr`), which xDSL only notices when it prints or verifies the op
(`AttributeError: 'int' object has no attribute 'name'`).
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from functools import cache
from types import TracebackType

from xdsl.ir import Attribute, Operation
from xdsl.irdl import OptionalDef
from xdsl.utils.exceptions import VerifyException

from forge.diagnostics import one_line, with_op

_FORGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORGE_PACKAGES = tuple(os.path.join(_FORGE_ROOT, p) + os.sep for p in ("forge", "dialects", "lowering", "backends"))
"""Forge's own source directories: an exception raised from here is Forge's bug."""

@cache
def _library_dirs() -> tuple[str, ...]:
    """The interpreter's and the installed packages' directories (read on the first blame, not at
    `forge-opt` start-up: `sysconfig` costs a few ms to import)."""
    import sysconfig

    return tuple(
        {os.path.abspath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
         if (p := sysconfig.get_paths().get(key))}
    )


@dataclass(frozen=True)
class UserFault:
    """Where the user's code raised: the frame, and the pattern whose match_and_rewrite ran, if any."""

    file: str
    line: int
    function: str
    pattern: str | None
    op: Operation | None
    """The op the pattern was given (from the frame of its match_and_rewrite), if known."""

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def is_library(path: str) -> bool:
    absolute = os.path.abspath(path)
    return absolute.startswith(_library_dirs()) and not absolute.startswith(FORGE_PACKAGES)


def is_forge(path: str) -> bool:
    return os.path.abspath(path).startswith(FORGE_PACKAGES)


def _frames(tb: TracebackType | None) -> list[TracebackType]:
    frames = []
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    return frames


def user_fault(error: BaseException) -> UserFault | None:
    """The user's frame that raised `error`, or None when the raising frame is Forge's."""
    frames = _frames(error.__traceback__)
    for tb in reversed(frames):
        path = tb.tb_frame.f_code.co_filename
        if path.startswith("<") or is_library(path):
            continue
        if is_forge(path):
            return None
        pattern, op = _pattern_of(frames)
        return UserFault(os.path.abspath(path), tb.tb_lineno, tb.tb_frame.f_code.co_name, pattern, op)
    return None


def _pattern_of(frames: list[TracebackType]) -> tuple[str | None, Operation | None]:
    """The innermost `match_and_rewrite(self, op, ...)` frame: the pattern's class and its op."""
    for tb in reversed(frames):
        frame = tb.tb_frame
        if frame.f_code.co_name != "match_and_rewrite":
            continue
        self, op = frame.f_locals.get("self"), frame.f_locals.get("op")
        if self is not None and not is_library(frame.f_code.co_filename):
            return type(self).__name__, op if isinstance(op, Operation) else None
    return None, None


def format_traceback(error: BaseException) -> str:
    """The traceback as Python prints it (with xDSL's notes: the IR around the op)."""
    return "".join(traceback.format_exception(error))


def non_attribute_property(root: Operation) -> tuple[Operation, str, str, object] | None:
    """The first op under `root` with a property or attribute that is not an xDSL Attribute:
    (op, "property" or "attribute", name, value)."""
    for op in root.walk():
        for kind, values in (("property", op.properties), ("attribute", op.attributes)):
            for name, value in values.items():
                if not isinstance(value, Attribute):
                    return op, kind, name, value
    return None


def non_attribute_message(op: Operation, kind: str, name: str, value: object) -> str:
    return (
        f"{kind} '{name}' is the Python {type(value).__name__} {value!r}, not an attribute "
        "(build_op takes attributes, e.g. IntegerAttr(-1, i64); dialects.aten_builder.build takes Python values)"
    )


def missing_required(op: Operation) -> tuple[str, str] | None:
    """("property" or "attribute", name) of the first required one `op` lacks (IRDL ops only)."""
    get_definition = getattr(type(op), "get_irdl_definition", None)
    if get_definition is None:
        return None
    try:
        definition = get_definition()
    except Exception:
        return None
    for kind, defs, present in (("property", definition.properties, op.properties),
                                ("attribute", definition.attributes, op.attributes)):
        for name, attr_def in defs.items():
            if not isinstance(attr_def, OptionalDef) and name not in present:
                return kind, name
    return None


def verifier_crash(root: Operation, error: BaseException) -> VerifyException:
    """A verifier that crashed (not a VerifyException) as a VerifyException at the op it crashed on.

    xDSL's verifiers assume well-formed ops: a `func.func` without `function_type` raises KeyError,
    an op with a Python int for a property raises AttributeError while its error is printed.
    Malformed input (often generic syntax) is the user's error, so forge-opt reports it at the op.
    """
    if (bad := non_attribute_property(root)) is not None:
        return with_op(VerifyException(non_attribute_message(*bad)), bad[0])
    for op in root.walk():  # a missing required property crashes the verifiers of the op's users too
        if (missing := missing_required(op)) is not None:
            return with_op(VerifyException(f"is missing its required {missing[0]} '{missing[1]}'"), op)
    for op in root.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException:
            continue
        except Exception as e:
            detail = f"{type(e).__name__}: {one_line(str(e))}"
            message = f"is malformed: its verifier failed with {detail} (a required property, attribute, "
            message += "region or successor is missing or of the wrong kind?)"
            return with_op(VerifyException(message), op)
    detail = f"{type(error).__name__}: {one_line(str(error))}"
    return VerifyException(f"the IR is malformed: verification failed with {detail}")
