// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s
// RUN: forge-opt %s -p lower-aten-to-npuir | forge-opt --print-op-generic | forge-opt | filecheck %s

// Pooling and inference batch norm: eval batch_norm becomes x * alpha + beta, torch's CPU kernel's
// form, with alpha = rsqrt(var + eps) * weight and beta = bias - mean * alpha on [C, 1, 1] vectors
// (a zero variance gives nan as torch's does, not inf); max/avg pooling become npuir.pool (torch's padding on both ends);
// an adaptive average pool whose input divides its output is an average pool (here global); an
// uneven one runs on the host; integer-scale and sized upsampling become npuir.resize.

// CHECK:       builtin.module attributes {npuir.lowering = {vregs = 24 : i64, fallbacks = 1 : i64, dropped = 0 : i64}}
// CHECK-LABEL: func.func @forward
// CHECK-NEXT:  %x_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x2x6x6xf32>
// CHECK-NEXT:  %w = npuir.weight npu {name = "bn.weight", vreg = 1} : tensor<2xf32>
// CHECK-NEXT:  %b = npuir.weight npu {name = "bn.bias", vreg = 2} : tensor<2xf32>
// CHECK-NEXT:  %mean = npuir.weight npu {name = "bn.running_mean", vreg = 3} : tensor<2xf32>
// CHECK-NEXT:  %var = npuir.weight npu {name = "bn.running_var", vreg = 4} : tensor<2xf32>
// CHECK-NEXT:  %0 = npuir.constant npu {value = dense<1.000000e-05> : tensor<f32>, vreg = 5} : tensor<f32>
// CHECK-NEXT:  %1 = npuir.reshape npu %var {vreg = 6} : (tensor<2xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %2 = npuir.binary npu %1, %0 {kind = add, vreg = 7} : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %3 = npuir.unary npu %2 {kind = rsqrt, vreg = 8} : (tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %4 = npuir.reshape npu %w {vreg = 9} : (tensor<2xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %5 = npuir.binary npu %3, %4 {kind = mul, vreg = 10} : (tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %6 = npuir.reshape npu %mean {vreg = 11} : (tensor<2xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %7 = npuir.binary npu %6, %5 {kind = mul, vreg = 12} : (tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %8 = npuir.reshape npu %b {vreg = 13} : (tensor<2xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %9 = npuir.binary npu %8, %7 {kind = sub, vreg = 14} : (tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x1xf32>
// CHECK-NEXT:  %10 = npuir.binary npu %x_1, %5 {kind = mul, vreg = 15} : (tensor<1x2x6x6xf32>, tensor<2x1x1xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:  %bn = npuir.binary npu %10, %9 {kind = add, vreg = 16} : (tensor<1x2x6x6xf32>, tensor<2x1x1xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:  %mp = npuir.pool npu %bn {kind = "max", kernel = [3, 3], strides = [2, 2], pads_begin = [1, 1], pads_end = [1, 1], ceil_mode = true, vreg = 17} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:  %gap = npuir.pool npu %mp {kind = "avg", kernel = [4, 4], strides = [4, 4], pads_begin = [0, 0], pads_end = [0, 0], vreg = 18} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
// CHECK-NEXT:  %ap = npuir.pool npu %bn {kind = "avg", kernel = [2, 2], strides = [2, 2], pads_begin = [0, 0], pads_end = [0, 0], count_include_pad = false, vreg = 19} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  %uneven = npuir.aten cpu %mp {op = "aten.adaptive_avg_pool2d", attrs = {output_size = array<i64: 3, 3>}, vreg = 20} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  %sum = npuir.binary npu %ap, %uneven {kind = add, vreg = 21} : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
// CHECK-NEXT:  %near = npuir.resize npu %ap {mode = "nearest", vreg = 22} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
// CHECK-NEXT:  %bil = npuir.resize npu %ap {mode = "bilinear", vreg = 23} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x7xf32>
// CHECK-NEXT:  func.return %gap, %sum, %mp, %near, %bil : tensor<1x2x1x1xf32>, tensor<1x2x3x3xf32>, tensor<1x2x4x4xf32>, tensor<1x2x6x6xf32>, tensor<1x2x5x7xf32>

func.func @forward(%x: tensor<1x2x6x6xf32>) -> (tensor<1x2x1x1xf32>, tensor<1x2x3x3xf32>, tensor<1x2x4x4xf32>, tensor<1x2x6x6xf32>, tensor<1x2x5x7xf32>) {
  %w = aten.weight "bn.weight" : tensor<2xf32>
  %b = aten.weight "bn.bias" : tensor<2xf32>
  %mean = aten.weight "bn.running_mean" : tensor<2xf32>
  %var = aten.weight "bn.running_var" : tensor<2xf32>
  %bn = aten.batch_norm %x, %w, %b, %mean, %var {training = false, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<1x2x6x6xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x6x6xf32>
  %mp = aten.max_pool2d %bn {kernel_size = [3, 3], stride = [2, 2], padding = [1, 1], ceil_mode = true} : (tensor<1x2x6x6xf32>) -> tensor<1x2x4x4xf32>
  %gap = aten.adaptive_avg_pool2d %mp {output_size = [1, 1]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x1x1xf32>
  %ap = aten.avg_pool2d %bn {kernel_size = [2, 2], stride = [2, 2], padding = [0, 0], ceil_mode = false, count_include_pad = false} : (tensor<1x2x6x6xf32>) -> tensor<1x2x3x3xf32>
  %uneven = aten.adaptive_avg_pool2d %mp {output_size = [3, 3]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  %sum = aten.add.Tensor %ap, %uneven : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %near = aten.upsample_nearest2d.vec %ap {scale_factors = [2.0, 2.0]} : (tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32>
  %bil = aten.upsample_bilinear2d.vec %ap {output_size = [5, 7], align_corners = false} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x7xf32>
  func.return %gap, %sum, %mp, %near, %bil : tensor<1x2x1x1xf32>, tensor<1x2x3x3xf32>, tensor<1x2x4x4xf32>, tensor<1x2x6x6xf32>, tensor<1x2x5x7xf32>
}
