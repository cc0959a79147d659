// Malformed ops in generic syntax crash some of xDSL's verifiers (a func.func without
// function_type raises KeyError); forge-opt reports them at the op, exit 1, never exit 70.
// RUN: not forge-opt %s 2>&1 | filecheck %s
// (tests/cli/test_fuzz.py::test_forge_opt_fuzz_generic_syntax covers the other mutations.)

// CHECK-NOT:  internal error
// CHECK:      generic-malformed.mlir:[[# @LINE + 1]]:3: error: 'func.func' op is missing its required property 'function_type'
  "func.func"() <{sym_name = "f"}> ({
  ^bb0(%x: tensor<4xf32>):
    "func.return"(%x) : (tensor<4xf32>) -> ()
  }) : () -> ()

