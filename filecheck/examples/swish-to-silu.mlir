// RUN: forge-opt --load-pass-plugin %examples/swish_to_silu.py %s -p swish-to-silu | filecheck %s
// RUN: forge-opt --load-pass-plugin %examples/swish_to_silu.py %s -p swish-to-silu,fuse-ops | filecheck %s --check-prefix=FUSED
// RUN: forge-opt %s -p fuse-ops | filecheck %s --check-prefix=UNFUSED

// The tutorial pattern (docs/tutorials/first-rewrite-pattern.md): a hand-written Swish,
// x * sigmoid(x), becomes aten.silu(x); then fuse-ops folds the silu into the linear layer.

// CHECK-LABEL: func.func @mlp
// CHECK:         %h = aten.linear %x, %w, none
// CHECK-NEXT:    %swish = aten.silu %h : (tensor<2x16xf32>) -> tensor<2x16xf32>
// CHECK-NEXT:    func.return %swish
// FUSED-LABEL: func.func @mlp
// FUSED:         %h = aten.fused_linear %x, %w, none {activation = "silu"}
// FUSED-NEXT:    func.return %h
// Without swish-to-silu, fuse-ops cannot fuse the hand-written activation.
// UNFUSED-LABEL: func.func @mlp
// UNFUSED:         %h = aten.fused_linear %x, %w, none {activation = "none"}
// UNFUSED-NEXT:    %sig = aten.sigmoid %h
// UNFUSED-NEXT:    %swish = aten.mul.Tensor %h, %sig
func.func @mlp(%x: tensor<2x8xf32>) -> tensor<2x16xf32> {
  %w = aten.weight "fc.weight" : tensor<16x8xf32>
  %h = aten.linear %x, %w, none : (tensor<2x8xf32>, tensor<16x8xf32>) -> tensor<2x16xf32>
  %sig = aten.sigmoid %h : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %swish = aten.mul.Tensor %h, %sig : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %swish : tensor<2x16xf32>
}

// Either operand order; a sigmoid with another user stays for it.
// CHECK-LABEL: func.func @swapped_shared
// CHECK-NEXT:    %sig = aten.sigmoid %x
// CHECK-NEXT:    %swish = aten.silu %x
// CHECK-NEXT:    func.return %swish, %sig
func.func @swapped_shared(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %sig = aten.sigmoid %x : (tensor<4xf32>) -> tensor<4xf32>
  %swish = aten.mul.Tensor %sig, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %swish, %sig : tensor<4xf32>, tensor<4xf32>
}

// Not a Swish: a gate, x * sigmoid(g).
// CHECK-LABEL: func.func @gated
// CHECK-NEXT:    %sig = aten.sigmoid %gate
// CHECK-NEXT:    %glu = aten.mul.Tensor %x, %sig
// CHECK-NEXT:    func.return %glu
func.func @gated(%x: tensor<2x8xf32>, %gate: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sig = aten.sigmoid %gate : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %glu = aten.mul.Tensor %x, %sig : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %glu : tensor<2x8xf32>
}
