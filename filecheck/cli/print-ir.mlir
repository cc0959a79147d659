// The --print-ir-* family prints the IR around passes to stderr, with mlir-opt's headers.
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p 'test-arith-identities,xdsl-cse' --print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=ALL
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p 'test-arith-identities,canonicalize,xdsl-cse' --print-ir-after-change -o /dev/null 2>&1 | filecheck %s --check-prefix=CHANGE
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p 'test-arith-identities,xdsl-cse' --print-ir-before=xdsl-cse -o /dev/null 2>&1 | filecheck %s --check-prefix=BEFORE
// RUN: env FORGE_TEST_PASSES=1 forge-opt %S/inputs/identities.mlir -p 'test-arith-identities,xdsl-cse' --print-ir-after=test-arith-identities -o /dev/null 2>&1 | filecheck %s --check-prefix=AFTER

// ALL:       // -----// IR Dump After test-arith-identities //----- //
// ALL:         %d = arith.addi %a, %b : i32
// ALL:       // -----// IR Dump After xdsl-cse //----- //
// ALL:         func.return %g : i32

// Only passes that changed the IR are printed (after canonicalize, xdsl-cse has nothing to do).
// CHANGE:     // -----// IR Dump After test-arith-identities //----- //
// CHANGE:       %f = arith.muli %d, %two : i32
// CHANGE:     // -----// IR Dump After canonicalize //----- //
// CHANGE-NOT: IR Dump

// BEFORE:     // -----// IR Dump Before xdsl-cse //----- //
// BEFORE:       %f = arith.muli %d, %two : i32
// BEFORE-NOT: IR Dump

// AFTER:      // -----// IR Dump After test-arith-identities //----- //
// AFTER-NOT:  IR Dump
