"""The autotuner: pick a pass configuration by the cost model alone (no hardware run).

A configuration (`TuningConfig`) is a set of real pass options:

- which fusions: `fuse-attention` on/off, and the `fuse-ops` families (linear canonicalization,
  bias/activation epilogues, GELU recognition, gated MLP, RMSNorm, residual add + LayerNorm);
- fusion aggressiveness alpha (`fuse-ops{aggressiveness=...}`: the largest ceil(alpha*n) of the n
  candidate sites, ranked by the size of the tensor they write; see `forge/transforms/fuse_ops.py`);
- `layout` on/off;
- affinity knobs of `lower-aten-to-npuir`: `cpu-ops=gather` (embeddings on the host) and
  `pin-final-norm`.

`search_space()` has 45 of them: 9 aten-level variants (the default, layout off, no fusion,
fuse-attention off, the GELU / gated-MLP / RMSNorm families off one at a time, alpha 0.25 and 0.5)
under 5 affinity settings (npu-first; gather, final norm, or both on the cpu; all on the cpu).

How 45 configurations are scored without 45 pipelines (each ≈ 65 ms on GPT-2 12L):

1. Layers: a model that repeats ≥ 3 identical layers (`forge.analysis.repeated_layers`) is scored
   on its 1- and 2-layer cuts and extrapolated, cost(L) = cost(1) + (L-1) * (cost(2) - cost(1)):
   every pass and the lowering treat each layer alike and the cost model is additive, so this is
   the full model's score (work shared by all layers, e.g. merged by cse, stays counted once).
   alpha ranks distinct site sizes, not sites, so the cuts fuse what the full model fuses.
2. `dce,cse,fold` run once per cut, `fuse-attention` once; every variant starts from a clone.
3. Variants that cannot differ are scored once: a fusion family that never fires in the all-on
   run changes nothing when it is disabled, and variants whose optimized aten modules are
   structurally identical (`_fingerprint`) share one lowering.
4. Affinity knobs are not re-lowered: the cost model is additive over ops and over cross-device
   edges (`forge.driver.cost_model`), so one npu-first lowering gives a `CostTable` with every op
   costed on both devices, and each affinity setting re-derives the devices with the same
   `AffinityPolicy` rules the lowering uses (kind and types of each npuir op; the final norm is
   the last norm op and the ops lowered with it) and re-sums.

So the tuner's score of a configuration is, by construction, the cost model's score of that
configuration compiled for real on the whole model (`score_compiled`); `tests/test_autotune.py`
checks the equality on GPT-2, Llama and BERT (4, 4 and 3 layers, and 2 without extrapolation).
"""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from forge.analysis.repeated_layers import find_layers, truncate
from forge.driver.compilation import Compilation
from forge.driver.compiler import compile as forge_compile
from forge.driver.cost_model import CostReport, CostTable, estimate
from forge.driver.options import CompileOptions
from forge.driver.registry import get_all_passes, make_context
from forge.driver.stages import IMPORT_MODULE, LOWER, OPTIMIZE
from forge.pass_runner import PipelineRunner
from forge.pipelines import CACHED_ATTENTION, CLEANUP, LOWER_ATEN, SCHEDULE_DEVICES, SIMPLIFY
from forge.transforms.fuse_ops import FuseOpsPass
from forge.weights import WeightStore, weights_of
from lowering.affinity import NORM_KINDS, AffinityPolicy

PREFIX = ",".join(SIMPLIFY)
FUSE_OPS_FAMILIES = tuple(FuseOpsPass.families())
"""`FuseOpsPass` options that switch a fusion family on or off (declared there)."""
ALPHAS = (0.25, 0.5)


