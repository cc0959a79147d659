"""`ForgeContext`: xDSL's Context, with the `aten` dialect's ops defined one by one on first lookup.

The `aten` dialect has 426 op classes and defining them all takes ~0.1 s, more than parsing a
typical test file: `dialects.aten` builds each class on first use (`op_named`), and this context
asks it for the one op a name denotes instead of loading the whole dialect when the first `aten`
op is parsed. It sits with the dialects (the lowest layer) so that every layer can use it;
`forge.driver.registry.make_context` and `forge-opt` build theirs from it.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.ir import Operation


class ForgeContext(Context):
    """xDSL's Context, with the ops of the `aten` dialect looked up one by one (`dialects.aten.op_named`)
    instead of loading the whole dialect on its first op. Loading the dialect later (e.g.
    `load_registered_dialect("aten")`) still works: an op already looked up is the same class."""

    def _get_known_op(self, name: str) -> type[Operation] | None:
        known = self._loaded_ops.get(name)
        if known is not None:
            return known
        if name.startswith("aten.") and "aten" in self._registered_dialects and "aten" not in self._loaded_dialects:
            from dialects.aten import op_named

            found = op_named(name)  # the dialect has no other ops: None is its answer, no need to load it
            if found is not None:
                self._loaded_ops[name] = found
            return found
        return super()._get_known_op(name)

    def load_op(self, op: type[Operation]) -> None:
        if self._loaded_ops.get(op.name) is op:  # looked up before its dialect was loaded
            return
        super().load_op(op)

    def clone(self) -> ForgeContext:
        ctx = ForgeContext(self.allow_unregistered)
        for field in ("_loaded_dialects", "_loaded_ops", "_loaded_attrs", "_loaded_types", "_registered_dialects"):
            setattr(ctx, field, getattr(self, field).copy())
        return ctx
