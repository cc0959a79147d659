// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s

// The runtimes build graphs through numpy, which has no bfloat16: a bf16 value in the IR (here a
// reduction's dtype= argument) is computed by the CPU ops (forge.kinds.NPU_ELEMENTS has no bf16);
// the float32 ops around it stay on the npu.

// CHECK-LABEL: func.func @sum_in_bf16
// CHECK:        %y = npuir.binary npu %x_1, %x_1 {kind = mul, vreg = 1} : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:   %[[B:.*]] = npuir.convert cpu %y {vreg = 2} : (tensor<3x4xf32>) -> tensor<3x4xbf16>
// CHECK-NEXT:   %sum = npuir.reduce cpu %[[B]] {kind = sum, axes = [0, 1], vreg = 3} : (tensor<3x4xbf16>) -> tensor<bf16>
func.func @sum_in_bf16(%x: tensor<3x4xf32>) -> tensor<bf16> {
  %y = aten.mul.Tensor %x, %x : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %sum = aten.sum %y {dtype = bf16} : (tensor<3x4xf32>) -> tensor<bf16>
  func.return %sum : tensor<bf16>
}
