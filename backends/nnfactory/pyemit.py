"""Write a buffer-IR program as a standalone, readable Python file on the NNFactory API.

`emit_python(module, weights, path, runtime="openvino")` writes two files side by side:

    path                    (e.g. gpt2.py) the program
    path.with_suffix(".safetensors")   every weight and constant it reads, by IR name
                            (constants as `__constant__.<name>`)

and returns `path`. Run it with `python gpt2.py --inputs x.npz --out y.npz` (inputs from a
`.npz` or `.pt` file, by name or in order) or `--seed N` (random seeded inputs; integer inputs
that index an embedding are drawn below its size), and it prints the outputs.

The program has:

* one function per NPU segment that builds the segment's graph and compiles it. For the
  `openvino` runtime these are calls of the `backends.nnfactory.runtime` GraphBuilder; for
  `nnfactory` they are Intel's `NNFactory` calls themselves (`f.matmul(...)`, `f.constant(...)`,
  `f.compile()`), exactly the ones the nnfactory runtime makes, compositions expanded.
  Either way the calls are recorded while the emitter builds the real graph (`GraphTrace`), so
  the file builds the same graph as `emit` does;
* `run(segments, T, *inputs)`: the schedule. CPU ops are torch calls (each kind's
  `torch_source` in the kind table, `forge.kinds`; `_HELPERS` defines what they call besides
  torch), segments run on numpy arrays, transfers are assignments: values are plain tensors here
  (the memory plan is the executor's business; this file is for reading, checking and
  reproducing);
* `main()`.

The command line is `python -m forge.cli.pyemit`.

It needs numpy, torch, safetensors and the Forge checkout it was written from (`REPO`, for
`backends.nnfactory`: the runtime interface, or the loader of Intel's library).
"""

from __future__ import annotations

import keyword
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from dialects import npuir as N
from forge.kinds import KINDS, NoTorchSource
from forge.weights import WeightStore, weights_of

from .analysis import Analysis, SegmentPlan, analyze
from .emitter import GraphTrace, _Sources, bool_carrier, build_segment, file_key
from .program import CpuStep, EmitError, TransferStep, ValueRef
from .runtime import get_runtime
from .runtime.graph_builder import PUBLIC_OPS, GraphBuilder
from .runtime.graph_values import Node

__all__ = ["emit_python"]

REPO = Path(__file__).resolve().parents[2]

_INLINE_MAX = 64  # arrays up to this many elements are written inline, larger ones go to the file


# ============================================================================ recording


@dataclass
class _Entry:
    target: Any  # the node/tensor the call returned (None for statements)
    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass
class _Book(GraphTrace):
    """Records the builder calls of one segment (see `GraphTrace`)."""

    comments = True  # the program lists each op's describe_op line (a class attribute, not a field)
    native: bool  # record Intel NNFactory calls instead of GraphBuilder calls
    entries: list[_Entry | str] = field(default_factory=list)  # str: a comment line
    names: dict[int, str] = field(default_factory=dict)
    labels: dict[int, str] = field(default_factory=dict)
    results: list[Any] = field(default_factory=list)
    _keep: list[Any] = field(default_factory=list)
    _current: str = "v"
    _count: int = 0

    def key(self, obj: Any) -> int:
        if isinstance(obj, Node) and self.native:
            return id(obj.handle.native)
        return id(obj)

    # GraphTrace hooks ------------------------------------------------------------------

    def wrap(self, builder: GraphBuilder) -> Any:
        if self.native:
            builder._f = _NativeRecorder(builder._f, self)
        return _PublicRecorder(builder, self)

    def label(self, array: np.ndarray, expr: str) -> None:
        self.labels[id(array)] = expr
        self._keep.append(array)

    def begin(self, name: str, comment: str = "") -> None:
        self._current, self._count = name, 0
        if comment:
            self.entries.append(comment)

    def end(self, node: Node) -> None:
        key = self.key(node)
        if self.names.get(key, "").startswith(f"{self._current}__"):
            self.names[key] = self._current

    # recording ---------------------------------------------------------------------------

    def record(self, target: Any, method: str, args: tuple, kwargs: dict) -> None:
        if target is not None:
            key = self.key(target)
            if key in self.names:  # an identity (reshape to the same shape, ...): no call
                return
            self._count += 1
            self.names[key] = f"{self._current}__{self._count}"
            self._keep.append(target)
        self.entries.append(_Entry(target, method, args, kwargs))


