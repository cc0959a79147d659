// --debug-patterns prints every ForgePattern rewrite with the op and its location;
// --explain-pattern NAME prints where NAME fired and why it did not match elsewhere.
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p test-arith-identities --debug-patterns -o /dev/null 2>&1 | filecheck %s --check-prefix=DEBUG
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p test-arith-identities --explain-pattern AddZero -o /dev/null 2>&1 | filecheck %s --check-prefix=EXPLAIN
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p xdsl-cse --explain-pattern AddZero -o /dev/null 2>&1 | filecheck %s --check-prefix=UNUSED

// DEBUG:      [test-arith-identities] AddZero fired on arith.addi %c at {{.*}}identities.mlir:5:8
// DEBUG-NEXT: [test-arith-identities] MulOne fired on arith.muli %e at {{.*}}identities.mlir:7:8
// DEBUG-NOT:  {{.}}

// EXPLAIN:      [test-arith-identities] AddZero fired on arith.addi %c at {{.*}}identities.mlir:5:8
// EXPLAIN-NEXT: [test-arith-identities] AddZero did not match arith.addi %d at {{.*}}identities.mlir:6:8: rhs is not a constant
// EXPLAIN-NEXT: [test-arith-identities] AddZero did not match arith.addi %g at {{.*}}identities.mlir:9:8: rhs is 2, not 0
// EXPLAIN-NOT:  MulOne

// UNUSED: note: pattern 'AddZero' was not run by any pass of this pipeline (NAME is a ForgePattern class name)
