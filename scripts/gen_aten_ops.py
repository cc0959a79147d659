"""Generate dialects/aten_table.py, the ATen overloads the `aten` dialect defines from a name table.

    .venv/bin/python scripts/gen_aten_ops.py           # rewrite dialects/aten_table.py
    .venv/bin/python scripts/gen_aten_ops.py --check   # exit 1 if the checked-in table is stale
    .venv/bin/python scripts/gen_aten_ops.py --examples  # rewrite filecheck/dialects/aten/table.mlir (minutes)
    .venv/bin/python scripts/gen_aten_ops.py --update-examples  # keep those, add the new ops' (seconds)

The table holds every overload torch tags `core` (torch.Tag.core, found by walking every registered
schema, since `dir(torch.ops.aten)` lists only loaded packets) plus EXTRA below: overloads that
torch.export leaves in graphs in practice and that have no decomposition to core ATen (or that Forge
wants to keep whole). Overloads dialects/aten.py already defines by hand are left out, so each is
defined once. A core overload Forge cannot express (it returns an int, takes a bool[], mutates an
argument) goes to SKIPPED_CORE with the reason; tests/dialects/test_aten.py fails, naming them, when
torch's core set and the table drift apart. SIGNATURES holds the schema entry
(aten_schema.schema_entry: schema text, arguments, returns, tags) of every overload the dialect
defines, hand-defined and fused ones included, so importing the dialect never imports torch; FUSED
names Forge's fused ops and their op classes. ELEMENTWISE_TYPES: the dtype rule of each elementwise
op (dialects/aten_shapes.py), found by probing its CPU kernel on 1-element tensors of every dtype
and rank-0/rank-1 combination with every class of Python scalar, as the verifier did at run time.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from dialects.aten_schema import (  # noqa: E402
    ArgKind,
    SchemaError,
    is_elementwise,
    parse_signature,
    schema_entry,
)

TABLE = ROOT / "dialects" / "aten_table.py"
EXAMPLES = ROOT / "filecheck" / "dialects" / "aten" / "table.mlir"

EXTRA = """
_convolution_mode.default _native_batch_norm_legit_functional.default _weight_norm_interface.default
angle.default linalg_tensorinv.default sort.stable scatter.reduce scatter.value_reduce
linalg_inv.default linalg_solve.default linalg_cholesky.default linalg_ldl_factor.default linalg_lu_factor.default
_embedding_bag_forward_only.default _trilinear.default
_upsample_bilinear2d_aa.default _upsample_nearest_exact2d.vec _upsample_nearest_exact1d.vec _unsafe_index.Tensor
_unsafe_index_put.default _safe_softmax.default
addbmm.default addmv.default addcmul.default addcdiv.default alpha_dropout.default feature_dropout.default
feature_alpha_dropout.default adaptive_max_pool1d.default adaptive_max_pool2d.default adaptive_max_pool3d.default
as_strided_copy.default as_strided_scatter.default atleast_1d.default atleast_2d.default atleast_3d.default
bitwise_left_shift.Tensor bitwise_right_shift.Tensor broadcast_to.default bucketize.Tensor
cartesian_prod.default cholesky.default cholesky_inverse.default cholesky_solve.default chunk.default
clamp_min.default clamp_max.default copysign.Tensor cummax.default cummin.default cumprod.default
diagonal_scatter.default digamma.default dist.default dsplit.array empty_like.default empty_permuted.default
erfc.default erfinv.default exp2.default expand_as.default fmax.default fmin.default fractional_max_pool2d.default
fractional_max_pool3d.default frexp.Tensor gcd.default geqrf.default grid_sampler_3d.default group_norm.default
histc.default histogram.bin_ct _histogramdd_bin_edges.default _histogramdd_from_bin_cts.default hsplit.int
hypot.default i0.default igamma.default igammac.default index_reduce.default kthvalue.default lcm.default
ldexp.Tensor lgamma.default _linalg_det.default _linalg_eigh.default _linalg_slogdet.default _linalg_solve_ex.default
_linalg_svd.default linalg_cholesky_ex.default linalg_diagonal.default
linalg_householder_product.default linalg_inv_ex.default linalg_ldl_factor_ex.default linalg_ldl_solve.default
linalg_lu.default linalg_lu_factor_ex.default linalg_lu_solve.default linalg_matrix_exp.default
linalg_pinv.atol_rtol_tensor linalg_qr.default linalg_solve_triangular.default linalg_vector_norm.default
logcumsumexp.default lu_unpack.default mH.default mT.default matrix_H.default max.default
median.default median.dim min.default mode.default movedim.intlist multinomial.default nanmedian.default nanmedian.dim
narrow.default narrow_copy.default native_batch_norm.default new_empty.default new_empty_strided.default
new_full.default nextafter.default nonzero_static.default normal.Tensor_Tensor numpy_T.default ormqr.default
permute_copy.default polygamma.default positive.default put.default randint_like.default randn_like.default
rand_like.default ravel.default real.default reshape_as.default resolve_conj.default resolve_neg.default
round.decimals roll.default rrelu_with_noise_functional.default searchsorted.Tensor segment_reduce.default
signbit.default special_airy_ai.default special_bessel_j0.default special_bessel_j1.default special_bessel_y0.default
special_bessel_y1.default special_chebyshev_polynomial_t.default special_chebyshev_polynomial_u.default
special_chebyshev_polynomial_v.default special_chebyshev_polynomial_w.default special_erfcx.default
special_hermite_polynomial_h.default special_hermite_polynomial_he.default special_i0e.default special_i1.default
special_i1e.default special_laguerre_polynomial_l.default special_legendre_polynomial_p.default
special_modified_bessel_i0.default special_modified_bessel_i1.default special_modified_bessel_k0.default
special_modified_bessel_k1.default special_ndtri.default special_scaled_modified_bessel_k0.default
special_scaled_modified_bessel_k1.default special_shifted_chebyshev_polynomial_t.default
special_shifted_chebyshev_polynomial_u.default special_shifted_chebyshev_polynomial_v.default
special_shifted_chebyshev_polynomial_w.default special_spherical_bessel_j0.default special_zeta.default
triangular_solve.default unbind.int unbind_copy.int unflatten.int unfold.default
unsafe_chunk.default var_mean.correction view_as.default view_copy.default vsplit.int
""".split()
"""Non-core overloads torch.export leaves in graphs (found by exporting every OpInfo sample) that have
no entry in torch.export.default_decompositions(), plus ones Forge keeps whole (chunk, roll, unbind,
group_norm, _convolution_mode, ...), and the linalg ops whose decompositions check their results
through an effectful op (`with_effects(_linalg_check_errors)`). Complex-only (FFT, view_as_complex),
sparse and fp8 ops are not here: Forge has no complex, sparse or fp8 types."""


def overload(name: str):
    packet, _, overload_name = name.rpartition(".")
    return getattr(getattr(torch.ops.aten, packet), overload_name)


def core_overloads() -> list[str]:
    """Every `aten` overload torch tags core, as `packet.overload` names, sorted."""
    names = set()
    for s in torch._C._jit_get_all_schemas():
        if not s.name.startswith("aten::"):
            continue
        name = f"{s.name.removeprefix('aten::')}.{s.overload_name or 'default'}"
        if torch.Tag.core in overload(name).tags:
            names.add(name)
    return sorted(names)


COMPLEX_ONLY = {"_fft_r2c.default", "_fft_c2r.default"}
"""Core overloads whose inputs or results are always complex (Forge has no complex types)."""


def why_not(name: str) -> str | None:
    """Why Forge cannot define the overload as an op (None when it can), as aten_op would refuse it."""
    target = overload(name)
    if name in COMPLEX_ONLY:
        return "complex tensors (Forge has no complex element types)"
    if torch.Tag.dynamic_output_shape in target.tags:
        return "result shape depends on tensor values (the importer raises DataDependentShapeError)"
    if target._schema.is_mutable:
        return "mutates an argument (the importer functionalizes in-place ops)"
    try:
        parse_signature(target, set())
    except SchemaError as err:
        if str(err).startswith("unsupported return types"):
            return "returns a Python number (the importer resolves static SymInts)"
        return f"{str(err).removeprefix('unsupported schema argument type ')} argument (a backward op)"
    return None


def hand_defined() -> list[str]:
    """Overloads dialects/aten.py defines by hand (`aten_op("aten::view.default")` lines), in order.

    Read from its source: the dialect cannot be imported to find out while its table is stale."""
    import re

    source = (ROOT / "dialects" / "aten.py").read_text()
    return [m.group(1) for m in re.finditer(r'aten_op\("aten::([^"]+)"', source)]


def _entry_lines(qualname: str, target) -> list[str]:
    """The SIGNATURES entry of one overload, wrapped to the line limit."""
    text, args, returns, tags = schema_entry(target)
    lines = [f"    {qualname!r}: (", f"        {text!r},", "        ("]
    lines += [f"            {arg!r}," for arg in args]
    lines += ["        ),", f"        {returns!r},", f"        {tags!r},", "    ),"]
    return lines


def render() -> str:
    core = core_overloads()
    hand = hand_defined()
    hand_set = set(hand)
    generated: list[tuple[str, str]] = []
    skipped: dict[str, str] = {}
    for name in [*core, *sorted(set(EXTRA) - set(core))]:
        if name in hand_set:  # dialects/aten.py defines it (index.Tensor: bool masks are refused on import)
            continue
        reason = why_not(name)
        if reason is not None:
            if name in core:
                skipped[name] = reason
            else:
                raise SystemExit(f"EXTRA overload {name} cannot be defined: {reason}")
        else:
            generated.append((name, "core" if name in core else "extra"))
    lines = [
        "# ruff: noqa: E501  (schema texts are one line each)",
        '"""Generated by scripts/gen_aten_ops.py from torch ' + torch.__version__.split("+")[0] + ": do not edit.",
        "",
        "GENERATED: the ATen overloads the `aten` dialect defines from this table, after the ones",
        "dialects/aten.py names by hand: CORE (tagged torch.Tag.core) and EXTRA (what torch.export",
        "leaves in graphs in practice). SKIPPED_CORE: the core overloads Forge cannot express, and why.",
        '"""',
        "",
        "CORE: tuple[str, ...] = (",
        *(f'    "{name}",' for name, source in generated if source == "core"),
        ")",
        "",
        "EXTRA: tuple[str, ...] = (",
        *(f'    "{name}",' for name, source in generated if source == "extra"),
        ")",
        "",
        "GENERATED = CORE + EXTRA",
        "",
        "SKIPPED_CORE: dict[str, str] = {",
        *(f'    "{name}": "{reason}",' for name, reason in skipped.items()),
        "}",
        "",
    ]
    from dialects.fused_kernels import FUSED_OPS

    entries = [(f"aten::{n}", overload(n)) for n in [*hand, *(n for n, _ in generated)]]
    entries += [(f"forge::{op.name}.default", getattr(torch.ops.forge, op.name).default) for op in FUSED_OPS]
    elementwise = {q: m for q, t in entries if (m := elementwise_model(t)) is not None}
    lines += [
        "ELEMENTWISE_TYPES: dict[str, dict[tuple, tuple]] = {",
        *(f"    {q!r}: {{" + ", ".join(f"{k!r}: {_model_text(v)}" for k, v in m.items()) + "},"
          for q, m in elementwise.items()),
        "}",
        '"""Elementwise ops: property variant -> (dtype kind, promoted operands, promoted Python scalars,',
        "dtypes each operand accepts, (promoted dtype, scalar classes...) torch rejects); see",
        'dialects/aten_shapes.py."""',
        "",
        "FUSED: dict[str, str] = {",
        *(f'    "{op.name}": "{op.class_name}",' for op in FUSED_OPS),
        "}",
        '"""Forge\'s fused ops (dialects/fused_kernels.py): name -> op class name in dialects/aten.py."""',
        "",
        "SIGNATURES: dict[str, tuple] = {",
        *(line for qualname, target in entries for line in _entry_lines(qualname, target)),
        "}",
        '"""The schema entry of every overload the dialect defines (dialects/aten_schema.SchemaEntry)."""',
        "",
    ]
    return "\n".join(lines)


