// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=linear-scan}",check-buffer-allocation | filecheck %s
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=linear-scan}" | filecheck %s --check-prefix=PLAN
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=linear-scan}" | forge-opt --print-op-generic | forge-opt -p check-buffer-allocation | filecheck %s

// The linear scan alone (the default keeps the smallest of all planners: npuir-to-buffer-greedy.mlir,
// npuir-to-buffer-offsets.mlir). Its buffers lie one after another in one arena per device, each
// at an offset that is a multiple of 64 (so these 16- and 32-byte values plan above naive).
// PLAN: builtin.module attributes {buffer.plan = {vregs = 25 : i64, values = 22 : i64, transfers = 2 : i64, buffers = 18 : i64, peak_bytes_naive = 1024 : i64, peak_bytes_planned = 1152 : i64, peak_bytes_lower_bound = 608 : i64}}

// A chain: each value dies at its only reader, so the buffer of the value before last is free
// again: two buffers carry the whole chain. The returned value gets a buffer of its own.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 64>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64>
// CHECK-NEXT:   %b2 = buffer.alloc %arena0[128] : !buffer.buf<2, npu, 64>
// CHECK-NEXT:   %w = buffer.weight "w" : tensor<4x4xf32>
// CHECK-NEXT:   %a = buffer.exec npu unary(%w) into %b0 {kind = exp}
// CHECK-NEXT:   %b = buffer.exec npu unary(%a) into %b1 {kind = tanh}
// CHECK-NEXT:   %c = buffer.exec npu unary(%b) into %b0 {kind = neg}
// CHECK-NEXT:   %d = buffer.exec npu unary(%c) into %b1 {kind = exp}
// CHECK-NEXT:   %e = buffer.exec npu unary(%d) into %b2 {kind = tanh}
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

