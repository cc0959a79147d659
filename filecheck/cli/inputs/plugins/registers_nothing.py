"""A plug-in that defines a pass but forgets to register it."""

from dataclasses import dataclass

from xdsl.passes import ModulePass


@dataclass(frozen=True)
class ForgottenPass(ModulePass):
    name = "forgotten"

    def apply(self, ctx, op) -> None:
        pass
