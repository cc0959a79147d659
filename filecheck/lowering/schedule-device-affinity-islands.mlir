// RUN: forge-opt %s -p schedule-device-affinity | filecheck %s
// RUN: forge-opt %s -p schedule-device-affinity,schedule-device-affinity | filecheck %s --check-prefix=AGAIN

// RoBERTa's position ids: host integer work (compare, cumsum, add) with two npu converts in between,
// which only move data (a mask to integers, i32 to i64): 5 transitions in program order. Each
// convert is an island whose producer and consumer run on the host, so it moves to the cpu (the
// host moves the same bytes the two transfers would); the embedding gather and the linear, which
// read npu data, stay: 1 transition. The weight stays on the npu (an npu op reads it); the constant
// the integer add reads stays on the cpu.

// CHECK: builtin.module attributes {npuir.schedule = {transitions_before = 5 : i64, transitions_after = 1 : i64, moved_to_cpu = 2 : i64}}
// CHECK-LABEL: func.func @positions
// CHECK-NEXT:   %[[IDS:.*]] = npuir.input cpu {index = 0, vreg = 0}
// CHECK-NEXT:   %pad = npuir.constant cpu {value = dense<1> : tensor<i64>, vreg = 1}
// CHECK-NEXT:   %wpe = npuir.weight npu {name = "wpe", vreg = 2}
// CHECK-NEXT:   %w = npuir.weight npu {name = "w", vreg = 3}
// CHECK-NEXT:   %mask = npuir.compare cpu %[[IDS]], %pad {kind = ne, vreg = 4}
// CHECK-NEXT:   %mask32 = npuir.convert cpu %mask {vreg = 5}
// CHECK-NEXT:   %run = npuir.cumsum cpu %mask32 {axis = 1, vreg = 6}
// CHECK-NEXT:   %run64 = npuir.convert cpu %run {vreg = 7}
// CHECK-NEXT:   %pos = npuir.binary cpu %run64, %pad {kind = add, vreg = 8}
// CHECK-NEXT:   %emb = npuir.gather npu %wpe, %pos {axis = 0, vreg = 9}
// CHECK-NEXT:   %out = npuir.linear npu %emb, %w {vreg = 10}
// CHECK-NEXT:   func.return %out

// AGAIN: builtin.module attributes {npuir.schedule = {transitions_before = 1 : i64, transitions_after = 1 : i64, moved_to_cpu = 0 : i64}}
func.func @positions(%ids: tensor<1x6xi64>) -> tensor<1x6x8xf32> {
  %ids0 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x6xi64>
  %pad = npuir.constant cpu {value = dense<1> : tensor<i64>, vreg = 1} : tensor<i64>
  %wpe = npuir.weight npu {name = "wpe", vreg = 2} : tensor<16x8xf32>
  %w = npuir.weight npu {name = "w", vreg = 3} : tensor<8x8xf32>
  %mask = npuir.compare cpu %ids0, %pad {kind = ne, vreg = 4} : (tensor<1x6xi64>, tensor<i64>) -> tensor<1x6xi1>
  %mask32 = npuir.convert npu %mask {vreg = 5} : (tensor<1x6xi1>) -> tensor<1x6xi32>
  %run = npuir.cumsum cpu %mask32 {axis = 1, vreg = 6} : (tensor<1x6xi32>) -> tensor<1x6xi32>
  %run64 = npuir.convert npu %run {vreg = 7} : (tensor<1x6xi32>) -> tensor<1x6xi64>
  %pos = npuir.binary cpu %run64, %pad {kind = add, vreg = 8} : (tensor<1x6xi64>, tensor<i64>) -> tensor<1x6xi64>
  %emb = npuir.gather npu %wpe, %pos {axis = 0, vreg = 9} : (tensor<16x8xf32>, tensor<1x6xi64>) -> tensor<1x6x8xf32>
  %out = npuir.linear npu %emb, %w {vreg = 10} : (tensor<1x6x8xf32>, tensor<8x8xf32>) -> tensor<1x6x8xf32>
  func.return %out : tensor<1x6x8xf32>
}