_RECORDED = frozenset(PUBLIC_OPS) | {"result"}


class _PublicRecorder:
    """Stands for a GraphBuilder: records its public calls (openvino) or only `result`."""

    def __init__(self, builder: GraphBuilder, book: _Book):
        self._builder = builder
        self._book = book

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._builder, name)
        if name not in _RECORDED:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            if name == "result":
                self._book.results.append(args[0])
            elif not self._book.native:
                self._book.record(out, name, args, kwargs)
            return out

        return call


class _NativeRecorder:
    """Stands for Intel's NNFactory object: records every call that returns a tensor."""

    def __init__(self, factory: Any, book: _Book):
        object.__setattr__(self, "_factory", factory)
        object.__setattr__(self, "_book", book)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._factory, name)
        if not callable(attr) or name.startswith("get_"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            if type(out).__name__ == "Tensor":
                self._book.record(out, name, args, kwargs)
            return out

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._factory, name, value)


# ============================================================================ rendering

_RESERVED = frozenset(
    {"g", "f", "W", "T", "rt", "np", "torch", "F", "sys", "device", "segments", "run", "main",
     "run_segment", "gather", "written_cache", "to_numpy", "to_torch", "NNFactory", "LIB", "compile_factory"}
)  # fmt: skip


class _Idents:
    """Python identifiers for IR names, unique within one scope."""

    def __init__(self) -> None:
        self.by_name: dict[str, str] = {}
        self.used: set[str] = set(_RESERVED)

    def __call__(self, name: str) -> str:
        found = self.by_name.get(name)
        if found is not None:
            return found
        ident = re.sub(r"\W", "_", name) or "v"
        if ident[0].isdigit():
            ident = f"v_{ident}"
        while keyword.iskeyword(ident) or ident in self.used:
            ident += "_"
        self.used.add(ident)
        self.by_name[name] = ident
        return ident


def _float(value: float) -> str:
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "-np.inf"
    return repr(float(value))


def _np_type(dtype: np.dtype) -> str:
    return "np.bool_" if dtype == np.bool_ else f"np.{dtype.name}"


def _nested(values: Any) -> str:
    if isinstance(values, list):
        return "[" + ", ".join(_nested(v) for v in values) + "]"
    if isinstance(values, float):
        return _float(values)
    return repr(values)


