// RUN: forge-opt %s -p fuse-ops | filecheck %s
// RUN: forge-opt %s -p fuse-ops | forge-opt -p fuse-ops | filecheck %s
// RUN: forge-opt %s -p fuse-ops,lower-aten-to-npuir | filecheck %s --check-prefix=NPUIR

// fuse-ops on convolutions: an activation (relu, gelu, silu, sigmoid, relu6) of a conv1d / conv2d /
// convolution used only by it becomes `aten.fused_conv` named after the convolution (its bias is
// already the convolution's), which lowers to one `npuir.conv` with that activation. A convolution
// with other users, and a transposed one, keep their activation separate.

// CHECK-LABEL: func.func @conv_epilogues
// CHECK-NEXT:    %conv2d = aten.fused_conv %x, %w, %b {stride = [2, 2], padding = [1, 1], dilation = [1, 1], groups = 1, activation = "relu"} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
// CHECK-NEXT:    %conv1d = aten.fused_conv %s, %w1, none {stride = [1], padding = [1], dilation = [1], groups = 4, activation = "gelu_tanh"} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
// CHECK-NEXT:    %shared = aten.conv2d %x, %w, %b {padding = [1, 1]}
// CHECK-NEXT:    %silu = aten.silu %shared
// CHECK-NEXT:    %t = aten.convolution %shared, %wt, none
// CHECK-NEXT:    %tr = aten.relu %t
// CHECK-NEXT:    func.return %conv2d, %conv1d, %silu, %shared, %tr

// NPUIR-LABEL: func.func @conv_epilogues
// NPUIR:         %conv2d = npuir.conv npu %{{.*}}, %{{.*}}, %{{.*}} {stride = [2, 2], pads_begin = [1, 1], pads_end = [1, 1], dilation = [1, 1], activation = relu, vreg = {{[0-9]+}}}
// NPUIR-NEXT:    %conv1d = npuir.conv npu %{{.*}}, %{{.*}} {stride = [1], pads_begin = [1], pads_end = [1], dilation = [1], groups = 4, activation = gelu_tanh, vreg = {{[0-9]+}}}
func.func @conv_epilogues(%x: tensor<1x2x5x5xf32>, %s: tensor<1x4x6xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>,
                          %w1: tensor<4x1x3xf32>, %wt: tensor<4x2x3x3xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x6xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x2x5x5xf32>) {
  %conv2d = aten.conv2d %x, %w, %b {stride = [2, 2], padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %relu = aten.relu %conv2d : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %conv1d = aten.conv1d %s, %w1, none {padding = [1], groups = 4} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
  %gelu = aten.gelu %conv1d {approximate = "tanh"} : (tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %shared = aten.conv2d %x, %w, %b {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %silu = aten.silu %shared : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %t = aten.convolution %shared, %wt, none {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = true, output_padding = [0, 0], groups = 1} : (tensor<1x4x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  %tr = aten.relu %t : (tensor<1x2x5x5xf32>) -> tensor<1x2x5x5xf32>
  func.return %relu, %gelu, %silu, %shared, %tr : tensor<1x4x3x3xf32>, tensor<1x4x6xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x2x5x5xf32>
}

// A per-channel constant added to a convolution without a bias ([C, 1, 1] or [1, C, 1]) becomes
// its bias (a view to [C]); clamp / hardtanh to [0, 6] is the relu6 epilogue. Not fused: an add
// to a convolution that already has a bias, an add that broadcasts along a spatial dim, a clamp
// to another range.
// CHECK-LABEL: func.func @conv_bias_epilogues
// CHECK:         %b_vec = aten.view %b {size = [4]} : (tensor<4x1x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %conv = aten.fused_conv %x, %w, %b_vec {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1, activation = "relu6"} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
// CHECK-NEXT:    %b1_vec = aten.view %b1 {size = [4]} : (tensor<1x4x1xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %conv1d = aten.conv1d %s, %w1, %b1_vec {padding = [1], groups = 4}
// CHECK-NEXT:    %has_bias = aten.conv2d %x, %w, %cb {padding = [1, 1]}
// CHECK-NEXT:    %add2 = aten.add.Tensor %has_bias, %b
// CHECK-NEXT:    %c3 = aten.conv2d %x, %w, none {padding = [1, 1]}
// CHECK-NEXT:    %add3 = aten.add.Tensor %c3, %row
// CHECK-NEXT:    %clip = aten.clamp %add3 {min = -1.0, max = 1.0}
// CHECK-NEXT:    func.return %conv, %conv1d, %add2, %clip

// NPUIR-LABEL: func.func @conv_bias_epilogues
// NPUIR:         %conv = npuir.conv npu %{{.*}}, %{{.*}}, %{{.*}} {stride = [1, 1], pads_begin = [1, 1], pads_end = [1, 1], dilation = [1, 1], activation = relu6, vreg = {{[0-9]+}}}
// NPUIR:         %conv1d = npuir.conv npu %{{.*}}, %{{.*}}, %{{.*}} {stride = [1], pads_begin = [1], pads_end = [1], dilation = [1], groups = 4, vreg = {{[0-9]+}}}
func.func @conv_bias_epilogues(%x: tensor<1x2x5x5xf32>, %s: tensor<1x4x6xf32>) -> (tensor<1x4x5x5xf32>, tensor<1x4x6xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) {
  %w = aten.weight "w" : tensor<4x2x3x3xf32>
  %b = aten.weight "b" : tensor<4x1x1xf32>
  %w1 = aten.weight "w1" : tensor<4x1x3xf32>
  %b1 = aten.constant dense<[[[0.5], [1.0], [-1.0], [2.0]]]> : tensor<1x4x1xf32>
  %cb = aten.weight "cb" : tensor<4xf32>
  %row = aten.weight "row" : tensor<5xf32>
  %conv = aten.conv2d %x, %w, none {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  %add = aten.add.Tensor %conv, %b : (tensor<1x4x5x5xf32>, tensor<4x1x1xf32>) -> tensor<1x4x5x5xf32>
  %r6 = aten.clamp %add {min = 0.0, max = 6.0} : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %conv1d = aten.conv1d %s, %w1, none {padding = [1], groups = 4} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
  %add1 = aten.add.Tensor %b1, %conv1d : (tensor<1x4x1xf32>, tensor<1x4x6xf32>) -> tensor<1x4x6xf32>
  %has_bias = aten.conv2d %x, %w, %cb {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %add2 = aten.add.Tensor %has_bias, %b : (tensor<1x4x5x5xf32>, tensor<4x1x1xf32>) -> tensor<1x4x5x5xf32>
  %c3 = aten.conv2d %x, %w, none {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  %add3 = aten.add.Tensor %c3, %row : (tensor<1x4x5x5xf32>, tensor<5xf32>) -> tensor<1x4x5x5xf32>
  %clip = aten.clamp %add3 {min = -1.0, max = 1.0} : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  func.return %r6, %add1, %add2, %clip : tensor<1x4x5x5xf32>, tensor<1x4x6xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>
}