@dataclass(frozen=True)
class TuningConfig:
    attention: bool = True
    fuse_ops: frozenset[str] = frozenset(FUSE_OPS_FAMILIES)
    alpha: float = 1.0
    layout: bool = True
    cpu_gather: bool = False
    pin_final_norm: bool = False
    cpu_only: bool = False
    """The reference placement (`policy=cpu-only`): is the NPU worth it at all?"""

    def aten_key(self) -> tuple[Any, ...]:
        """What decides the optimized aten module (everything but the affinity knobs)."""
        return (self.attention, self.fuse_ops, self.alpha, self.layout)

    def fuse_ops_spec(self) -> str:
        options = [f"{f.replace('_', '-')}=false" for f in FUSE_OPS_FAMILIES if f not in self.fuse_ops]
        if self.alpha != 1.0:
            options.append(f"aggressiveness={self.alpha}")
        return "fuse-ops" + ("{" + " ".join(options) + "}" if options else "")

    def aten_passes(self) -> str:
        """The passes after the shared prefix."""
        return ("fuse-attention," if self.attention else "") + self.after_attention()

    def after_attention(self) -> str:
        """The passes after the prefix and `fuse-attention` (when on)."""
        passes = [self.fuse_ops_spec()]
        if self.layout:
            passes.append("layout")
        return ",".join([*passes, *CLEANUP])

    def pipeline(self) -> str:
        """The optimization pipeline (`forge.compile(pipeline=...)`)."""
        return f"{PREFIX},{self.aten_passes()}"

    def lowering_spec(self) -> str:
        options = (["policy=cpu-only"] if self.cpu_only else []) + (["cpu-ops=gather"] if self.cpu_gather else []) \
            + (["pin-final-norm=true"] if self.pin_final_norm else [])
        return LOWER_ATEN + ("{" + " ".join(options) + "}" if options else "")

    def lowering(self) -> str:
        """The lowering pipeline (`forge.compile(lowering=...)`)."""
        return ",".join([self.lowering_spec(), *CACHED_ATTENTION, *SCHEDULE_DEVICES])

    def policy(self) -> AffinityPolicy:
        return AffinityPolicy.of("cpu-only" if self.cpu_only else "npu-first", ("gather",) if self.cpu_gather else (),
                                 self.pin_final_norm)

    def label(self) -> str:
        parts = []
        if not self.attention:
            parts.append("no fuse-attention")
        off = [f for f in FUSE_OPS_FAMILIES if f not in self.fuse_ops]
        if len(off) == len(FUSE_OPS_FAMILIES):
            parts.append("no fuse-ops")
        elif off:
            parts.append("fuse-ops without " + "/".join(off))
        if self.alpha != 1.0:
            parts.append(f"alpha={self.alpha:g}")
        if not self.layout:
            parts.append("no layout")
        if self.cpu_gather:
            parts.append("gather on cpu")
        if self.pin_final_norm:
            parts.append("final norm on cpu")
        if self.cpu_only:
            parts.append("everything on cpu")
        return ", ".join(parts) or "default"

    def as_dict(self) -> dict[str, Any]:
        return {"attention": self.attention, "fuse_ops": sorted(self.fuse_ops), "alpha": self.alpha,
                "layout": self.layout, "cpu_gather": self.cpu_gather, "pin_final_norm": self.pin_final_norm,
                "cpu_only": self.cpu_only,
                "pipeline": self.pipeline(), "lowering": self.lowering()}


DEFAULT = TuningConfig()
NO_FUSION = TuningConfig(attention=False, fuse_ops=frozenset(), alpha=0.0)


SEARCHED_FAMILIES = FuseOpsPass.searched_families()
"""Families switched off one at a time (`FuseOpsPass` says which, and why not the others)."""


def aten_variants() -> list[TuningConfig]:
    """9: the default, layout off, no fusion (alpha = 0), fuse-attention off, each searched family
    off, alpha 0.25 and 0.5 (alpha = 1 is the default)."""
    variants = [DEFAULT, replace(DEFAULT, layout=False), NO_FUSION, replace(DEFAULT, attention=False)]
    variants += [replace(DEFAULT, fuse_ops=DEFAULT.fuse_ops - {f}) for f in SEARCHED_FAMILIES]
    variants += [replace(DEFAULT, alpha=a) for a in ALPHAS]
    return variants


AFFINITY_SETTINGS = (
    {},
    {"cpu_gather": True},
    {"pin_final_norm": True},
    {"cpu_gather": True, "pin_final_norm": True},
    {"cpu_only": True},
)


def search_space() -> list[TuningConfig]:
    """45 configurations: 9 aten-level variants x 5 affinity settings, the default first."""
    return [replace(v, **a) for v in aten_variants() for a in AFFINITY_SETTINGS]


# --- scoring ---------------------------------------------------------------------------------------


