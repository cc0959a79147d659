"""A runtime added the way a user adds one: this module (a `Runtime` subclass and its builder) plus one
`register_runtime` call (tests/backends/test_runtime_registry.py). It runs on OpenVINO and records how
many graphs it compiled, so a test can see that Forge used it."""

from __future__ import annotations

from backends.nnfactory.runtime.openvino_runtime import OpenVINOGraphBuilder, OpenVINORuntime

COMPILED: list[str] = []


class RecordingGraphBuilder(OpenVINOGraphBuilder):
    def compile(self):
        COMPILED.append(self.runtime.device)
        return super().compile()


class RecordingRuntime(OpenVINORuntime):
    name = "recording"
    builder_class = RecordingGraphBuilder


def is_available() -> bool:
    return True
