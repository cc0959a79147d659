// RUN: forge-opt %s -p dce | filecheck %s
// RUN: forge-opt %s -p dce | forge-opt -p dce | filecheck %s

// ----- unused pure ops go, in one sweep (chains too); used ones and the results stay -----

// CHECK-LABEL: func.func @dead_chain
// CHECK-NEXT:    %live = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %live
func.func @dead_chain(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %w = aten.weight "unused.weight" : tensor<3x3xf32>
  %a = aten.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %b = aten.mm %a, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
  %c = aten.neg %b : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %live = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %live : tensor<2x3xf32>
}

// An unused result of a multi-result op keeps the op when another result is used.
// CHECK-LABEL: func.func @partly_used
// CHECK-NEXT:    %s, %s_1 = aten.split.Tensor %x {split_size = 1} : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
// CHECK-NEXT:    func.return %s_1
func.func @partly_used(%x: tensor<2x3xf32>) -> tensor<1x3xf32> {
  %s, %s_1 = aten.split.Tensor %x {split_size = 1} : (tensor<2x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xf32>)
  func.return %s_1 : tensor<1x3xf32>
}

// ----- eval-mode no-ops from torch.export -----

// CHECK-LABEL: func.func @export_noise
// CHECK-NEXT:    %y = aten.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %y
func.func @export_noise(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  aten._assert_tensor_metadata %x {dtype = f32, device = "cpu", layout = "strided"} : (tensor<2x3xf32>) -> ()
  %d = aten.dropout %x {p = 0.1, train = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %d0 = aten.dropout %d {p = 0.0, train = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %c = aten.clone %d0 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %k = aten.contiguous %c : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %a = aten.alias %k : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t = aten.detach %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %l = aten.lift_fresh_copy %t : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t1 = aten.to.dtype %l {dtype = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t2 = aten.to.dtype_layout %t1 {dtype = f32, layout = "strided", device = "cpu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t3 = aten.to.device %t2 {device = "cpu", dtype = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %t4 = aten._to_copy %t3 {dtype = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = aten.relu %t4 : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// An assert on an otherwise unused value: both go.
// CHECK-LABEL: func.func @assert_only_use
// CHECK-NEXT:    func.return %x
func.func @assert_only_use(%x: tensor<4xi64>) -> tensor<4xi64> {
  %n = aten.neg %x : (tensor<4xi64>) -> tensor<4xi64>
  aten._assert_tensor_metadata %n {dtype = i64} : (tensor<4xi64>) -> ()
  func.return %x : tensor<4xi64>
}

// ----- what must stay -----

// A real dtype conversion is a computation.
// CHECK-LABEL: func.func @real_conversion
// CHECK-NEXT:    %f = aten.to.dtype %x {dtype = f32} : (tensor<4xi64>) -> tensor<4xf32>
// CHECK-NEXT:    %h = aten._to_copy %f {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NEXT:    func.return %h
func.func @real_conversion(%x: tensor<4xi64>) -> tensor<4xf16> {
  %f = aten.to.dtype %x {dtype = f32} : (tensor<4xi64>) -> tensor<4xf32>
  %h = aten._to_copy %f {dtype = f16} : (tensor<4xf32>) -> tensor<4xf16>
  func.return %h : tensor<4xf16>
}

// Training-mode dropout is random: kept even when unused (it is not Pure).
// CHECK-LABEL: func.func @train_dropout
// CHECK-NEXT:    %d = aten.dropout %x {p = 0.5, train = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %unused = aten.dropout %x {p = 0.5, train = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %d
func.func @train_dropout(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %d = aten.dropout %x {p = 0.5, train = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %unused = aten.dropout %x {p = 0.5, train = true} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %d : tensor<2x3xf32>
}

// A move to another device is not a no-op.
// CHECK-LABEL: func.func @device_move
// CHECK-NEXT:    %m = aten.to.device %x {device = "meta", dtype = f32} : (tensor<2xf32>) -> tensor<2xf32>
// CHECK-NEXT:    func.return %m
func.func @device_move(%x: tensor<2xf32>) -> tensor<2xf32> {
  %m = aten.to.device %x {device = "meta", dtype = f32} : (tensor<2xf32>) -> tensor<2xf32>
  func.return %m : tensor<2xf32>
}

// A copy read by a view stays (eager `view` may need the copy's contiguous layout); one read by
// a reshape goes.
// CHECK-LABEL: func.func @copy_before_view
// CHECK-NEXT:    %t = aten.transpose.int %x {dim0 = 0, dim1 = 1} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %c = aten.contiguous %t : (tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %v = aten.view %c {size = [6]} : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %r = aten.reshape %t {shape = [6]} : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %s = aten.add.Tensor %v, %r : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
// CHECK-NEXT:    func.return %s
func.func @copy_before_view(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  %t = aten.transpose.int %x {dim0 = 0, dim1 = 1} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %c = aten.contiguous %t : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %v = aten.view %c {size = [6]} : (tensor<3x2xf32>) -> tensor<6xf32>
  %c2 = aten.clone %t : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %r = aten.reshape %c2 {shape = [6]} : (tensor<3x2xf32>) -> tensor<6xf32>
  %s = aten.add.Tensor %v, %r : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  func.return %s : tensor<6xf32>
}

// ----- other dialects: xDSL's `dce` is replaced, so arith must keep working -----

// CHECK-LABEL: func.func @arith
// CHECK-NEXT:    %sum = arith.addi %a, %b : i32
// CHECK-NEXT:    func.return %sum
func.func @arith(%a: i32, %b: i32) -> i32 {
  %c = arith.constant 7 : i32
  %prod = arith.muli %a, %c : i32
  %sum = arith.addi %a, %b : i32
  func.return %sum : i32
}

// A function is a symbol: unused, it stays.
// CHECK-LABEL: func.func @unused_function
// CHECK-NEXT:    func.return
func.func @unused_function() {
  %c = arith.constant 1 : i32
  func.return
}
