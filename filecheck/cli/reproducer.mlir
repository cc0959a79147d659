// When a pass fails, forge-opt writes the IR the pass was given to a reproducer file and
// prints the command that reproduces the failure; running that command fails the same way.
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %S/inputs/identities.mlir -p 'test-arith-identities,test-fail-on-op{op-name="arith.muli"},xdsl-cse' --reproducer-dir %t 2>%t/err
// RUN: filecheck %s < %t/err
// RUN: filecheck %s --check-prefix=FILE < %t/forge-opt-reproducer.mlir
// RUN: sed -n 's/^note: reproduce with: //p' %t/err > %t/reproduce.sh
// RUN: not sh %t/reproduce.sh 2>&1 | filecheck %s --check-prefix=AGAIN

// CHECK:      identities.mlir:8:8: error: 'arith.muli' op test-fail-on-op: found arith.muli
// CHECK-NEXT:   %f = arith.muli %e, %two : i32
// CHECK-NEXT:        ^~~~~~~~~~
// CHECK-NEXT: note: while running pass 'test-fail-on-op{op-name="arith.muli"}' (#2 of 3)
// CHECK-NEXT: note: reproducer (the IR before this pass) written to {{.*}}forge-opt-reproducer.mlir
// CHECK-NEXT: note: reproduce with: FORGE_TEST_PASSES=1 forge-opt {{.*}}forge-opt-reproducer.mlir -p 'test-fail-on-op{op-name="arith.muli"}'
// CHECK-NEXT: note: reduce with: forge-reduce {{.*}}forge-opt-reproducer.mlir --expect-error

// The reproducer holds the IR after test-arith-identities (x * 1 already folded away).
// FILE:      // forge-opt pass-failure reproducer: the IR given to pass #2 'test-fail-on-op{op-name="arith.muli"}', which raised:
// FILE-NEXT: //   test-fail-on-op: found arith.muli
// FILE-NEXT: // Reproduce with: FORGE_TEST_PASSES=1 forge-opt
// FILE-NEXT: // Reduce with: forge-reduce {{.*}}forge-opt-reproducer.mlir --expect-error 'while running pass {{.*}}' --test 'FORGE_TEST_PASSES=1 forge-opt {} -p {{.*}} --no-reproducer' -o {{.*}}forge-opt-reproducer.reduced.mlir
// FILE-NEXT: // The rest of the pipeline was: -p 'test-fail-on-op{op-name="arith.muli"},xdsl-cse'
// FILE:      %f = "arith.muli"(%d, %two)

// AGAIN:      forge-opt-reproducer.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'arith.muli' op test-fail-on-op: found arith.muli
// AGAIN:      note: while running pass 'test-fail-on-op{op-name="arith.muli"}' (#1 of 1)
