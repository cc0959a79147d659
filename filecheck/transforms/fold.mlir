// Without a weights file `aten.weight` is opaque; with one (model.mlir + model.safetensors, as
// forge-opt loads them) weights are constants too. Lines common to both runs use CHECK.
// RUN: forge-opt %s -p fold | filecheck %s --check-prefixes=CHECK,NOSTORE
// RUN: cp %s %t.mlir
// RUN: python -c "import torch; from forge.weights import WeightStore; s = WeightStore(); s.add('table', torch.arange(32.0).reshape(8, 4)); s.add('big', torch.arange(800.0).reshape(100, 8)); s.add('proj', torch.arange(128.0).reshape(8, 16)); s.add('tiny', torch.ones(2, 3)); s.save('%t.safetensors')"
// RUN: forge-opt %t.mlir -p fold | filecheck %s --check-prefixes=CHECK,STORE
// RUN: forge-opt %s -p 'fold{max-inline-elements=100}' | filecheck %s --check-prefix=INLINE100
// RUN: forge-opt %s -p fold | forge-opt -p fold | filecheck %s --check-prefixes=CHECK,NOSTORE

// ===== constant folding =====

// Factories have no operands: constant. A small result is inlined under the folded value's name.
// CHECK-LABEL: func.func @factories
// CHECK-NEXT:    %r1 = aten.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
// CHECK-NEXT:    %y = aten.mul.Tensor %x, %r1 : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
// CHECK-NEXT:    func.return %y
func.func @factories(%x: tensor<4xi64>) -> tensor<4xi64> {
  %r = aten.arange {end = 4} : () -> tensor<4xi64>
  %r1 = aten.add.Scalar %r {other = 1} : (tensor<4xi64>) -> tensor<4xi64>
  %y = aten.mul.Tensor %x, %r1 : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %y : tensor<4xi64>
}

