"""`forge`: compile and run zoo models, printing what every stage and pass did.

forge compile gpt2 --layers 2 --attn eager --report r.json --check
forge run llama --small --iterations 20
forge compile resnet --small --check      # every zoo family: text, vision, audio
forge models                              # name, kind, attention implementations, inputs
forge generate gpt2 --prompt-len 128 --new-tokens 64   # KV-cache generation (forge/cli/generate.py)
forge lit-init my-tests/                  # a lit.cfg for tests of your own (forge/cli/lit_init.py)
forge bisect vit --small                  # the first op that diverges from PyTorch (forge/cli/bisect_cmd.py)
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from forge.cli.bisect_cmd import add_bisect_parser, cmd_bisect
from forge.cli.generate import add_generate_parser, cmd_generate
from forge.cli.import_cmd import IR_STAGES, add_import_parser, cmd_emit_stage, cmd_import
from forge.cli.lit_init import add_lit_init_parser, cmd_lit_init
from forge.driver.compile_errors import CompileError
from forge.torch_support import UnsupportedTorchError, check_torch

EMIT_STAGES = ("aten", "npuir", "buffer", "nnfactory-py")


def _parser() -> argparse.ArgumentParser:
    # lazy imports, here and below: start-up cost; `forge --help` stays fast
    from forge.models import ATTN_IMPLS, NO_ATTENTION, ZOO  # lazy: start-up cost
    from forge.pipelines import DEFAULT_PIPELINE  # lazy: start-up cost

    parser = argparse.ArgumentParser(prog="forge", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command, help_text in (
        ("compile", "compile a zoo model and print the per-stage report"),
        ("run", "compile a zoo model, run it and print latency (and parity with --check)"),
    ):
        p = sub.add_parser(command, help=help_text)
        p.add_argument(
            "model",
            help=f"zoo model ({', '.join(ZOO)}) or a checkpoint folder (config.json + *.safetensors, as "
            "save_pretrained writes; compiled on the meta device with compile_meta)",
        )
        p.add_argument("--layers", type=int, help="number of layers (default: the zoo default)")
        p.add_argument(
            "--attn",
            choices=(*ATTN_IMPLS, NO_ATTENTION),
            help="attention implementation (default: eager where the model offers it; see `forge models`)",
        )
        p.add_argument(
            "--seq-len",
            type=int,
            default=128,
            help="sequence length (static; token inputs only: image size and audio length are fixed per variant)",
        )
        p.add_argument("--small", action="store_true", help="the small test-size variant")
        p.add_argument("--seed", type=int, default=0, help="seed for weights and inputs")
        p.add_argument("--device", default="CPU", help="OpenVINO device string (CPU, NPU, ...)")
        p.add_argument("--runtime", default="openvino", help="a registered runtime: openvino (default), nnfactory")
        p.add_argument("--pipeline", help=f"comma-separated pass pipeline (default: {','.join(DEFAULT_PIPELINE)})")
        p.add_argument("--disable", action="append", default=[], metavar="PASS", help="skip a pass (repeatable)")
        p.add_argument(
            "--load-pass-plugin",
            action="append",
            default=[],
            metavar="FILE",
            help="import the Python file FILE, whose passes register with forge.driver.registry.register_pass, so that "
            "--pipeline can name them (repeatable; forge-opt's flag)",
        )
        p.add_argument("--report", type=Path, metavar="FILE", help="write the report as JSON")
        p.add_argument("--check", action="store_true", help="measure parity against eager PyTorch")
        p.add_argument(
            "--precision",
            choices=("f32", "bf16", "f16"),
            default="f32",
            help="element type the runtime computes in (default f32; forge.precision)",
        )
        p.add_argument(
            "--weights",
            choices=("int8", "int4", "none"),
            default="none",
            help="weight-only quantization of matmul weights (default none: f32 weights)",
        )
        p.add_argument(
            "--activations",
            choices=("int8", "none"),
            default="none",
            help="with --weights: quantize those matmuls' inputs to int8 at run time where they have several "
            "rows (OpenVINO's dynamic quantization; default none)",
        )
        p.add_argument(
            "--accuracy",
            type=int,
            metavar="N",
            help="report accuracy against eager f32 on N seeded inputs (default: 100 with a reduced "
            "--precision/--weights, else off; 0: off)",
        )
        p.add_argument("--quiet", action="store_true", help="no progress display")
        p.add_argument(
            "--no-reuse-blocks",
            action="store_true",
            help="trace every repeated block (layer) instead of one per distinct block (forge/frontend/blocks.py)",
        )
        if command == "compile":
            p.add_argument("--emit", choices=EMIT_STAGES, help="write the IR of a stage (or the NNFactory program)")
            p.add_argument(
                "-o", "--output", type=Path, help="where --emit writes (default: stdout; a file for nnfactory-py)"
            )
            p.add_argument("--save", type=Path, metavar="DIR", help="save the compiled model (forge.load reads it)")
            p.add_argument(
                "--autotune",
                action="store_true",
                help="choose the pass configuration by the cost model (forge.driver.autotune), then verify parity",
            )
            p.add_argument(
                "--plot-memory",
                type=Path,
                metavar="FILE",
                help="draw the memory plan (buffers x schedule steps, live ranges, device segments) to FILE (.png)",
            )
        else:
            p.add_argument("--iterations", type=int, default=50, help="timed runs after warm-up")
    sub.add_parser("models", help="list the zoo models")
    add_import_parser(sub)
    add_generate_parser(sub)
    add_lit_init_parser(sub)
    add_bisect_parser(sub)
    return parser


def _progress(quiet: bool):
    """Stage names on stderr as they start, with the time since the compile began."""
    if quiet:
        return None
    start = time.perf_counter()
    step = [0]

    def show(stage: str) -> None:
        step[0] += 1
        print(f"[{time.perf_counter() - start:6.2f}s] {stage} ...", file=sys.stderr, flush=True)

    return show


def _build(args: argparse.Namespace):
    from forge.models import build_model, default_attn, example_inputs  # lazy: start-up cost

    if args.attn is None:
        args.attn = default_attn(args.model, "eager")
    model = build_model(args.model, layers=args.layers, attn=args.attn, small=args.small, seed=args.seed)
    inputs = example_inputs(args.model, seq_len=args.seq_len, small=args.small, seed=args.seed)
    return model, inputs


def _compile(args: argparse.Namespace, *, keep_stages: bool = False):
    import forge.driver.compiler as compiler  # lazy: start-up cost (torch)

    model, inputs = _build(args)
    label = (
        f"{args.model}{'-small' if args.small else ''}"
        + (f" {args.layers}L" if args.layers else "")
        + f" ({args.attn})"
    )
    if getattr(args, "autotune", False):
        return model, inputs, _compile_tuned(args, model, inputs, label)
    compiled = compiler.compile(
        model,
        inputs,
        pipeline=args.pipeline,
        disable=args.disable,
        device=args.device,
        runtime=args.runtime,
        check=args.check,
        precision=args.precision,
        weights=None if args.weights == "none" else args.weights,
        activations=None if args.activations == "none" else args.activations,
        accuracy=_accuracy_sequences(args),
        name=label,
        keep_stages=keep_stages,
        progress=_progress(args.quiet),
        reuse_blocks=not args.no_reuse_blocks,
    )
    return model, inputs, compiled


def _accuracy_sequences(args: argparse.Namespace) -> int | None:
    """--accuracy N; by default the fixed 100 sequences when a reduced mode is asked for."""
    if args.accuracy is not None:
        if args.accuracy < 0:
            raise CompileError(f"--accuracy: expected a number of sequences >= 0, got {args.accuracy}")
        return args.accuracy or None
    return 100 if (args.precision != "f32" or args.weights != "none") else None


def _compile_tuned(args: argparse.Namespace, model, inputs, label: str):
    """--autotune: the tuner picks pipeline and lowering options; parity is always checked."""
    from forge.driver.autotune import compile_tuned  # lazy: start-up cost

    if args.pipeline or args.disable:
        raise CompileError("--autotune chooses the pipeline itself; drop --pipeline/--disable")
    if args.precision != "f32" or args.weights != "none" or args.activations != "none":
        raise CompileError("--autotune tunes f32 compiles only; drop --precision/--weights/--activations")
    compiled, _ = compile_tuned(
        model,
        inputs,
        device=args.device,
        runtime=args.runtime,
        name=label,
        keep_stages=args.emit in ("aten", "npuir", "buffer"),
        progress=_progress(args.quiet),
    )
    return compiled


def _plan_ratio(report: dict) -> str:
    """`, planned 1.045x it`: the plan against its lower bound (empty when the bound is 0)."""
    bound = report["peak_bytes_lower_bound"]
    return f", planned {report['peak_bytes_planned'] / bound:.3f}x it" if bound else ""


def format_report(report: dict[str, Any]) -> str:
    """The report as the tables `forge compile` prints."""
    lines = [f"Forge report: {report['model']} on {report['runtime']}/{report['device']}", ""]
    lines += format_inputs(report)
    lines.append(f"{'stage':<28}{'ms':>10}")
    for key, label in (
        ("export_ms", "torch.export"),
        ("decompose_ms", "functionalize, decompose"),
        ("import_ms", "import (aten)"),
        ("passes_ms", "optimization passes"),
        ("lower_ms", "lowering (npuir, buffer)"),
        ("emit_ms", "emit NNFactory"),
        ("device_compile_ms", "device compile"),
        ("check_ms", "parity check"),
        ("other_ms", "other (imports, set-up)"),
        ("total_ms", "total"),
    ):
        if key in report and (key != "check_ms" or report[key]):
            lines.append(f"{label:<28}{report[key]:>10.1f}")
    lines += ["", f"{'pass':<28}{'ms':>8}{'ops before':>12}{'ops after':>11}  top patterns"]
    for record in report["passes"]:
        top = ", ".join(f"{k} x{v}" for k, v in sorted(record["fired"].items(), key=lambda kv: -kv[1])[:3])
        lines.append(
            f"{record['name']:<28}{record['ms']:>8.2f}{record['ops_before']:>12}{record['ops_after']:>11}  {top}"
        )
    reduction = 1 - report["ops_optimized"] / report["ops_imported"] if report["ops_imported"] else 0.0
    lines += [
        "",
        f"ops imported {report['ops_imported']} -> optimized {report['ops_optimized']} ({reduction:.1%} fewer); "
        f"fused attention blocks {report['fused_attention']}",
        f"virtual registers {report['vregs']} -> physical buffers {report['buffers']}; "
        f"peak bytes {report['peak_bytes_naive']:,} naive -> {report['peak_bytes_planned']:,} planned "
        f"(lower bound {report['peak_bytes_lower_bound']:,}{_plan_ratio(report)})",
        f"device transitions {report['transitions_before']} -> {report['transitions_after']} after scheduling; "
        + format_placement(report),
    ]
    blocks = report.get("blocks")
    if blocks and blocks.get("instances"):
        lines.append(
            f"repeated blocks: {blocks['instances']} calls, {blocks['distinct']} distinct traced, "
            f"{blocks['reused']} reused"
        )
    if "parity" in report:
        lines += format_parity(report["parity"])
    if "runtime_config" in report:
        lines.append(format_precision(report))
    if "cpu_fallback" in report:
        lines.append(format_cpu_fallback(report["cpu_fallback"]))
    return "\n".join(lines)


def format_placement(report: dict[str, Any]) -> str:
    """What ran where, as it ran: ``1 compiled segment (npu-affinity ops) run by openvino on CPU, 3 ops by torch
    on the host CPU``. The npu-affinity ops run on the device asked for (`--device`), which is not an NPU on
    a CPU-only run; the CPU ops (fallbacks and ops the scheduler kept on the host) run in torch."""
    n = report["segments"]
    line = f"{n} compiled segment{'s' if n != 1 else ''} (npu-affinity ops) run by {report['runtime']}"
    line += f" on {report['device']}"
    if "cpu_ops" in report:
        line += f", {report['cpu_ops']} op{'s' if report['cpu_ops'] != 1 else ''} by torch on the host CPU"
    return line


def format_precision(report: dict[str, Any]) -> str:
    """``precision bf16, weights int8; runtime settings: ...`` and the accuracy line when measured."""
    cfg = report["runtime_config"]
    settings = cfg.get("effective") or cfg.get("requested") or {}
    line = f"precision {report.get('precision', 'f32')}, weights {report.get('weights', 'f32')}; runtime settings: " + (
        ", ".join(f"{k}={v}" for k, v in settings.items()) or "defaults"
    )
    if cfg.get("substitution"):
        line += f"\nnote: {cfg['substitution']}"
    acc = report.get("accuracy")
    if acc:
        b = acc["bounds"]
        line += (
            f"\naccuracy vs eager f32 ({acc['sequences']} sequences, {acc['mode']}): max |diff| "
            f"{acc['max_abs']:.3e}, mean KL {acc['kl_mean']:.3e}, top-1 {acc['top1']:.2%} "
            f"(bounds {b['max_abs']:g} / {b['kl_mean']:g} / {b['top1']:.0%}: "
            f"{'within' if acc['within_bounds'] else 'OUTSIDE'})"
        )
    return line


def format_inputs(report: dict[str, Any]) -> list[str]:
    """What the model was compiled for: each input (name, dtype, shape, positional or keyword, or the
    constant torch.export specialized), the output structure, the cast policy and the notes."""
    if "inputs" not in report:
        return []
    lines = ["inputs:"]
    for entry in report["inputs"]:
        what = (
            f"{entry['dtype'].removeprefix('torch.')} {entry['shape']}"
            if "dtype" in entry
            else f"= {entry.get('value')!r} (constant)"
        )
        added = " (added by the compile: callers may leave it out)" if entry.get("added") else ""
        lines.append(f"  {entry['name']:<26}{what}  {entry['kind']}{added}")
    lines.append(f"outputs: {report.get('outputs', '?')}")
    cast = report.get("cast_policy")
    lines.append(
        f"cast policy: {cast['model_dtype']} model compiled in {cast['compute_dtype']} ({cast['weights_cast']} weights"
        + (f", inputs {', '.join(cast['inputs_cast'])}" if cast["inputs_cast"] else "")
        + f" cast up; float outputs cast back to {cast['outputs_cast_to']})"
        if cast
        else "cast policy: none (weights and inputs compiled in their own dtypes)"
    )
    lines += [f"note: {note}" for note in report.get("notes", [])]
    return [*lines, ""]


def format_cpu_fallback(fallback: dict[str, int]) -> str:
    """``CPU fallback: 3 ops (aten.roll x2, aten.topk x1)`` or ``CPU fallback: none``: the ATen ops
    with no NPU lowering, which run as `npuir.aten` steps on the CPU (most frequent first)."""
    if not fallback:
        return "CPU fallback: none"
    total = sum(fallback.values())
    ranked = sorted(fallback.items(), key=lambda kv: (-kv[1], kv[0]))
    return f"CPU fallback: {total} op{'s' if total != 1 else ''} (" + ", ".join(f"{k} x{v}" for k, v in ranked) + ")"


def format_models() -> str:
    """`forge models`: one line per zoo model: name, kind, attention implementations, inputs."""
    from forge.models import ZOO, family  # lazy: start-up cost

    rows = [("model", "kind", "attention", "inputs", "output")]
    for name in ZOO:
        f = family(name)
        rows.append((name, f.kind, ",".join(f.attn_impls), ",".join(f.inputs), f.output))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1] for row in rows
    )


def _emit_stage(args: argparse.Namespace, compiled) -> None:
    if args.emit == "nnfactory-py":
        from backends.nnfactory.pyemit import emit_python  # lazy: start-up cost

        path = args.output or Path(f"{args.model}_nnfactory.py")
        written = emit_python(compiled.buffer_module, compiled.weights, path, runtime=args.runtime)
        print(f"wrote {written}", file=sys.stderr)
        return
    text = compiled.stages[args.emit]
    if args.output:
        args.output.write_text(text)
    else:
        print(text)


def format_parity(parity: dict[str, Any]) -> list[str]:
    """The parity line; a mismatch adds the first divergent op and the stages the bisection checked."""
    line = f"parity vs eager: max |diff| {parity['max_abs']:.3e}, mean KL {parity['kl']:.3e}"
    if parity.get("ok", True):
        return [line]
    line += f" -- MISMATCH: beyond {parity['tolerance']:.3e} (output scale {parity['scale']:.3g})"
    return [line, *parity.get("bisect", "").splitlines()]


def _failed_check(report: dict[str, Any]) -> int:
    """1 (after saying so) when --check found a mismatch."""
    if report.get("parity", {}).get("ok", True):
        return 0
    print(
        "forge: error: the compiled model does not match eager PyTorch (--check); see the first divergent op above",
        file=sys.stderr,
    )
    return 1


def _cmd_compile(args: argparse.Namespace) -> int:
    from forge.cli.checkpoint import checkpoint_folder  # lazy: start-up cost

    folder = checkpoint_folder(args.model)
    if folder is not None:
        return _cmd_compile_checkpoint(args, folder)
    _, _, compiled = _compile(args, keep_stages=args.emit in ("aten", "npuir", "buffer"))
    if args.emit:
        _emit_stage(args, compiled)
    print(format_report(compiled.report), file=sys.stderr if args.emit and not args.output else sys.stdout)
    if "autotune" in compiled.report:
        _print_autotune(compiled.report["autotune"], file=sys.stderr if args.emit and not args.output else sys.stdout)
        if not compiled.report["autotune"]["verification"]["ok"]:
            print(
                "forge: error: the tuned configuration does not match eager PyTorch within the parity bounds",
                file=sys.stderr,
            )
            return 1
    if args.report:
        args.report.write_text(json.dumps(compiled.report, indent=2))
    if args.save:
        compiled.save(args.save)
    if args.plot_memory and (code := _plot_memory(args.plot_memory, compiled)):
        return code
    return _failed_check(compiled.report)


def _cmd_compile_checkpoint(args: argparse.Namespace, folder: Path) -> int:
    """`forge compile FOLDER`: the model built from config.json on the meta device, compiled by compile_meta
    into --save (a temporary folder without it), then loaded (its weights memory-mapped from FOLDER)."""
    import tempfile

    import torch  # lazy: start-up cost

    import forge  # lazy: start-up cost
    from forge.cli.checkpoint import meta_model  # lazy: start-up cost
    from forge.driver.meta_compile import compile_meta  # lazy: start-up cost

    given = {
        "--emit": args.emit,
        "--autotune": args.autotune,
        "--check": args.check,
        "--plot-memory": args.plot_memory,
        "--precision": args.precision != "f32",
        "--weights": args.weights != "none",
        "--activations": args.activations != "none",
        "--accuracy": args.accuracy,
        "--layers": args.layers,
        "--attn": args.attn,
        "--small": args.small,
    }
    refused = [flag for flag, value in given.items() if value]
    if refused:
        raise CompileError(
            f"{folder}: a checkpoint folder is compiled by compile_meta (f32, its config as saved), which does not "
            f"take {', '.join(refused)}"
        )
    model = meta_model(folder)
    config = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    ids = torch.randint(0, config.vocab_size, (1, args.seq_len), generator=torch.Generator().manual_seed(args.seed))
    save_to = args.save or Path(tempfile.mkdtemp(prefix="forge-checkpoint-"))
    compile_meta(
        model,
        (ids,),
        save_to=save_to,
        weights_from=folder,
        pipeline=args.pipeline,
        disable=args.disable,
        device=args.device,
        runtime=args.runtime,
        name=f"{folder} ({type(model).__name__}, meta)",
        progress=_progress(args.quiet),
        reuse_blocks=not args.no_reuse_blocks,
    )
    start = time.perf_counter()
    compiled = forge.load(save_to)
    load_ms = (time.perf_counter() - start) * 1e3
    report = json.loads((Path(save_to) / "meta.json").read_text())["report"]
    report["load"] = {**compiled.report, "load_ms": round(load_ms, 3)}
    print(
        f"{report['model']}: {report['ops_imported']} ops imported, {report['ops_optimized']} after the passes; "
        f"plan {report['buffers']} buffers, peak {report['peak_bytes_planned']:,} B "
        f"(naive {report['peak_bytes_naive']:,} B)\n"
        f"weights: {report['weights_external']} tensors, {report['weight_bytes_external']:,} B, memory-mapped "
        f"from {folder} (never copied)\n"
        f"compile_meta {report['total_ms']:.0f} ms (export {report['export_ms']:.0f}, passes "
        f"{report['passes_ms']:.0f}, lower+plan {report['lower_ms']:.0f}); load {load_ms:.0f} ms (emit "
        f"{compiled.report['emit_ms']:.0f}, device compile {compiled.report['device_compile_ms']:.0f})\n"
        f"saved to {save_to} (forge.load reads it)"
    )
    if args.report:
        args.report.write_text(json.dumps(report, indent=2))
    return 0


def _plot_memory(path: Path, compiled) -> int:
    """--plot-memory: draw the buffer IR's plan (forge.driver.memory_plot)."""
    from forge.driver.memory_plot import PlotError, format_bytes, plot_memory  # lazy: start-up cost (matplotlib)

    try:
        plan = plot_memory(compiled.buffer_module, path, title=compiled.report["model"])
    except PlotError as err:
        print(f"forge: error: {err}", file=sys.stderr)
        return 1
    sys.stdout.flush()  # after the report, also when both streams go to one pipe
    print(
        f"wrote memory plot {path}: {len(plan.bars)} values in {len(plan.buffers)} buffers over "
        f"{plan.steps} steps, peak {format_bytes(plan.peak_bytes_planned)} planned "
        f"({format_bytes(plan.peak_bytes_naive)} naive)",
        file=sys.stderr,
    )
    return 0


