// RUN: forge-opt %s -p fold | filecheck %s
// RUN: forge-opt %s -p fold | forge-opt -p fold | filecheck %s

// fold removes a constant pad by zeros, and folds a symmetric zero pad of the spatial dims into
// the convolution that alone reads it (its padding grows). An asymmetric pad, a non-zero value,
// a pad with another user and a pad of the channel dim stay.
// CHECK-LABEL: func.func @conv_pads
// CHECK-NEXT:    %c1 = aten.conv2d %x, %w, none {padding = [2, 1]} : (tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x6xf32>
// CHECK-NEXT:    %c0 = aten.conv1d %s, %w1, none : (tensor<1x2x7xf32>, tensor<4x2x3xf32>) -> tensor<1x4x5xf32>
// CHECK-NEXT:    %asym = aten.constant_pad_nd %x {pad = [0, 1, 0, 1]}
// CHECK-NEXT:    %c2 = aten.conv2d %asym, %w, none {stride = [2, 2]}
// CHECK-NEXT:    %ones = aten.constant_pad_nd %x {pad = [1, 1, 1, 1], value = 1.0}
// CHECK-NEXT:    %c3 = aten.conv2d %ones, %w, none
// CHECK-NEXT:    %shared = aten.constant_pad_nd %x {pad = [1, 1, 1, 1]}
// CHECK-NEXT:    %c4 = aten.conv2d %shared, %w, none
// CHECK-NEXT:    %chan = aten.constant_pad_nd %x {pad = [0, 0, 0, 0, 1, 1]}
// CHECK-NEXT:    %c5 = aten.conv2d %chan, %w4, none
// CHECK-NEXT:    func.return %c1, %c0, %c2, %c3, %c4, %shared, %c5
func.func @conv_pads(%x: tensor<1x2x6x6xf32>, %s: tensor<1x2x7xf32>, %w: tensor<4x2x3x3xf32>, %w1: tensor<4x2x3xf32>, %w4: tensor<4x4x3x3xf32>)
    -> (tensor<1x4x8x6xf32>, tensor<1x4x5xf32>, tensor<1x4x3x3xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x2x8x8xf32>, tensor<1x4x4x4xf32>) {
  %p1 = aten.constant_pad_nd %x {pad = [1, 1, 1, 1]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x8x8xf32>
  %c1 = aten.conv2d %p1, %w, none {padding = [1, 0]} : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x6xf32>
  %p0 = aten.constant_pad_nd %s {pad = [0, 0]} : (tensor<1x2x7xf32>) -> tensor<1x2x7xf32>
  %c0 = aten.conv1d %p0, %w1, none : (tensor<1x2x7xf32>, tensor<4x2x3xf32>) -> tensor<1x4x5xf32>
  %asym = aten.constant_pad_nd %x {pad = [0, 1, 0, 1]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x7x7xf32>
  %c2 = aten.conv2d %asym, %w, none {stride = [2, 2]} : (tensor<1x2x7x7xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  %ones = aten.constant_pad_nd %x {pad = [1, 1, 1, 1], value = 1.0} : (tensor<1x2x6x6xf32>) -> tensor<1x2x8x8xf32>
  %c3 = aten.conv2d %ones, %w, none : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  %shared = aten.constant_pad_nd %x {pad = [1, 1, 1, 1]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x8x8xf32>
  %c4 = aten.conv2d %shared, %w, none : (tensor<1x2x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  %chan = aten.constant_pad_nd %x {pad = [0, 0, 0, 0, 1, 1]} : (tensor<1x2x6x6xf32>) -> tensor<1x4x6x6xf32>
  %c5 = aten.conv2d %chan, %w4, none : (tensor<1x4x6x6xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x4x4xf32>
  func.return %c1, %c0, %c2, %c3, %c4, %shared, %c5 : tensor<1x4x8x6xf32>, tensor<1x4x5xf32>, tensor<1x4x3x3xf32>, tensor<1x4x6x6xf32>, tensor<1x4x6x6xf32>, tensor<1x2x8x8xf32>, tensor<1x4x4x4xf32>
}
