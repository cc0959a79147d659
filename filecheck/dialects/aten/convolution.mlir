// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s

// The convolution and padding ops of the `aten` dialect in their custom syntax (an absent bias is
// `none`; string paddings stay strings), and Forge's fused_conv (made by fuse-ops). Both round trips print this text.

// CHECK-LABEL: func.func @convolution(
func.func @convolution(%x: tensor<1x2x5x5xf32>, %s: tensor<1x4x6xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>,
                       %w1: tensor<4x1x3xf32>, %wt: tensor<4x2x3x3xf32>) {
  // CHECK-NEXT: %c1 = aten.conv1d %s, %w1, none {padding = [1], groups = 4} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
  %c1 = aten.conv1d %s, %w1, none {padding = [1], groups = 4} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
  // CHECK-NEXT: %c1s = aten.conv1d.padding %s, %w1, none {padding = "same", groups = 4} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
  %c1s = aten.conv1d.padding %s, %w1, none {padding = "same", groups = 4} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
  // CHECK-NEXT: %c2 = aten.conv2d %x, %w, %b {stride = [2, 2], padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %c2 = aten.conv2d %x, %w, %b {stride = [2, 2], padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  // CHECK-NEXT: %c2v = aten.conv2d.padding %x, %w, %b {padding = "valid"} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %c2v = aten.conv2d.padding %x, %w, %b {padding = "valid"} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  // CHECK-NEXT: %cv = aten.convolution %x, %w, %b {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %cv = aten.convolution %x, %w, %b {stride = [1, 1], padding = [0, 0], dilation = [1, 1], transposed = false, output_padding = [0, 0], groups = 1} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  // CHECK-NEXT: %t1 = aten.conv_transpose1d %s, %w1, none {stride = [2], output_padding = [1], groups = 2} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x2x14xf32>
  %t1 = aten.conv_transpose1d %s, %w1, none {stride = [2], output_padding = [1], groups = 2} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x2x14xf32>
  // CHECK-NEXT: %t2 = aten.conv_transpose2d.input %c2, %wt, none {stride = [2, 2], padding = [1, 1]} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  %t2 = aten.conv_transpose2d.input %c2, %wt, none {stride = [2, 2], padding = [1, 1]} : (tensor<1x4x3x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  // CHECK-NEXT: %p = aten.pad %x {pad = [1, 0, 2, 1], value = -1.0} : (tensor<1x2x5x5xf32>) -> tensor<1x2x8x6xf32>
  %p = aten.pad %x {pad = [1, 0, 2, 1], value = -1.0} : (tensor<1x2x5x5xf32>) -> tensor<1x2x8x6xf32>
  // CHECK-NEXT: %pr = aten.pad %s {pad = [2, 1], mode = "reflect"} : (tensor<1x4x6xf32>) -> tensor<1x4x9xf32>
  %pr = aten.pad %s {pad = [2, 1], mode = "reflect"} : (tensor<1x4x6xf32>) -> tensor<1x4x9xf32>
  // CHECK-NEXT: %cp = aten.constant_pad_nd %s {pad = [0, -2]} : (tensor<1x4x6xf32>) -> tensor<1x4x4xf32>
  %cp = aten.constant_pad_nd %s {pad = [0, -2]} : (tensor<1x4x6xf32>) -> tensor<1x4x4xf32>
  // CHECK-NEXT: %fc = aten.fused_conv %x, %w, %b {stride = [2, 2], padding = [1, 1], dilation = [1, 1], groups = 1, activation = "silu"} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  %fc = aten.fused_conv %x, %w, %b {stride = [2, 2], padding = [1, 1], dilation = [1, 1], groups = 1, activation = "silu"} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x3x3xf32>
  func.return
}