def final_norm_rows(table: CostTable) -> set[int]:
    """Rows lowered from the function's last norm: the last norm op and the contiguous ops
    before it that the lowering emitted for the same aten op (same location object, e.g. the
    residual add of `add_layer_norm`). Needs the table of an unscheduled lowering."""
    rows = table.rows
    last = next((i for i in range(len(rows) - 1, -1, -1) if rows[i].kind in NORM_KINDS), None)
    if last is None:
        return set()
    loc = rows[last].op.location
    pinned = {last}
    i = last - 1
    while i >= 0 and rows[i].op.location is loc and any(p in pinned for p in _users_of(rows, i, last)):
        pinned.add(i)
        i -= 1
    return pinned


def _users_of(rows, i: int, upto: int) -> list[int]:
    return [j for j in range(i + 1, upto + 1) if i in rows[j].producers]


def placement(table: CostTable, policy: AffinityPolicy) -> list[str]:
    """The device of every row under `policy`, as `lower-aten-to-npuir` would choose it (pins by
    npuir kind only: aten-name pins are not visible in npuir)."""
    pinned = final_norm_rows(table) if policy.pin_final_norm else set()
    if policy.mode != "npu-first":
        return [policy.device(row.kind, [o.type for o in row.op.operands], row.op.results[0].type,
                              pinned=i in pinned).value for i, row in enumerate(table.rows)]
    capable = _npu_capable(table)
    return ["npu" if ok and i not in pinned and row.kind not in policy.cpu_ops else "cpu"
            for i, (row, ok) in enumerate(zip(table.rows, capable, strict=True))]


_CAPABLE: weakref.WeakKeyDictionary[CostTable, list[bool]] = weakref.WeakKeyDictionary()


def _npu_capable(table: CostTable) -> list[bool]:
    """Whether the NPU can run each row (`AffinityPolicy.npu_reason`), computed once per table."""
    flags = _CAPABLE.get(table)
    if flags is None:
        probe = AffinityPolicy()
        flags = _CAPABLE[table] = [
            probe.npu_reason(row.kind, [o.type for o in row.op.operands], row.op.results[0].type) is None
            for row in table.rows]
    return flags


def _fingerprint(module: ModuleOp) -> tuple[Any, ...]:
    """The structure of a module: op names, properties, result types and operand wiring."""
    number: dict[Any, int] = {}
    items = []
    for op in module.walk():
        for r in op.results:
            number[r] = len(number)
        items.append((op.name, tuple(op.properties.items()), tuple(r.type for r in op.results),
                      tuple(number.get(o, -1) for o in op.operands)))
    return tuple(items)


def _fired(records) -> dict[str, int]:
    fired: dict[str, int] = {}
    for r in records:
        for k, v in r.fired.items():
            fired[k] = fired.get(k, 0) + v
    return fired


FAMILY_PATTERNS = {family: tuple(p.__name__ for p in patterns) for family, patterns in FuseOpsPass.families().items()}
"""The pattern class names (as fire counts name them) each fuse-ops family enables."""


@dataclass
class Scored:
    config: TuningConfig
    cost: CostReport

    @property
    def total_us(self) -> float:
        return self.cost.total_us


