// mlir-opt's --verify-diagnostics (forge/cli/verify_diagnostics.py): each diagnostic must be met by an
// expected-<severity> annotation of its line and each annotation by a diagnostic; this file meets them
// all, so forge-opt exits 0 and prints the IR of the chunks that did not fail.
// verify-diagnostics-mismatch.mlir shows the errors when they are not met.
// RUN: env FORGE_TEST_PASSES=1 forge-opt %s --split-input-file --verify-diagnostics -p 'test-emit-diagnostic{op-name="arith.muli" severity="remark"},test-emit-diagnostic{op-name="arith.subi" severity="warning"},test-emit-diagnostic{op-name="arith.subi" severity="note"}' | filecheck %s

// The annotation on the line of the diagnostic.
func.func @same_line(%a: i32, %b: i64) -> i32 {
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32 // expected-error {{'arith.addi' op operand 'rhs' at position 1 does not verify}}
  func.return %c : i32
}

// -----

// @+N and @-N: N lines below or above the annotation; -re: {{...}} parts are regular expressions.
func.func @relative(%a: i32, %b: i64) -> i32 {
  // expected-error-re @+2 {{operand '{{[a-z]+}}' at position {{[0-9]}} does not verify: attribute i32 expected}}

  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}

// -----

func.func @minus(%a: i64) -> i64 {
  %m = arith.muli %a, %a : i64
  func.return %m : i64
  // expected-remark @-2 {{test-emit-diagnostic: remark at arith.muli}}
}
// CHECK-LABEL: func.func @minus
// CHECK-NEXT:    %m = arith.muli %a, %a : i64

// -----

// @above: the nearest line above that holds no annotation; @below: the nearest below.
func.func @above_below(%a: i32) -> i32 {
  // expected-remark @below {{remark at arith.muli}}
  %m = arith.muli %a, %a : i32
  %s = arith.subi %m, %a : i32
  // expected-warning @above {{test-emit-diagnostic: warning at arith.subi}}
  // expected-note @above {{test-emit-diagnostic: note at arith.subi}}
  func.return %s : i32
}
// CHECK-LABEL: func.func @above_below
// CHECK:         arith.subi

// -----

// A note at a location of its own (the parser's reference to the first declaration).
func.func @blocks() {
^bb0:  // expected-note {{originally declared here}}
  func.return
^bb0:  // expected-error {{re-declaration of block 'bb0'}}
  func.return
}

// -----

// No diagnostic, no annotation: the chunk is printed.
func.func @quiet(%a: i32) -> i32 {
  func.return %a : i32
}
// CHECK-LABEL: func.func @quiet
