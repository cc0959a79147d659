// A ForgePattern without ROOTS runs in apply_patterns: the op classes it matches come from its
// @op_type_rewrite_pattern annotation (forge.patterns.pattern_roots), and its rewrites are counted.
// RUN: forge-opt %s --load-pass-plugin %S/inputs/plugins/pow_two_to_mul.py -p pow-to-mul | filecheck %s
// RUN: forge-opt %s --load-pass-plugin %S/inputs/plugins/pow_two_to_mul.py -p pow-to-mul --explain-pattern PowTwoToMul -o /dev/null 2>&1 | filecheck %s --check-prefix=EXPLAIN

// CHECK-LABEL: func.func @square
// CHECK-NEXT:    %a = aten.mul.Tensor %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %b = aten.mul.Tensor %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %c = aten.pow.Tensor_Scalar %x {exponent = 3}
func.func @square(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = aten.pow.Tensor_Scalar %x {exponent = 2} : (tensor<4xf32>) -> tensor<4xf32>
  %b = aten.pow.Tensor_Scalar %x {exponent = 2.0} : (tensor<4xf32>) -> tensor<4xf32>
  %c = aten.pow.Tensor_Scalar %x {exponent = 3} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// EXPLAIN:      [pow-to-mul] PowTwoToMul fired on aten.pow.Tensor_Scalar %a at {{.*}}pattern-roots.mlir:[[# @LINE - 6]]:8
// EXPLAIN-NEXT: [pow-to-mul] PowTwoToMul fired on aten.pow.Tensor_Scalar %b at {{.*}}pattern-roots.mlir:[[# @LINE - 6]]:8
// EXPLAIN-NEXT: [pow-to-mul] PowTwoToMul did not match aten.pow.Tensor_Scalar %c at {{.*}}pattern-roots.mlir:[[# @LINE - 6]]:8: the exponent is not 2
