"""forge-opt without torch: what runs torch-free, and the torch-free code checked against torch.

- `forge-opt` on every filecheck file with `aten` ops whose passes need no torch kernel (parse,
  verify, print, the optimization passes, lower-aten-to-npuir, lower-npuir-to-buffer) never imports
  torch, and builds only the `aten` op classes the input names (`dialects.aten` builds a class on
  first use; `forge.driver.registry.ForgeContext` looks ops up one by one). One subprocess runs them all.
  `NEEDS_TORCH` lists the files that do need torch, and why; every such filecheck file is in one list.
- The torch-free replacements lowering uses are torch's: type promotion (`promote`), factory values
  (`factory_values`), `finfo.eps`, and `AtenOp.ir_arg` (the torch-free reading of dtype/device/layout
  /memory-format properties).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, StringAttr, TensorType
from xdsl.utils.exceptions import ParseError
from xdsl.utils.test_value import create_ssa_value

from dialects import aten, aten_schema
from dialects.aten_builder import build
from dialects.torch_types import DTYPE_NAMES, ELEMENT_TYPES, FLOAT_DTYPES, FLOAT_EPS, element_type, tensor_type
from forge.diagnostics import LocatingParser
from forge.driver.registry import ForgeContext, make_context
from forge.pipelines import DEFAULT_PIPELINE
from lowering.aten_rules.movement import factory_values
from lowering.function_lowering import promote

ROOT = Path(__file__).resolve().parents[2]
D, T, L = "filecheck/dialects", "filecheck/transforms", "filecheck/lowering"
LOWER = "lower-aten-to-npuir,schedule-device-affinity,lower-npuir-to-buffer,check-buffer-allocation"

TORCH_FREE_RUNS: list[tuple[str, list[str], int]] = [
    (f"{D}/aten/constants.mlir", [], 0),
    (f"{D}/aten/convolution.mlir", [], 0),
    (f"{D}/aten/ops.mlir", ["--print-op-generic"], 0),
    (f"{D}/aten/ops.mlir", ["-p", ",".join(DEFAULT_PIPELINE)], 0),
    (f"{D}/aten/ops.mlir", ["-p", LOWER], 0),
    (f"{D}/aten/parse-errors.mlir", ["--split-input-file", "--parsing-diagnostics"], 0),
    (f"{D}/aten/pooling.mlir", [], 0),
    (f"{D}/aten/syntax.mlir", ["-p", LOWER], 0),
    (f"{D}/npuir/ops.mlir", [], 0),
    (f"{D}/npuir/invalid.mlir", ["--split-input-file", "--verify-diagnostics"], 0),
    (f"{D}/buffer/ops.mlir", [], 0),
    (f"{D}/buffer/invalid.mlir", ["--split-input-file", "--verify-diagnostics"], 0),
    (f"{T}/cse.mlir", ["-p", "cse"], 0),
    (f"{T}/dce.mlir", ["-p", "dce"], 0),
    (f"{T}/fold-batch-norm.mlir", ["-p", "fold,fuse-ops"], 0),  # without its weights file (lit writes one)
    (f"{T}/fold-conv-padding.mlir", ["-p", "fold"], 0),
    (f"{T}/fold-weight-norm.mlir", ["-p", "fold"], 0),  # without its weights file
    (f"{T}/fuse-ops.mlir", ["-p", "fuse-ops"], 0),
    (f"{T}/fuse-ops-aggressiveness.mlir", ["-p", "fuse-ops{aggressiveness=0.5}"], 0),
    (f"{T}/fuse-ops-conv.mlir", ["-p", "fuse-ops,lower-aten-to-npuir"], 0),
    (f"{T}/fuse-ops-dense-experts.mlir", ["-p", "fuse-ops"], 0),
    (f"{T}/layout.mlir", ["-p", "layout"], 0),
    (f"{L}/aten-to-npuir.mlir", ["-p", "lower-aten-to-npuir{cpu-ops=gather pin-final-norm=true}"], 0),
    (f"{L}/aten-to-npuir-conv.mlir", ["-p", "lower-aten-to-npuir"], 0),
    (f"{L}/aten-to-npuir-errors.mlir", ["-p", "lower-aten-to-npuir{policy=npu-only}"], 1),
    (f"{L}/aten-to-npuir-pool.mlir", ["-p", "lower-aten-to-npuir"], 0),
    (f"{L}/aten-to-npuir-clamp.mlir", ["-p", "lower-aten-to-npuir"], 0),
    (f"{L}/aten-to-npuir-bf16.mlir", ["-p", "lower-aten-to-npuir"], 0),
    (f"{L}/aten-to-npuir-empty-concat.mlir", ["-p", "lower-aten-to-npuir"], 0),
    (f"{L}/aten-to-npuir-reductions.mlir", ["-p", "lower-aten-to-npuir"], 0),
    (f"{L}/npuir-to-buffer-state.mlir", ["-p", "lower-npuir-to-buffer,check-buffer-allocation"], 0),
    (f"{L}/cached-attention.mlir", ["-p", "cached-attention,schedule-device-affinity,lower-npuir-to-buffer"], 0),
    (f"{L}/npuir-to-buffer-state-errors.mlir", ["--split-input-file", "--verify-diagnostics", "-p",
                                                "lower-npuir-to-buffer"], 0),
    (f"{L}/pipeline.mlir", ["-p", LOWER], 0),
    ("filecheck/cli/inputs/llama-1l.mlir", ["-p", f"dce,cse,fuse-ops,layout,{LOWER}"], 0),  # fold evaluates its masks
    ("filecheck/cli/view-op-graph.mlir", ["-p", LOWER, "--view-op-graph"], 0),
]
"""(file, forge-opt arguments, exit code) of the runs that must not import torch."""

NEEDS_TORCH = {
    f"{D}/aten/table.mlir": "the generated table's long tail: ~190 ops have no native result-type rule, so the "
    "verifier runs torch's meta kernels",
    f"{D}/aten/invalid.mlir": "its expected diagnostics are torch's own messages (matmul, embedding, gelu, ...)",
    f"{T}/fold.mlir": "folding runs the ops' torch kernels",
    f"{T}/fuse-attention.mlir": "the matcher evaluates constant masks and scales with torch kernels",
    f"{L}/aten-to-npuir-index-none.mlir": "_unsafe_index's result type is inferred by torch's meta kernel",
    f"{L}/aten-to-npuir-vector-norm.mlir": "linalg_vector_norm has no native result-type rule",
    f"{L}/aten-to-npuir-placement.mlir": "unbind, unflatten, expand_as, copy, slice/select_scatter, "
    "linalg_vector_norm, var, min.dim, argmax and _unsafe_index have no native result-type rule: their "
    "verifier runs torch's meta kernels",
}
"""Filecheck files with `aten` ops whose runs need torch, and why."""

_ERROR_PATH_MODULES = ("forge.cli.reduce", "forge.driver.semantics", "difflib", "sysconfig", "subprocess")
"""Modules forge-opt imports only to report a failure, for `--verify-semantics` or for a wrong name."""

_HARNESS = """
import contextlib, io, json, os, sys
import forge.driver.registry
read = []
scan = forge.driver.registry.entry_points
forge.driver.registry.entry_points = lambda group: read.append(group) or scan(group)
from forge.cli.opt import main
runs, report = json.loads(sys.argv[1]), []
lazy = json.loads(sys.argv[2])
for args, _ in runs:
    with contextlib.redirect_stdout(io.StringIO()):
        code = main([*args, "-o", os.devnull], stderr=io.StringIO())
    report.append({"args": args, "code": code, "torch": "torch" in sys.modules,
                   "lazy": sorted(m for m in lazy if m in sys.modules)})
