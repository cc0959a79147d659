"""Shared helpers for the dialect tests: parse and print IR in Forge's context."""

from __future__ import annotations

import io

from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.parser import Parser
from xdsl.printer import Printer

from forge.driver.registry import make_context


def t(*shape: int, elt=f32) -> TensorType:
    return TensorType(elt, shape)


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def show(op, generic: bool = False) -> str:
    out = io.StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(op)
    return out.getvalue()
