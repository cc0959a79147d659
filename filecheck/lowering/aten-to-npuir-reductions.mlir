// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s

// A sum or mean of a 0-dim tensor reduces nothing, but it is no identity on floats: torch's
// accumulation starts from +0.0, so sum(-0.0) is +0.0. The lowering adds +0.0 (which keeps NaN,
// infinities and every other value); amax of a 0-dim tensor stays the tensor itself.
// CHECK-LABEL: func.func @zero_dim
// CHECK:        %[[Z:.*]] = npuir.constant npu {value = dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:   %sum = npuir.binary npu %x_1, %[[Z]] {kind = add
// CHECK-NEXT:   %mean = npuir.binary npu %x_1, %[[Z]] {kind = add
// CHECK-NOT:    npuir.reduce
// CHECK:        func.return %sum, %mean, %x_1
func.func @zero_dim(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %sum = aten.sum %x : (tensor<f32>) -> tensor<f32>
  %mean = aten.mean %x : (tensor<f32>) -> tensor<f32>
  %amax = aten.amax %x {dim = []} : (tensor<f32>) -> tensor<f32>
  func.return %sum, %mean, %amax : tensor<f32>, tensor<f32>, tensor<f32>
}

// Integers: the sum of a 0-dim tensor is the tensor.
// CHECK-LABEL: func.func @zero_dim_int
// CHECK-NOT:    npuir.binary
// CHECK:        func.return %x_1
func.func @zero_dim_int(%x: tensor<i64>) -> tensor<i64> {
  %sum = aten.sum %x : (tensor<i64>) -> tensor<i64>
  func.return %sum : tensor<i64>
}

// A mean of integers into a half type accumulates in float32, as torch's does (its sum casts first):
// int64 extremes cast to f16 first would be inf - inf = nan where torch gives 0.
// CHECK-LABEL: func.func @int_mean_to_half
// CHECK:        %[[W:.*]] = npuir.convert {{npu|cpu}} %x_1 {{.*}} : (tensor<2x3xi64>) -> tensor<2x3xf32>
// CHECK-NEXT:   %[[M:.*]] = npuir.reduce npu %[[W]] {kind = mean, axes = [0], {{.*}}} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:   %mean = npuir.convert npu %[[M]] {{.*}} : (tensor<3xf32>) -> tensor<3xf16>
// CHECK:        %[[S:.*]] = npuir.convert {{npu|cpu}} %x_1 {{.*}} : (tensor<2x3xi64>) -> tensor<2x3xf16>
// CHECK-NEXT:   %sum = npuir.reduce npu %[[S]] {kind = sum, axes = [0], {{.*}}} : (tensor<2x3xf16>) -> tensor<3xf16>
func.func @int_mean_to_half(%x: tensor<2x3xi64>) -> (tensor<3xf16>, tensor<3xf16>) {
  %mean = aten.mean.dim %x {dim = [0], dtype = f16} : (tensor<2x3xi64>) -> tensor<3xf16>
  %sum = aten.sum.dim_IntList %x {dim = [0], dtype = f16} : (tensor<2x3xi64>) -> tensor<3xf16>
  func.return %mean, %sum : tensor<3xf16>, tensor<3xf16>
}