def _print_autotune(tuned: dict[str, Any], file) -> None:
    print(
        f"\nautotune: {tuned['configs']} configurations scored by the cost model in {tuned['elapsed_ms']:.0f} ms "
        f"(CPU {tuned['cpu_ms']:.0f} ms; {tuned['pipelines_run']} pass pipelines, {tuned['lowerings']} lowerings"
        + (
            f" of the 1- and 2-layer cuts, extrapolated to {tuned['extrapolated_from_layers']} layers"
            if tuned["extrapolated_from_layers"]
            else ""
        )
        + ")\n"
        f"  chosen: {tuned['chosen']['label']}: {tuned['chosen_us']:.1f} µs vs default {tuned['default_us']:.1f} µs "
        f"(gain x{tuned['gain_over_default']:.3f})\n"
        f"  pipeline: {tuned['chosen']['pipeline']}\n  lowering: {tuned['chosen']['lowering']}\n  top:",
        file=file,
    )
    for row in tuned["top"]:
        print(f"    {row['us']:10.1f} µs  {row['label']}", file=file)
    v = tuned["verification"]
    print(
        f"  verified on the runtime: max |diff| {v['max_abs']:.3e}, mean KL {v['kl']:.3e} "
        f"({'ok' if v['ok'] else 'FAILED'})",
        file=file,
    )