# --- elementwise dtype rules -----------------------------------------------------------------------

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
SCALAR_PROBES = (True, False, 2, 0, -1, 0.5, 0.0, -2.5, float("nan"))
STR_VARIANTS = {"rounding_mode": ("floor", "trunc"), "approximate": ("tanh",)}
"""String properties whose other values get a model of their own (the default is always probed)."""
KINDS = ("default", "int_to_float", "always_bool", "bool_to_long")
PROBE_LIMIT = 60_000


def _variants(sig) -> list[tuple]:
    """Property variants to probe: every non-scalar property at its default, plus STR_VARIANTS."""
    others = [s for s in sig.property_args if s.kind is not ArgKind.SCALAR]
    if any(not s.has_default for s in others):
        return []  # a required non-scalar property (polygamma's n): no model
    variants = [()]
    for spec in others:
        variants += [((spec.name, value),) for value in STR_VARIANTS.get(spec.name, ())]
    return variants


def _probe(target, sig, dtypes, ranks, scalars, variant):
    """What the verifier's old elementwise inference gave: the result dtype name, or None (rejected)."""
    tensors = iter(
        None if d is None else torch.ones((1,) * r, dtype=getattr(torch, d)) for d, r in zip(dtypes, ranks, strict=True)
    )
    values = iter(scalars)
    fixed = dict(variant)
    args, kwargs = [], {}
    for spec in sig.args:
        if spec.kind.is_tensor:
            value = next(tensors)
        elif spec.kind is ArgKind.SCALAR:
            value = next(values)
        elif spec.kind is ArgKind.GENERATOR:
            continue
        elif spec.kind is ArgKind.DEVICE:
            value = torch.device("cpu") if spec.default is not None else None
        else:
            value = fixed.get(spec.name, spec.default)
        if spec.kwarg_only:
            kwargs[spec.name] = value
        else:
            args.append(value)
    try:
        out = target(*args, **kwargs)
    except Exception:
        return None
    return str(out.dtype).removeprefix("torch.")


