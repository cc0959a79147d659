// RUN: not forge-opt %s 2>&1 | filecheck %s
// RUN: forge-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=EACH

// EACH: operand #0 uses %a (defined by 'aten.relu') before its definition

// SSA dominance is verified: a value used before its definition (or in a block its definition
// does not dominate) is rejected at parse time, before any pass can trip over it.

// CHECK: use-before-def.mlir:[[# @LINE + 2]]:8: error: 'aten.relu' op operand #0 uses %a (defined by 'aten.relu') before its definition
func.func @swapped(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %b = aten.relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %b : tensor<2x3xf32>
}

// -----

// EACH: operand #0 uses %y (defined by 'aten.neg') before its definition
func.func @self_use(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = aten.neg %y : (tensor<2xf32>) -> tensor<2xf32>
  func.return %y : tensor<2xf32>
}
