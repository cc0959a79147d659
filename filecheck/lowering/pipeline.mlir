// RUN: forge-opt %s -p 'lower-aten-to-npuir,schedule-device-affinity,lower-npuir-to-buffer{planner=linear-scan},check-buffer-allocation' | filecheck %s
// RUN: forge-opt %s -p 'lower-aten-to-npuir{cpu-ops=gather pin-final-norm=true},schedule-device-affinity,lower-npuir-to-buffer{planner=linear-scan},check-buffer-allocation' | filecheck %s --check-prefix=PIN

// The whole lowering from forge-opt: aten -> npuir (devices, vregs) -> schedule -> buffer
// (transfers, reuse) -> checked. The integer position computation runs on the host and is
// scheduled before the npu segment (2 transitions -> 1). The transferred ids and positions are
// inputs of the npu segment (one compiled graph): they stay live to its end, so no value of the
// segment takes their buffers (%pe gets its own); buffers inside the segment are reused (%b4).
// The linear scan's buffers lie one after another, 64-byte aligned, in one arena per device.

// CHECK:      builtin.module attributes {npuir.lowering = {vregs = 16 : i64, fallbacks = 0 : i64, dropped = 0 : i64}, npuir.schedule = {transitions_before = 2 : i64, transitions_after = 1 : i64, moved_to_cpu = 0 : i64}, buffer.plan = {vregs = 16 : i64, values = 11 : i64, transfers = 2 : i64, buffers = 9 : i64, peak_bytes_naive = 1008 : i64, peak_bytes_planned = 960 : i64, peak_bytes_lower_bound = 432 : i64}}
// CHECK-NEXT:   func.func @tiny_lm(%ids: tensor<1x4xi64>) -> tensor<1x4x16xf32> {
// CHECK-NEXT:     %arena0 = buffer.arena : !buffer.arena<0, cpu, 128>
// CHECK-NEXT:     %arena1 = buffer.arena : !buffer.arena<1, npu, 832>
// CHECK-NEXT:     %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, cpu, 32>
// CHECK-NEXT:     %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, cpu, 16>
// CHECK-NEXT:     %b2 = buffer.alloc %arena1[0] : !buffer.buf<2, npu, 32>
// CHECK-NEXT:     %b3 = buffer.alloc %arena1[64] : !buffer.buf<3, npu, 16>
// CHECK-NEXT:     %b4 = buffer.alloc %arena1[128] : !buffer.buf<4, npu, 128>
// CHECK-NEXT:     %b5 = buffer.alloc %arena1[256] : !buffer.buf<5, npu, 16>
// CHECK-NEXT:     %b6 = buffer.alloc %arena1[320] : !buffer.buf<6, npu, 128>
// CHECK-NEXT:     %b7 = buffer.alloc %arena1[448] : !buffer.buf<7, npu, 128>
// CHECK-NEXT:     %b8 = buffer.alloc %arena1[576] : !buffer.buf<8, npu, 256>
// CHECK-NEXT:     %[[IDS:.*]] = buffer.input 0 : tensor<1x4xi64>
// CHECK-NEXT:     %wte = buffer.weight "wte" : tensor<16x8xf32>
// CHECK-NEXT:     %w1 = buffer.weight "fc.weight" : tensor<8x8xf32>
// CHECK-NEXT:     %bias1 = buffer.weight "fc.bias" : tensor<8xf32>
// CHECK-NEXT:     %lnw = buffer.weight "ln.weight" : tensor<8xf32>
// CHECK-NEXT:     %lnb = buffer.weight "ln.bias" : tensor<8xf32>
// CHECK-NEXT:     %pos = buffer.constant dense<[0, 1, 2, 3]> : tensor<4xi64>
// CHECK-NEXT:     %c = buffer.exec cpu cumsum(%pos) into %b0 {axis = 0} : (tensor<4xi64>) -> tensor<4xi64> in !buffer.buf<0, cpu, 32>
// CHECK-NEXT:     %cf = buffer.exec cpu convert(%c) into %b1 : (tensor<4xi64>) -> tensor<4xf32> in !buffer.buf<1, cpu, 16>
// CHECK-NEXT:     %ids_npu = buffer.transfer %[[IDS]] into %b2 : tensor<1x4xi64> in !buffer.buf<2, npu, 32>
// CHECK-NEXT:     %cf_npu = buffer.transfer %cf into %b3 : tensor<4xf32> in !buffer.buf<3, npu, 16>
// CHECK-NEXT:     %emb = buffer.exec npu gather(%wte, %ids_npu) into %b4 {axis = 0}
// CHECK-NEXT:     %pe = buffer.exec npu reshape(%cf_npu) into %b5 : (tensor<4xf32>) -> tensor<4x1xf32> in !buffer.buf<5, npu, 16>
// CHECK-NEXT:     %x = buffer.exec npu binary(%emb, %pe) into %b6 {kind = add}
// CHECK-NEXT:     %h = buffer.exec npu linear(%x, %w1, %bias1) into %b4 {activation = gelu_tanh}
// CHECK-NEXT:     %r = buffer.exec npu binary(%h, %x) into %b7 {kind = add}
// CHECK-NEXT:     %ln = buffer.exec npu layer_norm(%r, %lnw, %lnb) into %b4 {axis = 2, eps = 1.000000e-05}
// CHECK-NEXT:     %logits = buffer.exec npu linear(%ln, %wte) into %b8 : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32> in !buffer.buf<8, npu, 256>
// CHECK-NEXT:     func.return %logits : tensor<1x4x16xf32>

