"""Export each distinct repeated block (transformer layer) once and reuse it for every identical instance.

Transformer stacks repeat one block N times; torch.export traces, and the importer imports, each copy
again. `export_and_import(model, args, kwargs)` traces one representative per distinct block:

1. **Candidates**: the children of an `nn.ModuleList` / `nn.Sequential` that have a sibling of the same
   class and parameters (the outermost such lists: a layer's own lists stay inside the layer).
2. **Skeleton export**: the model is exported once with each candidate's `forward` swapped (an instance
   attribute, removed afterwards) for a leaf that reads the call torch.export makes (its pytree structure,
   every tensor's shape/stride/dtype/device, every other value). The first call of a *group* is traced as
   usual, between `forge::block_input` / `forge::block_output` identity markers, while every attribute read
   on the block and its submodules is recorded (their classes are swapped for recording subclasses while it
   runs). Every later call of the group is one opaque `forge::block(tensors, group, instance)` custom op
   (its fake kernel returns the representative's output metadata): its layer is never traced.
3. **Grouping key (soundness)**: a call joins a group only if it has the same class (and no
   instance-level `forward` or hooks anywhere in the block), the same parameters and buffers (names,
   shapes, strides, dtypes, tying, persistence), the same call signature (tuples, tensors and plain values
   only: a cache object, a list or a dict the block could change in place is not reused), and every
   attribute the representative's forward *read* has an equal value on the call's block (`_same`: numbers
   and strings by value, submodules and weights by their path inside the block, other tensors by value,
   other objects, modules outside the block included (transformers' per-instance kernel wrappers), by identity
   or by class and equal state, recursively to a bounded depth). Anything not proven equal starts a new group,
   and the report names what differed (`report["blocks"]["groups"][i]["split"]`).
   The trace is a function of the code, the attributes it reads, the input metadata and global state; with
   all reads equal, an instance's trace is the representative's (up to its weights). HF layers carry
   `layer_idx`: on the use_cache=False path nothing reads it and the layers share one group; a forward
   that reads it makes each layer its own group. A representative that writes an attribute is not reused
   (its group's other calls are traced inline); one that writes into an input or a buffer it owns makes the
   whole export fall back.

The importer (fx_importer `leaves=`) then stitches: the markers record the representative's imported ops (the
region between them: checked to read only its marked inputs, its own weights and shared constants), and each
`forge::block` node becomes a copy of that region on the call's inputs, its weights replaced by the instance's
(`<instance path>.<name>`, the names a whole export gives, bound to the instance's tensors).
`BlockReuseUnavailable` (or any failure of this path) means: export the whole model as usual; `compile` does,
and says why (`report["blocks"]["off"]`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import nn

__all__ = ["BlockPlan", "BlockReuseUnavailable", "export_reusing_blocks", "find_candidates"]

_MISSING = object()
_PRIMITIVES = (bool, int, float, str, bytes, complex, type(None), torch.dtype, torch.device, torch.layout,
               torch.memory_format, torch.Size)
_GIDS = itertools.count()
_OUTPUTS: dict[int, list[tuple[tuple[int, ...], tuple[int, ...], torch.dtype, torch.device]]] = {}
"""group id -> the output tensors' metadata, read by the custom op's fake kernel while a plan is alive."""
_OP: Any = None


class BlockReuseUnavailable(Exception):
    """Block reuse cannot be proven sound (or does not apply) for this model: export it whole."""


# --- the opaque ops -------------------------------------------------------------------------------------


def block_ops() -> tuple[Any, Any, Any]:
    """(`forge::block`, `forge::block_input`, `forge::block_output`), defined once per process.

    `block(tensors, group, instance) -> tensors`: a reused block call (its fake kernel returns the
    representative's output metadata, `_OUTPUTS[group]`); `block_input(t, group, i)` and
    `block_output(t, group, j)`: identities around the representative's traced call, marking its inputs
    and outputs (custom ops: torch's decompositions and re-traces keep them)."""
    global _OP
    if _OP is None:
        @torch.library.custom_op("forge::block", mutates_args=())
        def block(inputs: list[torch.Tensor], group: int, instance: int) -> list[torch.Tensor]:
            raise RuntimeError("forge::block is a placeholder of a reused block; it only exists while exporting")

        @block.register_fake
        def _(inputs, group, instance):
            return [torch.empty_strided(s, st, dtype=d, device=dev) for s, st, d, dev in _OUTPUTS[group]]

        for name in ("block_input", "block_output"):
            @torch.library.custom_op(f"forge::{name}", mutates_args=())
            def marker(t: torch.Tensor, group: int, index: int) -> torch.Tensor:
                return t.clone()

            @marker.register_fake
            def _(t, group, index):
                return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device=t.device)

        ops = torch.ops.forge
        _OP = (ops.block.default, ops.block_input.default, ops.block_output.default)
    return _OP


# --- candidates ---------------------------------------------------------------------------------------


def find_candidates(model: nn.Module) -> dict[str, nn.Module]:
    """path -> block: children of ModuleLists/Sequentials with a same-class sibling and parameters,
    outermost lists only."""
    found: dict[str, nn.Module] = {}
    for path, module in model.named_modules():
        if not isinstance(module, (nn.ModuleList, nn.Sequential)) or any(path.startswith(p + ".") for p in found):
            continue
        children = list(module.named_children())
        classes = [type(c) for _, c in children]
        for name, child in children:
            if classes.count(type(child)) >= 2 and any(True for _ in child.parameters()):
                found[f"{path}.{name}" if path else name] = child
    return found


def _has_hooks(module: nn.Module) -> bool:
    for m in module.modules():
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks:
            return True
        if "forward" in m.__dict__:
            return True
    from torch.nn.modules import module as module_mod

    return bool(module_mod._global_forward_hooks or module_mod._global_forward_pre_hooks
                or module_mod._global_backward_hooks or module_mod._global_backward_pre_hooks)


def _tensor_key(t: torch.Tensor) -> tuple[Any, ...]:
    return (tuple(t.shape), tuple(t.stride()), t.dtype, t.device.type, t.requires_grad)


def weight_signature(block: nn.Module) -> tuple[Any, ...]:
    """Names, shapes, strides and dtypes of the block's parameters and buffers, their tying and persistence."""
    entries, first = [], {}
    for kind, named in (("p", block.named_parameters(remove_duplicate=False)),
                        ("b", block.named_buffers(remove_duplicate=False))):
        for name, t in named:
            tied = first.setdefault(id(t), name)
            entries.append((kind, name, _tensor_key(t), tied))
    persistence = tuple(sorted((p, tuple(sorted(m._non_persistent_buffers_set))) for p, m in block.named_modules()))
    return tuple(entries), persistence


# --- recording attribute reads --------------------------------------------------------------------------


class _Recorder:
    def __init__(self, paths: dict[int, str]):
        self.paths = paths
        self.reads: set[tuple[str, str]] = set()
        self.writes: list[tuple[str, str]] = []


_ACTIVE: list[_Recorder] = []
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def _torch_internal(frame: types.FrameType) -> bool:
    """A `__dict__` read by torch's own machinery (nn.Module.__getattr__ finding a parameter, export's
    attribute snapshots): not the model's code reading its attributes (those reads are recorded by name)."""
    return frame.f_code.co_filename.startswith(_TORCH_DIR)
_RECORDING_CLASSES: dict[type, type] = {}


def _recording_class(cls: type) -> type:
    rec = _RECORDING_CLASSES.get(cls)
    if rec is None:
        base_get, base_set = cls.__getattribute__, cls.__setattr__

        def __getattribute__(self, name):
            if _ACTIVE:
                recorder = _ACTIVE[-1]
                path = recorder.paths.get(id(self))
                if path is not None and (name != "__dict__" or not _torch_internal(sys._getframe(1))):
                    recorder.reads.add((path, name))
            return base_get(self, name)

        def __setattr__(self, name, value):
            if _ACTIVE:
                recorder = _ACTIVE[-1]
                path = recorder.paths.get(id(self))
                if path is not None:
                    recorder.writes.append((path, name))
            base_set(self, name, value)

        rec = type(cls.__name__, (cls,), {"__getattribute__": __getattribute__, "__setattr__": __setattr__,
                                          "__module__": cls.__module__, "__qualname__": cls.__qualname__})
        _RECORDING_CLASSES[cls] = rec
    return rec


@contextlib.contextmanager
def recording(block: nn.Module) -> Iterator[_Recorder]:
    """Record every attribute read (and write) on `block` and its submodules while the body runs."""
    modules = list(block.named_modules(remove_duplicate=False))
    recorder = _Recorder({})
    for path, m in modules:
        recorder.paths.setdefault(id(m), path)
    swapped = []
    try:
        for _, m in modules:
            cls = type(m)
            if cls not in _RECORDING_CLASSES.values():
                m.__class__ = _recording_class(cls)
                swapped.append((m, cls))
        _ACTIVE.append(recorder)
        yield recorder
    finally:
        if _ACTIVE and _ACTIVE[-1] is recorder:
            _ACTIVE.pop()
        for m, cls in swapped:
            m.__class__ = cls


# --- proving reads equal ----------------------------------------------------------------------------------


@dataclass
class _Side:
    root: nn.Module
    modules: dict[int, str]
    weights: dict[int, str]
    by_path: dict[str, nn.Module]

    @staticmethod
    def of(root: nn.Module) -> _Side:
        modules, by_path = {}, {}
        for path, m in root.named_modules(remove_duplicate=False):
            modules.setdefault(id(m), path)
            by_path.setdefault(path, m)
        weights = {}
        for name, t in (*root.named_parameters(remove_duplicate=False), *root.named_buffers(remove_duplicate=False)):
            weights.setdefault(id(t), name)
        return _Side(root, modules, weights, by_path)


def _lookup(module: nn.Module, name: str) -> Any:
    try:
        return getattr(module, name)
    except Exception:  # a missing attribute (getattr with a default in the forward) or a raising property
        return _MISSING


def reads_equal(
    reads: set[tuple[str, str]], rep: nn.Module, other: nn.Module, rep_side: _Side | None = None
) -> str | None:
    """None when every recorded read has an equal value on `other`, else the first read that differs
    (`rep_side`: `_Side.of(rep)`, when the caller keeps it). Values are compared by what they are
    (`_same`): numbers by value, the block's own submodules and weights by path, other objects (modules
    outside the block included) by class and state, recursively to a bounded depth."""
    a, b = rep_side or _Side.of(rep), _Side.of(other)
    for path, name in sorted(reads):
        ma, mb = a.by_path.get(path), b.by_path.get(path)
        if ma is None or mb is None:
            return f"{path or '<block>'} missing"
        if name in ("__class__", "__dict__"):
            if type(ma) is not type(mb):
                return f"{path}.__class__"
            if name == "__class__":
                continue
        if not _same(_lookup(ma, name), _lookup(mb, name), a, b, 0, set()):
            return f"{path + '.' if path else ''}{name}"
    return None


def _same(x: Any, y: Any, a: _Side, b: _Side, depth: int, seen: set[tuple[int, int]]) -> bool:
    if x is y and not isinstance(x, (nn.Module, torch.Tensor)):
        return True
    if type(x) is not type(y):
        return False
    if depth > 8:
        return False
    key = (id(x), id(y))
    if key in seen:
        return True
    if isinstance(x, nn.Module):
        px, py = a.modules.get(id(x)), b.modules.get(id(y))
        if px is not None or py is not None:
            return px == py  # a submodule of the block: the instance's own at the same path
        if x is y:
            return True
        # Outside the blocks' trees (a per-instance kernel wrapper, a table of them): equal by what it is,
        # its class (checked above) and its state, below.
    if isinstance(x, torch.Tensor):
        wx, wy = a.weights.get(id(x)), b.weights.get(id(y))
        if wx is not None or wy is not None:
            return wx == wy  # a weight of the block at the same path: the instance's own
        return _same_tensor(x, y)
    if isinstance(x, _PRIMITIVES):
        if isinstance(x, float) and math.isnan(x):
            return math.isnan(y)
        return x == y
    if isinstance(x, types.MethodType):
        return x.__func__ is y.__func__ and _same(x.__self__, y.__self__, a, b, depth + 1, seen)
    if isinstance(x, (types.BuiltinFunctionType, type)):
        return x is y
    seen = seen | {key}
    if isinstance(x, (tuple, list)):
        return _same_items(x, y, a, b, depth, seen)
    if isinstance(x, (set, frozenset)):
        return x == y and all(isinstance(i, _PRIMITIVES) for i in x)
    if isinstance(x, dict):
        return list(x) == list(y) and all(_same(x[k], y[k], a, b, depth + 1, seen) for k in x)
    if isinstance(x, types.FunctionType):  # a per-instance closure or lambda: the same code on equal state
        return (x.__code__ is y.__code__ and x.__globals__ is y.__globals__
                and _same_items(_function_state(x), _function_state(y), a, b, depth, seen))
    if isinstance(x, functools.partial):
        return _same_items((x.func, x.args, x.keywords), (y.func, y.args, y.keywords), a, b, depth, seen)
    if _state_in_dict(type(x)):
        return _same(x.__dict__, y.__dict__, a, b, depth + 1, seen)
    return False  # state we cannot see (a C type's fields, __slots__): not proven equal


def _same_items(xs: Any, ys: Any, a: _Side, b: _Side, depth: int, seen: set[tuple[int, int]]) -> bool:
    return len(xs) == len(ys) and all(_same(i, j, a, b, depth + 1, seen) for i, j in zip(xs, ys, strict=True))


def _function_state(f: types.FunctionType) -> tuple[Any, ...]:
    cells = tuple(c.cell_contents if _cell_set(c) else _MISSING for c in f.__closure__ or ())
    return (f.__defaults__, f.__kwdefaults__, cells, f.__dict__)


def _cell_set(cell: types.CellType) -> bool:
    try:
        cell.cell_contents  # noqa: B018 (an empty cell raises)
    except ValueError:
        return False
    return True


@functools.cache
def _state_in_dict(cls: type) -> bool:
    """Whether an instance's whole state is its `__dict__`: every class of its MRO but `object` is written in
    Python (a heap type) and none has `__slots__` (a C base such as functools.partial keeps fields elsewhere)."""
    if cls is types.SimpleNamespace:
        return True
    heap_type = 1 << 9  # Py_TPFLAGS_HEAPTYPE
    return "__dict__" in dir(cls) and all(
        c is object or (c.__flags__ & heap_type and "__slots__" not in c.__dict__) for c in cls.__mro__
    )


def _same_tensor(x: torch.Tensor, y: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    if isinstance(x, FakeTensor) or isinstance(y, FakeTensor) or x.device.type == "meta" or y.device.type == "meta":
        return False
    if _tensor_key(x) != _tensor_key(y):
        return False
    with unset_fake_temporarily():
        return bool(torch.equal(x, y))


# --- the plan ------------------------------------------------------------------------------------------------


@dataclass
class Group:
    """Block calls proven to trace alike: the representative is traced in the skeleton, the others reuse it."""

    gid: int
    rep_path: str
    rep: nn.Module
    call_key: tuple[Any, ...]
    weights_key: tuple[Any, ...]
    out_spec: pytree.TreeSpec
    out_leaves: list[Any]
    """The outputs' leaves: None where a tensor goes, the constant otherwise."""
    reads: set[tuple[str, str]]
    used: list[int]
    """The call's tensors (by index) the representative's graph reads: what a reusing call passes on (an unread
    tensor stays unread, as in the whole export: a keyword the model ignores is still found ignored)."""
    instances: list[int] = field(default_factory=list)
    """The plan's instances that reuse the representative (not the representative itself)."""
    side: _Side | None = None
    split: str | None = None
    """Why this block did not join an earlier group of its class (what differed), None for the first."""


@dataclass
class Instance:
    iid: int
    path: str
    module: nn.Module
    gid: int


@dataclass
class BlockPlan:
    """What the skeleton export decided: groups, the reusing calls and the blocks traced inline (and why)."""

    candidates: dict[str, nn.Module]
    groups: list[Group] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)
    inline: dict[str, str] = field(default_factory=dict)

    def group(self, gid: int) -> Group:
        return next(g for g in self.groups if g.gid == gid)

    def report(self) -> dict[str, Any]:
        """report["blocks"]: distinct blocks traced, repeated-block calls, calls that reused a traced block."""
        reused = len(self.instances)
        calls = len(self.groups) + reused + len(self.inline)
        return {
            "distinct": len(self.groups) + len(self.inline),
            "instances": calls,
            "reused": reused,
            "groups": [
                {"block": type(g.rep).__name__, "representative": g.rep_path,
                 "instances": [g.rep_path, *(self.instances[i].path for i in g.instances)],
                 **({"split": g.split} if g.split else {})}
                for g in self.groups
            ],
            **({"inline": dict(self.inline)} if self.inline else {}),
        }

    def close(self) -> None:
        for g in self.groups:
            _OUTPUTS.pop(g.gid, None)


# --- the leaf -----------------------------------------------------------------------------------------------------


def _call_leaves(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], pytree.TreeSpec, str | None]:
    """The call's leaves as keys (tensors: metadata; others: values), its spec, or why it cannot be reused."""
    flat, spec = pytree.tree_flatten((args, kwargs))
    container = _foreign_container(spec.children()[0]) or next(
        (c for child in spec.children()[1].children() if (c := _foreign_container(child))), None
    )
    if container is not None:
        return [], spec, f"takes a {container}"
    keys, seen = [], set()
    for value in flat:
        if isinstance(value, torch.Tensor):
            if id(value) in seen:
                return [], spec, "the same tensor passed twice"
            seen.add(id(value))
            keys.append(_tensor_key(value))
        elif isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return [], spec, "a symbolic value in its call"
        elif isinstance(value, _PRIMITIVES):
            keys.append(("const", type(value), value))
        else:
            return [], spec, f"takes a {type(value).__name__}"
    return keys, spec, None


