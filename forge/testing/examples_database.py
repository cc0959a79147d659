"""Where `check_pattern` keeps the failing graphs hypothesis finds: one namespace per property.

hypothesis keys its example database by the test function, and every `check_pattern` call runs
the same inner function. Without a namespace, a graph that broke one rewrite (or that a test
expects to break a deliberately wrong pattern) would be replayed first by every other check,
drawn from other motifs: a failure could leak from one test into another. Built on hypothesis
(a dev extra), so only `check_pattern` imports it, when it runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis.database import ExampleDatabase


class NamespacedDatabase(ExampleDatabase):
    """`database`, seen through keys prefixed with `namespace`."""

    def __init__(self, database: ExampleDatabase, namespace: str):
        super().__init__()
        self.database = database
        self.prefix = namespace.encode() + b"\0"

    def save(self, key: bytes, value: bytes) -> None:
        self.database.save(self.prefix + key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        return self.database.fetch(self.prefix + key)

    def delete(self, key: bytes, value: bytes) -> None:
        self.database.delete(self.prefix + key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        self.database.move(self.prefix + src, self.prefix + dest, value)


def namespaced(database: ExampleDatabase | None, namespace: str) -> ExampleDatabase | None:
    """`database` under `namespace` (None, no database, stays None)."""
    return None if database is None else NamespacedDatabase(database, namespace)
