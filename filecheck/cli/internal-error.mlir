// A pass that crashes (a bug, not a diagnostic) shows the traceback, names the pass and op,
// writes a reproducer and exits non-zero (70).
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %S/inputs/identities.mlir -p 'test-fail-on-op{crash=true}' --reproducer-dir %t 2>&1 | filecheck %s

// CHECK:      Traceback (most recent call last):
// CHECK:      RuntimeError: test-fail-on-op crashed on arith.muli
// CHECK-NEXT: forge-opt: error: internal error: RuntimeError: test-fail-on-op crashed on arith.muli
// CHECK-NEXT: note: while running pass 'test-fail-on-op{crash=true}' (#1 of 1)
// CHECK-NEXT: note: reproducer (the IR before this pass) written to {{.*}}forge-opt-reproducer.mlir
