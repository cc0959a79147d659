# RUN: rm -rf %t && mkdir -p %t && python %s %S %t | filecheck %s
# A pass plug-in with a planted semantic bug (inputs/plugins/negate_silu.py: silu(x) -> silu(-x)) on a
# one-layer Llama: --verify-semantics blames it and prints the ready forge-reduce command next to the
# reproduce command; running that command shrinks the reproducer to a module that still fails the
# same way, with at most 10 ops.
import re
import subprocess
import sys
from pathlib import Path

here, out = Path(sys.argv[1]), Path(sys.argv[2])
plugin = here / "inputs" / "plugins" / "negate_silu.py"
run = subprocess.run(
    ["forge-opt", str(here / "inputs" / "llama-1l.mlir"), "--load-pass-plugin", str(plugin), "-p", "negate-silu",
     "--verify-semantics", "--reproducer-dir", str(out)],
    capture_output=True, text=True,
)
print("exit", run.returncode)
print(run.stderr.replace(str(out), "OUT").replace(str(here), "HERE"))
command = re.search(r"^note: reduce with: (.*)$", run.stderr, re.M).group(1)
reduced = subprocess.run(command, shell=True, capture_output=True, text=True)
print("reduce exit", reduced.returncode)
print(reduced.stderr.replace(str(out), "OUT"))

small = out / "forge-opt-reproducer.reduced.mlir"
text = small.read_text()
# the ops of the function body, its terminator not counted
ops = [line for line in text.splitlines()
       if re.match(r"\s+(%\S+ = )?[a-z_]+\.[a-z_.]+", line) and not re.match(r"\s+func\.(func|return)", line)]
print("reduced ops:", len(ops), "<= 10:", len(ops) <= 10)
print(text)
again = subprocess.run(
    ["forge-opt", str(small), "--load-pass-plugin", str(plugin), "-p", "negate-silu", "--verify-semantics",
     "--no-reproducer"],
    capture_output=True, text=True,
)
print("again exit", again.returncode)
print(again.stderr.replace(str(out), "OUT"))

# CHECK:      exit 1
# CHECK:      error: pass 'negate-silu' (#1 of 1) changed the results of @forward
# CHECK-NEXT: %linear_7 = aten.linear %alias, %p_hf_lm_head_weight
# The error points at the output that differs (the LM head), the notes at where the pass rewrote the IR:
# CHECK:      note: the pass rewrote 1 place (in @forward first):
# CHECK-NEXT: note:   HERE/inputs/llama-1l.mlir:145:13: aten.neg inserted
# CHECK:      note: reproducer (the IR before this pass) written to OUT/forge-opt-reproducer.mlir
# CHECK-NEXT: note: reproduce with: forge-opt OUT/forge-opt-reproducer.mlir --load-pass-plugin HERE/inputs/plugins/negate_silu.py --verify-semantics -p negate-silu
# CHECK-NEXT: note: reduce with: forge-reduce OUT/forge-opt-reproducer.mlir --expect-error 'pass '"'"'negate{{.*}}silu'"'"' \(#\d+ of \d+\) changed the results' --test '{{.*}} --no-reproducer' -o OUT/forge-opt-reproducer.reduced.mlir
# CHECK:      reduce exit 0
# CHECK-NEXT: forge-reduce: {{[0-9]+}} ops -> {{[0-9]+}} ops ({{[0-9]+}} of {{[0-9]+}} reductions kept, {{[0-9]+}} test runs); wrote OUT/forge-opt-reproducer.reduced.mlir
# CHECK:      reduced ops: {{[0-9]+}} <= 10: True
# CHECK:      aten.silu
# CHECK:      again exit 1
# CHECK:      error: pass 'negate-silu' (#1 of 1) changed the results of @forward