@dataclass
class TuningReport:
    scored: list[Scored]
    default: Scored
    best: Scored
    elapsed_ms: float
    prefix_ms: float
    lowerings: int
    """Optimized aten modules actually lowered (the rest were shared)."""
    pipelines: int
    """Aten pass pipelines actually run."""
    verification: dict[str, Any] = field(default_factory=dict)
    layers: int | None = None
    """The layer count when scored on the 1- and 2-layer cuts and extrapolated (else None)."""
    cpu_ms: float = 0.0
    """Process CPU time of the run (what the wall time would be on an idle machine)."""

    @property
    def gain(self) -> float:
        """cost(default) / cost(chosen): > 1 when the chosen configuration is better."""
        return self.default.total_us / self.best.total_us

    def top(self, n: int = 5) -> list[Scored]:
        return sorted(self.scored, key=lambda s: s.total_us)[:n]

    def as_dict(self) -> dict[str, Any]:
        return {
            "configs": len(self.scored),
            "elapsed_ms": round(self.elapsed_ms, 1),
            "cpu_ms": round(self.cpu_ms, 1),
            "prefix_ms": round(self.prefix_ms, 1),
            "pipelines_run": self.pipelines,
            "lowerings": self.lowerings,
            "extrapolated_from_layers": self.layers,
            "default_us": round(self.default.total_us, 1),
            "chosen": {"label": self.best.config.label(), **self.best.config.as_dict()},
            "chosen_us": round(self.best.total_us, 1),
            "gain_over_default": round(self.gain, 4),
            "top": [{"label": s.config.label(), "us": round(s.total_us, 1)} for s in self.top()],
            **({"verification": self.verification} if self.verification else {}),
        }

    def format(self) -> str:
        lines = [
            f"autotune: {len(self.scored)} configurations scored by the cost model in {self.elapsed_ms:.0f} ms "
            f"(CPU {self.cpu_ms:.0f} ms; {self.pipelines} pass pipelines, {self.lowerings} lowerings"
            + (f" of the 1- and 2-layer cuts, extrapolated to {self.layers} layers" if self.layers else "")
            + f"; shared dce/cse/fold {self.prefix_ms:.0f} ms)",
            f"  default: {self.default.total_us:10.1f} µs",
            f"  chosen:  {self.best.total_us:10.1f} µs  ({self.best.config.label()}); "
            f"gain over default x{self.gain:.3f}",
            "  top configurations:",
        ]
        lines += [f"    {s.total_us:10.1f} µs  {s.config.label()}" for s in self.top()]
        return "\n".join(lines)


def tune(
    module: ModuleOp, weights: WeightStore | None = None, configs: Sequence[TuningConfig] | None = None
) -> TuningReport:
    """Score `configs` (default `search_space()`) on an imported aten module (left unchanged)."""
    start, cpu_start = time.perf_counter(), time.process_time()
    configs = list(configs) if configs is not None else search_space()
    store = weights if weights is not None else weights_of(module)
    run = _Runner(store)
    bases, layers = _bases(module)
    for base in bases:
        run(base, PREFIX)
    starts = {False: bases, True: None}  # by attention on/off: fuse-attention runs once
    prefix_ms = (time.perf_counter() - start) * 1e3

    all_on = TuningConfig()
    fired = None
    tables: dict[tuple[Any, ...], tuple[CostTable, ...]] = {}
    by_fingerprint: dict[tuple[Any, ...], tuple[CostTable, ...]] = {}
    pipelines = 0
    scored = []
    for config in sorted(configs, key=lambda c: c.aten_key() != all_on.aten_key()):
        key = _effective(config, fired).aten_key()
        cut_tables = tables.get(key)
        if cut_tables is None:
            if config.attention and starts[True] is None:
                starts[True] = [base.clone() for base in bases]
                for start_module in starts[True]:
                    run(start_module, "fuse-attention")
            variants = [base.clone() for base in starts[config.attention]]
            records = [run(variant, config.after_attention()) for variant in variants]
            pipelines += 1
            if config.aten_key() == all_on.aten_key():
                fired = _fired(records[-1])
            fingerprint = tuple(_fingerprint(variant) for variant in variants)
            cut_tables = by_fingerprint.get(fingerprint)
            if cut_tables is None:
                for variant in variants:
                    run(variant, LOWER_ATEN)
                cut_tables = by_fingerprint[fingerprint] = tuple(CostTable(v) for v in variants)
            tables[key] = cut_tables
        policy = config.policy()
        costs = [table.score(placement(table, policy)) for table in cut_tables]
        scored.append(Scored(config, costs[0] if layers is None else extrapolate(costs[0], costs[1], layers)))
    order = {c: i for i, c in enumerate(configs)}
    scored.sort(key=lambda s: order[s.config])
    default = next((s for s in scored if s.config == DEFAULT), scored[0])
    best = min(scored, key=lambda s: (s.total_us, order[s.config]))
    elapsed = (time.perf_counter() - start) * 1e3
    return TuningReport(scored, default, best, elapsed, prefix_ms, len(by_fingerprint), pipelines,
                        layers=layers, cpu_ms=(time.process_time() - cpu_start) * 1e3)