// A causal mask the way transformers builds it (arange, comparison, new_ones, bitwise and, where).
// CHECK-LABEL: func.func @causal_mask
// CHECK-NEXT:    %mask = aten.constant dense<{{\[}}[0.000000e+00, -3.40282347e+38, -3.40282347e+38, -3.40282347e+38], [0.000000e+00, 0.000000e+00, -3.40282347e+38, -3.40282347e+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, -3.40282347e+38], [0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00]]> : tensor<4x4xf32>
// CHECK-NEXT:    %masked = aten.add.Tensor %scores, %mask : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    %p = aten.softmax.int %masked
// CHECK-NEXT:    func.return %p
func.func @causal_mask(%scores: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %q = aten.arange {end = 4} : () -> tensor<4xi64>
  %k = aten.arange {end = 4} : () -> tensor<4xi64>
  %qc = aten.unsqueeze %q {dim = 1} : (tensor<4xi64>) -> tensor<4x1xi64>
  %allowed = aten.le.Tensor %k, %qc : (tensor<4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>
  %ones = aten.new_ones %allowed {size = [], dtype = i1} : (tensor<4x4xi1>) -> tensor<i1>
  %both = aten.__and__.Tensor %ones, %allowed : (tensor<i1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %zero = aten.zeros {size = [], dtype = f32} : () -> tensor<f32>
  %mask = aten.where.ScalarOther %both, %zero {other = -3.4028234663852886e+38} : (tensor<4x4xi1>, tensor<f32>) -> tensor<4x4xf32>
  %masked = aten.add.Tensor %scores, %mask : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = aten.softmax.int %masked {dim = -1} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  func.return %p : tensor<1x1x4x4xf32>
}

// Position ids (ones, cumsum, sub) fold either way; the embedding lookup folds only when the
// table is known (a weight with a store attached).
// CHECK-LABEL: func.func @position_ids
// NOSTORE-NEXT:  %pos = aten.constant dense<{{\[}}[0, 1, 2, 3, 4, 5, 6, 7]]> : tensor<1x8xi64>
// NOSTORE-NEXT:  %table = aten.weight "table" : tensor<8x4xf32>
// NOSTORE-NEXT:  %e = aten.embedding %table, %pos : (tensor<8x4xf32>, tensor<1x8xi64>) -> tensor<1x8x4xf32>
// STORE-NEXT:    %e = aten.constant dense<{{\[\[}}[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, {{.*}}, [2.800000e+01, 2.900000e+01, 3.000000e+01, 3.100000e+01]]]> : tensor<1x8x4xf32>
// CHECK-NEXT:    %y = aten.add.Tensor %h, %e : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x4xf32>
// CHECK-NEXT:    func.return %y
func.func @position_ids(%h: tensor<1x8x4xf32>) -> tensor<1x8x4xf32> {
  %ones = aten.ones {size = [1, 8], dtype = i64} : () -> tensor<1x8xi64>
  %c = aten.cumsum %ones {dim = 1} : (tensor<1x8xi64>) -> tensor<1x8xi64>
  %pos = aten.sub.Scalar %c {other = 1} : (tensor<1x8xi64>) -> tensor<1x8xi64>
  %table = aten.weight "table" : tensor<8x4xf32>
  %e = aten.embedding %table, %pos : (tensor<8x4xf32>, tensor<1x8xi64>) -> tensor<1x8x4xf32>
  %y = aten.add.Tensor %h, %e : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x8x4xf32>
  func.return %y : tensor<1x8x4xf32>
}

// A large value (100 > 64 elements) is never inlined: it becomes a new store entry, or, with no
// store to put it in, its ops stay. max-inline-elements raises the limit.
// CHECK-LABEL: func.func @large
// NOSTORE-NEXT:  %r = aten.arange {end = 100, dtype = f32} : () -> tensor<100xf32>
// NOSTORE-NEXT:  %ramp = aten.mul.Scalar %r {other = 0.5} : (tensor<100xf32>) -> tensor<100xf32>
// STORE-NEXT:    %ramp = aten.weight "fold.ramp_0" : tensor<100xf32>
// CHECK-NOT:     aten.constant
// CHECK-NEXT:    %y = aten.add.Tensor %x, %ramp : (tensor<100xf32>, tensor<100xf32>) -> tensor<100xf32>
// CHECK-NEXT:    func.return %y
// INLINE100-LABEL: func.func @large
// INLINE100-NEXT:    %ramp = aten.constant dense<[0.000000e+00, 5.000000e-01, 1.000000e+00, {{.*}}, 4.950000e+01]> : tensor<100xf32>
// INLINE100-NEXT:    %y = aten.add.Tensor %x, %ramp
func.func @large(%x: tensor<100xf32>) -> tensor<100xf32> {
  %r = aten.arange {end = 100, dtype = f32} : () -> tensor<100xf32>
  %ramp = aten.mul.Scalar %r {other = 0.5} : (tensor<100xf32>) -> tensor<100xf32>
  %y = aten.add.Tensor %x, %ramp : (tensor<100xf32>, tensor<100xf32>) -> tensor<100xf32>
  func.return %y : tensor<100xf32>
}

// A large lookup into a weight by constant ids computes something: folded to a new weight
// (and the table, now unused, is dropped from the IR).
// CHECK-LABEL: func.func @large_lookup
// NOSTORE-NEXT:  %big = aten.weight "big" : tensor<100x8xf32>
// NOSTORE-NEXT:  %ids = aten.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : tensor<16xi64>
// NOSTORE-NEXT:  %rows = aten.embedding %big, %ids : (tensor<100x8xf32>, tensor<16xi64>) -> tensor<16x8xf32>
// STORE-NEXT:    %rows = aten.weight "fold.rows_0" : tensor<16x8xf32>
// CHECK-NEXT:    %y = aten.mul.Tensor %h, %rows
// CHECK-NEXT:    func.return %y
func.func @large_lookup(%h: tensor<16x8xf32>) -> tensor<16x8xf32> {
  %big = aten.weight "big" : tensor<100x8xf32>
  %ids = aten.arange {end = 16} : () -> tensor<16xi64>
  %rows = aten.embedding %big, %ids : (tensor<100x8xf32>, tensor<16xi64>) -> tensor<16x8xf32>
  %y = aten.mul.Tensor %h, %rows : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %y : tensor<16x8xf32>
}

// A large re-layout of a weight is not folded (that would duplicate the weight; layout decides),
// with or without a store. A tiny one is inlined.
// CHECK-LABEL: func.func @weight_relayout
// CHECK-NEXT:    %w = aten.weight "proj" : tensor<8x16xf32>
// CHECK-NEXT:    %wt = aten.t %w : (tensor<8x16xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %y = aten.mm %x, %wt : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
// NOSTORE-NEXT:  %v = aten.weight "tiny" : tensor<2x3xf32>
// NOSTORE-NEXT:  %vt = aten.t %v : (tensor<2x3xf32>) -> tensor<3x2xf32>
// STORE-NEXT:    %vt = aten.constant dense<1.000000e+00> : tensor<3x2xf32>
// CHECK-NEXT:    func.return %y, %vt
func.func @weight_relayout(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<3x2xf32>) {
  %w = aten.weight "proj" : tensor<8x16xf32>
  %wt = aten.t %w : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = aten.mm %x, %wt : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %v = aten.weight "tiny" : tensor<2x3xf32>
  %vt = aten.t %v : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return %y, %vt : tensor<4x8xf32>, tensor<3x2xf32>
}

// Broadcasting a small constant to a large shape: the expand stays, its input is folded.
// CHECK-LABEL: func.func @broadcast_constant
// CHECK-NEXT:    %r = aten.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
// CHECK-NEXT:    %e = aten.expand %r {size = [32, 4]} : (tensor<4xi64>) -> tensor<32x4xi64>
// CHECK-NEXT:    %y = aten.add.Tensor %x, %e
// CHECK-NEXT:    func.return %y
func.func @broadcast_constant(%x: tensor<32x4xi64>) -> tensor<32x4xi64> {
  %r = aten.arange {end = 4} : () -> tensor<4xi64>
  %e = aten.expand %r {size = [32, 4]} : (tensor<4xi64>) -> tensor<32x4xi64>
  %y = aten.add.Tensor %x, %e : (tensor<32x4xi64>, tensor<32x4xi64>) -> tensor<32x4xi64>
  func.return %y : tensor<32x4xi64>
}

// A large splat needs no storage: it becomes (or, as a factory, stays) an aten.full; a 1 from a
// splat factory is an identity.
// CHECK-LABEL: func.func @large_splat
// CHECK-NEXT:    %z = aten.zeros {size = [16, 16], dtype = f32} : () -> tensor<16x16xf32>
// CHECK-NEXT:    %m = aten.full {size = [16, 16], fill_value = -2.0, dtype = f32} : () -> tensor<16x16xf32>
// CHECK-NEXT:    %r = aten.maximum %x, %z
// CHECK-NEXT:    %y = aten.mul.Tensor %r, %m
// CHECK-NEXT:    %nb = aten.full {size = [16, 16], fill_value = false, dtype = i1} : () -> tensor<16x16xi1>
// CHECK-NEXT:    %w = aten.where.ScalarOther %nb, %y {other = 0.0}
// CHECK-NEXT:    func.return %w
func.func @large_splat(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %z = aten.zeros {size = [16, 16], dtype = f32} : () -> tensor<16x16xf32>
  %o = aten.ones_like %x : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %m = aten.mul.Scalar %o {other = -2.0} : (tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = aten.maximum %x, %z : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %y = aten.mul.Tensor %r, %m : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %b = aten.ones {size = [16, 16], dtype = i1} : () -> tensor<16x16xi1>
  %nb = aten.logical_not %b : (tensor<16x16xi1>) -> tensor<16x16xi1>
  %w = aten.where.ScalarOther %nb, %y {other = 0.0} : (tensor<16x16xi1>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %one = aten.ones {size = [16, 16], dtype = f32} : () -> tensor<16x16xf32>
  %u = aten.mul.Tensor %w, %one : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %u : tensor<16x16xf32>
}

// `*_like` factories are constant whatever their operand (only its type matters).
// CHECK-LABEL: func.func @like_factory
// CHECK-NEXT:    %t = aten.constant dense<3.000000e+00> : tensor<2x2xf32>
// CHECK-NEXT:    %y = aten.mul.Tensor %x, %t
// CHECK-NEXT:    func.return %y
func.func @like_factory(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %o = aten.ones_like %x : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %t = aten.mul.Scalar %o {other = 3.0} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = aten.mul.Tensor %x, %t : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// Ops with effects are never evaluated at compile time (training dropout is random).
// CHECK-LABEL: func.func @not_pure
// CHECK-NEXT:    %c = aten.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %d = aten.dropout %c {p = 0.5, train = true} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %y = aten.add.Tensor %x, %d
// CHECK-NEXT:    func.return %y
func.func @not_pure(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = aten.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %d = aten.dropout %c {p = 0.5, train = true} : (tensor<4xf32>) -> tensor<4xf32>
  %y = aten.add.Tensor %x, %d : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// ===== algebraic identities =====

// CHECK-LABEL: func.func @scalar_identities
// CHECK-NEXT:    %y = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %y
func.func @scalar_identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = aten.add.Scalar %x {other = -0.0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.sub.Scalar %a {other = 0.0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = aten.mul.Scalar %b {other = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d = aten.div.Scalar %c {other = 1.0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = aten.pow.Tensor_Scalar %d {exponent = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %f = aten.sub.Scalar %e {other = 0, alpha = 5} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = aten.relu %f : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// Adding +0.0 is no identity on floats: -0.0 + 0.0 is +0.0 (IEEE), so `x + 0`, `0 + x`, `x + 5 * 0` and
// `x - (-0.0)` stay; only adding -0.0 or subtracting +0.0 leaves every float as it is. Integers fold.
// CHECK-LABEL: func.func @plus_zero_keeps_signed_zeros
// CHECK-NEXT:    %a = aten.add.Scalar %x {other = 0}
// CHECK-NEXT:    %b = aten.add.Scalar %a {other = 0, alpha = 5}
// CHECK-NEXT:    %zero = aten.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %c = aten.add.Tensor %b, %zero
// CHECK-NEXT:    %d = aten.add.Tensor %zero, %c
// CHECK-NEXT:    %mzero = aten.constant dense<-0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %e = aten.sub.Tensor %d, %mzero
// CHECK-NEXT:    func.return %e, %n
func.func @plus_zero_keeps_signed_zeros(%x: tensor<2x3xf32>, %n: tensor<2x3xi64>) -> (tensor<2x3xf32>, tensor<2x3xi64>) {
  %a = aten.add.Scalar %x {other = 0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.add.Scalar %a {other = 0, alpha = 5} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %zero = aten.constant dense<0.0> : tensor<f32>
  %c = aten.add.Tensor %b, %zero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %d = aten.add.Tensor %zero, %c : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %mzero = aten.constant dense<-0.0> : tensor<f32>
  %e = aten.sub.Tensor %d, %mzero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %m = aten.add.Scalar %n {other = 0} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  func.return %e, %m : tensor<2x3xf32>, tensor<2x3xi64>
}

// A -0.0 splat made by a factory (aten.full, large enough to stay one) is the same identity as a -0.0
// constant, and a +0.0 one is not: the sign of a factory's fill is read (`fill or 0.0` made -0.0 a +0.0,
// and the add stayed).
// CHECK-LABEL: func.func @full_minus_zero
// CHECK-NEXT:    %pzero = aten.full {size = [16, 16], fill_value = 0.0} : () -> tensor<16x16xf32>
// CHECK-NEXT:    %b = aten.add.Tensor %x, %pzero
// CHECK-NEXT:    func.return %b
func.func @full_minus_zero(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %mzero = aten.full {size = [16, 16], fill_value = -0.0} : () -> tensor<16x16xf32>
  %a = aten.add.Tensor %x, %mzero : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  %pzero = aten.full {size = [16, 16], fill_value = 0.0} : () -> tensor<16x16xf32>
  %b = aten.add.Tensor %a, %pzero : (tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<16x16xf32>
  func.return %b : tensor<16x16xf32>
}

// Tensor forms, 0/1 on either side where that is an identity; the unused constants go too.
// CHECK-LABEL: func.func @tensor_identities
// CHECK-NEXT:    func.return %x
func.func @tensor_identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = aten.constant dense<0.0> : tensor<f32>
  %mzero = aten.constant dense<-0.0> : tensor<f32>
  %ones = aten.constant dense<1.0> : tensor<3xf32>
  %a = aten.add.Tensor %x, %mzero : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %b = aten.add.Tensor %mzero, %a : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = aten.sub.Tensor %b, %zero {alpha = 2} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %d = aten.mul.Tensor %ones, %c : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %e = aten.div.Tensor %d, %ones : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %f = aten.pow.Tensor_Tensor %e, %ones : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %f : tensor<2x3xf32>
}

// Not identities: the 1 broadcasts x to a larger shape, int + 0.0 and int / 1 promote to float,
// the constant is not all ones, the scalar is not 0, 0 + x scaled by alpha 2 is 2x.
// CHECK-LABEL: func.func @not_identities
// CHECK-NEXT:    %ones = aten.constant dense<1.000000e+00> : tensor<4x2x3xf32>
// CHECK-NEXT:    %a = aten.mul.Tensor %x, %ones : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %b = aten.add.Scalar %i {other = 0.0} : (tensor<4xi64>) -> tensor<4xf32>
// CHECK-NEXT:    %c = aten.div.Scalar %i {other = 1} : (tensor<4xi64>) -> tensor<4xf32>
// CHECK-NEXT:    %two = aten.constant dense<[1.000000e+00, 2.000000e+00, 1.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %d = aten.mul.Tensor %x, %two : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %e = aten.add.Scalar %x {other = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %zero = aten.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %f = aten.add.Tensor %zero, %x {alpha = 2} : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %a, %b, %c, %d, %e, %f
func.func @not_identities(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> (tensor<4x2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %ones = aten.constant dense<1.0> : tensor<4x2x3xf32>
  %a = aten.mul.Tensor %x, %ones : (tensor<2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %b = aten.add.Scalar %i {other = 0.0} : (tensor<4xi64>) -> tensor<4xf32>
  %c = aten.div.Scalar %i {other = 1} : (tensor<4xi64>) -> tensor<4xf32>
  %two = aten.constant dense<[1.0, 2.0, 1.0]> : tensor<3xf32>
  %d = aten.mul.Tensor %x, %two : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %e = aten.add.Scalar %x {other = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %zero = aten.constant dense<0.0> : tensor<f32>
  %f = aten.add.Tensor %zero, %x {alpha = 2} : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %a, %b, %c, %d, %e, %f : tensor<4x2x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// A stored weight of ones (a freshly initialized norm) is a parameter, not an identity.
// CHECK-LABEL: func.func @weight_of_ones
// CHECK-NEXT:    %g = aten.weight "tiny" : tensor<2x3xf32>
// CHECK-NEXT:    %y = aten.mul.Tensor %g, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %y
func.func @weight_of_ones(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %g = aten.weight "tiny" : tensor<2x3xf32>
  %y = aten.mul.Tensor %g, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -(-x) is x; a third negation stays.
// CHECK-LABEL: func.func @double_negation
// CHECK-NEXT:    %mmm = aten.neg %x : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %x, %mmm
func.func @double_negation(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %n = aten.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %nn = aten.neg %n : (tensor<4xf32>) -> tensor<4xf32>
  %m = aten.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %mm = aten.neg %m : (tensor<4xf32>) -> tensor<4xf32>
  %mmm = aten.neg %mm : (tensor<4xf32>) -> tensor<4xf32>
  func.return %nn, %mmm : tensor<4xf32>, tensor<4xf32>
}

// Same-shape views go; a view of a view reads the original; a reshape of a view too. A view of a
// reshape stays (eager view could reject the original's layout).
// CHECK-LABEL: func.func @views
// CHECK-NEXT:    %v2 = aten.view %x {size = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %v4 = aten.reshape %x {shape = [-1]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT:    %r2 = aten.reshape %x {shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %v5 = aten.view %r2 {size = [4, 6]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %x, %v2, %v4, %v5, %x
func.func @views(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<24xf32>, tensor<4x6xf32>, tensor<2x3x4xf32>) {
  %same = aten.view %x {size = [2, 3, 4]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %r = aten.reshape %same {shape = [2, -1, 4]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %v1 = aten.view %r {size = [24]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %v2 = aten.view %v1 {size = [6, 4]} : (tensor<24xf32>) -> tensor<6x4xf32>
  %v3 = aten.view %x {size = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %v4 = aten.reshape %v3 {shape = [-1]} : (tensor<6x4xf32>) -> tensor<24xf32>
  %r2 = aten.reshape %x {shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %v5 = aten.view %r2 {size = [4, 6]} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %v6 = aten.view %x {size = [24]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %back = aten.view %v6 {size = [2, 3, 4]} : (tensor<24xf32>) -> tensor<2x3x4xf32>
  func.return %r, %v2, %v4, %v5, %back : tensor<2x3x4xf32>, tensor<6x4xf32>, tensor<24xf32>, tensor<4x6xf32>, tensor<2x3x4xf32>
}

// A chain of views folds in one run even when what it reads folds after it (x + -0.0 is x): the
// reshape back to the transpose's shape is the transpose (skipping one view per visit left
// reshape(reshape(%t)) to a second fold: a hypothesis case of test_fold.py).
// CHECK-LABEL: func.func @view_chain_over_an_identity
// CHECK-NEXT:    %t = aten.transpose.int %x {dim0 = 0, dim1 = 1} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %t
func.func @view_chain_over_an_identity(%x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  %t = aten.transpose.int %x {dim0 = 0, dim1 = 1} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %a = aten.add.Scalar %t {other = -0.0} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %v = aten.reshape %a {shape = [-1]} : (tensor<2x3xf32>) -> tensor<6xf32>
  %v1 = aten.view %v {size = [2, 3]} : (tensor<6xf32>) -> tensor<2x3xf32>
  %r = aten.reshape %v1 {shape = [2, 3]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %r : tensor<2x3xf32>
}

// Transposes/permutes that compose to the identity go (negative dims normalized); transposes
// that do not cancel stay, even when the types match (square dims).
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT:    %s1 = aten.transpose.int %s {dim0 = 0, dim1 = 1} : (tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
// CHECK-NEXT:    %s2 = aten.transpose.int %s1 {dim0 = 1, dim1 = 2} : (tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
// CHECK-NEXT:    %sq = aten.transpose.int %s {dim0 = 0, dim1 = 2} : (tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
// CHECK-NEXT:    func.return %x, %x, %m, %s2, %x, %sq
func.func @transposes(%x: tensor<2x3x4xf32>, %s: tensor<3x3x3xf32>, %m: tensor<3x5xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x5xf32>, tensor<3x3x3xf32>, tensor<2x3x4xf32>, tensor<3x3x3xf32>) {
  %t1 = aten.transpose.int %x {dim0 = 0, dim1 = 2} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %t2 = aten.transpose.int %t1 {dim0 = -1, dim1 = 0} : (tensor<4x3x2xf32>) -> tensor<2x3x4xf32>
  %p1 = aten.permute %x {dims = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %p2 = aten.permute %p1 {dims = [1, 2, 0]} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  %mt = aten.t %m : (tensor<3x5xf32>) -> tensor<5x3xf32>
  %mtt = aten.t %mt : (tensor<5x3xf32>) -> tensor<3x5xf32>
  %s1 = aten.transpose.int %s {dim0 = 0, dim1 = 1} : (tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
  %s2 = aten.transpose.int %s1 {dim0 = 1, dim1 = 2} : (tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
  %same = aten.transpose.int %x {dim0 = 1, dim1 = 1} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %sq = aten.transpose.int %s {dim0 = 0, dim1 = 2} : (tensor<3x3x3xf32>) -> tensor<3x3x3xf32>
  func.return %t2, %p2, %mtt, %s2, %same, %sq : tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<3x5xf32>, tensor<3x3x3xf32>, tensor<2x3x4xf32>, tensor<3x3x3xf32>
}

// expand/slice to the same shape and `to` the same dtype go; a real expand or slice stays.
// CHECK-LABEL: func.func @same_shape
// CHECK-NEXT:    %big = aten.expand %x {size = [4, 2, 3]} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %part = aten.slice.Tensor %x {dim = 1, start = 1} : (tensor<2x3xf32>) -> tensor<2x2xf32>
// CHECK-NEXT:    func.return %x, %big, %part
func.func @same_shape(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x2xf32>) {
  %e = aten.expand %x {size = [-1, 3]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = aten.slice.Tensor %e {dim = 1, start = 0, end = 9223372036854775807} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = aten.to.dtype %s {dtype = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %big = aten.expand %x {size = [4, 2, 3]} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
  %part = aten.slice.Tensor %x {dim = 1, start = 1} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return %t, %big, %part : tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x2xf32>
}

// sdpa with a constant mask that keeps every score (BERT without padding) needs no mask; an
// all-false mask (NaN rows) and a -inf splat stay.
// CHECK-LABEL: func.func @sdpa_keep_all_mask
// CHECK-NEXT:    %none = aten.constant dense<false> : tensor<1x1x4x4xi1>
// CHECK-NEXT:    %a = aten.scaled_dot_product_attention %q, %q, %q, none : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %b = aten.scaled_dot_product_attention %q, %q, %q, none : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %c = aten.scaled_dot_product_attention %q, %q, %q, %none
// CHECK-NEXT:    func.return %a, %b, %c
func.func @sdpa_keep_all_mask(%q: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %all = aten.full {size = [1, 1, 4, 4], fill_value = true, dtype = i1} : () -> tensor<1x1x4x4xi1>
  %shift = aten.full {size = [1, 1, 4, 4], fill_value = 3.5} : () -> tensor<1x1x4x4xf32>
  %none = aten.full {size = [1, 1, 4, 4], fill_value = false, dtype = i1} : () -> tensor<1x1x4x4xi1>
  %a = aten.scaled_dot_product_attention %q, %q, %q, %all : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32>
  %b = aten.scaled_dot_product_attention %q, %q, %q, %shift : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
  %c = aten.scaled_dot_product_attention %q, %q, %q, %none : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32>
  func.return %a, %b, %c : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}
