// --xdsl-verify-diagnostics is xdsl-opt's --verify-diagnostics: each chunk's diagnostic is
// printed to stdout, the exit code is 0, and later chunks are still processed (xDSL's own lit
// suite relies on it: scripts/compat/run.py maps xdsl-opt's flag to this one).
// RUN: forge-opt %s --split-input-file --xdsl-verify-diagnostics | filecheck %s
// mlir-opt's --verify-diagnostics instead wants an expected-error annotation, which this file lacks:
// RUN: not forge-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=MLIR
// MLIR: xdsl-verify-diagnostics.mlir:[[# @LINE + 10]]:8: error: unexpected error: 'arith.addi' op operand 'rhs' at position 1 does not verify

func.func @ok(%a: i32) -> i32 {
  func.return %a : i32
}
// CHECK: func.func @ok

// -----

func.func @bad(%a: i32, %b: i64) -> i32 {
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}
// CHECK: operand 'rhs' at position 1 does not verify:
// CHECK-NEXT: attribute i32 expected from variable 'T', but got i64

// -----

func.func @after(%a: i32) -> i32 {
  func.return %a : i32
}
// CHECK: func.func @after
