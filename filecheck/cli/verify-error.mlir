// IR that parses but does not verify is reported at the failing op, mlir-opt style.
// RUN: not forge-opt %s 2>&1 | filecheck %s
// RUN: not forge-opt %s -p canonicalize 2>&1 | filecheck %s

func.func @f(%a: i32, %b: i64) -> i32 {
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}

// CHECK-NOT:  Traceback
// CHECK:      verify-error.mlir:6:8: error: 'arith.addi' op operand 'rhs' at position 1 does not verify: attribute i32 expected from variable 'T', but got i64
// CHECK-NEXT:   %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
// CHECK-NEXT:        ^~~~~~~~~~
// CHECK-NOT:  {{.}}
