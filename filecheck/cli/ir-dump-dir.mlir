// --ir-dump-dir writes the input and the IR after each pass that changed it, numbered by
// the pass's position in the pipeline (xdsl-cse, #3, changes nothing: no 03 file).
// RUN: rm -rf %t && mkdir -p %t
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p 'test-arith-identities,canonicalize,xdsl-cse' --ir-dump-dir %t/dumps -o /dev/null
// RUN: ls %t/dumps | filecheck %s --check-prefix=FILES
// RUN: filecheck %s --check-prefix=FOLD < %t/dumps/01-test-arith-identities.mlir

// FILES:      00-input.mlir
// FILES-NEXT: 01-test-arith-identities.mlir
// FILES-NEXT: 02-canonicalize.mlir
// FILES-NOT:  03

// FOLD:       %d = arith.addi %a, %b : i32
// FOLD-NEXT:  %f = arith.muli %d, %two : i32