// Embedding and final norm pinned to the cpu: cpu, npu, cpu, npu.
// PIN:      npuir.schedule = {transitions_before = 3 : i64, transitions_after = 3 : i64, moved_to_cpu = 0 : i64}
// PIN:        %emb = buffer.exec cpu gather
// PIN-NEXT:   %c = buffer.exec cpu cumsum
// PIN-NEXT:   %cf = buffer.exec cpu convert
// PIN-NEXT:   %cf_npu = buffer.transfer %cf
// PIN-NEXT:   %emb_npu = buffer.transfer %emb
// PIN-NEXT:   %pe = buffer.exec npu reshape
// PIN-NEXT:   %x = buffer.exec npu binary
// PIN-NEXT:   %h = buffer.exec npu linear
// PIN-NEXT:   %r = buffer.exec npu binary
// PIN-NEXT:   %r_cpu = buffer.transfer %r
// PIN-NEXT:   %ln = buffer.exec cpu layer_norm(%r_cpu
// PIN-NEXT:   %ln_npu = buffer.transfer %ln
// PIN-NEXT:   %logits = buffer.exec npu linear(%ln_npu, %wte)
func.func @tiny_lm(%ids: tensor<1x4xi64>) -> tensor<1x4x16xf32> {
  %wte = aten.weight "wte" : tensor<16x8xf32>
  %w1 = aten.weight "fc.weight" : tensor<8x8xf32>
  %bias1 = aten.weight "fc.bias" : tensor<8xf32>
  %lnw = aten.weight "ln.weight" : tensor<8xf32>
  %lnb = aten.weight "ln.bias" : tensor<8xf32>
  %emb = aten.embedding %wte, %ids : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %pos = aten.arange {end = 4, dtype = i64, device = "cpu", pin_memory = false} : () -> tensor<4xi64>
  %c = aten.cumsum %pos {dim = 0} : (tensor<4xi64>) -> tensor<4xi64>
  %cf = aten.to.dtype %c {dtype = f32} : (tensor<4xi64>) -> tensor<4xf32>
  %pe = aten.unsqueeze %cf {dim = -1} : (tensor<4xf32>) -> tensor<4x1xf32>
  %x = aten.add.Tensor %emb, %pe : (tensor<1x4x8xf32>, tensor<4x1xf32>) -> tensor<1x4x8xf32>
  %h = aten.fused_linear %x, %w1, %bias1 {activation = "gelu_tanh"} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %r = aten.add.Tensor %h, %x : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %ln = aten.layer_norm %r, %lnw, %lnb {normalized_shape = [8]} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %logits = aten.linear %ln, %wte, none : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  func.return %logits : tensor<1x4x16xf32>
}