def _foreign_container(spec: pytree.TreeSpec) -> str | None:
    """The first container of the call that is not a tuple (a cache, a list or dict the block could change in
    place; values the graph cannot show as inputs), or None."""
    if spec.is_leaf():
        return None
    kind = spec.type
    if not (kind is tuple or kind is type(None) or pytree.is_namedtuple_class(kind)):
        return getattr(kind, "__name__", str(kind))
    return next((c for child in spec.children() if (c := _foreign_container(child))), None)


class _Session:
    """The leaves' shared state during one skeleton export."""

    def __init__(self, candidates: dict[str, nn.Module]):
        self.plan = BlockPlan(candidates)
        self.weights_keys = {path: weight_signature(b) for path, b in candidates.items()}
        self.hooked = {path for path, b in candidates.items() if _has_hooks(b)}
        self.failure: str | None = None
        self.unreusable: set[int] = set()  # groups whose representative proved stateful: the rest inline

    def install(self) -> list[nn.Module]:
        installed = []
        for path, block in self.plan.candidates.items():
            if path in self.hooked:
                self.plan.inline[path] = "has hooks or an instance forward"
                continue
            block.forward = self._leaf(path, block)
            installed.append(block)
        return installed

    def _leaf(self, path: str, block: nn.Module) -> Callable[..., Any]:
        forward = type(block).forward

        def leaf(*args: Any, **kwargs: Any) -> Any:
            return self.call(path, block, forward, args, kwargs)

        return leaf

    def call(self, path, block, forward, args, kwargs) -> Any:
        from torch.fx.experimental.proxy_tensor import get_proxy_mode

        if get_proxy_mode() is None or self.failure is not None:
            return forward(block, *args, **kwargs)
        keys, spec, why = _call_leaves(args, kwargs)
        if why is not None:
            return self._inline(path, block, forward, args, kwargs, why)
        call_key = (type(block), spec, tuple(keys))
        weights_key = self.weights_keys[path]
        group, split = self._find_group(block, call_key, weights_key)
        if group is None:
            return self._represent(path, block, forward, args, kwargs, call_key, weights_key, split)
        if group.gid in self.unreusable:
            return self._inline(path, block, forward, args, kwargs, f"{group.rep_path} writes its attributes")
        iid = len(self.plan.instances)
        self.plan.instances.append(Instance(iid, path, block, group.gid))
        group.instances.append(iid)
        tensors = [v for v in pytree.tree_leaves((args, kwargs)) if isinstance(v, torch.Tensor)]
        results = iter(block_ops()[0]([tensors[i] for i in group.used], group.gid, iid))
        leaves = [next(results) if c is None else c for c in group.out_leaves]
        return pytree.tree_unflatten(leaves, group.out_spec)

    def _inline(self, path, block, forward, args, kwargs, why: str) -> Any:
        key = path if path not in self.plan.inline else f"{path}#{len(self.plan.inline)}"
        self.plan.inline[key] = why
        return forward(block, *args, **kwargs)

    def _find_group(self, block, call_key, weights_key) -> tuple[Group | None, str | None]:
        """The group `block`'s call joins, else (None, why it joins none of its class: what first differed)."""
        split = None
        for group in self.plan.groups:
            if type(group.rep) is not type(block):
                continue
            if group.call_key != call_key:
                split = split or f"its call differs from {group.rep_path}'s (inputs' structure, shapes or values)"
            elif group.weights_key != weights_key:
                split = split or f"its parameters or buffers differ from {group.rep_path}'s"
            else:
                if group.side is None:
                    group.side = _Side.of(group.rep)
                differs = reads_equal(group.reads, group.rep, block, group.side)
                if differs is None:
                    return group, None
                split = split or f"attribute {differs} differs from {group.rep_path}'s"
        return None, split

    def _represent(self, path, block, forward, args, kwargs, call_key, weights_key, split=None) -> Any:
        """Trace the block here, its inputs and outputs marked, recording what it reads: a new group."""
        _, mark_in, mark_out = block_ops()
        gid = next(_GIDS)
        flat, spec = pytree.tree_flatten((args, kwargs))
        count = itertools.count()
        marked = [mark_in(v, gid, next(count)) if isinstance(v, torch.Tensor) else v for v in flat]
        versions = [v._version for v in marked if isinstance(v, torch.Tensor)]
        margs, mkwargs = pytree.tree_unflatten(marked, spec)
        with recording(block) as rec:
            out = forward(block, *margs, **mkwargs)
        if versions != [v._version for v in marked if isinstance(v, torch.Tensor)]:
            self.failure = f"{path} writes into one of its inputs"
            return out
        out_flat, out_spec = pytree.tree_flatten(out)
        out_leaves, metas, results = [], [], []
        count = itertools.count()
        for value in out_flat:
            if isinstance(value, torch.Tensor):
                out_leaves.append(None)
                metas.append((tuple(value.shape), tuple(value.stride()), value.dtype, value.device))
                results.append(mark_out(value, gid, next(count)))
            elif isinstance(value, _PRIMITIVES):
                out_leaves.append(value)
                results.append(value)
            else:
                self.plan.inline[path] = f"returns a {type(value).__name__}"
                return out
        used = _used_inputs([v for v in marked if isinstance(v, torch.Tensor)])
        group = Group(gid, path, block, call_key, weights_key, out_spec, out_leaves, set(rec.reads), used, split=split)
        self.plan.groups.append(group)
        _OUTPUTS[gid] = metas
        if rec.writes or not metas:
            self.unreusable.add(gid)
        return pytree.tree_unflatten(results, out_spec)


