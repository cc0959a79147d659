"""A plug-in whose pass takes the name of one of Forge's own passes."""

from dataclasses import dataclass

from xdsl.passes import ModulePass

from forge.driver.registry import register_pass


@register_pass
@dataclass(frozen=True)
class MyFoldPass(ModulePass):
    name = "fold"

    def apply(self, ctx, op) -> None:
        pass