from dialects import aten
built = sum(1 for name in aten._DECLARED if name in vars(aten))
print(json.dumps({"runs": report, "built": built, "declared": len(aten._DECLARED), "entry_points": read}))
"""


@pytest.fixture(scope="module")
def torch_free_report() -> dict:
    runs = [([path, *args], code) for path, args, code in TORCH_FREE_RUNS]
    out = subprocess.run(
        [sys.executable, "-c", _HARNESS, json.dumps(runs), json.dumps(_ERROR_PATH_MODULES)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_forge_opt_runs_without_torch(torch_free_report):
    """Parse, verify, print, the optimization pipeline and the lowering: no torch module is imported."""
    report = torch_free_report["runs"]
    codes = [(r["args"], r["code"]) for r in report]
    assert codes == [([path, *args], code) for path, args, code in TORCH_FREE_RUNS]
    first = next((r["args"] for r in report if r["torch"]), None)
    assert first is None, f"this run imported torch: forge-opt {' '.join(first)}"


def test_forge_opt_start_up_defers_what_a_clean_run_does_not_need(torch_free_report):
    """Start-up cost that is explicit laziness (forge/cli/*.py, forge/driver/registry.py), so a regression fails:
    the runs before the first one that reports a diagnostic (parse, verify, print and the pipelines on
    the dialect files) import none of the error-path modules, and no run reads the plug-ins' entry
    points (every pass named is Forge's own: `forge.driver.registry.PassTable` answers without them)."""
    report = torch_free_report["runs"]
    clean = [r for r in report[: next(i for i, r in enumerate(report) if r["code"] or "errors" in r["args"][0])]]
    assert len(clean) >= 5 and clean[-1]["lazy"] == [], f"imported at start-up: {clean[-1]['lazy']}"
    assert torch_free_report["entry_points"] == []


def test_forge_opt_builds_only_the_ops_it_reads(torch_free_report):
    """The runs above name well under half of the dialect's ops: only those classes are built."""
    assert 0 < torch_free_report["built"] < torch_free_report["declared"] / 2


def _forge_opt_files(directory: str) -> set[str]:
    found = set()
    for path in sorted((ROOT / directory).rglob("*.mlir")):
        if {"Output", "inputs"} & set(path.parts):
            continue
        text = path.read_text()
        if re.search(r"^\s*\S+ RUN: .*forge-opt", text, re.M) and re.search(r"\baten\.", text):
            found.add(str(path.relative_to(ROOT)))
    return found


def test_every_aten_file_is_classified():
    """Each filecheck file with aten ops (dialects, transforms, lowering) runs torch-free above, or
    says why it needs torch: a new file has to take a side."""
    files = set().union(*(_forge_opt_files(d) for d in (D, T, L)))
    listed = {path for path, _, _ in TORCH_FREE_RUNS} | set(NEEDS_TORCH)
    assert files - listed == set()
    assert not {path for path, _, _ in TORCH_FREE_RUNS} & set(NEEDS_TORCH)


# --- ForgeContext: aten ops one by one ------------------------------------------------------------

_MODULE = """
func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = aten.t %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %y = aten.relu %t : (tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %y : tensor<3x2xf32>
}
"""


def test_context_looks_aten_ops_up_one_by_one():
    ctx = make_context()
    module = LocatingParser(ctx, _MODULE, "m.mlir").parse_module()
    module.verify()
    assert isinstance(ctx, ForgeContext) and "aten" not in {d.name for d in ctx.loaded_dialects}
    assert ctx.get_op("aten.t") is aten.TOp and ctx.get_op("aten.relu") is aten.ReluOp
    assert ctx.get_optional_op("aten.no_such_op") is None
    clone = ctx.clone()
    assert isinstance(clone, ForgeContext) and clone.get_op("aten.add.Tensor") is aten.AddTensorOp
    ctx.load_registered_dialect("aten")  # the whole dialect after some of its ops: the same classes
    assert ctx.get_op("aten.t") is aten.TOp and ctx.get_op("aten.weight") is aten.WeightOp
    assert {op.name for op in ctx.loaded_ops} >= {op.name for op in aten.Aten.operations}


def test_unknown_aten_op_is_a_parse_error():
    with pytest.raises(ParseError, match="aten.bogus"):
        LocatingParser(make_context(), '"aten.bogus"() : () -> ()', "m.mlir").parse_module()


def test_op_lookup_by_name_and_overload():
    assert aten.op_named("aten.add.Tensor") is aten.AddTensorOp
    assert aten.op_named("aten.fused_linear") is aten.FusedLinearOp
    assert aten.op_named("aten.constant") is aten.ConstantOp
    assert aten.op_named("aten.view.default") is None
    assert aten.op_for("aten::view.default") is aten.ViewOp and aten.op_for("aten::nope.default") is None
    assert all(aten.op_named(cls.name) is cls for cls in aten.SCHEMA_OPS)


# --- lowering's torch-free helpers are torch's -------------------------------------------------------

DTYPES = sorted(ELEMENT_TYPES)
SCALARS = [True, False, 0, 3, -7, 2**40, 0.5, -2.5, math.inf, math.nan]


def _probe(dtype: str, rank0: bool) -> torch.Tensor:
    return torch.empty(() if rank0 else (2,), dtype=getattr(torch, dtype))


def test_promote_is_result_type():
    """promote(a, b) is torch.result_type on every dtype pair, rank-0 or not, and on Python scalars."""
    for a in DTYPES:
        for a0 in (False, True):
            ta = tensor_type(() if a0 else (2,), a)
            for b in DTYPES:
                for b0 in (False, True):
                    want = torch.result_type(_probe(a, a0), _probe(b, b0))
                    assert promote(ta, tensor_type(() if b0 else (2,), b)) == element_type(want), (a, a0, b, b0)
            for s in SCALARS:
                assert promote(ta, s) == element_type(torch.result_type(_probe(a, a0), s)), (a, a0, s)


def test_float_eps_is_finfo():
    assert FLOAT_EPS == {d: torch.finfo(getattr(torch, d)).eps for d in FLOAT_DTYPES}


FILLS = [0, 1, -1, 7, 300, -129, 2**24 + 1, 2**53 + 1, True, False, 2.5, -0.1, 1e-8, 3.5e38, 1e39, math.inf, math.nan]
FACTORY_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                  torch.int8, torch.uint8, torch.bool]  # fmt: skip


def _factory_calls():
    like = create_ssa_value(TensorType(ELEMENT_TYPES["float32"], (2, 3)))
    for dtype in FACTORY_DTYPES:
        for fill in FILLS:
            yield aten.FullOp, ([2, 3], fill), dtype
            yield aten.FullLikeOp, (like, fill), dtype
            yield aten.ScalarTensorOp, (fill,), dtype
        yield from ((cls, ([4],), dtype) for cls in (aten.ZerosOp, aten.OnesOp))
        yield from ((cls, (like,), dtype) for cls in (aten.ZerosLikeOp, aten.OnesLikeOp))
        yield from ((cls, (like, [3]), dtype) for cls in (aten.NewZerosOp, aten.NewOnesOp))
        yield from ((aten.ArangeOp, (end,), dtype) for end in (0, 1, 17))
        yield from ((aten.ArangeStartOp, (s, e), dtype) for s, e in ((-3, 4), (2, 9), (0.5, 4)))
        for s, e, step in ((0, 10, 3), (10, 0, -2), (-5, 5, 4), (0, 1, 0.25)):
            yield aten.ArangeStartStepOp, (s, e, step), dtype
    yield aten.ArangeOp, (5,), None
    yield aten.FullOp, ([2], 1.5), None


def _factories():
    for cls, args, dtype in _factory_calls():
        try:
            yield build(cls, *args, dtype=dtype)
        except TypeError:  # torch's meta kernel refuses the combination (an arange of bools)
            continue


def _run(op: aten.AtenOp) -> torch.Tensor | None:
    try:
        return op.call([torch.zeros(v.type.get_shape(), dtype=torch.float32) for v in op.operands])
    except (RuntimeError, ValueError):
        return None  # torch refuses (e.g. 300 as int8): the lowering must not invent a value


def test_factory_values_are_torchs():
    """factory_values gives, bit for bit, the values torch's factory computes, or None (torch then runs
    it); it covers the integer ranges and exact fills the models and tests produce."""
    covered = 0
    for op in _factories():
        values, want = factory_values(op), _run(op)
        if values is None:
            continue
        assert want is not None, f"{op}: torch refuses it, factory_values gave {values}"
        out = op.results[0].type
        stored = [int(v) for v in values] if DTYPE_NAMES[out.element_type] == "bool" else values
        got = list(DenseIntOrFPElementsAttr.from_list(out, stored).get_values()) if stored else []
        if DTYPE_NAMES[out.element_type] == "bool":
            got = [bool(g) for g in got]  # i1 reads back as 0/-1
        expected = want.reshape(-1).tolist()
        assert len(got) == len(expected), (str(op), got, expected)
        nan = [isinstance(g, float) and math.isnan(g) and math.isnan(w) for g, w in zip(got, expected, strict=True)]
        assert all(g == w or n for g, w, n in zip(got, expected, nan, strict=True)), (str(op), got, expected)
        covered += 1
    assert covered > 150


def test_ir_arg_reads_properties_without_torch():
    x = create_ssa_value(TensorType(ELEMENT_TYPES["float32"], (2, 3)))
    to = build(aten.ToDtypeOp, x, torch.float16)
    assert to.ir_arg("dtype") == ELEMENT_TYPES["float16"] and to.arg("dtype") is torch.float16
    assert to.ir_arg("memory_format") is None and to.ir_arg("non_blocking") is False
    zeros = build(aten.ZerosOp, [2], device=torch.device("cpu"), layout=torch.strided)
    assert zeros.ir_arg("device") == "cpu" and zeros.ir_arg("layout") == "strided" and zeros.ir_arg("dtype") is None
    assert isinstance(zeros.properties["device"], StringAttr)
    assert build(aten.ContiguousOp, x).ir_arg("memory_format") == "contiguous_format"
    randperm = build(aten.RandpermOp, 5)
    assert randperm.ir_arg("dtype") == ELEMENT_TYPES["int64"]
    assert aten_schema.SCALAR_TYPE_NAMES[randperm.SIGNATURE.arg("dtype").default] == "int64"
