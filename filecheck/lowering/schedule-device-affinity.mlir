// RUN: forge-opt %s -p schedule-device-affinity | filecheck %s
// RUN: forge-opt %s -p schedule-device-affinity,schedule-device-affinity | filecheck %s --check-prefix=AGAIN

// Host-only integer work (cumsum) interleaved with npu work in program order: 6 transitions.
// The list scheduler runs the ready ops of the current device first and switches only when it
// has none left: the cpu chain first (the npu chain needs its result at the end), then the npu
// ops back to back: 1 transition. Sources move to the top; data dependences hold.

// CHECK: builtin.module attributes {npuir.schedule = {transitions_before = 6 : i64, transitions_after = 1 : i64, moved_to_cpu = 0 : i64}}
// CHECK-LABEL: func.func @interleaved
// CHECK-NEXT:   %[[X:.*]] = npuir.input cpu {index = 0, vreg = 0}
// CHECK-NEXT:   %[[P:.*]] = npuir.input cpu {index = 1, vreg = 1}
// CHECK-NEXT:   %w = npuir.weight npu {name = "w", vreg = 3}
// CHECK-NEXT:   %c1 = npuir.cumsum cpu %[[P]]
// CHECK-NEXT:   %c2 = npuir.cumsum cpu %c1
// CHECK-NEXT:   %f = npuir.convert cpu %c2
// CHECK-NEXT:   %a = npuir.unary npu %[[X]] {kind = exp, vreg = 2}
// CHECK-NEXT:   %b = npuir.linear npu %a, %w
// CHECK-NEXT:   %s = npuir.softmax npu %b
// CHECK-NEXT:   %g = npuir.reshape npu %f
// CHECK-NEXT:   %out = npuir.binary npu %s, %g {kind = mul, vreg = 10}
// CHECK-NEXT:   func.return %out

// A schedule that cannot be improved is kept as it is.
// AGAIN: builtin.module attributes {npuir.schedule = {transitions_before = 1 : i64, transitions_after = 1 : i64, moved_to_cpu = 0 : i64}}
func.func @interleaved(%x: tensor<4x8xf32>, %pos: tensor<4xi64>) -> tensor<4x8xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<4x8xf32>
  %p0 = npuir.input cpu {index = 1, vreg = 1} : tensor<4xi64>
  %a = npuir.unary npu %x0 {kind = exp, vreg = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %w = npuir.weight npu {name = "w", vreg = 3} : tensor<8x8xf32>
  %c1 = npuir.cumsum cpu %p0 {axis = 0, vreg = 4} : (tensor<4xi64>) -> tensor<4xi64>
  %b = npuir.linear npu %a, %w {vreg = 5} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %c2 = npuir.cumsum cpu %c1 {axis = 0, vreg = 6} : (tensor<4xi64>) -> tensor<4xi64>
  %s = npuir.softmax npu %b {axis = 1, vreg = 7} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %f = npuir.convert cpu %c2 {vreg = 8} : (tensor<4xi64>) -> tensor<4xf32>
  %g = npuir.reshape npu %f {vreg = 9} : (tensor<4xf32>) -> tensor<4x1xf32>
  %out = npuir.binary npu %s, %g {kind = mul, vreg = 10} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %out : tensor<4x8xf32>
}
