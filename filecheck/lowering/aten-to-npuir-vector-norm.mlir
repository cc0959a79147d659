// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s

// A norm over one element is |x| for every ord but 0, as torch's kernel gives it: no pow round trip
// (7 ** 0.001 ** 1000 is 6.99985), and ord = nan gives |x| too. Over more elements: the general form.
// CHECK-LABEL: func.func @norm_of_one_element
// CHECK:        %[[A:.*]] = npuir.unary npu %x_1 {kind = abs
// CHECK-NEXT:   %one = npuir.reshape npu %[[A]] {{.*}} : (tensor<3x1xf32>) -> tensor<3xf32>
// CHECK-NEXT:   %[[A2:.*]] = npuir.unary npu %x_1 {kind = abs
// CHECK-NEXT:   %[[P:.*]] = npuir.constant npu {value = dense<1.000000e-03>
// CHECK-NEXT:   %[[W:.*]] = npuir.binary npu %[[A2]], %[[P]] {kind = pow
// CHECK-NEXT:   %[[S:.*]] = npuir.reduce npu %[[W]] {kind = sum, axes = [0]
func.func @norm_of_one_element(%x: tensor<3x1xf32>) -> (tensor<3xf32>, tensor<1xf32>) {
  %one = aten.linalg_vector_norm %x {ord = 1.0e-03, dim = [1], keepdim = false} : (tensor<3x1xf32>) -> tensor<3xf32>
  %three = aten.linalg_vector_norm %x {ord = 1.0e-03, dim = [0], keepdim = false} : (tensor<3x1xf32>) -> tensor<1xf32>
  func.return %one, %three : tensor<3xf32>, tensor<1xf32>
}
