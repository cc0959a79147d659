// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s

// The two `aten` ops that are not ATen overloads: `aten.weight` names a WeightStore entry (no
// data in the IR) and `aten.constant` holds a small dense value whose type is the result type.

// CHECK-LABEL: func.func @weights()
func.func @weights() -> (tensor<512x64xf32>, tensor<64xf32>, tensor<8xi64>) {
  // CHECK-NEXT: %wte = aten.weight "hf.transformer.wte.weight" : tensor<512x64xf32>
  // CHECK-NEXT: %ln = aten.weight "hf.transformer.h.0.ln_1.weight" attributes {tied_to = "x"} : tensor<64xf32>
  // CHECK-NEXT: %pos = aten.weight "buffers/position_ids \22quoted\22" : tensor<8xi64>
  %wte = aten.weight "hf.transformer.wte.weight" : tensor<512x64xf32>
  %ln = aten.weight "hf.transformer.h.0.ln_1.weight" attributes {tied_to = "x"} : tensor<64xf32>
  %pos = aten.weight "buffers/position_ids \"quoted\"" : tensor<8xi64>
  func.return %wte, %ln, %pos : tensor<512x64xf32>, tensor<64xf32>, tensor<8xi64>
}

// CHECK-LABEL: func.func @constants()
func.func @constants() {
  // Floats (splat and elementwise), integers (i64, i32, negative), booleans, rank 0.
  // CHECK-NEXT: %half = aten.constant dense<5.000000e-01> : tensor<2x2xf32>
  // CHECK-NEXT: %scale = aten.constant dense<[1.000000e+00, -2.500000e-01, 1.000000e+30]> : tensor<3xf32>
  // CHECK-NEXT: %h = aten.constant dense<1.500000e+00> : tensor<2xf16>
  // CHECK-NEXT: %ids = aten.constant dense<[0, -1, 9223372036854775807]> : tensor<3xi64>
  // CHECK-NEXT: %small = aten.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  // CHECK-NEXT: %mask = aten.constant dense<[true, false, true]> : tensor<3xi1>
  // CHECK-NEXT: %all = aten.constant dense<true> : tensor<4x4xi1>
  // CHECK-NEXT: %eps = aten.constant dense<1.000000e-05> : tensor<f32>
  // CHECK-NEXT: %n = aten.constant dense<-7> : tensor<i64>
  %half = aten.constant dense<0.5> : tensor<2x2xf32>
  %scale = aten.constant dense<[1.0, -0.25, 1.0e+30]> : tensor<3xf32>
  %h = aten.constant dense<1.5> : tensor<2xf16>
  %ids = aten.constant dense<[0, -1, 9223372036854775807]> : tensor<3xi64>
  %small = aten.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %mask = aten.constant dense<[true, false, true]> : tensor<3xi1>
  %all = aten.constant dense<true> : tensor<4x4xi1>
  %eps = aten.constant dense<1.0e-05> : tensor<f32>
  %n = aten.constant dense<-7> : tensor<i64>
  // Constants and weights feed schema ops like any other value.
  // CHECK-NEXT: %add = aten.add.Tensor %half, %half : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  // CHECK-NEXT: %ws = aten.where.self %all, %eps, %eps : (tensor<4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<4x4xf32>
  %add = aten.add.Tensor %half, %half : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %ws = aten.where.self %all, %eps, %eps : (tensor<4x4xi1>, tensor<f32>, tensor<f32>) -> tensor<4x4xf32>
  func.return
}