def elementwise_model(target) -> dict | None:
    """The ELEMENTWISE_TYPES entry of an overload, or None (not elementwise, or no model fits)."""
    from dialects import aten_shapes

    sig = parse_signature(target, set())
    if not is_elementwise(sig):
        return None
    models = {}
    for variant in _variants(sig):
        model = _fit(target, sig, variant, aten_shapes)
        if model is not None:
            models[variant] = model
    return models or None


def _probes(sig):
    import itertools

    tensors = sig.tensor_args
    if any(s.kind.name.endswith("LIST") for s in tensors):
        return None
    scalars = [s for s in sig.property_args if s.kind is ArgKind.SCALAR]
    dtype_axes = [(*DTYPES, None) if s.kind is ArgKind.OPT_TENSOR else DTYPES for s in tensors]
    scalar_axes = [(*SCALAR_PROBES, None) if s.optional else SCALAR_PROBES for s in scalars]
    n = len(tensors)
    ranks = {(1,) * n, (0,) * n, *(tuple(0 if i == j else 1 for i in range(n)) for j in range(n))}
    count = math.prod(len(a) for a in dtype_axes) * math.prod(len(a) for a in scalar_axes) * len(ranks)
    if count > PROBE_LIMIT:
        return None
    return itertools.product(itertools.product(*dtype_axes), sorted(ranks), itertools.product(*scalar_axes))