def _used_inputs(marked: list[torch.Tensor]) -> list[int]:
    """Indices of the marked inputs whose graph node has users once the representative was traced."""
    from torch.fx.experimental.proxy_tensor import get_proxy_mode, get_proxy_slot

    tracer = get_proxy_mode().tracer
    used = []
    for i, t in enumerate(marked):
        node = get_proxy_slot(t, tracer).proxy.node
        if node.users:
            used.append(i)
        else:  # an input the block ignores stays unread in the graph (a misspelt keyword is still found unread)
            node.graph.erase_node(node)
    return used


# --- the entry point ---------------------------------------------------------------------------------------------


def export_reusing_blocks(model: nn.Module, export: Callable[[], Any]) -> tuple[Any, BlockPlan]:
    """Run `export()` (the whole model's torch.export) with the candidates as leaves: (its result, the plan).
    BlockReuseUnavailable: export the whole model."""
    candidates = find_candidates(model)
    if not candidates:
        raise BlockReuseUnavailable("no repeated blocks")
    session = _Session(candidates)
    block_ops()
    installed = session.install()
    plan = session.plan
    try:
        program = export()
        if session.failure is not None:
            raise BlockReuseUnavailable(session.failure)
        _check_stateless(program, plan)
    except BaseException:
        plan.close()  # the fake kernels' metadata of this plan
        raise
    finally:
        for block in installed:
            block.__dict__.pop("forward", None)
    return program, plan


