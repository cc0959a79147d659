// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s
// RUN: forge-opt %s -p lower-aten-to-npuir | forge-opt --print-op-generic | forge-opt | filecheck %s

// Convolutions and constant padding: conv1d/conv2d/conv_transpose1d become npuir.conv (torch's
// symmetric padding as equal pads_begin/pads_end; a transposed one with its output_padding); aten.pad
// and constant_pad_nd become npuir.pad with per-dim pads in dim order (torch lists the last dim first;
// a negative pad crops). All run on the npu; a non-constant pad mode runs as the aten op on the cpu.

// CHECK:      builtin.module attributes {npuir.lowering = {vregs = 13 : i64, fallbacks = 1 : i64, dropped = 0 : i64}}
// CHECK-LABEL: func.func @conv_pad
// CHECK:        %pad = npuir.pad npu %x_1 {pads_begin = [0, 0, 2, 1], pads_end = [0, 0, 1, 0], value = -1.000000e+00, vreg = 6} : (tensor<1x2x5x5xf32>) -> tensor<1x2x8x6xf32>
// CHECK-NEXT:   %conv2d = npuir.conv npu %pad, %cw, %cb {stride = [2, 2], pads_begin = [1, 1], pads_end = [1, 1], dilation = [1, 1], vreg = 7} : (tensor<1x2x8x6xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x3xf32>
// CHECK-NEXT:   %convt = npuir.conv npu %s_1, %tw {stride = [2], pads_begin = [0], pads_end = [0], dilation = [1], groups = 2, transposed = true, output_padding = [1], vreg = 8} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x2x14xf32>
// CHECK-NEXT:   %dwc = npuir.conv npu %s_1, %dw {stride = [1], pads_begin = [1], pads_end = [1], dilation = [1], groups = 4, vreg = 9} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
// CHECK-NEXT:   %crop = npuir.pad npu %s_1 {pads_begin = [0, 0, 0], pads_end = [0, 0, -2], vreg = 10} : (tensor<1x4x6xf32>) -> tensor<1x4x4xf32>

// CHECK-LABEL: func.func @reflect
// CHECK:         %r = npuir.aten cpu %{{.*}} {op = "aten.pad", attrs = {pad = array<i64: 2, 1>, mode = "reflect"}, vreg = 1}
func.func @conv_pad(%x: tensor<1x2x5x5xf32>, %s: tensor<1x4x6xf32>) -> (tensor<1x4x4x3xf32>, tensor<1x2x14xf32>, tensor<1x4x6xf32>, tensor<1x4x4xf32>) {
  %cw = aten.weight "c.weight" : tensor<4x2x3x3xf32>
  %cb = aten.weight "c.bias" : tensor<4xf32>
  %tw = aten.weight "t.weight" : tensor<4x1x3xf32>
  %dw = aten.weight "dw.weight" : tensor<4x1x3xf32>
  %pad = aten.pad %x {pad = [1, 0, 2, 1], value = -1.0} : (tensor<1x2x5x5xf32>) -> tensor<1x2x8x6xf32>
  %conv2d = aten.conv2d %pad, %cw, %cb {stride = [2, 2], padding = [1, 1]} : (tensor<1x2x8x6xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x3xf32>
  %convt = aten.conv_transpose1d %s, %tw, none {stride = [2], output_padding = [1], groups = 2} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x2x14xf32>
  %dwc = aten.conv1d %s, %dw, none {padding = [1], groups = 4} : (tensor<1x4x6xf32>, tensor<4x1x3xf32>) -> tensor<1x4x6xf32>
  %crop = aten.constant_pad_nd %s {pad = [0, -2]} : (tensor<1x4x6xf32>) -> tensor<1x4x4xf32>
  func.return %conv2d, %convt, %dwc, %crop : tensor<1x4x4x3xf32>, tensor<1x2x14xf32>, tensor<1x4x6xf32>, tensor<1x4x4xf32>
}

func.func @reflect(%x: tensor<1x2x5xf32>) -> tensor<1x2x8xf32> {
  %r = aten.pad %x {pad = [2, 1], mode = "reflect"} : (tensor<1x2x5xf32>) -> tensor<1x2x8xf32>
  func.return %r : tensor<1x2x8xf32>
}