def _fit(target, sig, variant, shapes):
    import itertools

    probes = _probes(sig)
    if probes is None:
        return None
    results = [(d, r, sc, _probe(target, sig, d, r, sc, variant)) for d, r, sc in probes]
    accepted = [x for x in results if x[3] is not None]
    if not accepted:
        return None
    n = len(sig.tensor_args)
    opt = [i for i, s in enumerate(sig.tensor_args) if s.kind is ArgKind.OPT_TENSOR]
    n_scalars = len([s for s in sig.property_args if s.kind is ArgKind.SCALAR])
    subsets = [c for k in range(n_scalars, -1, -1) for c in itertools.combinations(range(n_scalars), k)]
    for participants in (tuple(range(n)), tuple(range(1, n))):
        for scalars_promote in subsets:

            def common(d, r, sc, participants=participants, scalars_promote=scalars_promote):
                tensors = [((0,) * r[i], d[i]) for i in participants if d[i] is not None]
                scalars = [sc[i] for i in scalars_promote if sc[i] is not None]
                return shapes.result_dtype([((), t) if len(s) == 0 else ((1,), t) for s, t in tensors], scalars)

            for kind in KINDS:
                if all((c := common(d, r, sc)) is not None and shapes._apply_kind(kind, c) == out
                       for d, r, sc, out in accepted):
                    model = _acceptance(results, common, kind, participants, scalars_promote, n, opt, shapes)
                    if model is not None:
                        return model
    return None