def _check_stateless(program: Any, plan: BlockPlan) -> None:
    """No reused block (representative or instance) owns a buffer the program mutates."""
    reused = [g.rep_path for g in plan.groups] + [i.path for i in plan.instances]
    for target in program.graph_signature.buffers_to_mutate.values():
        for path in reused:
            if target.startswith(path + "."):
                raise BlockReuseUnavailable(f"{path} mutates its buffer {target[len(path) + 1:]}")


# --- stitching (the importer's leaf handlers) ------------------------------------------------------------------------


def import_stitched(program: Any, plan: BlockPlan) -> Any:
    """Import the skeleton: each representative's ops as traced (between its markers), and each reusing call as a
    copy of them bound to its inputs and its own weights (an ImportedProgram)."""
    from forge.frontend.fx_importer import import_program

    stitcher = _Stitcher(plan)
    block, mark_in, mark_out = block_ops()
    imported = import_program(program, leaves={block: stitcher, mark_in: stitcher.input, mark_out: stitcher.output})
    imported.stats["blocks_reused"] = len(plan.instances)
    return imported


@dataclass
class _Region:
    inputs: dict[int, Any] = field(default_factory=dict)
    outputs: dict[int, Any] = field(default_factory=dict)
    after: Any = None
    """The last op before the representative's body (None: the body starts the block)."""
    ops: list[Any] | None = None
    end: Any = None
    """The last op when the last output marker was imported."""
    weights: dict[Any, str] | None = None
    """Weight value -> its name inside the block (the instance's weight of that name replaces it)."""


