"""`forge-reduce`: shrink a module while a test command still finds it interesting (mlir-reduce, creduce).

    forge-reduce bug.mlir --test 'forge-opt -p my-pass --verify-semantics' -o small.mlir
    forge-reduce bug.mlir --test 'forge-opt {} -p my-pass' --expect-error "while running pass 'my-pass'"

Contract:
- a candidate is *interesting* when `CMD FILE` exits 0, FILE being the candidate's path: appended as
  the last argument, or put where `CMD` says `{}`. With `--expect-error REGEX` the test is inverted
  the way a failure is reproduced: interesting when `CMD` exits non-zero and its output (stdout and
  stderr) matches REGEX. The input itself must be interesting, or the reducer stops with exit 1.
- the reductions, each kept only when the candidate stays interesting, repeated until none helps:
  drop functions nobody calls (`func.call`), drop function results (the ops that only fed them die),
  remove ops in delta-debugging chunks (halves, quarters, ... single ops; a removed op's results
  used elsewhere become new arguments of its function), replace an op by one of its operands (the
  function's result type follows when it was returned), drop unused function arguments. After
  each change unused side-effect-free ops are erased. Weights: a candidate's companion
  `.safetensors` holds only the weights its `aten.weight` ops still name.
- a test command that is plain `forge-opt ARGS` runs in forks of one process that has imported
  forge-opt (`forge.cli.forked_runs`: the same program, without its start-up per candidate); any
  other command runs through the shell.
- the result is printed in custom syntax to `-o` (with its weights beside it) or stdout; a summary
  on stderr gives the steps tried and kept and the op count before and after.
- `reduce_command(...)` is the ready `forge-reduce` command forge-opt's reproducers print.
Exit codes: 0 reduced (or already minimal), 1 the input is not interesting or cannot be read, 2 usage.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.printer import Printer
from xdsl.rewriter import Rewriter
from xdsl.traits import IsTerminator

from forge.cli.forked_runs import ForkedForgeOpt, run_test

PROG = "forge-reduce"
_EXPECT = {
    "semantics": r"pass '{name}' \(#\d+ of \d+\) changed the results",
    "raised": r"while running pass '{name}'",
    "verify": r"the IR does not verify after pass '{name}'",
}
"""What a reproduce command prints when it fails the same way, by `PassFailure.kind`."""


def reduce_command(path: str, kind: str, pass_name: str, command: str) -> str:
    """The forge-reduce command for a reproducer at `path` whose reproduce `command` fails with `kind`."""
    test = command.replace(shlex.quote(path), "{}", 1) + " --no-reproducer"
    expect = _EXPECT[kind].format(name=re.escape(pass_name))
    out = os.path.splitext(path)[0] + ".reduced.mlir"
    quote = shlex.quote
    return f"{PROG} {quote(path)} --expect-error {quote(expect)} --test {quote(test)} -o {quote(out)}"


# --- the interestingness test ------------------------------------------------------------------------


@dataclass
class Tester:
    """Runs the test command on candidates written to a scratch directory."""

    command: str
    expect: re.Pattern[str] | None
    weights: object | None  # the input's WeightStore (forge.weights), if it has a companion file
    scratch: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="forge-reduce-"))
    runs: int = 0
    _forked: ForkedForgeOpt | None = None

    def write(self, module: ModuleOp, path: str) -> None:
        with open(path, "w") as f:
            f.write(custom_text(module))
        if self.weights is not None:
            from forge.weights import companion_weights_path  # lazy: start-up cost (torch)

            names = [op.weight_name.data for op in module.walk() if op.name == "aten.weight"]
            self.weights.subset(names).save(companion_weights_path(path))

    def interesting(self, module: ModuleOp) -> bool:
        self.runs += 1
        path = os.path.join(self.scratch, "candidate.mlir")
        self.write(module, path)
        quoted = shlex.quote(path)
        cmd = self.command.replace("{}", quoted) if "{}" in self.command else f"{self.command} {quoted}"
        code, output = self._run(cmd)
        if self.expect is None:
            return code == 0
        return code != 0 and self.expect.search(output) is not None

    def close(self) -> None:
        """Stop the fork server, if one was started."""
        if self._forked is not None:
            self._forked.close()
            self._forked = None

    def _run(self, cmd: str) -> tuple[int, str]:
        args = ForkedForgeOpt.argv(cmd)
        if args is None:
            return run_test(cmd)
        if self._forked is None:
            self._forked = ForkedForgeOpt()
        return self._forked.run(args)


def custom_text(module: ModuleOp) -> str:
    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


# --- IR edits (each on a clone; the caller keeps it if still interesting) ----------------------------


def functions(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.walk() if isinstance(op, func.FuncOp) and op.body.blocks]


def body_ops(module: ModuleOp) -> list[Operation]:
    """Every op inside a function body that could go: not the terminators."""
    return [
        op for f in functions(module) for op in f.walk()
        if op is not f and not op.has_trait(IsTerminator) and not isinstance(op, func.FuncOp)
    ]


def count_ops(module: ModuleOp) -> int:
    return sum(1 for f in functions(module) for op in f.walk() if op is not f)


def _retype(fn: func.FuncOp) -> None:
    block = fn.body.blocks.first
    ret = block.last_op
    outputs = [v.type for v in ret.operands] if isinstance(ret, func.ReturnOp) else list(fn.function_type.outputs)
    fn.function_type = FunctionType.from_lists([a.type for a in block.args], outputs)


def _erase_dead(module: ModuleOp) -> None:
    from forge.transforms.dce import is_dead  # lazy: pass modules import aten (torch)

    changed = True
    while changed:
        changed = False
        for op in reversed(body_ops(module)):
            if op.parent is not None and is_dead(op):
                Rewriter.erase_op(op)
                changed = True


def remove_ops(module: ModuleOp, indices: Sequence[int]) -> None:
    """Remove the body ops at `indices`; results used by kept ops become new function arguments."""
    ops = body_ops(module)
    doomed = [ops[i] for i in indices]
    doomed_set = set(doomed)
    for op in doomed:
        fn = _enclosing_function(op)
        entry = fn.body.blocks.first
        for result in op.results:
            if any(use.operation not in doomed_set and not _inside(use.operation, doomed_set) for use in result.uses):
                arg = entry.insert_arg(result.type, len(entry.args))
                if result.name_hint:
                    arg.name_hint = result.name_hint
                _replace_outside(result, arg, doomed_set)
        _retype(fn)
    for op in reversed(doomed):
        if op.parent is None or _inside(op, doomed_set - {op}):
            continue  # erased with the doomed op it is nested in
        Rewriter.erase_op(op, safe_erase=False)  # its remaining users are doomed ops after it: gone
    _erase_dead(module)


def _replace_outside(value: SSAValue, new: SSAValue, doomed: set[Operation]) -> None:
    for use in list(value.uses):
        if use.operation not in doomed and not _inside(use.operation, doomed):
            use.operation.operands[use.index] = new


def _inside(op: Operation, ops: set[Operation]) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if parent in ops:
            return True
        parent = parent.parent_op()
    return False


def _enclosing_function(op: Operation) -> func.FuncOp:
    parent = op.parent_op()
    while not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def forward_operand(module: ModuleOp, index: int, operand: int) -> None:
    """Replace the single result of the body op at `index` by its operand #`operand` and erase the op;
    a function returning it returns the operand instead (its type changes). Raises if a type clashes."""
    op = body_ops(module)[index]
    (result,) = op.results
    value = op.operands[operand]
    for use in list(result.uses):
        if value.type != result.type and not isinstance(use.operation, func.ReturnOp):
            raise ValueError("operand type differs")
        use.operation.operands[use.index] = value
    fn = _enclosing_function(op)
    Rewriter.erase_op(op)
    _retype(fn)
    _erase_dead(module)


def drop_results(module: ModuleOp, fn_index: int, keep: Sequence[int]) -> None:
    fn = functions(module)[fn_index]
    ret = fn.body.blocks.first.last_op
    ret.operands = [ret.operands[i] for i in keep]
    _retype(fn)
    _erase_dead(module)


def drop_unused_args(module: ModuleOp) -> bool:
    changed = False
    for fn in functions(module):
        if _is_called(module, fn):
            continue
        entry: Block = fn.body.blocks.first
        for arg in reversed(entry.args):
            if not arg.uses:
                entry.erase_arg(arg)
                changed = True
        _retype(fn)
    return changed


def _is_called(module: ModuleOp, fn: func.FuncOp) -> bool:
    name = fn.sym_name.data
    return any(isinstance(op, func.CallOp) and op.callee.root_reference.data == name for op in module.walk())


def drop_function(module: ModuleOp, fn_index: int) -> None:
    Rewriter.erase_op(functions(module)[fn_index])


# --- the reducer ---------------------------------------------------------------------------------------


@dataclass
class Reducer:
    tester: Tester
    tried: int = 0
    kept: int = 0
    log: Callable[[str], None] = lambda _: None

    def attempt(self, module: ModuleOp, edit: Callable[[ModuleOp], object]) -> ModuleOp | None:
        """A clone of `module` with `edit` applied, when it is still interesting and smaller or equal."""
        candidate = module.clone()
        try:
            edit(candidate)
            candidate.verify()
        except Exception:  # an edit that leaves IR the verifier rejects is just not kept
            return None
        self.tried += 1
        if custom_text(candidate) == custom_text(module) or not self.tester.interesting(candidate):
            return None
        self.kept += 1
        return candidate

    def reduce(self, module: ModuleOp) -> ModuleOp:
        while True:
            before = custom_text(module)
            module = self._functions(module)
            module = self._results(module)
            module = self._ops(module)
            module = self._forward(module)
            if (smaller := self.attempt(module, drop_unused_args)) is not None:
                module = smaller
            if custom_text(module) == before:
                return module

    def _functions(self, module: ModuleOp) -> ModuleOp:
        index = 0
        while index < len(functions(module)):
            fn = functions(module)[index]
            if not _is_called(module, fn) and len(functions(module)) > 1:
                smaller = self.attempt(module, lambda m, i=index: drop_function(m, i))
                if smaller is not None:
                    module = smaller
                    continue
            index += 1
        return module

    def _results(self, module: ModuleOp) -> ModuleOp:
        for fn_index, fn in enumerate(functions(module)):
            ret = fn.body.blocks.first.last_op
            n = len(ret.operands) if isinstance(ret, func.ReturnOp) else 0
            if n <= 1 or _is_called(module, fn):
                continue
            for keep in [[i] for i in range(n)]:
                smaller = self.attempt(module, lambda m, f=fn_index, k=keep: drop_results(m, f, k))
                if smaller is not None:
                    module = smaller
                    break
        return module

    def _forward(self, module: ModuleOp) -> ModuleOp:
        """From the last op up: replace an op by one of its operands (shortens the path to a result)."""
        index = len(body_ops(module)) - 1
        while index >= 0:
            op = body_ops(module)[index]
            for k in range(len(op.operands) if len(op.results) == 1 else 0):
                smaller = self.attempt(module, lambda m, i=index, j=k: forward_operand(m, i, j))
                if smaller is not None:
                    module = smaller
                    self.log(f"forwarded an operand of op {index}: {count_ops(module)} ops left")
                    break
            index = min(index - 1, len(body_ops(module)) - 1)
        return module

    def _ops(self, module: ModuleOp) -> ModuleOp:
        """ddmin over the body ops: try removing chunks, halving the chunk size when none goes."""
        chunk = max(1, len(body_ops(module)) // 2)
        while chunk >= 1:
            start = 0
            while start < len(body_ops(module)):
                n = len(body_ops(module))
                indices = list(range(start, min(start + chunk, n)))
                smaller = self.attempt(module, lambda m, ix=indices: remove_ops(m, ix))
                if smaller is not None:
                    module = smaller
                    self.log(f"removed ops {indices[0]}..{indices[-1]}: {count_ops(module)} ops left")
                else:
                    start += chunk
            chunk //= 2
        return module


# --- command line ----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Shrink an IR file while a test command finds it interesting.")
    p.add_argument("input", help="the .mlir file to reduce (its .safetensors companion, if any, goes along)")
    p.add_argument("--test", required=True, metavar="CMD",
                   help="shell command run on each candidate (its path appended, or put at {}); exit 0 = interesting")
    p.add_argument("--expect-error", metavar="REGEX",
                   help="instead: interesting when CMD fails and its output matches REGEX (a reproduced failure)")
    p.add_argument("-o", "--output", help="where the reduced module goes (default: stdout); weights beside it")
    p.add_argument("--verbose", action="store_true", help="print each kept reduction")
    return p


def _load(path: str):
    from forge.diagnostics import parse_with_locations
    from forge.driver.registry import make_context

    text = Path(path).read_text()
    ctx = make_context()
    ctx.allow_unregistered = True
    module = parse_with_locations(ctx, text, path)
    weights = None
    companion = os.path.splitext(path)[0] + ".safetensors"
    if os.path.exists(companion):
        from forge.weights import WeightStore  # lazy: start-up cost (torch)

        weights = WeightStore.load(companion)
    return module, weights


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        module, weights = _load(args.input)
    except OSError as e:
        print(f"{PROG}: error: cannot read '{args.input}': {e.strerror}", file=sys.stderr)
        return 1
    except Exception as e:  # a parse error: one line, as forge-opt would say it
        print(f"{PROG}: error: {args.input}: {str(e).strip().splitlines()[-1]}", file=sys.stderr)
        return 1
    tester = Tester(args.test, re.compile(args.expect_error) if args.expect_error else None, weights)
    try:
        if not tester.interesting(module):
            print(f"{PROG}: error: the input is not interesting: the test does not hold on {args.input}",
                  file=sys.stderr)
            return 1
        log = (lambda line: print(f"{PROG}: {line}", file=sys.stderr)) if args.verbose else (lambda _: None)
        reducer = Reducer(tester, log=log)
        before = count_ops(module)
        reduced = reducer.reduce(module)
    finally:
        tester.close()
    if args.output:
        tester.write(reduced, args.output)
    else:
        sys.stdout.write(custom_text(reduced))
    print(
        f"{PROG}: {before} ops -> {count_ops(reduced)} ops ({reducer.kept} of {reducer.tried} reductions kept, "
        f"{tester.runs} test runs)" + (f"; wrote {args.output}" if args.output else ""),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