def _acceptance(results, common, kind, participants, scalars_promote, n, opt, shapes):
    allowed = [sorted({d[i] for d, _, _, out in results if out is not None and d[i] is not None}) for i in range(n)]

    def key(d, r, sc):
        classes = tuple(shapes.scalar_class(x) for x in sc)
        classes += tuple("absent" if d[i] is None else "present" for i in opt)
        return (common(d, r, sc), *classes)

    explained = [x for x in results if all(t is None or t in allowed[i] for i, t in enumerate(x[0]))]
    rejected = {key(d, r, sc) for d, r, sc, out in explained if out is None}
    if any(key(d, r, sc) in rejected for d, r, sc, out in explained if out is not None):
        return None  # acceptance depends on more than the operand dtypes and the promoted dtype
    return kind, participants, scalars_promote, tuple(tuple(a) for a in allowed), frozenset(rejected)


def _model_text(model) -> str:
    kind, participants, scalars_promote, allowed, rejected = model
    rejected_text = "frozenset({" + ", ".join(repr(k) for k in sorted(rejected, key=repr)) + "})"
    return f"({kind!r}, {participants!r}, {scalars_promote!r}, {allowed!r}, {rejected_text})"


# --- examples: one function per generated op, for the round-trip FileCheck test -----------------


class _Call(torch.nn.Module):
    def __init__(self, fn, args, kwargs):
        super().__init__()
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def forward(self, x):
        return self.fn(x, *self.args, **self.kwargs)


def _programs():
    """Exported programs of every OpInfo entry's first float32 sample, as exported and decomposed."""
    import warnings

    from torch.testing._internal.common_methods_invocations import op_db

    from dialects import aten

    warnings.filterwarnings("ignore")
    for info in op_db:
        try:
            sample = next(iter(info.sample_inputs("cpu", torch.float32, requires_grad=False)))
            if not isinstance(sample.input, torch.Tensor):
                continue
            with torch.no_grad():
                program = torch.export.export(_Call(info.op, sample.args, sample.kwargs), (sample.input,), strict=False)
            yield program
            if any(n.op == "call_function" and n.target not in aten.OPS_BY_TARGET for n in program.graph.nodes):
                yield program.run_decompositions()
        except Exception:  # an OpInfo sample torch itself cannot export: no example from it
            continue


