// Weight normalization (`_weight_norm_interface(v, g, dim)`, Wav2Vec2's positional convolution)
// of stored weights is a constant: fold computes it at compile time into a new store entry the
// convolution reads; its unused norms result and the v / g weights disappear. Without weights it
// stays (v and g are opaque).
// RUN: cp %s %t.mlir
// RUN: python -c "import torch; from forge.weights import WeightStore; s = WeightStore(); s.add('v', torch.randn(8, 4, 5)); s.add('g', torch.rand(1, 1, 5) + 0.5); s.save('%t.safetensors')"
// RUN: forge-opt %t.mlir -p fold | filecheck %s --check-prefix=STORE
// RUN: forge-opt %s -p fold | filecheck %s --check-prefix=NOSTORE

// STORE-LABEL: func.func @weight_norm_conv
// STORE-NEXT:    %w = aten.weight "fold.w_0" : tensor<8x4x5xf32>
// STORE-NEXT:    %conv = aten.conv1d %x, %w, none {padding = [2], groups = 2}
// STORE-NEXT:    func.return %conv
// NOSTORE-LABEL: func.func @weight_norm_conv
// NOSTORE:         %w, %norms = aten._weight_norm_interface %v, %g {dim = 2}
func.func @weight_norm_conv(%x: tensor<1x8x9xf32>) -> tensor<1x8x9xf32> {
  %v = aten.weight "v" : tensor<8x4x5xf32>
  %g = aten.weight "g" : tensor<1x1x5xf32>
  %w, %norms = aten._weight_norm_interface %v, %g {dim = 2} : (tensor<8x4x5xf32>, tensor<1x1x5xf32>) -> (tensor<8x4x5xf32>, tensor<1x1x5xf32>)
  %conv = aten.conv1d %x, %w, none {padding = [2], groups = 2} : (tensor<1x8x9xf32>, tensor<8x4x5xf32>) -> tensor<1x8x9xf32>
  func.return %conv : tensor<1x8x9xf32>
}
