// A diagnostic with no location is met by an `@unknown` annotation (forge/cli/verify_diagnostics.py).
// RUN: env FORGE_TEST_PASSES=1 forge-opt %s --verify-diagnostics -p 'test-emit-diagnostic{unknown=true severity="warning"}' | filecheck %s
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %s --verify-diagnostics -p 'test-emit-diagnostic{unknown=true severity="remark"}' 2>&1 | filecheck %s --check-prefix=REMARK
// Without --verify-diagnostics it is printed, and is not an error:
// RUN: env FORGE_TEST_PASSES=1 forge-opt %s -p 'test-emit-diagnostic{unknown=true severity="warning"}' 2>&1 >/dev/null | filecheck %s --check-prefix=PRINTED

// expected-warning @unknown {{test-emit-diagnostic: a warning with no location}}
func.func @f(%a: i32) -> i32 {
  func.return %a : i32
}
// CHECK: func.func @f
// REMARK:      <unknown location>: error: unexpected remark: test-emit-diagnostic: a remark with no location
// REMARK-NEXT: verify-diagnostics-unknown.mlir:7:4: error: expected warning "test-emit-diagnostic: a warning with no location" was not produced at an unknown location
// PRINTED: forge-opt: warning: test-emit-diagnostic: a warning with no location