def _example(program, node):
    """The one-op function text of `node` (its tensor inputs as arguments), or None if it does not verify."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.ir import Region

    from forge.frontend import fx_importer, normalize

    builder = fx_importer._GraphBuilder(program, "f")
    block = builder.block
    for inp in node.all_input_nodes:
        val = inp.meta.get("val")
        if not isinstance(val, torch.Tensor):
            return None
        arg = block.insert_arg(fx_importer.tensor_type(tuple(val.shape), val.dtype), len(block.args))
        arg.name_hint = "x"
        builder.values[inp] = arg
    builder._call(node)
    results = builder.values[node]
    block.add_op(func.ReturnOp(*(results if isinstance(results, list) else [results])))
    name = normalize.target_name(node.target).removeprefix("aten.").replace(".", "_")
    types = ([a.type for a in block.args], [r.type for r in block.last_op.operands])
    module = ModuleOp([func.FuncOp(name, types, Region(block))])
    module.verify()
    return str(module.body.block.first_op)


def _existing_examples() -> dict[str, str]:
    """The function text of each op in the checked-in examples file (for --update)."""
    found = {}
    for chunk in EXAMPLES.read_text().split("\n\n")[1:]:
        body = "\n".join(line for line in chunk.splitlines() if not line.startswith("//"))
        if body.startswith("func.func @"):
            found[body.split("@")[1].split("(")[0]] = body
    return found


def render_examples(update: bool = False) -> str:
    from dialects import aten, aten_table

    wanted = {overload(name): name for name in aten_table.GENERATED}
    found: dict[str, str] = {}
    empty: set[str] = set()  # examples with a zero-size operand: replaced by the first non-empty one
    if update:
        existing = _existing_examples()
        found = {n: existing[f] for n in aten_table.GENERATED if (f := n.replace(".", "_")) in existing}
    for program in () if update else _programs():
        for node in program.graph.nodes:
            name = wanted.get(node.target)
            if node.op != "call_function" or name is None or (name in found and name not in empty):
                continue
            try:
                text = _example(program, node)
            except Exception:  # a node with SymInt arguments or unsupported dtypes: try the next sample
                continue
            if text is None:
                continue
            has_empty = any(0 in tuple(a.meta["val"].shape) for a in node.all_input_nodes)
            if name not in found or not has_empty:
                found[name] = text
                empty.discard(name)
                if has_empty:
                    empty.add(name)
    found.update(_hand_examples(wanted, found))
    missing = sorted(set(aten_table.GENERATED) - set(found))
    lines = [
        "// RUN: forge-opt %s | forge-opt | filecheck %s",
        "// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s",
        "",
        "// Generated by scripts/gen_aten_ops.py --examples: one function per op of dialects/aten_table.py,",
        "// built from the first OpInfo sample graph holding it (else from _hand_calls in the script).",
        "// tests/dialects/test_aten.py round-trips and verifies each function on its own.",
    ]
    if missing:
        lines.append("// No example yet: " + ", ".join(missing))
    for name in aten_table.GENERATED:
        if name not in found:
            continue
        body = found[name].splitlines()
        lines += ["", f"// CHECK-LABEL: {body[0].split('(')[0]}("]
        for line in body:
            lines.append(line)
            if line.strip() and not line.startswith(("func.func", "}")) and "func.return" not in line:
                lines.insert(-1, f"// CHECK-NEXT: {line.strip()}")
    del aten
    return "\n".join(lines) + "\n"


def _hand_calls() -> dict[str, tuple]:
    """Calls of the ops no float32 OpInfo sample graph holds (integer, random, backward ops, ...):
    overload name -> (function of the inputs, inputs)."""
    a = torch.ops.aten
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 4, 4, generator=gen)
    c = torch.rand(3, generator=gen) + 0.5
    i = torch.tensor([[5, 3], [12, 7]])
    v = torch.randn(6, generator=gen)
    return {
        "_adaptive_avg_pool2d_backward.default": (
            lambda g, x: a._adaptive_avg_pool2d_backward(g, x),
            (x[:, :, :2, :2], x),
        ),
        "_convolution_mode.default": (
            lambda x, w: a._convolution_mode(x, w, None, [1, 1], "same", [1, 1], 1),
            (x, torch.randn(5, 3, 3, 3)),
        ),
        "_embedding_bag.default": (
            lambda w, i, o: a._embedding_bag(w, i, o),
            (torch.randn(10, 3), torch.tensor([1, 2, 4, 5]), torch.tensor([0, 2])),
        ),
        "_histogramdd_bin_edges.default": (lambda x: a._histogramdd_bin_edges(x, [2, 3]), (torch.rand(5, 2),)),
        "_histogramdd_from_bin_cts.default": (lambda x: a._histogramdd_from_bin_cts(x, [2, 3]), (torch.rand(5, 2),)),
        "_native_batch_norm_legit.no_stats": (
            lambda x, c: a._native_batch_norm_legit.no_stats(x, c, c, True, 0.1, 1e-5),
            (x, c),
        ),
        "_native_batch_norm_legit_functional.default": (
            lambda x, c: a._native_batch_norm_legit_functional(x, c, c, c, c, True, 0.1, 1e-5),
            (x, c),
        ),
        "_native_batch_norm_legit_no_training.default": (
            lambda x, c: a._native_batch_norm_legit_no_training(x, c, c, c, c, 0.1, 1e-5),
            (x, c),
        ),
        "_unsafe_index.Tensor": (lambda x, i: a._unsafe_index.Tensor(x, [None, i]), (x[0, 0], torch.tensor([0, 2]))),
        "_unsafe_index_put.default": (
            lambda x, i, v: a._unsafe_index_put(x, [i], v),
            (v, torch.tensor([0, 2]), torch.ones(2)),
        ),
        "_upsample_nearest_exact2d.vec": (lambda x: a._upsample_nearest_exact2d.vec(x, None, [2.0, 2.0]), (x,)),
        "_weight_norm_interface.default": (
            lambda v, g: a._weight_norm_interface(v, g, 2),
            (torch.randn(3, 4, 5), torch.rand(1, 1, 5)),
        ),
        "avg_pool2d_backward.default": (
            lambda g, x: a.avg_pool2d_backward(g, x, [2, 2], [2, 2], [0, 0], False, True, None),
            (x[:, :, :2, :2], x),
        ),
        "bitwise_and.Scalar": (lambda i: a.bitwise_and.Scalar(i, 6), (i,)),
        "bitwise_or.Scalar": (lambda i: a.bitwise_or.Scalar(i, 6), (i,)),
        "bitwise_xor.Scalar": (lambda i: a.bitwise_xor.Scalar(i, 6), (i,)),
        "bitwise_xor.Tensor": (lambda i, j: a.bitwise_xor.Tensor(i, j), (i, i.flip(0))),
        "bitwise_left_shift.Tensor": (lambda i, j: a.bitwise_left_shift.Tensor(i, j), (i, torch.tensor([1, 2]))),
        "bitwise_right_shift.Tensor": (lambda i, j: a.bitwise_right_shift.Tensor(i, j), (i, torch.tensor([1, 2]))),
        "gcd.default": (lambda i, j: a.gcd(i, j), (i, i.flip(1))),
        "lcm.default": (lambda i, j: a.lcm(i, j), (i, i.flip(1))),
        "clamp_max.default": (lambda v: a.clamp_max(v, 0.5), (v,)),
        "col2im.default": (lambda x: a.col2im(x, [3, 3], [2, 2], [1, 1], [0, 0], [1, 1]), (torch.randn(1, 12, 4),)),
        "div.Scalar_mode": (lambda v: a.div.Scalar_mode(v, 0.3, rounding_mode="floor"), (v,)),
        "embedding_dense_backward.default": (
            lambda g, i: a.embedding_dense_backward(g, i, 10, -1, False),
            (torch.randn(2, 2, 3), i % 10),
        ),
        "empty_strided.default": (lambda: a.empty_strided([2, 3], [3, 1], dtype=torch.float32), ()),
        "geqrf.default": (lambda m: a.geqrf(m), (torch.randn(3, 3),)),
        "histogram.bin_ct": (lambda v: a.histogram.bin_ct(v, 4), (v,)),
        "native_dropout.default": (lambda v: a.native_dropout(v, 0.5, True), (v,)),
        "prod.dim_int": (lambda x: a.prod.dim_int(x, 1), (x,)),
        "rand_like.default": (lambda v: a.rand_like(v), (v,)),
        "randperm.default": (lambda: a.randperm(5), ()),
        "reflection_pad1d.default": (lambda x: a.reflection_pad1d(x, [1, 2]), (x[0],)),
        "reflection_pad2d.default": (lambda x: a.reflection_pad2d(x, [1, 2, 0, 1]), (x,)),
        "reflection_pad3d.default": (lambda x: a.reflection_pad3d(x, [1, 1, 1, 1, 1, 1]), (x.unsqueeze(0),)),
        "replication_pad2d.default": (lambda x: a.replication_pad2d(x, [1, 2, 0, 1]), (x,)),
        "median.dim": (lambda x: a.median.dim(x, 1), (x,)),
        "angle.default": (lambda v: a.angle(v), (v,)),
        "sort.stable": (lambda x: a.sort.stable(x, stable=True, dim=1), (x,)),
        "scatter.reduce": (
            lambda m, i, s: a.scatter.reduce(m, 1, i, s, reduce="add"),
            (torch.randn(2, 3), torch.tensor([[0], [2]]), torch.randn(2, 1)),
        ),
        "scatter.value_reduce": (
            lambda m, i: a.scatter.value_reduce(m, 1, i, 2.0, reduce="multiply"),
            (torch.randn(2, 3), torch.tensor([[0], [2]])),
        ),
        "linalg_tensorinv.default": (lambda m: a.linalg_tensorinv(m, 1), (torch.randn(4, 2, 2),)),
        "_adaptive_avg_pool2d.default": (lambda x: a._adaptive_avg_pool2d(x, [2, 2]), (x,)),
        "replication_pad3d.default": (lambda x: a.replication_pad3d(x, [1, 1, 1, 1, 1, 1]), (x.unsqueeze(0),)),
        "scatter.value": (lambda m, i: a.scatter.value(m, 1, i, 2.5), (torch.randn(2, 3), torch.tensor([[0], [2]]))),
        "var.dim": (lambda x: a.var.dim(x, [1]), (x,)),
    }


class _HandCall(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def _hand_examples(wanted: dict, found: dict[str, str]) -> dict[str, str]:
    examples = {}
    for name, (fn, inputs) in _hand_calls().items():
        if name in found:
            continue
        with torch.no_grad():
            program = torch.export.export(_HandCall(fn), tuple(t.clone() for t in inputs), strict=False)
        node = next(n for n in program.graph.nodes if wanted.get(n.target) == name)
        examples[name] = _example(program, node)
    return examples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the checked-in table is stale")
    parser.add_argument("--examples", action="store_true", help=f"rewrite {EXAMPLES.relative_to(ROOT)}")
    parser.add_argument("--update-examples", action="store_true", help="add examples for new ops only (fast)")
    args = parser.parse_args()
    if args.examples or args.update_examples:
        EXAMPLES.write_text(render_examples(update=args.update_examples))
        print(f"wrote {EXAMPLES}")
        return 0
    text = render()
    if args.check:
        if TABLE.read_text() != text:
            print(f"{TABLE} is stale: run scripts/gen_aten_ops.py", file=sys.stderr)
            return 1
        return 0
    TABLE.write_text(text)
    print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
