// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s

// The pooling, batch-norm and upsampling ops of the `aten` dialect in their custom syntax (absent
// optional lists such as `output_size` / `scale_factors` are None). Both round trips print this text.

// CHECK-LABEL: func.func @pooling(
func.func @pooling(%x: tensor<1x2x6x6xf32>, %s: tensor<2x3x8xf32>, %c: tensor<2xf32>) {
  // CHECK-NEXT: %bn = aten.batch_norm %x, %c, %c, %c, %c {training = false, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  %bn = aten.batch_norm %x, %c, %c, %c, %c {training = false, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  // CHECK-NEXT: %bn2 = aten.batch_norm %x, none, none, %c, %c {training = false, momentum = 0.1, eps = 0.001, cudnn_enabled = false} : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  %bn2 = aten.batch_norm %x, none, none, %c, %c {training = false, momentum = 0.1, eps = 0.001, cudnn_enabled = false} : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  // CHECK-NEXT: %mp = aten.max_pool2d %x {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], ceil_mode = true} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  %mp = aten.max_pool2d %x {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], ceil_mode = true} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  // CHECK-NEXT: %mp1 = aten.max_pool1d %s {kernel_size = [2], stride = [1], dilation = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3x6xf32>
  %mp1 = aten.max_pool1d %s {kernel_size = [2], stride = [1], dilation = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3x6xf32>
  // CHECK-NEXT: %ap = aten.avg_pool2d %x {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], ceil_mode = false, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %ap = aten.avg_pool2d %x {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], ceil_mode = false, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  // CHECK-NEXT: %ap1 = aten.avg_pool1d %s {kernel_size = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3x4xf32>
  %ap1 = aten.avg_pool1d %s {kernel_size = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %gap = aten.adaptive_avg_pool2d %x {output_size = [1, 1]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x1x1xf32>
  %gap = aten.adaptive_avg_pool2d %x {output_size = [1, 1]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x1x1xf32>
  // CHECK-NEXT: %gap1 = aten.adaptive_avg_pool1d %s {output_size = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3x2xf32>
  %gap1 = aten.adaptive_avg_pool1d %s {output_size = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3x2xf32>
  // CHECK-NEXT: %n2 = aten.upsample_nearest2d.vec %x {scale_factors = [2.0, 2.0]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x12x12xf32>
  %n2 = aten.upsample_nearest2d.vec %x {scale_factors = [2.0, 2.0]} : (tensor<1x2x6x6xf32>) -> tensor<1x2x12x12xf32>
  // CHECK-NEXT: %n1 = aten.upsample_nearest1d.vec %s {output_size = [11]} : (tensor<2x3x8xf32>) -> tensor<2x3x11xf32>
  %n1 = aten.upsample_nearest1d.vec %s {output_size = [11]} : (tensor<2x3x8xf32>) -> tensor<2x3x11xf32>
  // CHECK-NEXT: %b2 = aten.upsample_bilinear2d.vec %x {output_size = [7, 9], align_corners = true} : (tensor<1x2x6x6xf32>) -> tensor<1x2x7x9xf32>
  %b2 = aten.upsample_bilinear2d.vec %x {output_size = [7, 9], align_corners = true} : (tensor<1x2x6x6xf32>) -> tensor<1x2x7x9xf32>
  // CHECK-NEXT: %l1 = aten.upsample_linear1d.vec %s {align_corners = false, scale_factors = [2.0]} : (tensor<2x3x8xf32>) -> tensor<2x3x16xf32>
  %l1 = aten.upsample_linear1d.vec %s {align_corners = false, scale_factors = [2.0]} : (tensor<2x3x8xf32>) -> tensor<2x3x16xf32>
  // CHECK-NEXT: func.return
  func.return
}
