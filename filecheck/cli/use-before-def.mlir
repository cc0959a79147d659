// RUN: not forge-opt %s 2>&1 | filecheck %s
// RUN: forge-opt %s --split-input-file --verify-diagnostics

// SSA dominance is verified: a value used before its definition (or in a block its definition
// does not dominate) is rejected at parse time, before any pass can trip over it.

// CHECK: use-before-def.mlir:[[# @LINE + 3]]:8: error: 'aten.relu' op operand #0 uses %a (defined by 'aten.relu') before its definition
func.func @swapped(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'aten.relu' op operand #0 uses %a (defined by 'aten.relu') before its definition}}
  %b = aten.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %b : tensor<2x3xf32>
}

// -----

func.func @self_use(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{operand #0 uses %y (defined by 'aten.neg') before its definition}}
  %y = aten.neg %y : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