// A diamond: %a is read by both branches, so neither branch may take its buffer, and the two
// branches are live together until the join: three distinct buffers. Once the second branch has
// read %a, its buffer is free: the join reuses it.
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 256>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 64>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64>
// CHECK-NEXT:   %b2 = buffer.alloc %arena0[128] : !buffer.buf<2, npu, 64>
// CHECK-NEXT:   %b3 = buffer.alloc %arena0[192] : !buffer.buf<3, npu, 64>
// CHECK-NEXT:   %w = buffer.weight "w" : tensor<4x4xf32>
// CHECK-NEXT:   %a = buffer.exec npu unary(%w) into %b0 {kind = exp}
// CHECK-NEXT:   %l = buffer.exec npu unary(%a) into %b1 {kind = tanh}
// CHECK-NEXT:   %r = buffer.exec npu unary(%a) into %b2 {kind = neg}
// CHECK-NEXT:   %j = buffer.exec npu binary(%l, %r) into %b0 {kind = add}
// CHECK-NEXT:   %out = buffer.exec npu unary(%j) into %b3 {kind = exp}
func.func @diamond() -> tensor<4x4xf32> {
  %w = npuir.weight npu {name = "w", vreg = 0} : tensor<4x4xf32>
  %a = npuir.unary npu %w {kind = exp, vreg = 1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %l = npuir.unary npu %a {kind = tanh, vreg = 2} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %r = npuir.unary npu %a {kind = neg, vreg = 3} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %j = npuir.binary npu %l, %r {kind = add, vreg = 4} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %out = npuir.unary npu %j {kind = exp, vreg = 5} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %out : tensor<4x4xf32>
}

// Sizes: a free buffer that is too small is never chosen (%big needs 64 bytes while only the
// 16-byte %b0 is free: a new buffer); among free buffers that fit, the smallest wins (%v takes
// the 16-byte %b0, not a free 64-byte one).
// CHECK-LABEL: func.func @sizes
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 320>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 16>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 16>
// CHECK-NEXT:   %b2 = buffer.alloc %arena0[128] : !buffer.buf<2, npu, 64>
// CHECK-NEXT:   %b3 = buffer.alloc %arena0[192] : !buffer.buf<3, npu, 64>
// CHECK-NEXT:   %b4 = buffer.alloc %arena0[256] : !buffer.buf<4, npu, 16>
// CHECK-NEXT:   %w = buffer.weight "w" : tensor<4x4xf32>
// CHECK-NEXT:   %s = buffer.exec npu reduce(%w) into %b0
// CHECK-NEXT:   %t = buffer.exec npu unary(%s) into %b1
// CHECK-NEXT:   %big = buffer.exec npu broadcast(%t) into %b2
// CHECK-NEXT:   %u = buffer.exec npu unary(%big) into %b3
// CHECK-NEXT:   %v = buffer.exec npu reduce(%u) into %b0
// CHECK-NEXT:   %out = buffer.exec npu unary(%v) into %b4
func.func @sizes() -> tensor<4xf32> {
  %w = npuir.weight npu {name = "w", vreg = 0} : tensor<4x4xf32>
  %s = npuir.reduce npu %w {kind = sum, axes = [1], vreg = 1} : (tensor<4x4xf32>) -> tensor<4xf32>
  %t = npuir.unary npu %s {kind = exp, vreg = 2} : (tensor<4xf32>) -> tensor<4xf32>
  %big = npuir.broadcast npu %t {vreg = 3} : (tensor<4xf32>) -> tensor<4x4xf32>
  %u = npuir.unary npu %big {kind = neg, vreg = 4} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %v = npuir.reduce npu %u {kind = sum, axes = [0], vreg = 5} : (tensor<4x4xf32>) -> tensor<4xf32>
  %out = npuir.unary npu %v {kind = tanh, vreg = 6} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %out : tensor<4xf32>
}

// Device transitions: graph inputs live on the host; an npu op reading a cpu value goes through
// a transfer at the start of its segment, and later segments of that device reuse the copy.
// Weights and constants never move. Buffers are per device.
// CHECK-LABEL: func.func @transitions
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 320>
// CHECK-NEXT:   %arena1 = buffer.arena : !buffer.arena<1, cpu, 64>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 32>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 32>
// CHECK-NEXT:   %b2 = buffer.alloc %arena1[0] : !buffer.buf<2, cpu, 32>
// CHECK-NEXT:   %b3 = buffer.alloc %arena0[128] : !buffer.buf<3, npu, 32>
// CHECK-NEXT:   %b4 = buffer.alloc %arena0[192] : !buffer.buf<4, npu, 32>
// CHECK-NEXT:   %b5 = buffer.alloc %arena0[256] : !buffer.buf<5, npu, 32>
// CHECK-NEXT:   %x0 = buffer.input 0 : tensor<8xf32>
// CHECK-NEXT:   %c = buffer.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:   %x0_npu = buffer.transfer %x0 into %b0 : tensor<8xf32> in !buffer.buf<0, npu, 32>
// CHECK-NEXT:   %a = buffer.exec npu binary(%x0_npu, %c) into %b1 {kind = mul}
// CHECK-NEXT:   %h = buffer.exec cpu unary(%x0) into %b2 {kind = exp}
// CHECK-NEXT:   %h_npu = buffer.transfer %h into %b3 : tensor<8xf32> in !buffer.buf<3, npu, 32>
// CHECK-NEXT:   %y = buffer.exec npu binary(%a, %h_npu) into %b4 {kind = add}
// CHECK-NEXT:   %z = buffer.exec npu binary(%y, %x0_npu) into %b5 {kind = sub}
// CHECK-NEXT:   func.return %z
func.func @transitions(%x: tensor<8xf32>) -> tensor<8xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<8xf32>
  %c = npuir.constant npu {value = dense<2.0> : tensor<f32>, vreg = 1} : tensor<f32>
  %a = npuir.binary npu %x0, %c {kind = mul, vreg = 2} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %h = npuir.unary cpu %x0 {kind = exp, vreg = 3} : (tensor<8xf32>) -> tensor<8xf32>
  %y = npuir.binary npu %a, %h {kind = add, vreg = 4} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %z = npuir.binary npu %y, %x0 {kind = sub, vreg = 5} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %z : tensor<8xf32>
}
