// RUN: forge-opt %s -p 'fuse-ops{aggressiveness=1.0}' | filecheck %s --check-prefix=ALL
// RUN: forge-opt %s -p 'fuse-ops{aggressiveness=0.5}' | filecheck %s --check-prefix=HALF
// RUN: forge-opt %s -p 'fuse-ops{aggressiveness=0.0}' | filecheck %s --check-prefix=NONE
// RUN: forge-opt %s -p 'fuse-ops{epilogues=false canonicalize-linear=false}' | filecheck %s --check-prefix=NONE

// Aggressiveness alpha: a site is fused only if the size of the tensor it writes is among the
// largest ceil(alpha * m) of the m distinct site sizes. Here the sizes are 4x64 and 4x16 (m = 2):
// alpha = 0.5 fuses the wide layer only, 1 both, 0 neither (nor do the families switched off).

// ALL-LABEL: func.func @two_layers
// ALL:         %wide = aten.fused_linear %x, %w1, %b1 {activation = "relu"}
// ALL:         %narrow = aten.fused_linear %wide, %w2, %b2 {activation = "relu"}
// ALL-NOT:     aten.relu

// HALF-LABEL: func.func @two_layers
// HALF:         %wide = aten.fused_linear %x, %w1, %b1 {activation = "relu"}
// HALF-NEXT:    %narrow = aten.linear %wide, %w2, %b2
// HALF-NEXT:    %relu2 = aten.relu %narrow

// NONE-LABEL: func.func @two_layers
// NONE-NOT:     aten.fused_linear
// NONE:         %wide = aten.linear %x, %w1, %b1
// NONE-NEXT:    %relu1 = aten.relu %wide
// NONE-NEXT:    %narrow = aten.linear %relu1, %w2, %b2
// NONE-NEXT:    %relu2 = aten.relu %narrow
func.func @two_layers(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w1 = aten.weight "fc1.weight" : tensor<64x8xf32>
  %b1 = aten.weight "fc1.bias" : tensor<64xf32>
  %w2 = aten.weight "fc2.weight" : tensor<16x64xf32>
  %b2 = aten.weight "fc2.bias" : tensor<16xf32>
  %wide = aten.linear %x, %w1, %b1 : (tensor<4x8xf32>, tensor<64x8xf32>, tensor<64xf32>) -> tensor<4x64xf32>
  %relu1 = aten.relu %wide : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %narrow = aten.linear %relu1, %w2, %b2 : (tensor<4x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %relu2 = aten.relu %narrow : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %relu2 : tensor<4x16xf32>
}
