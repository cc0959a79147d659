# RUN: rm -rf %t && mkdir -p %t && python %s %t | filecheck %s
# `forge compile --emit aten` stops after the optimization passes and prints the command that redoes
# the stage from the raw IR: `forge import` (aten IR + weights, no pass) then `forge-opt -p <pipeline>`.
# Running that printed command gives the same IR and the same weights.
import subprocess
import sys
from pathlib import Path

from safetensors.torch import load_file

from forge.pipelines import DEFAULT_PIPELINE

out = Path(sys.argv[1])
model = ["gpt2", "--small", "--seq-len", "8"]
compiled = subprocess.run(
    ["forge", "compile", *model, "--emit", "aten", "-o", str(out / "c.mlir")],
    capture_output=True, text=True, check=True,
)
print(compiled.stderr.replace(str(out), "OUT"))
reproduce = compiled.stderr.split("reproduce: ", 1)[1].strip()
subprocess.run(reproduce + f" -o {out / 'o.mlir'}", shell=True, check=True, capture_output=True)

raw = (out / "c.raw.mlir").read_text()
print("raw IR runs no pass:", "aten.scaled_dot_product_attention" not in raw and "aten.weight" in raw)
print("pipeline is the compiler's:", f"-p '{','.join(DEFAULT_PIPELINE)}'" in reproduce)
same_ir = (out / "o.mlir").read_text().rstrip() == (out / "c.mlir").read_text().rstrip()
print("same IR:", same_ir)
a, b = load_file(out / "c.safetensors"), load_file(out / "o.safetensors")
print("same weights:", sorted(a) == sorted(b) and all(a[k].equal(b[k]) for k in a), len(a))

# CHECK:      forge compile: stopped after aten; wrote OUT/c.mlir and OUT/c.safetensors
# CHECK-NEXT:   reproduce: forge import gpt2 --small --seq-len 8 -o OUT/c.raw.mlir && forge-opt OUT/c.raw.mlir -p '{{[a-z,-]+}}'
# CHECK:      raw IR runs no pass: True
# CHECK-NEXT: pipeline is the compiler's: True
# CHECK-NEXT: same IR: True
# CHECK-NEXT: same weights: True 37
