// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=greedy-by-size}",check-buffer-allocation | filecheck %s
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=greedy-by-size}" | forge-opt --print-op-generic | forge-opt -p check-buffer-allocation | filecheck %s
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=linear-scan}" | filecheck %s --check-prefix=SCAN
// RUN: not forge-opt %s -p "lower-npuir-to-buffer{planner=fifo}" --no-reproducer 2>&1 | filecheck %s --check-prefix=ERR

// The buffer planner greedy by size (a value per fixed-size buffer at a time, buffers one after
// another in the arena) against the linear scan; here it reaches the lower bound (128 + 128
// bytes): the largest sum of sizes live at one step, two 64-byte values in each function. (The
// default, the smallest of every planner, is in npuir-to-buffer-offsets.mlir.)
// CHECK: builtin.module attributes {buffer.plan = {vregs = 10 : i64, values = 8 : i64, transfers = 0 : i64, buffers = 4 : i64, peak_bytes_naive = 464 : i64, peak_bytes_planned = 256 : i64, peak_bytes_lower_bound = 256 : i64}}
// SCAN: builtin.module attributes {buffer.plan = {vregs = 10 : i64, values = 8 : i64, transfers = 0 : i64, buffers = 6 : i64, peak_bytes_naive = 464 : i64, peak_bytes_planned = 384 : i64, peak_bytes_lower_bound = 256 : i64}}
// ERR: lower-npuir-to-buffer: unknown planner 'fifo'; expected one of best, offset-by-size, offset-by-breadth, linear-scan, greedy-by-size, grow-in-order

// A chain whose returned value takes the buffer of a dead value (%c died at step 3, %e is
// written at step 4): two buffers where the linear scan, which gives a returned value a fresh
// buffer, needs three.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 128>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 64>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64>
// CHECK-NEXT:   %w = buffer.weight "w" : tensor<4x4xf32>
// CHECK-NEXT:   %a = buffer.exec npu unary(%w) into %b0 {kind = exp}
// CHECK-NEXT:   %b = buffer.exec npu unary(%a) into %b1 {kind = tanh}
// CHECK-NEXT:   %c = buffer.exec npu unary(%b) into %b0 {kind = neg}
// CHECK-NEXT:   %d = buffer.exec npu unary(%c) into %b1 {kind = exp}
// CHECK-NEXT:   %e = buffer.exec npu unary(%d) into %b0 {kind = tanh}
// CHECK-NEXT:   func.return %e
func.func @chain() -> tensor<4x4xf32> {
  %w = npuir.weight npu {name = "w", vreg = 0} : tensor<4x4xf32>
  %a = npuir.unary npu %w {kind = exp, vreg = 1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = npuir.unary npu %a {kind = tanh, vreg = 2} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = npuir.unary npu %b {kind = neg, vreg = 3} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %d = npuir.unary npu %c {kind = exp, vreg = 4} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %e = npuir.unary npu %d {kind = tanh, vreg = 5} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %e : tensor<4x4xf32>
}

// Largest first: the two 64-byte values are placed before the 16-byte %s, which then shares the
// buffer of %out (dead before %out is written) instead of a 16-byte buffer of its own that
// neither 64-byte value could use (the linear scan: 16 + 64 + 64).
// CHECK-LABEL: func.func @grow
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 128>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 64>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64>
// CHECK-NEXT:   %w = buffer.weight "w" : tensor<4x4xf32>
// CHECK-NEXT:   %s = buffer.exec npu reduce(%w) into %b0
// CHECK-NEXT:   %big = buffer.exec npu broadcast(%s) into %b1
// CHECK-NEXT:   %out = buffer.exec npu unary(%big) into %b0 {kind = neg}
// CHECK-NEXT:   func.return %out
// SCAN-LABEL: func.func @grow
// SCAN-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
// SCAN-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 16>
// SCAN-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64>
// SCAN-NEXT:   %b2 = buffer.alloc %arena0[128] : !buffer.buf<2, npu, 64>
func.func @grow() -> tensor<4x4xf32> {
  %w = npuir.weight npu {name = "w", vreg = 0} : tensor<4x4xf32>
  %s = npuir.reduce npu %w {kind = sum, axes = [1], vreg = 1} : (tensor<4x4xf32>) -> tensor<4xf32>
  %big = npuir.broadcast npu %s {vreg = 2} : (tensor<4xf32>) -> tensor<4x4xf32>
  %out = npuir.unary npu %big {kind = neg, vreg = 3} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %out : tensor<4x4xf32>
}
