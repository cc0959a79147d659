// Patterns written in PyTorch (docs/examples/torch_patterns.py, forge.frontend.torch_patterns.from_torch):
// a - (-b) -> a + b, and a written-out softmax -> aten.softmax.int, matched in any shape, with
// the add's operands in either order; a near miss is left alone and --explain-pattern names the
// search node that did not match.
// RUN: forge-opt --load-pass-plugin %examples/torch_patterns.py %s -p torch-patterns | filecheck %s
// RUN: forge-opt --load-pass-plugin %examples/torch_patterns.py %s -p torch-patterns --explain-pattern WrittenOutSoftmax -o /dev/null 2>&1 | filecheck %s --check-prefix=EXPLAIN
// (tests/test_torch_patterns.py property-tests the two patterns with check_pattern.)

// CHECK-LABEL: func.func @sub_neg
// CHECK-NEXT:    %d = aten.add.Tensor %x, %y : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    func.return %d
func.func @sub_neg(%x: tensor<3x5xf32>, %y: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %n = aten.neg %y : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %d = aten.sub.Tensor %x, %n : (tensor<3x5xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %d : tensor<3x5xf32>
}

// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %p = aten.softmax.int %x {dim = -1} : (tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK-NEXT:    func.return %p
func.func @softmax(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %m = aten.amax %x {dim = [-1], keepdim = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %s = aten.sub.Tensor %x, %m : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %e = aten.exp %s : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %t = aten.sum.dim_IntList %e {dim = [-1], keepdim = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %p = aten.div.Tensor %e, %t : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  func.return %p : tensor<3x5xf32>
}

// The sum runs over dim 0: not a softmax.
// CHECK-LABEL: func.func @wrong_dim
// CHECK:         aten.sum.dim_IntList %e {dim = [0], keepdim = true}
// CHECK:         aten.div.Tensor
func.func @wrong_dim(%x: tensor<3x5xf32>) -> tensor<3x5xf32> {
  %m = aten.amax %x {dim = [-1], keepdim = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %s = aten.sub.Tensor %x, %m : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %e = aten.exp %s : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %t = aten.sum.dim_IntList %e {dim = [0], keepdim = true} : (tensor<3x5xf32>) -> tensor<1x5xf32>
  %q = aten.div.Tensor %e, %t : (tensor<3x5xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
  func.return %q : tensor<3x5xf32>
}

// The exponential is also returned: rewriting would keep it anyway, so the pattern does not match.
// CHECK-LABEL: func.func @shared_exp
// CHECK:         aten.exp
// CHECK:         aten.div.Tensor
func.func @shared_exp(%x: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>) {
  %m = aten.amax %x {dim = [-1], keepdim = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %s = aten.sub.Tensor %x, %m : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %e = aten.exp %s : (tensor<3x5xf32>) -> tensor<3x5xf32>
  %t = aten.sum.dim_IntList %e {dim = [-1], keepdim = true} : (tensor<3x5xf32>) -> tensor<3x1xf32>
  %r = aten.div.Tensor %e, %t : (tensor<3x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  func.return %r, %e : tensor<3x5xf32>, tensor<3x5xf32>
}

// EXPLAIN:      [torch-patterns] WrittenOutSoftmax fired on aten.div.Tensor %p at {{.*}}torch-patterns.mlir:26:8
// EXPLAIN-NEXT: [torch-patterns] WrittenOutSoftmax did not match aten.div.Tensor %q at {{.*}}: node %sum (aten.sum.dim_IntList): property 'dim' is [0], the pattern wants [-1]
// EXPLAIN-NEXT: [torch-patterns] WrittenOutSoftmax did not match aten.div.Tensor %r at {{.*}}: node %exp (aten.exp): has users outside the pattern

