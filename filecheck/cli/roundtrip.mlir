// forge-opt reads and writes builtin/func/arith IR like xdsl-opt, in both syntaxes.
// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s
// RUN: forge-opt %s | %forge_roundtrip | filecheck %s

func.func @add_mul(%a: i32, %b: i32) -> i32 {
  %sum = arith.addi %a, %b : i32
  %prod = arith.muli %sum, %b : i32
  func.return %prod : i32
}

// CHECK:      func.func @add_mul(%a: i32, %b: i32) -> i32 {
// CHECK-NEXT:   %sum = arith.addi %a, %b : i32
// CHECK-NEXT:   %prod = arith.muli %sum, %b : i32
// CHECK-NEXT:   func.return %prod : i32
// CHECK-NEXT: }