class _Stitcher:
    """The importer's handlers for the markers (record the representative's region) and for `forge::block`
    (clone the region on the instance's inputs and weights)."""

    def __init__(self, plan: BlockPlan):
        self.plan = plan
        self.regions: dict[int, _Region] = {}

    def input(self, builder: Any, node: torch.fx.Node) -> Any:
        source, gid, index = node.args
        region = self.regions.setdefault(gid, _Region())
        if region.outputs or region.ops is not None:
            raise BlockReuseUnavailable(f"block group {gid}: an input marker after its outputs")
        region.inputs[index] = builder.values[source]
        region.after = builder.block.last_op
        return builder.values[source]

    def output(self, builder: Any, node: torch.fx.Node) -> Any:
        source, gid, index = node.args
        region = self.regions.get(gid)
        if region is None:
            raise BlockReuseUnavailable(f"block group {gid}: an output marker before its inputs")
        if region.ops is None:  # the first output marker ends the body (the markers follow each other)
            region.ops = self._body(builder, region)
        elif builder.block.last_op is not region.end:
            raise BlockReuseUnavailable(f"block group {gid}: ops between its output markers")
        region.outputs[index] = builder.values[source]
        region.end = builder.block.last_op
        return builder.values[source]

    def _body(self, builder: Any, region: _Region) -> list[Any]:
        ops, op = [], (region.after.next_op if region.after is not None else builder.block.first_op)
        while op is not None:
            ops.append(op)
            op = op.next_op
        return ops

    def __call__(self, builder: Any, node: torch.fx.Node) -> list[Any]:
        tensors, gid, iid = node.args
        group, inst = self.plan.group(gid), self.plan.instances[iid]
        region = self.regions.get(gid)
        if region is None or region.ops is None:
            raise BlockReuseUnavailable(f"{inst.path}: its representative {group.rep_path} was not imported first")
        if region.weights is None:
            region.weights = self._check_region(builder, group, region)
        operands = dict(zip(group.used, (builder.values[t] for t in tensors), strict=True))
        mapper = {value: operands[i] for i, value in region.inputs.items() if i in operands}
        for value, name in region.weights.items():
            mapper[value] = self._instance_weight(builder, inst, name, value)
        for op in region.ops:
            builder.block.add_op(op.clone(value_mapper=mapper))
        count = len(_OUTPUTS[gid])  # an output the skeleton never reads has no marker left: never indexed
        return [mapper.get(region.outputs[j], region.outputs[j]) if j in region.outputs else None for j in range(count)]

    def _check_region(self, builder: Any, group: Group, region: _Region) -> dict[Any, str]:
        """Every operand of the body is the body's, a marked input, or a weight: {block weight value: its name}."""
        defined = {r for op in region.ops for r in op.results}
        inputs = {value for i, value in region.inputs.items() if i in group.used}  # what a reusing call passes
        names: dict[Any, str] = {}
        own = {}
        for name, _ in (*group.rep.named_parameters(remove_duplicate=False),
                        *group.rep.named_buffers(remove_duplicate=False)):
            canonical = builder.target_names.get(f"{group.rep_path}.{name}")
            if canonical is not None:
                own.setdefault(builder.weight_values[canonical], name)
        for op in region.ops:
            for operand in op.operands:
                if operand in defined or operand in inputs:
                    continue
                owner = getattr(operand, "op", None)
                if owner is None or owner.name != "aten.weight":
                    raise BlockReuseUnavailable(f"{group.rep_path}: its traced ops read a value from outside the block")
                if operand in own:
                    names[operand] = own[operand]
                # else a weight outside the block (a global or lifted constant): the same for every instance
        return names

    def _instance_weight(self, builder: Any, inst: Instance, name: str, value: Any) -> Any:
        target = f"{inst.path}.{name}"
        if target in builder.target_names:
            return builder.weight_values[builder.target_names[target]]
        tensor = _module_tensor(inst.module, name)
        if tensor is None:
            raise BlockReuseUnavailable(f"{inst.path} has no parameter or buffer {name}")
        return builder.weight_value(target, tensor.detach(), value.name_hint or "w")


def _module_tensor(module: nn.Module, name: str) -> torch.Tensor | None:
    path, _, leaf = name.rpartition(".")
    try:
        owner = module.get_submodule(path)
    except AttributeError:
        return None
    tensor = owner._parameters.get(leaf)
    return tensor if tensor is not None else owner._buffers.get(leaf)


def export_and_import(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """Export with block reuse and import stitched: (CallSignature, ImportedProgram with `export_ms` and
    `blocks` = the plan's report). Raises BlockReuseUnavailable, ExportError or ImportError_: the caller
    exports the whole model instead."""
    from forge.frontend.export import export_model_around

    program, signature, export_ms, plan = export_model_around(model, args, kwargs, export_reusing_blocks)
    try:
        start = time.perf_counter()
        imported = import_stitched(program, plan)
        imported.import_ms = (time.perf_counter() - start) * 1e3
    finally:
        plan.close()
    imported.export_ms = export_ms
    imported.blocks = plan.report()
    return signature, imported
