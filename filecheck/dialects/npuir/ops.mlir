// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s

// Every npuir op in its custom syntax; both round trips must print the same text.

// CHECK-LABEL: func.func @sources
func.func @sources() -> (tensor<1x8xi64>, tensor<16x32xf32>, tensor<2xf32>) {
  // CHECK-NEXT: %ids = npuir.input cpu {index = 0, vreg = 0} : tensor<1x8xi64>
  // CHECK-NEXT: %wte = npuir.weight npu {name = "transformer.wte.weight", vreg = 1} : tensor<16x32xf32>
  // CHECK-NEXT: %c = npuir.constant cpu {value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>, vreg = 2} : tensor<2xf32>
  %ids = npuir.input cpu {index = 0, vreg = 0} : tensor<1x8xi64>
  %wte = npuir.weight npu {name = "transformer.wte.weight", vreg = 1} : tensor<16x32xf32>
  %c = npuir.constant cpu {value = dense<[1.0, 2.0]> : tensor<2xf32>, vreg = 2} : tensor<2xf32>
  func.return %ids, %wte, %c : tensor<1x8xi64>, tensor<16x32xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @compute
func.func @compute(%x: tensor<1x128x768xf32>, %w: tensor<3072x768xf32>, %b: tensor<3072xf32>,
                   %wt: tensor<768x3072xf32>, %q: tensor<1x8x128x64xf32>, %kv: tensor<1x2x128x64xf32>,
                   %mask: tensor<1x1x128x128xi1>, %g: tensor<768xf32>, %i: tensor<1x128xi64>) {
  // CHECK-NEXT: %mm = npuir.matmul npu %q, %q {transpose_b = true, vreg = 10} : (tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>) -> tensor<1x8x128x128xf32>
  %mm = npuir.matmul npu %q, %q {transpose_b = true, vreg = 10} : (tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>) -> tensor<1x8x128x128xf32>
  // CHECK-NEXT: %lin = npuir.linear npu %x, %w, %b {activation = gelu_tanh, vreg = 11} : (tensor<1x128x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<1x128x3072xf32>
  %lin = npuir.linear npu %x, %w, %b {activation = gelu_tanh, vreg = 11} : (tensor<1x128x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<1x128x3072xf32>
  // CHECK-NEXT: %conv1d = npuir.linear npu %x, %wt {transpose_w = false, vreg = 12} : (tensor<1x128x768xf32>, tensor<768x3072xf32>) -> tensor<1x128x3072xf32>
  %conv1d = npuir.linear npu %x, %wt {activation = none, transpose_w = false, vreg = 12} : (tensor<1x128x768xf32>, tensor<768x3072xf32>) -> tensor<1x128x3072xf32>
  // CHECK-NEXT: %mlp = npuir.gated_mlp npu %x, %w, %w {vreg = 13} : (tensor<1x128x768xf32>, tensor<3072x768xf32>, tensor<3072x768xf32>) -> tensor<1x128x3072xf32>
  %mlp = npuir.gated_mlp npu %x, %w, %w {activation = silu, vreg = 13} : (tensor<1x128x768xf32>, tensor<3072x768xf32>, tensor<3072x768xf32>) -> tensor<1x128x3072xf32>
  // CHECK-NEXT: %att = npuir.sdpa npu %q, %kv, %kv {scale = 1.250000e-01, is_causal = true, vreg = 14} : (tensor<1x8x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>) -> tensor<1x8x128x64xf32>
  %att = npuir.sdpa npu %q, %kv, %kv {scale = 0.125, is_causal = true, vreg = 14} : (tensor<1x8x128x64xf32>, tensor<1x2x128x64xf32>, tensor<1x2x128x64xf32>) -> tensor<1x8x128x64xf32>
  // CHECK-NEXT: %attm = npuir.sdpa npu %q, %q, %q, %mask {vreg = 15} : (tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x1x128x128xi1>) -> tensor<1x8x128x64xf32>
  %attm = npuir.sdpa npu %q, %q, %q, %mask {vreg = 15} : (tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x8x128x64xf32>, tensor<1x1x128x128xi1>) -> tensor<1x8x128x64xf32>
  // CHECK-NEXT: %sm = npuir.softmax npu %mm {axis = 3, vreg = 16} : (tensor<1x8x128x128xf32>) -> tensor<1x8x128x128xf32>
  %sm = npuir.softmax npu %mm {axis = 3, vreg = 16} : (tensor<1x8x128x128xf32>) -> tensor<1x8x128x128xf32>
  // CHECK-NEXT: %ln = npuir.layer_norm npu %x, %g, %g {axis = 2, eps = 1.000000e-05, vreg = 17} : (tensor<1x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<1x128x768xf32>
  %ln = npuir.layer_norm npu %x, %g, %g {axis = 2, eps = 1.0e-05, vreg = 17} : (tensor<1x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<1x128x768xf32>
  // CHECK-NEXT: %ln0 = npuir.layer_norm cpu %x {axis = 2, eps = 1.000000e-05, vreg = 18} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf32>
  %ln0 = npuir.layer_norm cpu %x {axis = 2, eps = 1.0e-05, vreg = 18} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf32>
  // CHECK-NEXT: %rms = npuir.rms_norm npu %x, %g {axis = 2, eps = 1.000000e-06, vreg = 19} : (tensor<1x128x768xf32>, tensor<768xf32>) -> tensor<1x128x768xf32>
  %rms = npuir.rms_norm npu %x, %g {axis = 2, eps = 1.0e-06, vreg = 19} : (tensor<1x128x768xf32>, tensor<768xf32>) -> tensor<1x128x768xf32>
  // CHECK-NEXT: %neg = npuir.unary npu %x {kind = neg, vreg = 20} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf32>
  %neg = npuir.unary npu %x {kind = neg, vreg = 20} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf32>
  // CHECK-NEXT: %rsq = npuir.unary npu %x {kind = rsqrt, vreg = 21} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf32>
  %rsq = npuir.unary npu %x {kind = rsqrt, vreg = 21} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf32>
  // CHECK-NEXT: %not = npuir.unary cpu %mask {kind = not, vreg = 22} : (tensor<1x1x128x128xi1>) -> tensor<1x1x128x128xi1>
  %not = npuir.unary cpu %mask {kind = not, vreg = 22} : (tensor<1x1x128x128xi1>) -> tensor<1x1x128x128xi1>
  // CHECK-NEXT: %add = npuir.binary npu %x, %g {kind = add, vreg = 23} : (tensor<1x128x768xf32>, tensor<768xf32>) -> tensor<1x128x768xf32>
  %add = npuir.binary npu %x, %g {kind = add, vreg = 23} : (tensor<1x128x768xf32>, tensor<768xf32>) -> tensor<1x128x768xf32>
  // CHECK-NEXT: %and = npuir.binary cpu %mask, %not {kind = and, vreg = 24} : (tensor<1x1x128x128xi1>, tensor<1x1x128x128xi1>) -> tensor<1x1x128x128xi1>
  %and = npuir.binary cpu %mask, %not {kind = and, vreg = 24} : (tensor<1x1x128x128xi1>, tensor<1x1x128x128xi1>) -> tensor<1x1x128x128xi1>
  // CHECK-NEXT: %lt = npuir.compare cpu %i, %i {kind = lt, vreg = 25} : (tensor<1x128xi64>, tensor<1x128xi64>) -> tensor<1x128xi1>
  %lt = npuir.compare cpu %i, %i {kind = lt, vreg = 25} : (tensor<1x128xi64>, tensor<1x128xi64>) -> tensor<1x128xi1>
  // CHECK-NEXT: %sel = npuir.select npu %mask, %mm, %mm {vreg = 26} : (tensor<1x1x128x128xi1>, tensor<1x8x128x128xf32>, tensor<1x8x128x128xf32>) -> tensor<1x8x128x128xf32>
  %sel = npuir.select npu %mask, %mm, %mm {vreg = 26} : (tensor<1x1x128x128xi1>, tensor<1x8x128x128xf32>, tensor<1x8x128x128xf32>) -> tensor<1x8x128x128xf32>
  // CHECK-NEXT: %mean = npuir.reduce npu %x {kind = mean, axes = [2], keepdims = true, vreg = 27} : (tensor<1x128x768xf32>) -> tensor<1x128x1xf32>
  %mean = npuir.reduce npu %x {kind = mean, axes = [2], keepdims = true, vreg = 27} : (tensor<1x128x768xf32>) -> tensor<1x128x1xf32>
  // CHECK-NEXT: %sum = npuir.reduce cpu %x {kind = sum, axes = [0, 2], vreg = 28} : (tensor<1x128x768xf32>) -> tensor<128xf32>
  %sum = npuir.reduce cpu %x {kind = sum, axes = [0, 2], vreg = 28} : (tensor<1x128x768xf32>) -> tensor<128xf32>
  // CHECK-NEXT: %cs = npuir.cumsum cpu %i {axis = 1, vreg = 29} : (tensor<1x128xi64>) -> tensor<1x128xi64>
  %cs = npuir.cumsum cpu %i {axis = 1, vreg = 29} : (tensor<1x128xi64>) -> tensor<1x128xi64>
  func.return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<1x128x768xf32>, %wte: tensor<50257x768xf32>, %ids: tensor<1x128xi64>) {
  // CHECK-NEXT: %r = npuir.reshape npu %x {vreg = 30} : (tensor<1x128x768xf32>) -> tensor<1x128x12x64xf32>
  %r = npuir.reshape npu %x {vreg = 30} : (tensor<1x128x768xf32>) -> tensor<1x128x12x64xf32>
  // CHECK-NEXT: %t = npuir.transpose npu %r {perm = [0, 2, 1, 3], vreg = 31} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
  %t = npuir.transpose npu %r {perm = [0, 2, 1, 3], vreg = 31} : (tensor<1x128x12x64xf32>) -> tensor<1x12x128x64xf32>
  // CHECK-NEXT: %bc = npuir.broadcast npu %x {vreg = 32} : (tensor<1x128x768xf32>) -> tensor<2x4x128x768xf32>
  %bc = npuir.broadcast npu %x {vreg = 32} : (tensor<1x128x768xf32>) -> tensor<2x4x128x768xf32>
  // CHECK-NEXT: %s = npuir.slice npu %x {starts = [0, 0, 0], ends = [1, 128, 768], steps = [1, 2, 3], vreg = 33} : (tensor<1x128x768xf32>) -> tensor<1x64x256xf32>
  %s = npuir.slice npu %x {starts = [0, 0, 0], ends = [1, 128, 768], steps = [1, 2, 3], vreg = 33} : (tensor<1x128x768xf32>) -> tensor<1x64x256xf32>
  // CHECK-NEXT: %cat = npuir.concat npu %x, %x, %x {axis = 2, vreg = 34} : (tensor<1x128x768xf32>, tensor<1x128x768xf32>, tensor<1x128x768xf32>) -> tensor<1x128x2304xf32>
  %cat = npuir.concat npu %x, %x, %x {axis = 2, vreg = 34} : (tensor<1x128x768xf32>, tensor<1x128x768xf32>, tensor<1x128x768xf32>) -> tensor<1x128x2304xf32>
  // CHECK-NEXT: %emb = npuir.gather cpu %wte, %ids {axis = 0, vreg = 35} : (tensor<50257x768xf32>, tensor<1x128xi64>) -> tensor<1x128x768xf32>
  %emb = npuir.gather cpu %wte, %ids {axis = 0, vreg = 35} : (tensor<50257x768xf32>, tensor<1x128xi64>) -> tensor<1x128x768xf32>
  // CHECK-NEXT: %h = npuir.convert cpu %x {vreg = 36} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf16>
  %h = npuir.convert cpu %x {vreg = 36} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf16>
  // Discardable attributes print after the properties.
  // CHECK-NEXT: %tagged = npuir.convert cpu %x {vreg = 37, fx_node = "to_1"} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf16>
  %tagged = npuir.convert cpu %x {vreg = 37, fx_node = "to_1"} : (tensor<1x128x768xf32>) -> tensor<1x128x768xf16>
  // The host fallback runs an aten op unchanged (its properties in `attrs`).
  // CHECK-NEXT: %cs = npuir.aten cpu %ids {op = "aten.cumsum", attrs = {dim = -1 : i64}, vreg = 38} : (tensor<1x128xi64>) -> tensor<1x128xi64>
  %cs = npuir.aten cpu %ids {op = "aten.cumsum", attrs = {dim = -1 : i64}, vreg = 38} : (tensor<1x128xi64>) -> tensor<1x128xi64>
  func.return
}

// Convolutions (grouped, depthwise, transposed with output_padding) and constant padding.
// CHECK-LABEL: func.func @convolution
func.func @convolution(%x: tensor<1x4x7x6xf32>, %w: tensor<6x2x3x2xf32>, %b: tensor<6xf32>, %s: tensor<1x4x5xf32>,
                       %wt: tensor<4x1x3xf32>, %dw: tensor<4x1x3x3xf32>) {
  // CHECK-NEXT: %c = npuir.conv npu %x, %w, %b {stride = [2, 2], pads_begin = [1, 0], pads_end = [1, 1], dilation = [1, 2], groups = 2, vreg = 0} : (tensor<1x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> tensor<1x6x4x3xf32>
  %c = npuir.conv npu %x, %w, %b {stride = [2, 2], pads_begin = [1, 0], pads_end = [1, 1], dilation = [1, 2], groups = 2, vreg = 0} : (tensor<1x4x7x6xf32>, tensor<6x2x3x2xf32>, tensor<6xf32>) -> tensor<1x6x4x3xf32>
  // CHECK-NEXT: %d = npuir.conv npu %x, %dw {stride = [1, 1], pads_begin = [1, 1], pads_end = [1, 1], dilation = [1, 1], groups = 4, vreg = 1} : (tensor<1x4x7x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x7x6xf32>
  %d = npuir.conv npu %x, %dw {stride = [1, 1], pads_begin = [1, 1], pads_end = [1, 1], dilation = [1, 1], groups = 4, vreg = 1} : (tensor<1x4x7x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x7x6xf32>
  // CHECK-NEXT: %t = npuir.conv cpu %s, %wt {stride = [2], pads_begin = [1], pads_end = [1], dilation = [1], groups = 2, transposed = true, output_padding = [1], vreg = 2} : (tensor<1x4x5xf32>, tensor<4x1x3xf32>) -> tensor<1x2x10xf32>
  %t = npuir.conv cpu %s, %wt {stride = [2], pads_begin = [1], pads_end = [1], dilation = [1], groups = 2, transposed = true, output_padding = [1], vreg = 2} : (tensor<1x4x5xf32>, tensor<4x1x3xf32>) -> tensor<1x2x10xf32>
  // CHECK-NEXT: %p = npuir.pad npu %x {pads_begin = [0, 0, 1, -1], pads_end = [0, 1, 0, 2], value = 5.000000e-01, vreg = 3} : (tensor<1x4x7x6xf32>) -> tensor<1x5x8x7xf32>
  %p = npuir.pad npu %x {pads_begin = [0, 0, 1, -1], pads_end = [0, 1, 0, 2], value = 5.000000e-01, vreg = 3} : (tensor<1x4x7x6xf32>) -> tensor<1x5x8x7xf32>
  // CHECK-NEXT: %z = npuir.pad cpu %s {pads_begin = [0, 0, 2], pads_end = [0, 0, 0], vreg = 4} : (tensor<1x4x5xf32>) -> tensor<1x4x7xf32>
  %z = npuir.pad cpu %s {pads_begin = [0, 0, 2], pads_end = [0, 0, 0], vreg = 4} : (tensor<1x4x5xf32>) -> tensor<1x4x7xf32>
  func.return
}

// Max and average pooling (ceil mode, dilation, asymmetric pads, 1-D unbatched).
// CHECK-LABEL: func.func @pool
func.func @pool(%x: tensor<1x3x7x6xf32>, %s: tensor<3x9xf32>) {
  // CHECK-NEXT: %m = npuir.pool npu %x {kind = "max", kernel = [3, 2], strides = [2, 2], pads_begin = [1, 0], pads_end = [1, 0], ceil_mode = true, vreg = 0} : (tensor<1x3x7x6xf32>) -> tensor<1x3x4x3xf32>
  %m = npuir.pool npu %x {kind = "max", kernel = [3, 2], strides = [2, 2], pads_begin = [1, 0], pads_end = [1, 0], ceil_mode = true, vreg = 0} : (tensor<1x3x7x6xf32>) -> tensor<1x3x4x3xf32>
  // CHECK-NEXT: %d = npuir.pool npu %s {kind = "max", kernel = [2], strides = [1], pads_begin = [0], pads_end = [1], dilations = [2], vreg = 1} : (tensor<3x9xf32>) -> tensor<3x8xf32>
  %d = npuir.pool npu %s {kind = "max", kernel = [2], strides = [1], pads_begin = [0], pads_end = [1], dilations = [2], vreg = 1} : (tensor<3x9xf32>) -> tensor<3x8xf32>
  // CHECK-NEXT: %a = npuir.pool cpu %x {kind = "avg", kernel = [3, 3], strides = [2, 2], pads_begin = [1, 1], pads_end = [1, 1], count_include_pad = false, vreg = 2} : (tensor<1x3x7x6xf32>) -> tensor<1x3x4x3xf32>
  %a = npuir.pool cpu %x {kind = "avg", kernel = [3, 3], strides = [2, 2], pads_begin = [1, 1], pads_end = [1, 1], count_include_pad = false, vreg = 2} : (tensor<1x3x7x6xf32>) -> tensor<1x3x4x3xf32>
  func.return
}

// Resampling: nearest (2-D), bilinear with align_corners, linear (1-D).
// CHECK-LABEL: func.func @resize
func.func @resize(%x: tensor<1x3x4x5xf32>, %s: tensor<2x3x5xf32>) {
  // CHECK-NEXT: %n = npuir.resize npu %x {mode = "nearest", vreg = 0} : (tensor<1x3x4x5xf32>) -> tensor<1x3x8x10xf32>
  %n = npuir.resize npu %x {mode = "nearest", vreg = 0} : (tensor<1x3x4x5xf32>) -> tensor<1x3x8x10xf32>
  // CHECK-NEXT: %b = npuir.resize npu %x {mode = "bilinear", align_corners = true, vreg = 1} : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x9xf32>
  %b = npuir.resize npu %x {mode = "bilinear", align_corners = true, vreg = 1} : (tensor<1x3x4x5xf32>) -> tensor<1x3x7x9xf32>
  // CHECK-NEXT: %l = npuir.resize cpu %s {mode = "linear", vreg = 2} : (tensor<2x3x5xf32>) -> tensor<2x3x11xf32>
  %l = npuir.resize cpu %s {mode = "linear", vreg = 2} : (tensor<2x3x5xf32>) -> tensor<2x3x11xf32>
  func.return
}
