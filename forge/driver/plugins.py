"""Load passes from a Python file without packaging it: `forge-opt --load-pass-plugin=FILE`.

Like mlir-opt's `--load-pass-plugin`, the file is imported (as a module of its own, once per
path) and registers its passes through Forge's registry, `forge.driver.registry.register_pass`:

    from forge.driver.registry import register_pass

    @register_pass
    @dataclass(frozen=True)
    class MyPass(ModulePass):
        name = "my-pass"
        ...

Tests load a plug-in for the length of a `with` block: `with pass_plugin(path) as module:` registers
its passes, yields its module and unregisters them afterwards (so one test's plug-in does not leak
into the next test's pass registry).

Everything that can go wrong while loading (no such file, a syntax error, an exception at
import time, a name clash, a file that registers nothing) is a `PluginError` carrying the file
and line, which forge-opt prints as a diagnostic.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from forge.driver import registry


class PluginError(Exception):
    """A plug-in file failed to load; `file:line` say where, when known."""

    def __init__(self, message: str, file: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.column = column

    def location(self) -> str:
        """`file`, `file:line` or `file:line:column`."""
        parts = [self.file] + [str(n) for n in (self.line, self.column) if n is not None]
        return ":".join(parts)


def module_name(path: str) -> str:
    """The module name a plug-in file is imported as: stable per absolute path."""
    absolute = os.path.abspath(path)
    stem = "".join(c if c.isalnum() else "_" for c in os.path.splitext(os.path.basename(path))[0])
    import hashlib  # here, not at forge-opt start-up: only a --load-pass-plugin run needs it

    digest = hashlib.sha1(absolute.encode()).hexdigest()[:8]
    return f"forge_pass_plugin_{stem}_{digest}"


def load_pass_plugin(path: str) -> list[str]:
    """Import the plug-in at `path`; return the names of the passes it registered."""
    if not os.path.isfile(path):
        reason = "is a directory" if os.path.isdir(path) else "no such file"
        raise PluginError(f"cannot load pass plug-in: {reason}", path)
    name = module_name(path)
    _import(name, path)
    registered = [n for n, cls in registry._REGISTERED_PASSES.items() if cls.__module__ == name]
    if not registered:
        raise PluginError(
            "the pass plug-in registered no pass (decorate a ModulePass subclass with "
            "forge.driver.registry.register_pass)",
            path,
        )
    return registered


@contextmanager
def pass_plugin(path: str | os.PathLike[str]) -> Iterator[ModuleType]:
    """Load the plug-in at `path` for the block: yields its module; its passes are unregistered after."""
    path = os.fspath(path)
    before = dict(registry._REGISTERED_PASSES)
    load_pass_plugin(path)
    try:
        yield sys.modules[module_name(path)]
    finally:
        registry._REGISTERED_PASSES.clear()
        registry._REGISTERED_PASSES.update(before)
        sys.modules.pop(module_name(path), None)


def _import(name: str, path: str) -> None:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError("cannot load pass plug-in: not a Python file", path)
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(name)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        _restore(name, previous)
        raise PluginError(f"invalid Python in pass plug-in: {e.msg}", path, e.lineno, e.offset) from None
    except Exception as e:
        _restore(name, previous)
        raise PluginError(
            f"pass plug-in raised {type(e).__name__}: {_first_line(e)}", path, _line_in(path, e)
        ) from None


def _restore(name: str, previous: ModuleType | None) -> None:
    if previous is None:
        sys.modules.pop(name, None)
    else:
        sys.modules[name] = previous


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "(no message)"


def _line_in(path: str, error: BaseException) -> int | None:
    """The last line of `path` in the traceback: where the plug-in's own code failed."""
    absolute = os.path.abspath(path)
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == absolute:
            line = frame.lineno
    return line
