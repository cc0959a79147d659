// mlir-opt's spellings work: --mlir-* names of the debugging flags, --pass-pipeline with its nesting
// (where it means the same as the flat list), `-` for stdin and single-dash long flags; a mistyped
// flag is one line naming the closest one (forge/cli/flags.py, forge/cli/passes.py).
// RUN: forge-opt %S/inputs/identities.mlir --mlir-print-ir-before-all --mlir-print-ir-after-all -p cse -o /dev/null 2>&1 | filecheck %s --check-prefix=DUMPS
// RUN: forge-opt %S/inputs/identities.mlir --mlir-print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: forge-opt %S/inputs/identities.mlir --mlir-timing --mlir-disable-threading -o /dev/null 2>&1 | filecheck %s --check-prefix=TIMING
// RUN: forge-opt %S/inputs/identities.mlir --pass-pipeline='builtin.module(func.func(canonicalize,cse),dce)' > %t.nested
// RUN: forge-opt %S/inputs/identities.mlir -p canonicalize,cse,dce > %t.flat
// RUN: diff %t.nested %t.flat
// RUN: filecheck %s --check-prefix=NESTED < %t.nested
// RUN: forge-opt - < %S/inputs/identities.mlir | filecheck %s --check-prefix=STDIN
// RUN: forge-opt %s -allow-unregistered-dialect -mlir-print-op-generic | filecheck %s --check-prefix=SINGLE
// RUN: not forge-opt %s --mlir-print-ir-afer-all 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not forge-opt %s --allow-unregistered-dialect --pass-pipeline='builtin.module(func.func(lower-aten-to-npuir))' 2>&1 | filecheck %s --check-prefix=MODULE

func.func @g() {
  "my.op"() : () -> ()
  func.return
}

// DUMPS:      // -----// IR Dump Before cse //----- //
// DUMPS:      // -----// IR Dump After cse //----- //
// GENERIC:    "func.func"() <{sym_name = "f"
// TIMING:     Forge pass timing report
// NESTED:     func.func @f
// NESTED-NOT: arith.constant 0 : i32
// STDIN:      func.func @f(%a: i32, %b: i32) -> i32
// SINGLE:     "my.op"() : () -> ()
// UNKNOWN:    forge-opt: error: unknown flag '--mlir-print-ir-afer-all'; did you mean '--mlir-print-ir-after-all'? (forge-opt --help lists the flags)
// UNKNOWN-NOT: usage
// MODULE:     forge-opt: error: invalid pass pipeline at column 26: pass 'lower-aten-to-npuir' runs on the whole module, not on each function: write it outside 'func.func(...)'