class _Runner:
    """Runs pipeline specs with one context and each spec parsed once (parsing a spec looks up
    every registered pass and plug-in: ~25 ms, as much as the passes on a 2-layer cut): the search's
    inner loop over hundreds of pipeline suffixes on layer cuts, not a compile (`score_compiled` is)."""

    def __init__(self, weights: WeightStore | None) -> None:
        self.weights = weights
        self.ctx = make_context()
        self.available = get_all_passes()
        self.parsed: dict[str, list] = {}

    def __call__(self, module: ModuleOp, spec: str):

        if spec not in self.parsed:
            self.parsed[spec] = list(PassPipeline.parse_spec(self.available, spec).passes)
        passes = self.parsed[spec]
        runner = PipelineRunner(self.ctx, passes, names=[str(p.pipeline_pass_spec()) for p in passes])
        return runner.run(module, self.weights)


def _bases(module: ModuleOp) -> tuple[list[ModuleOp], int | None]:
    """The modules to score on: the 1- and 2-layer cuts and the layer count when the model repeats
    at least 3 identical layers, else the whole module and None."""
    found = find_layers(module)
    if found is None or not found.identical or found.count < 3:
        return [module.clone()], None
    two = module.clone()
    truncate(two, 2)
    one = two.clone()
    truncate(one, 1)
    return [one, two], found.count


def extrapolate(one: CostReport, two: CostReport, layers: int) -> CostReport:
    """cost(L layers) = cost(1) + (L - 1) * (cost(2) - cost(1)), part by part."""
    k = layers - 1

    def lin(a, b):
        return a + k * (b - a)

    out = CostReport()
    for d, parts in out.by_device.items():
        for part in parts:
            parts[part] = lin(one.by_device[d][part], two.by_device[d][part])
        out.dispatches[d] = lin(one.dispatches[d], two.dispatches[d])
    out.transfer_us = lin(one.transfer_us, two.transfer_us)
    out.transfers = lin(one.transfers, two.transfers)
    out.bytes_moved = lin(one.bytes_moved, two.bytes_moved)
    out.flops = lin(one.flops, two.flops)
    return out


def _effective(config: TuningConfig, fired: dict[str, int] | None) -> TuningConfig:
    """`config` with the families that never fired in the all-on run switched on: disabling a
    pattern that matches nothing changes nothing. Only when fuse-ops sees the same module as in
    that run (fuse-attention on) and takes every match (alpha = 1: with alpha < 1 the enabled
    patterns' roots decide the ranking of sites)."""
    if fired is None or not config.attention or config.alpha != 1.0:
        return config
    idle = {f for f, patterns in FAMILY_PATTERNS.items() if not any(fired.get(p, 0) for p in patterns)}
    return replace(config, fuse_ops=config.fuse_ops | idle)


def score_compiled(module: ModuleOp, config: TuningConfig, weights: WeightStore | None = None) -> CostReport:
    """The cost model's score of `config` compiled for real: `compile`'s optimization and lowering stages
    with the configuration's pipelines, on a clone of the imported `module`."""
    store = weights if weights is not None else weights_of(module)
    options = CompileOptions(pipeline=config.pipeline(), lowering=config.lowering())
    return estimate(Compilation.of_module(module.clone(), store, options).run((OPTIMIZE, LOWER)).module)



# --- compile with the chosen configuration ---------------------------------------------------------

PARITY_MAX_ABS = 2.1e-5
"""Parity bound of the backend tests (fp32, the reference compiler's published fidelity)."""
PARITY_MAX_KL = 8.4e-9


def tune_model(model, example_args) -> TuningReport:
    """Import `model` once and tune on it (GC paused, as `forge.compile` does)."""

    imported = Compilation(CompileOptions(), model=model.eval(), args=tuple(example_args)).run((IMPORT_MODULE,))
    imported = imported.imported
    was_enabled = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        return tune(imported.module, imported.weights)
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def compile_tuned(model, example_args, **compile_options):
    """Tune, compile `model` with the chosen configuration and verify it against eager PyTorch.

    Returns (CompiledModel, TuningReport); the tuner's report is also `compiled.report["autotune"]`,
    with `verification` = parity and whether it is within the backend's bounds.
    """

    report = tune_model(model, example_args)
    chosen = report.best.config
    compiled = forge_compile(model, example_args, pipeline=chosen.pipeline(), lowering=chosen.lowering(),
                             check=True, **compile_options)
    parity = compiled.report["parity"]
    report.verification = {**parity, "ok": parity["max_abs"] <= PARITY_MAX_ABS and parity["kl"] <= PARITY_MAX_KL}
    compiled.report["autotune"] = report.as_dict()
    return compiled, report
