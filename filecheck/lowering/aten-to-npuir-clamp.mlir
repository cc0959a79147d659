// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s

// clamp and hardtanh are a max then a min with constants, which OpenVINO fuses into one Clamp; a
// Clamp refuses a NaN bound or min > max at compile time, so those (torch gives NaN, or max,
// everywhere) take the aten fallback instead.

// CHECK-LABEL: func.func @bounds
// CHECK:        %[[LO:.*]] = npuir.constant npu {value = dense<-4.000000e+00> : tensor<f32>, vreg = 1}
// CHECK-NEXT:   %[[MAX:.*]] = npuir.binary npu %x_1, %[[LO]] {kind = max, vreg = 2}
// CHECK-NEXT:   %[[HI:.*]] = npuir.constant npu {value = dense<1.000000e+00> : tensor<f32>, vreg = 3}
// CHECK-NEXT:   %clamp = npuir.binary npu %[[MAX]], %[[HI]] {kind = min, vreg = 4}
// CHECK-NEXT:   %clamp_1 = npuir.aten cpu %x_1 {op = "aten.clamp"
// CHECK-NEXT:   %hardtanh = npuir.aten cpu %x_1 {op = "aten.hardtanh"
// CHECK-NEXT:   %hardtanh_1 = npuir.aten cpu %x_1 {op = "aten.hardtanh"
func.func @bounds(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %clamp = aten.clamp %x {min = -4, max = 1.0} : (tensor<3xf32>) -> tensor<3xf32>
  %clamp_1 = aten.clamp %x {min = -4, max = nan} : (tensor<3xf32>) -> tensor<3xf32>
  %hardtanh = aten.hardtanh %x {min_val = nan, max_val = 1.0} : (tensor<3xf32>) -> tensor<3xf32>
  %hardtanh_1 = aten.hardtanh %x {min_val = 2.0, max_val = 1.0} : (tensor<3xf32>) -> tensor<3xf32>
  func.return %clamp, %clamp_1, %hardtanh, %hardtanh_1 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
