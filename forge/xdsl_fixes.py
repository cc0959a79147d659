"""Fixes for xDSL 0.75 bugs that users of Forge would otherwise hit.

Each fix is small, keeps xDSL's behaviour on valid input, and is applied once when
`forge.driver.registry` is imported (every Forge parse path goes through it). Remove a fix when the
pinned xDSL has it.
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

# xDSL's pattern nests `+` inside `*`, so an unterminated string literal backtracks
# exponentially in the length of the rest of its line (a 40-character tail takes hours).
# The two alternatives never match the same text, so possessive quantifiers (Python 3.11)
# accept exactly the same strings and fail in linear time.
_XDSL_STRING_LITERAL = r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
_LINEAR_STRING_LITERAL = r'"(?:[^"\\\n\v\f]++|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*+"'


def apply() -> None:
    """Install the fixes (idempotent); a changed upstream pattern is left alone."""
    current = MLIRLexer._unescaped_characters_regex
    if current.pattern == _XDSL_STRING_LITERAL:
        MLIRLexer._unescaped_characters_regex = re.compile(_LINEAR_STRING_LITERAL)
