// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s

// Corner cases of the `aten` custom syntax: what the parser accepts and how the printer
// normalizes it. Properties print in schema order; a property equal to its default is kept
// (only the importer leaves defaults out); numbers keep their int/float kind.

// CHECK-LABEL: func.func @properties(
func.func @properties(%x: tensor<2x3x4xf32>, %i: tensor<2x4xi64>) {
  // Schema order, whatever order the input uses; an explicit default stays.
  // CHECK-NEXT: %slice = aten.slice.Tensor %x {dim = 1, start = 0, end = 2, step = 1} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  %slice = aten.slice.Tensor %x {step = 1, end = 2, dim = 1, start = 0} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  // An integer literal for a float property prints as a float; exponents print as 1.0e-05.
  // CHECK-NEXT: %dropout = aten.dropout %x {p = 0.0, train = false} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %dropout = aten.dropout %x {p = 0, train = false} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %ln = aten.layer_norm %x, none, none {normalized_shape = [4], eps = 1.0e-05} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %ln = aten.layer_norm %x, none, none {normalized_shape = [4], eps = 1.00E-5} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // Scalar properties keep int vs float vs bool; hex integers print in decimal.
  // CHECK-NEXT: %int = aten.mul.Scalar %i {other = 16} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  // CHECK-NEXT: %float = aten.mul.Scalar %i {other = 2.0} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  // CHECK-NEXT: %bool = aten.mul.Scalar %i {other = false} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  %int = aten.mul.Scalar %i {other = 0x10} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  %float = aten.mul.Scalar %i {other = 2.0} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %bool = aten.mul.Scalar %i {other = false} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  // Special floats: inf, -inf, nan (a sign on nan is dropped), -0.0, extremes.
  // CHECK-NEXT: %inf = aten.clamp %x {min = -inf, max = inf} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %nan = aten.add.Scalar %x {other = nan, alpha = -0.0} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %tiny = aten.mul.Scalar %x {other = 5.0e-324} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %huge = aten.mul.Scalar %x {other = 1.7976931348623157e+308} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %inf = aten.clamp %x {min = -inf, max = inf} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %nan = aten.add.Scalar %x {other = -nan, alpha = -0.0} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %tiny = aten.mul.Scalar %x {other = 5.0e-324} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %huge = aten.mul.Scalar %x {other = 1.7976931348623157e+308} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // One-element and empty lists.
  // CHECK-NEXT: %flat = aten.view %x {size = [24]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  // CHECK-NEXT: %rank0 = aten.zeros {size = []} : () -> tensor<f32>
  %flat = aten.view %x {size = [ 24 ]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %rank0 = aten.zeros {size = []} : () -> tensor<f32>
  func.return
}

// CHECK-LABEL: func.func @layout(
func.func @layout(%x: tensor<3x4x5xf32>, %i: tensor<2xi64>) {
  // An op may span lines; `Tensor?[]` lists may hold several `none`.
  // CHECK-NEXT: %idx = aten.index.Tensor %x, [none, none, %i] : (tensor<3x4x5xf32>, tensor<2xi64>) -> tensor<3x4x2xf32>
  %idx = aten.index.Tensor %x,
           [none, none, %i]
         : (tensor<3x4x5xf32>, tensor<2xi64>) -> tensor<3x4x2xf32>
  // Discardable attributes print after the properties.
  // CHECK-NEXT: %noted = aten.relu %x attributes {forge.note = "keep"} : (tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  // CHECK-NEXT: %both = aten.softmax.int %x {dim = 2} attributes {forge.note = "softmax"} : (tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  %noted = aten.relu %x attributes {forge.note = "keep"} : (tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  %both = aten.softmax.int %x {dim = 2} attributes {forge.note = "softmax"} : (tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  func.return
}

// Generic form in, custom form out: operandSegmentSizes (two optional tensors) and the
// `present` mask of a `Tensor?[]` are implied by the custom syntax.
// CHECK-LABEL: func.func @generic(
func.func @generic(%x: tensor<3x4x5xf32>, %i: tensor<2xi64>, %p: tensor<4x1xi64>, %w: tensor<5xf32>) {
  // CHECK-NEXT: %diff = aten.diff %p, none, %p {dim = 0} : (tensor<4x1xi64>, tensor<4x1xi64>) -> tensor<7x1xi64>
  // CHECK-NEXT: %index = aten.index.Tensor %x, [%i, none, %i] : (tensor<3x4x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x4xf32>
  // CHECK-NEXT: %rms = aten.rms_norm %x, %w {normalized_shape = [5]} : (tensor<3x4x5xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  %diff = "aten.diff"(%p, %p) <{dim = 0 : i64, operandSegmentSizes = array<i32: 1, 0, 1>}> : (tensor<4x1xi64>, tensor<4x1xi64>) -> tensor<7x1xi64>
  %index = "aten.index.Tensor"(%x, %i, %i) <{present = array<i64: 1, 0, 1>}> : (tensor<3x4x5xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x4xf32>
  %rms = "aten.rms_norm"(%x, %w) <{normalized_shape = array<i64: 5>}> : (tensor<3x4x5xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  func.return
}
