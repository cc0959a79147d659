// A parse error is one diagnostic at its source position, with the line and a caret;
// never a traceback. The exit code is 1 (`not` checks it is non-zero).
// RUN: not forge-opt %s 2>&1 | filecheck %s

func.func @f(%a: i32) -> i32 {
  %c = arith.addi %a, : i32
  func.return %c : i32
}

// CHECK-NOT:  Traceback
// CHECK:      parse-error.mlir:6:23: error: {{.*}}expected
// CHECK-NEXT:   %c = arith.addi %a, : i32
// CHECK-NEXT:                       ^
// CHECK-NOT:  {{.}}
