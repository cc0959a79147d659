// xDSL's own per-pass flags keep working (on stdout, in xDSL's format).
// RUN: forge-opt %S/inputs/identities.mlir -p 'canonicalize,xdsl-cse' --print-between-passes | filecheck %s --check-prefix=BETWEEN
// RUN: forge-opt %S/inputs/identities.mlir -p 'canonicalize,xdsl-cse' --time-passes | filecheck %s --check-prefix=TIME

// BETWEEN:     IR after canonicalize:
// BETWEEN-NOT: IR after xdsl-cse:
// BETWEEN:     builtin.module

// TIME: Pass canonicalize took {{[0-9.e-]+}} seconds
// TIME: Pass xdsl-cse took {{[0-9.e-]+}} seconds
