// A pass that breaks the IR (test-break-ir erases func.return): by default the output is
// verified once, at the end (after xdsl-cse also removed the dead %g), and the error says a
// pass broke it; --verify-each verifies after every pass and names the pass.
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %S/inputs/identities.mlir -p 'test-break-ir,xdsl-cse' 2>&1 | filecheck %s --check-prefix=END
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %S/inputs/identities.mlir -p 'test-break-ir,xdsl-cse' --verify-each --no-reproducer 2>&1 | filecheck %s --check-prefix=EACH

// END:      identities.mlir:{{[0-9]+}}:8: error: {{.*}} op terminates block in single-block region but is not a terminator
// END:      note: the input verified, so a pass in the pipeline produced invalid IR; rerun with --verify-each to find it

// EACH:     identities.mlir:9:8: error: 'arith.addi' op terminates block in single-block region but is not a terminator
// EACH-NEXT:  %g = arith.addi %f, %two : i32
// EACH-NEXT:       ^~~~~~~~~~
// EACH-NEXT: note: the IR does not verify after pass 'test-break-ir' (#1 of 2)
// EACH-NOT: {{.}}
