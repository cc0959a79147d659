// --verify-diagnostics fails (exit 1) when a diagnostic is not expected or an annotation is not met,
// naming both locations; every chunk is still checked (forge/cli/verify_diagnostics.py).
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %s --split-input-file --verify-diagnostics -p 'test-emit-diagnostic{op-name="arith.muli" severity="remark"}' 2>&1 >/dev/null | filecheck %s

// A wrong message: the real error is unexpected and the annotation is not met.
func.func @wrong_text(%a: i32, %b: i64) -> i32 {
  // expected-error @+1 {{this text is deliberately wrong}}
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}
// CHECK:      verify-diagnostics-mismatch.mlir:[[# @LINE - 3]]:8: error: unexpected error: 'arith.addi' op operand 'rhs' at position 1 does not verify
// CHECK-NEXT:   %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
// CHECK-NEXT:        ^~~~~~~~~~
// CHECK-NEXT: verify-diagnostics-mismatch.mlir:[[# @LINE - 7]]:6: error: expected error "this text is deliberately wrong" was not produced on line [[# @LINE - 6]]

// -----

// The right message on the wrong line.
func.func @wrong_line(%a: i32, %b: i64) -> i32 {
  // expected-error @+2 {{does not verify}}
  %c = "arith.addi"(%a, %b) : (i32, i64) -> i32
  func.return %c : i32
}
// CHECK:      verify-diagnostics-mismatch.mlir:[[# @LINE - 3]]:8: error: unexpected error: 'arith.addi' op
// CHECK:      verify-diagnostics-mismatch.mlir:[[# @LINE - 5]]:6: error: expected error "does not verify" was not produced on line [[# @LINE - 3]]

// -----

// The right message with the wrong severity.
func.func @wrong_severity(%a: i32) -> i32 {
  %m = arith.muli %a, %a : i32 // expected-warning {{remark at arith.muli}}
  func.return %m : i32
}
// CHECK:      verify-diagnostics-mismatch.mlir:[[# @LINE - 3]]:8: error: 'remark' diagnostic emitted when expecting a 'warning': test-emit-diagnostic: remark at arith.muli

// -----

// An annotation that nothing meets (the IR is valid).
// expected-error @below {{never emitted}}
func.func @nothing(%a: i32) -> i32 {
  func.return %a : i32
}
// CHECK:      verify-diagnostics-mismatch.mlir:[[# @LINE - 4]]:4: error: expected error "never emitted" was not produced on line [[# @LINE - 3]]

// -----

// A mistyped annotation is an error, not a comment that checks nothing.
func.func @malformed(%a: i32) -> i32 {
  // expected-error @+1 {not the syntax}
  func.return %a : i32
}
// CHECK:      verify-diagnostics-mismatch.mlir:[[# @LINE - 3]]:6: error: malformed diagnostic annotation; write expected-<error|warning|note|remark>[-re] [@+N|@-N|@above|@below|@unknown] {{[{][{]}}message{{[}][}]}}

// -----

// An error without an annotation.
func.func @unexpected(%a: i32) -> i32 {
  %c = "arith.addi"(%a, %a) : (i32, i32) -> i64
  func.return %a : i32
}
// CHECK:      verify-diagnostics-mismatch.mlir:[[# @LINE - 3]]:8: error: unexpected error: 'arith.addi' op
// CHECK-NOT:  error:
