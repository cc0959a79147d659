// With --split-input-file, locations are positions in the whole file, not in the chunk.
// RUN: not forge-opt %s --split-input-file 2>&1 | filecheck %s

func.func @ok(%a: i32) -> i32 {
  func.return %a : i32
}

// -----

func.func @bad(%a: i32) -> i32 {
  %c = arith.addi %a, %a : i32
  func.return %c, : i32
}

// CHECK-NOT: Traceback
// CHECK:     split-input-error.mlir:12:19: error:
