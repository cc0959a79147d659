// RUN: forge-opt %s -p cse | filecheck %s
// RUN: forge-opt %s -p cse | forge-opt -p cse | filecheck %s

// ----- merged: same name, operands, properties and result types -----

// The later duplicates are replaced by the first; the now-unused copies are erased.
// CHECK-LABEL: func.func @duplicates
// CHECK-NEXT:    %a = aten.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %s = aten.softmax.int %a {dim = -1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %sum = aten.add.Tensor %s, %s : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %sum2 = aten.add.Tensor %sum, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %sum2
func.func @duplicates(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = aten.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %s = aten.softmax.int %a {dim = -1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = aten.softmax.int %b {dim = -1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sum = aten.add.Tensor %s, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %sum2 = aten.add.Tensor %sum, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %sum2 : tensor<2x3xf32>
}

// Weights with the same name, equal constants and equal factories (ops without operands).
// An op that is unused when cse reaches it is erased (as xDSL's cse does): %m1 and %c go, %c2 stays.
// CHECK-LABEL: func.func @no_operands
// CHECK-NEXT:    %w = aten.weight "scale" : tensor<3xf32>
// CHECK-NEXT:    %c2 = aten.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    %r = aten.arange {end = 3} : () -> tensor<3xi64>
// CHECK-NEXT:    %m2 = aten.mul.Tensor %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %m3 = aten.mul.Tensor %m2, %c2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %a1 = aten.add.Tensor %r, %r : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
// CHECK-NEXT:    func.return %m3, %a1
func.func @no_operands(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xi64>) {
  %w = aten.weight "scale" : tensor<3xf32>
  %w2 = aten.weight "scale" : tensor<3xf32>
  %c = aten.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %c2 = aten.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %r = aten.arange {end = 3} : () -> tensor<3xi64>
  %r2 = aten.arange {end = 3} : () -> tensor<3xi64>
  %m1 = aten.mul.Tensor %x, %w : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %m2 = aten.mul.Tensor %x, %w2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %m3 = aten.mul.Tensor %m2, %c2 : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %a1 = aten.add.Tensor %r, %r2 : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  func.return %m3, %a1 : tensor<2x3xf32>, tensor<3xi64>
}

// Properties are compared as a set: the order they were written in does not matter.
// CHECK-LABEL: func.func @property_order
// CHECK-NEXT:    %a = aten.sum.dim_IntList %x {dim = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
// CHECK-NEXT:    %s = aten.add.Tensor %a, %a
func.func @property_order(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  %a = aten.sum.dim_IntList %x {dim = [1], keepdim = true} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %b = aten.sum.dim_IntList %x {keepdim = true, dim = [1]} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %s = aten.add.Tensor %a, %b : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  func.return %s : tensor<2x1xf32>
}

// Multi-result ops merge as a whole.
// CHECK-LABEL: func.func @multi_result
// CHECK-NEXT:    %p, %p_1 = aten.split.Tensor %x {split_size = 1} : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
// CHECK-NEXT:    %s = aten.add.Tensor %p, %p_1
// CHECK-NEXT:    %t = aten.add.Tensor %s, %p_1
// CHECK-NEXT:    func.return %t
func.func @multi_result(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %p, %p_1 = aten.split.Tensor %x {split_size = 1} : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
  %q, %q_1 = aten.split.Tensor %x {split_size = 1} : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
  %s = aten.add.Tensor %p, %q_1 : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  %t = aten.add.Tensor %s, %p_1 : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<1x3xf32>
  func.return %t : tensor<1x3xf32>
}

// Other dialects' pure ops merge too.
// CHECK-LABEL: func.func @arith
// CHECK-NEXT:    %c = arith.constant 7 : i32
// CHECK-NEXT:    %m = arith.muli %a, %c : i32
// CHECK-NEXT:    %s = arith.addi %m, %m : i32
// CHECK-NEXT:    func.return %s
func.func @arith(%a: i32) -> i32 {
  %c = arith.constant 7 : i32
  %c2 = arith.constant 7 : i32
  %m = arith.muli %a, %c : i32
  %m2 = arith.muli %a, %c2 : i32
  %s = arith.addi %m, %m2 : i32
  func.return %s : i32
}

// ----- not merged -----

// Different properties, different operand order of a non-commutative op, different result types.
// CHECK-LABEL: func.func @near_duplicates
// CHECK-NEXT:    %a = aten.softmax.int %x {dim = -1} : (tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %b = aten.softmax.int %x {dim = 0} : (tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %c = aten.sub.Tensor %x, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %d = aten.sub.Tensor %y, %x : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %e = aten.add.Tensor %x, %y {alpha = 2} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %f = aten.add.Tensor %x, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %g = aten.sum.dim_IntList %x {dim = [1], keepdim = true} : (tensor<3x3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT:    %h = aten.sum.dim_IntList %x {dim = [1]} : (tensor<3x3xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %w1 = aten.weight "w1" : tensor<3xf32>
// CHECK-NEXT:    %w2 = aten.weight "w2" : tensor<3xf32>
// CHECK-NEXT:    %r1 = aten.arange {end = 3} : () -> tensor<3xi64>
// CHECK-NEXT:    %r2 = aten.arange {end = 3, dtype = i32} : () -> tensor<3xi32>
func.func @near_duplicates(%x: tensor<3x3xf32>, %y: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x1xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<3xi32>) {
  %a = aten.softmax.int %x {dim = -1} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %b = aten.softmax.int %x {dim = 0} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %c = aten.sub.Tensor %x, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %d = aten.sub.Tensor %y, %x : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %e = aten.add.Tensor %x, %y {alpha = 2} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %f = aten.add.Tensor %x, %y : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  %g = aten.sum.dim_IntList %x {dim = [1], keepdim = true} : (tensor<3x3xf32>) -> tensor<3x1xf32>
  %h = aten.sum.dim_IntList %x {dim = [1]} : (tensor<3x3xf32>) -> tensor<3xf32>
  %w1 = aten.weight "w1" : tensor<3xf32>
  %w2 = aten.weight "w2" : tensor<3xf32>
  %r1 = aten.arange {end = 3} : () -> tensor<3xi64>
  %r2 = aten.arange {end = 3, dtype = i32} : () -> tensor<3xi32>
  func.return %a, %b, %c, %d, %e, %f, %g, %h, %w1, %w2, %r1, %r2 : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x1xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi64>, tensor<3xi32>
}

// Ops with effects are never merged: training dropout (random), asserts.
// CHECK-LABEL: func.func @effects
// CHECK-NEXT:    %a = aten.dropout %x {p = 0.5, train = true} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %b = aten.dropout %x {p = 0.5, train = true} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    aten._assert_tensor_metadata %x {dtype = f32} : (tensor<4xf32>) -> ()
// CHECK-NEXT:    aten._assert_tensor_metadata %x {dtype = f32} : (tensor<4xf32>) -> ()
// CHECK-NEXT:    %s = aten.add.Tensor %a, %b
func.func @effects(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = aten.dropout %x {p = 0.5, train = true} : (tensor<4xf32>) -> tensor<4xf32>
  %b = aten.dropout %x {p = 0.5, train = true} : (tensor<4xf32>) -> tensor<4xf32>
  aten._assert_tensor_metadata %x {dtype = f32} : (tensor<4xf32>) -> ()
  aten._assert_tensor_metadata %x {dtype = f32} : (tensor<4xf32>) -> ()
  %s = aten.add.Tensor %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// Functions are isolated: equal ops in two functions stay one per function.
// CHECK-LABEL: func.func @isolated
// CHECK-NEXT:    %c = arith.constant 7 : i32
// CHECK-NEXT:    func.return %c
func.func @isolated() -> i32 {
  %c = arith.constant 7 : i32
  func.return %c : i32
}
