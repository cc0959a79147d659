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

// -----

// Every chunk is processed: the ones after a failing chunk are still printed, and a second failure is
// reported too; the exit code (1) comes at the end.
// RUN: not forge-opt %s --split-input-file 2>/dev/null | filecheck %s --check-prefix=OUT
// RUN: not forge-opt %s --split-input-file 2>&1 >/dev/null | filecheck %s --check-prefix=ERR
func.func @after(%a: i32) -> i32 {
  %c = "arith.addi"(%a, %a) : (i32, i32) -> i64
  func.return %a : i32
}

// -----

func.func @last(%a: i32) -> i32 {
  func.return %a : i32
}

// OUT:      func.func @ok
// OUT:      {{^// -}}----
// OUT:      {{^// -}}----
// OUT:      {{^// -}}----
// OUT-NEXT: builtin.module {
// OUT-NEXT:   func.func @last
// ERR:      split-input-error.mlir:12:19: error:
// ERR:      split-input-error.mlir:25:8: error: 'arith.addi' op result 'result' at position 0 does not verify
// ERR-NOT:  error:
