"""Source locations for torch.export's nodes, recorded cheaply.

torch.export records a stack trace on every node it creates (`node.meta["stack_trace"]`): it captures,
symbolizes and formats the whole Python stack, source lines read through linecache, for each node, and
imports inductor modules to filter it. On a cold GPT-2 12L export that is ~180 ms of ~1 s. The importer
reads one frame of it: the innermost `forward` of model code (`LIBRARY_PATHS` are not model code).

`recorded_model_frames()` turns torch's recording off for the export (`torch.fx.config
.do_not_emit_stack_traces`) and records that frame instead, found by walking the live frames, in the
form torch writes (`File "<path>", line <n>, in forward`), so everything that reads `stack_trace`
reads it unchanged. torch keeps only `forward` frames when it records for export; so does this.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import torch.fx
from torch.fx.proxy import TracerBase

LIBRARY_PATHS = ("/torch/", "/site-packages/torch", "/torch/nn/modules/")
"""A frame whose file path contains one of these is torch's code, not the model's."""

_NO_TRACE_OPS = ("placeholder", "output")


def model_frame_text(frame: FrameType | None) -> str | None:
    """`File "<path>", line <n>, in forward` for the innermost `forward` frame of model code at or
    outside `frame` (the innermost `forward` of any code when all are torch's), None without one."""
    found = None
    while frame is not None:
        code = frame.f_code
        if code.co_name == "forward":
            if not any(p in code.co_filename for p in LIBRARY_PATHS):
                found = frame
                break
            found = found or frame
        frame = frame.f_back
    if found is None:
        return None
    return f'File "{found.f_code.co_filename}", line {found.f_lineno}, in forward'


@contextmanager
def recorded_model_frames() -> Iterator[None]:
    """While tracing inside, each new node's `stack_trace` is its model frame (`model_frame_text`),
    instead of torch's formatted whole stack."""
    original = TracerBase.create_node
    was_off = torch.fx.config.do_not_emit_stack_traces

    def create_node(self, *args, **kwargs):
        node = original(self, *args, **kwargs)
        if node.op not in _NO_TRACE_OPS and not node.meta.get("stack_trace"):
            text = model_frame_text(sys._getframe(1))
            if text is not None:
                node.meta["stack_trace"] = text
        return node

    TracerBase.create_node = create_node
    torch.fx.config.do_not_emit_stack_traces = True
    try:
        yield
    finally:
        TracerBase.create_node = original
        torch.fx.config.do_not_emit_stack_traces = was_off


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def model_frame(node: torch.fx.Node) -> tuple[str, int] | None:
    """(path, line) of the innermost frame of the node's stack trace that is model code (not torch's)."""
    trace = node.meta.get("stack_trace")
    if not trace:
        return None
    frames = _FRAME.findall(trace)
    for path, line in reversed(frames):
        if not any(p in path for p in LIBRARY_PATHS):
            return path, int(line)
    return (frames[-1][0], int(frames[-1][1])) if frames else None


_OWN_PATHS = ("/forge/frontend/", "/forge/driver/")
"""Forge's own frames an export runs through (its wrappers of the model): not where a model's error is."""


def error_location(err: BaseException) -> str | None:
    """`<file>:<line> (<function>)` of the innermost frame of `err`'s traceback that is model code (neither
    torch's nor Forge's own), the file shown from its package down (`transformers/models/...`); None without one."""
    found = None
    tb = err.__traceback__
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if not any(p in path for p in LIBRARY_PATHS + _OWN_PATHS) and not path.startswith("<"):
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    path = found.tb_frame.f_code.co_filename
    short = path.split("site-packages/", 1)[-1]
    return f"{short}:{found.tb_lineno} ({found.tb_frame.f_code.co_name})"


def location_text(node: torch.fx.Node) -> str:
    """`<path>:<line>` of the node's model frame (what errors name), else `node <name>`."""
    frame = model_frame(node)
    return f"{frame[0]}:{frame[1]}" if frame else f"node {node.name}"