class _Renderer:
    """Python source for recorded arguments."""

    def __init__(self, book: _Book, idents: _Idents, arrays: dict[str, np.ndarray], prefix: str):
        self.book = book
        self.idents = idents
        self.arrays = arrays
        self.prefix = prefix

    def name(self, obj: Any) -> str:
        return self.idents(self.book.names[self.book.key(obj)])

    def __call__(self, v: Any) -> str:
        if isinstance(v, Node) or type(v).__name__ == "Tensor":
            return self.name(v)
        if isinstance(v, np.ndarray):
            label = self.book.labels.get(id(v))
            if label is not None:
                return label
            if v.size <= _INLINE_MAX:
                if v.ndim == 0:
                    return f"np.asarray({_nested(v.item())}, dtype={_np_type(v.dtype)})"
                return f"np.array({_nested(v.tolist())}, dtype={_np_type(v.dtype)})"
            key = f"__array__.{self.prefix}.{len(self.arrays)}"
            self.arrays[key] = np.ascontiguousarray(v)
            return f"W[{key!r}]"
        if isinstance(v, np.dtype):
            return _np_type(v)
        if isinstance(v, type) and issubclass(v, np.generic):
            return _np_type(np.dtype(v))
        if isinstance(v, np.generic):
            return repr(v.item())
        if isinstance(v, list):
            return "[" + ", ".join(self(x) for x in v) + "]"
        if isinstance(v, tuple):
            inner = ", ".join(self(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
            return repr(v)
        if isinstance(v, float):
            return _float(v)
        raise TypeError(f"pyemit: cannot write a {type(v).__name__} argument ({v!r})")

    def call(self, obj: str, entry: _Entry) -> str:
        args = [self(a) for a in entry.args] + [f"{k}={self(v)}" for k, v in entry.kwargs.items()]
        text = f"{obj}.{entry.method}({', '.join(args)})"
        return f"{self.name(entry.target)} = {text}" if entry.target is not None else text


# ============================================================================= cpu code


def _torch_dtype(dtype: torch.dtype) -> str:
    return str(dtype)  # "torch.float32"


def cpu_expr(step: CpuStep, args: Sequence[str]) -> str:
    """A torch expression computing `step` from the variables `args` (npuir semantics), written
    by the kind's entry in the kind table (`KindSpec.torch_source`)."""
    spec = KINDS.get(step.kind)
    if spec is None:
        raise EmitError(f"pyemit: no torch code for npuir kind '{step.kind}'")
    try:
        return spec.torch_source(step.params, args, step.in_types, step.out_type)
    except NoTorchSource as e:
        raise EmitError(str(e)) from None


# ================================================================================ writer


_HELPERS = '''
def to_numpy(t, dtype):
    """A C-contiguous numpy array of tensor t, in the segment's dtype (bool may travel as int8)."""
    a = t.detach().contiguous().numpy()
    return a.view(np.int8) if dtype == np.int8 and a.dtype == np.bool_ else a


def to_torch(a, is_bool):
    t = torch.from_numpy(np.ascontiguousarray(a))
    return t.view(torch.bool) if is_bool and t.dtype != torch.bool else t


def gather(data, indices, axis):
    """npuir gather: slices of data along axis at indices (negative indices count from the end)."""
    flat = indices.reshape(-1).to(torch.int64) % data.shape[axis]
    picked = torch.index_select(data, axis, flat)
    return picked.reshape(*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])


def written_cache(cache, index, new):
    """npuir cached_sdpa's cache: new's rows written at index along dim -2 (negative from the end, the
    last of repeated indices kept)."""
    idx = index.to(torch.int64) % cache.shape[-2]
    last = ~torch.triu(idx[:, None] == idx[None, :], diagonal=1).any(dim=1)
    return cache.index_copy(-2, idx[last], new[..., last, :])
'''

_OPENVINO_RUN = '''
def run_segment(graph, inputs, dtypes, bools):
    """Run a compiled segment on tensors; returns tensors."""
    outs = graph.run([to_numpy(t, d) for t, d in zip(inputs, dtypes)])
    return [to_torch(a, b) for a, b in zip(outs, bools)]
'''

_NNFACTORY_RUN = '''
def compile_factory(f):
    """NNFactory.compile() writes OpenVINO's cache to ./cache: compile in a scratch directory."""
    previous = os.getcwd()
    scratch = tempfile.mkdtemp(prefix="nnfactory-")
    try:
        os.chdir(scratch)
        f.compile()
    finally:
        os.chdir(previous)
        shutil.rmtree(scratch, ignore_errors=True)


def run_segment(f, inputs, dtypes, bools):
    """Bind the inputs (parameters in creation order), run, copy the outputs out."""
    arrays = [to_numpy(t, d) for t, d in zip(inputs, dtypes)]
    for i, a in enumerate(arrays):
        f.set_input_tensor(a, i)
    LIB.run(f._mm)
    return [to_torch(o.copy(), b) for o, b in zip(f.out, bools)]
'''

_MAIN = '''
def load_inputs(path, seed):
    """Inputs from a .npz/.pt file (by name, else in order), or random with a seed."""
    if path is None:
        g = torch.Generator().manual_seed(seed)
        out = []
        for name, shape, dtype, bound in INPUTS:
            if dtype == torch.bool:
                out.append(torch.rand(shape, generator=g) < 0.5)
            elif dtype.is_floating_point:
                out.append(torch.randn(shape, generator=g).to(dtype))
            else:
                out.append(torch.randint(0, bound, shape, generator=g, dtype=dtype))
        return out
    if str(path).endswith(".pt"):
        data = torch.load(path)
        if isinstance(data, torch.Tensor):
            data = [data]
    else:
        with np.load(path) as npz:
            data = {k: torch.from_numpy(npz[k]) for k in npz.files}
    if isinstance(data, dict):
        names = [n for n, *_ in INPUTS]
        if not all(n in data for n in names):
            data = [data[k] for k in sorted(data)] if len(data) == len(names) else data
    if isinstance(data, dict):
        return [torch.as_tensor(data[n]) for n, *_ in INPUTS]
    return [torch.as_tensor(t) for t in data]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", help="a .npz (arrays by input name or in order) or .pt file")
    parser.add_argument("--seed", type=int, default=0, help="random inputs with this seed (no --inputs)")
    parser.add_argument("--out", help="write the outputs to this .npz (output_0, output_1, ...)")
    parser.add_argument("--device", default=DEVICE, help="device string (default %(default)s)")
    args = parser.parse_args(argv)
    W = load_file(str(WEIGHTS))
    T = {k: torch.from_numpy(v) for k, v in W.items()}
    start = time.perf_counter()
    segments = build_segments(W, args.device)
    print(f"built and compiled {len(segments)} segment(s) in {(time.perf_counter() - start) * 1e3:.0f} ms")
    inputs = load_inputs(args.inputs, args.seed)
    for (name, shape, dtype, _), x in zip(INPUTS, inputs):
        if tuple(x.shape) != shape or x.dtype != dtype:
            sys.exit(f"input {name}: expected {dtype}{list(shape)}, got {x.dtype}{list(x.shape)}")
    start = time.perf_counter()
    with torch.no_grad():
        outputs = run(segments, T, *inputs)
    print(f"ran in {(time.perf_counter() - start) * 1e3:.1f} ms")
    for i, (name, t) in enumerate(zip(OUTPUTS, outputs)):
        summary = f"mean {t.double().mean().item():.6g}" if t.numel() else "empty"
        print(f"output_{i} %{name}: {str(t.dtype).removeprefix('torch.')}{list(t.shape)} {summary}")
    if args.out:
        np.savez(args.out, **{f"output_{i}": t.numpy() for i, t in enumerate(outputs)})
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
'''


def _index_bounds(analysis: Analysis) -> dict[int, int]:
    """Integer inputs used as index operands (after transfers; `KindSpec.index_operands`, e.g. a
    gather's indices): the size they index."""
    origin: dict[str, int] = {r.name: int(r.key) for r in analysis.inputs}
    bounds: dict[int, int] = {}

    def note(kind: str, params: N.Params, refs: Sequence[ValueRef], in_types: Sequence[Any]) -> None:
        spec = KINDS.get(kind)
        if spec is None:
            return
        for i in spec.index_operands:
            if refs[i].name in origin:
                k = origin[refs[i].name]
                bound = spec.index_bound(params, in_types, i)
                bounds[k] = min(bounds.get(k, bound), bound)

    for item in analysis.items:
        if isinstance(item, TransferStep) and item.src.name in origin:
            origin[item.dst.name] = origin[item.src.name]
        elif isinstance(item, CpuStep):
            note(item.kind, item.params, item.ins, item.in_types)
        elif isinstance(item, SegmentPlan):
            for op in item.ops:
                refs = [analysis.refs[v] for v in op.ins]
                note(op.kind.data, op.param_view(), refs, [v.type for v in op.ins])
    return bounds


def emit_python(
    module: ModuleOp | func.FuncOp,
    weights: WeightStore | None,
    path: str | Path,
    *,
    runtime: str = "openvino",
    device: str = "CPU",
    func_name: str | None = None,
) -> Path:
    """Write `module`'s buffer program as a standalone Python file (see the module docstring);
    its weights go to `path` with the suffix `.safetensors`. Returns `path`."""
    from safetensors.numpy import save_file

    path = Path(path)
    if weights is None and isinstance(module, ModuleOp):
        weights = weights_of(module)
    rt = get_runtime(runtime, device)  # an unknown name is a ValueError listing the registered ones
    native = rt.pyemit_native
    analysis = analyze(module, func_name=func_name)
    sources = _Sources(weights, analysis.constants)
    carrier = bool_carrier(rt)
    arrays: dict[str, np.ndarray] = {}

    # ---- segment builders ------------------------------------------------------------
    seg_code: list[str] = []
    seg_io: dict[int, tuple[tuple[ValueRef, ...], tuple[np.dtype, ...], tuple[ValueRef, ...]]] = {}
    for seg in analysis.segments:
        book = _Book(native=native)
        built = build_segment(rt, seg, analysis.refs, sources, carrier=carrier, trace=book, compile=False)
        seg_io[seg.index] = (built.inputs, built.input_dtypes, built.outputs)
        seg_code.append(_segment_function(seg, built, book, arrays, native))

    # ---- the schedule ----------------------------------------------------------------
    idents = _Idents()
    params = [idents(r.name) for r in analysis.inputs]
    body: list[str] = []

    def val(ref: ValueRef) -> str:
        if ref.source in ("weight", "constant"):
            return f"T[{file_key(ref)!r}]"
        return idents(ref.name)

    for item in analysis.items:
        if isinstance(item, TransferStep):
            body.append(f"{idents(item.dst.name)} = {val(item.src)}  # transfer to {_device(analysis, item.dst)}")
        elif isinstance(item, CpuStep):
            ins = ", ".join(f"%{r.name}" for r in item.ins)
            body.append(f"# %{item.out.name} = cpu {item.kind}({ins})")
            body.append(f"{idents(item.out.name)} = {cpu_expr(item, [val(r) for r in item.ins])}")
        else:
            inputs, dtypes, outputs = seg_io[item.index]
            outs = "(" + ", ".join(idents(r.name) for r in outputs) + ("," if len(outputs) == 1 else "") + ")"
            ins = ", ".join(val(r) for r in inputs)
            dts = ", ".join(_np_type(d) for d in dtypes)
            bools = ", ".join(str(r.is_bool) for r in outputs)
            body.append(f"{outs} = run_segment(segments[{item.index}], [{ins}], [{dts}], [{bools}])")
    body.append(f"return [{', '.join(val(r) for r in analysis.outputs)}]")

    # ---- weights file ------------------------------------------------------------------
    used: dict[str, np.ndarray] = {}
    for ref in {*analysis.refs.values()}:
        if ref.source in ("weight", "constant"):
            used[file_key(ref)] = sources(ref)[0]
    used.update(arrays)
    weights_path = path.with_suffix(".safetensors")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: np.ascontiguousarray(v) for k, v in sorted(used.items())}, str(weights_path))

    # ---- the file ----------------------------------------------------------------------
    bounds = _index_bounds(analysis)
    inputs_decl = ",\n    ".join(
        f"({r.name!r}, {r.shape}, {_torch_dtype(r.dtype)}, {bounds.get(int(r.key), 2)})" for r in analysis.inputs
    )
    n_cpu = sum(isinstance(i, CpuStep) for i in analysis.items)
    n_tr = sum(isinstance(i, TransferStep) for i in analysis.items)
    header = [
        "#!/usr/bin/env python3",
        f'"""Forge program @{analysis.function} on the {runtime} runtime: '
        f"{len(analysis.segments)} NPU segment(s), {n_cpu} CPU op(s), {n_tr} transfer(s).",
        "",
        "Generated by backends.nnfactory.pyemit from buffer IR. Weights and constants are read by",
        f"name from {weights_path.name} next to this file.",
        "",
        f"    python {path.name} [--inputs x.npz|x.pt | --seed N] [--out y.npz]",
        '"""',
        "",
        "import argparse",
        *(["import os", "import shutil", "import tempfile"] if native else []),
        "import math",
        "import sys",
        "import time",
        "from pathlib import Path",
        "",
        "import numpy as np",
        "import torch",
        "import torch.nn.functional as F",
        "from safetensors.numpy import load_file",
        "",
        f"REPO = {str(REPO)!r}  # the Forge checkout this was generated from (for backends.nnfactory)",
        "if REPO not in sys.path:",
        "    sys.path.insert(0, REPO)",
    ]
    if native:
        header += [
            "",
            "# load_backend imports NNFactory without the package __init__ (see its docstring)",
            "from backends.nnfactory.runtime.intel_runtime import load_backend  # noqa: E402",
            "",
            "_BACKEND = load_backend()",
            "NNFactory = _BACKEND.NNFactory",
            "LIB = _BACKEND.lib",
        ]
    else:
        header += ["", "from backends.nnfactory.runtime import get_runtime  # noqa: E402"]
    header += [
        "",
        f"RUNTIME = {runtime!r}",
        f"DEVICE = {device!r}",
        "WEIGHTS = Path(__file__).with_name(" + repr(weights_path.name) + ")",
        "INPUTS = [  # name, shape, dtype, bound of random integer inputs",
        f"    {inputs_decl}," if inputs_decl else "",
        "]",
        f"OUTPUTS = {[r.name for r in analysis.outputs]!r}",
    ]
    build = ["", "", "def build_segments(W, device):"]
    if native:
        build.append(f"    return [{', '.join(f'segment_{s.index}(W, device)' for s in analysis.segments)}]")
    else:
        build.append("    rt = get_runtime(RUNTIME, device)")
        build.append(f"    return [{', '.join(f'segment_{s.index}(rt, W)' for s in analysis.segments)}]")
    run_fn = [
        "",
        "",
        f"def run(segments, T, {', '.join(params)}):" if params else "def run(segments, T):",
        f'    """The schedule of @{analysis.function}: CPU ops in torch, segments on the runtime."""',
        *(f"    {line}" for line in body),
    ]
    text = "\n".join(
        [
            *header,
            "",
            _HELPERS.rstrip(),
            "",
            (_NNFACTORY_RUN if native else _OPENVINO_RUN).rstrip(),
            *seg_code,
            *build,
            *run_fn,
            "",
            _MAIN.rstrip(),
            "",
        ]
    )
    path.write_text(text)
    return path