def _cmd_run(args: argparse.Namespace) -> int:
    _, inputs, compiled = _compile(args)
    compiled(*inputs)  # warm-up
    times = []
    for _ in range(max(args.iterations, 1)):
        start = time.perf_counter()
        compiled(*inputs)
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    p50 = statistics.median(times)
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    print(format_report(compiled.report))
    print(f"\nlatency over {len(times)} runs: median {p50:.2f} ms, p99 {p99:.2f} ms, p99/p50 {p99 / p50:.2f}")
    compiled.report["latency_ms"] = {"median": p50, "p99": p99}
    if args.report:
        args.report.write_text(json.dumps(compiled.report, indent=2))
    return _failed_check(compiled.report)


def _load_plugins(paths: list[str]) -> int:
    """--load-pass-plugin: import each file (its passes register); 1 after the error of one that fails."""
    from forge.driver.plugins import PluginError, load_pass_plugin  # lazy: start-up cost

    for path in paths:
        try:
            load_pass_plugin(path)
        except PluginError as err:
            print(f"{err.location()}: error: {err.message}", file=sys.stderr)
            return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "models":
        print(format_models())
        return 0
    if args.command == "lit-init":
        return cmd_lit_init(args)
    try:
        check_torch()
    except UnsupportedTorchError as err:
        print(f"forge: error: {err}", file=sys.stderr)
        return 1
    if getattr(args, "load_pass_plugin", None) and (code := _load_plugins(args.load_pass_plugin)):
        return code
    from forge.frontend.fx_importer import FrontendError  # lazy: start-up cost (torch)

    try:
        if args.command == "import":
            return cmd_import(args)
        if args.command == "generate":
            return cmd_generate(args)
        if args.command == "bisect":
            return cmd_bisect(args)
        if args.command == "compile" and args.emit in IR_STAGES:
            return cmd_emit_stage(args)  # stops after that stage (forge/cli/import_cmd.py)
        return _cmd_compile(args) if args.command == "compile" else _cmd_run(args)
    except (CompileError, FrontendError, ValueError) as err:
        print(f"forge: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
