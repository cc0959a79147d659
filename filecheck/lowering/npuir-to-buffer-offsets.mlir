// RUN: forge-opt %s -p lower-npuir-to-buffer,check-buffer-allocation | filecheck %s
// RUN: forge-opt %s -p lower-npuir-to-buffer | forge-opt --print-op-generic | forge-opt -p check-buffer-allocation | filecheck %s
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=offset-by-breadth}",check-buffer-allocation | filecheck %s --check-prefix=BREADTH
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=greedy-by-size}" | filecheck %s --check-prefix=BUFFERS

// Offset placement: one arena per device; every planned value gets a 64-byte aligned offset in
// it, and values live at the same time never share a byte. `buffer.alloc %arena[offset]` views
// the arena; the values at one offset share that view. The default keeps the smallest plan.
// CHECK: builtin.module attributes {buffer.plan = {vregs = 6 : i64, values = 5 : i64, transfers = 0 : i64, buffers = 3 : i64, peak_bytes_naive = 336 : i64, peak_bytes_planned = 192 : i64, peak_bytes_lower_bound = 192 : i64}}
// BUFFERS: builtin.module attributes {buffer.plan = {vregs = 6 : i64, values = 5 : i64, transfers = 0 : i64, buffers = 3 : i64, peak_bytes_naive = 336 : i64, peak_bytes_planned = 256 : i64, peak_bytes_lower_bound = 192 : i64}}

// %big (128 bytes) dies at step 1; %x and %y (64 each) are then live together and both fit in
// its bytes: %x at offset 0 (in %b0, %big's view), %y at 64 (%b2, a view overlapping %b0, live
// only once %big is dead). A buffer plan holds one value per fixed-size buffer at a time, so %y
// cannot go in %big's buffer while %x is in it: greedy by size needs a third buffer after the
// other two (256 bytes); the offsets reach the lower bound, 192 bytes (%x, %y, %z live at step 4).
// The 16-byte %r takes a 64-byte slot (alignment), later %z's.
// CHECK-LABEL: func.func @split
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128> in !buffer.arena<0, npu, 192>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[128] : !buffer.buf<1, npu, 64> in !buffer.arena<0, npu, 192>
// CHECK-NEXT:   %b2 = buffer.alloc %arena0[64] : !buffer.buf<2, npu, 64> in !buffer.arena<0, npu, 192>
// CHECK-NEXT:   %w = buffer.weight "w" : tensor<4x8xf32>
// CHECK-NEXT:   %big = buffer.exec npu unary(%w) into %b0 {kind = exp}
// CHECK-NEXT:   %r = buffer.exec npu reduce(%big) into %b1 {kind = sum, axes = [1]}
// CHECK-NEXT:   %x = buffer.exec npu broadcast(%r) into %b0
// CHECK-NEXT:   %y = buffer.exec npu unary(%x) into %b2 {kind = exp}
// CHECK-NEXT:   %z = buffer.exec npu binary(%x, %y) into %b1 {kind = add}
// CHECK-NEXT:   func.return %z
// Greedy by breadth (step 4 is the widest: %x, %y, %z first) finds the same bytes here.
// BREADTH-LABEL: func.func @split
// BREADTH-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
// BREADTH-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128>
// BREADTH-NEXT:   %b1 = buffer.alloc %arena0[128] : !buffer.buf<1, npu, 64>
// BREADTH-NEXT:   %b2 = buffer.alloc %arena0[64] : !buffer.buf<2, npu, 64>
// BUFFERS-LABEL: func.func @split
// BUFFERS-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 256>
// BUFFERS-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128>
// BUFFERS-NEXT:   %b1 = buffer.alloc %arena0[128] : !buffer.buf<1, npu, 64>
// BUFFERS-NEXT:   %b2 = buffer.alloc %arena0[192] : !buffer.buf<2, npu, 64>
// BUFFERS:        %y = buffer.exec npu unary(%x) into %b2
func.func @split() -> tensor<4x4xf32> {
  %w = npuir.weight npu {name = "w", vreg = 0} : tensor<4x8xf32>
  %big = npuir.unary npu %w {kind = exp, vreg = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = npuir.reduce npu %big {kind = sum, axes = [1], vreg = 2} : (tensor<4x8xf32>) -> tensor<4xf32>
  %x = npuir.broadcast npu %r {vreg = 3} : (tensor<4xf32>) -> tensor<4x4xf32>
  %y = npuir.unary npu %x {kind = exp, vreg = 4} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %z = npuir.binary npu %x, %y {kind = add, vreg = 5} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %z : tensor<4x4xf32>
}