def _device(analysis: Analysis, ref: ValueRef) -> str:
    return analysis.buffers[ref.key].device if ref.source == "buffer" else "cpu"


def _segment_function(seg: SegmentPlan, built: Any, book: _Book, arrays: dict[str, np.ndarray], native: bool) -> str:
    idents = _Idents()
    render = _Renderer(book, idents, arrays, f"segment_{seg.index}")
    st = built.stats
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(st.kinds.items(), key=lambda kv: -kv[1]))
    ins = ", ".join(f"%{r.name}" for r in built.inputs) or "none"
    outs = ", ".join(f"%{r.name}" for r in built.outputs)
    obj = "f" if native else "g"
    lines = [
        "",
        "",
        f"def segment_{seg.index}({'W, device' if native else 'rt, W'}):",
        f'    """Segment {seg.index}: {st.ops} npu op(s) ({kinds}).',
        "",
        f"    Parameters: {ins}. Results: {outs}.",
        '    """',
        "    f = NNFactory(profile=False, device=device)" if native else "    g = rt.builder()",
    ]
    for entry in book.entries:
        if isinstance(entry, str):
            lines.append(f"    # {entry}")
        else:
            lines.append(f"    {render.call(obj, entry)}")
    if native:
        nodes = ", ".join(f"{render.name(r)}.node" for r in book.results)
        lines += [f"    f.output_nodes = [{nodes}]", "    compile_factory(f)", "    return f"]
    else:
        lines += [f"    g.result({render.name(r)})" for r in book.results]
        lines.append("    return g.compile()")
    return "\n".join(lines)
