// --split-input-file --verify-diagnostics keep xDSL's behaviour: each chunk's diagnostic is
// printed to stdout, the exit code is 0, and later chunks are still processed.
// RUN: forge-opt %s --split-input-file --verify-diagnostics | filecheck %s

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
