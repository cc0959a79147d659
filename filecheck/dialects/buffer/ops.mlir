// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s

// Every buffer op in its custom syntax; both round trips must print the same text.

// A GPT-2 style MLP block: embedding lookup on the CPU, the MLP on the NPU, buffers reused.
// CHECK-LABEL: func.func @mlp
func.func @mlp() -> tensor<1x4x8xf32> {
  // CHECK-NEXT: %b0 = buffer.alloc : !buffer.buf<0, cpu, 128>
  // CHECK-NEXT: %b1 = buffer.alloc : !buffer.buf<1, npu, 128>
  // CHECK-NEXT: %b2 = buffer.alloc : !buffer.buf<2, npu, 512>
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 128>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 128>
  %b2 = buffer.alloc : !buffer.buf<2, npu, 512>
  // CHECK-NEXT: %ids = buffer.input 0 : tensor<1x4xi64>
  // CHECK-NEXT: %wte = buffer.weight "transformer.wte.weight" : tensor<16x8xf32>
  // CHECK-NEXT: %w_fc = buffer.weight "h.0.mlp.c_fc.weight" : tensor<32x8xf32>
  // CHECK-NEXT: %w_proj = buffer.weight "h.0.mlp.c_proj.weight" : tensor<8x32xf32>
  // CHECK-NEXT: %bias = buffer.constant dense<0.000000e+00> : tensor<32xf32>
  %ids = buffer.input 0 : tensor<1x4xi64>
  %wte = buffer.weight "transformer.wte.weight" : tensor<16x8xf32>
  %w_fc = buffer.weight "h.0.mlp.c_fc.weight" : tensor<32x8xf32>
  %w_proj = buffer.weight "h.0.mlp.c_proj.weight" : tensor<8x32xf32>
  %bias = buffer.constant dense<0.0> : tensor<32xf32>
  // CHECK-NEXT: %emb = buffer.exec cpu gather(%wte, %ids) into %b0 {axis = 0} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32> in !buffer.buf<0, cpu, 128>
  %emb = buffer.exec cpu gather(%wte, %ids) into %b0 {axis = 0} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32> in !buffer.buf<0, cpu, 128>
  // CHECK-NEXT: %x = buffer.transfer %emb into %b1 : tensor<1x4x8xf32> in !buffer.buf<1, npu, 128>
  %x = buffer.transfer %emb into %b1 : tensor<1x4x8xf32> in !buffer.buf<1, npu, 128>
  // CHECK-NEXT: %h = buffer.exec npu linear(%x, %w_fc, %bias) into %b2 {activation = gelu_tanh} : (tensor<1x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<1x4x32xf32> in !buffer.buf<2, npu, 512>
  %h = buffer.exec npu linear(%x, %w_fc, %bias) into %b2 {activation = gelu_tanh} : (tensor<1x4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<1x4x32xf32> in !buffer.buf<2, npu, 512>
  // Buffer 1 is reused: %x is dead once %h is computed.
  // CHECK-NEXT: %y = buffer.exec npu linear(%h, %w_proj) into %b1 : (tensor<1x4x32xf32>, tensor<8x32xf32>) -> tensor<1x4x8xf32> in !buffer.buf<1, npu, 128>
  %y = buffer.exec npu linear(%h, %w_proj) into %b1 : (tensor<1x4x32xf32>, tensor<8x32xf32>) -> tensor<1x4x8xf32> in !buffer.buf<1, npu, 128>
  // CHECK-NEXT: %out = buffer.transfer %y into %b0 : tensor<1x4x8xf32> in !buffer.buf<0, cpu, 128>
  %out = buffer.transfer %y into %b0 : tensor<1x4x8xf32> in !buffer.buf<0, cpu, 128>
  // CHECK-NEXT: func.return %out : tensor<1x4x8xf32>
  func.return %out : tensor<1x4x8xf32>
}

// Parameters print like npuir's (enums bare, integer lists in brackets, defaults left out);
// an exec with no inputs and discardable attributes.
// CHECK-LABEL: func.func @params
func.func @params(%q: tensor<1x8x4x2xf32>, %kv: tensor<1x2x4x2xf32>, %t: tensor<2x3x4xf32>) {
  %b5 = buffer.alloc : !buffer.buf<5, npu, 256>
  // CHECK: %att = buffer.exec npu sdpa(%q, %kv, %kv) into %b5 {scale = 5.000000e-01, is_causal = true} : (tensor<1x8x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x8x4x2xf32> in !buffer.buf<5, npu, 256>
  %att = buffer.exec npu sdpa(%q, %kv, %kv) into %b5 {scale = 0.5, is_causal = true} : (tensor<1x8x4x2xf32>, tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x8x4x2xf32> in !buffer.buf<5, npu, 256>
  // CHECK-NEXT: %tr = buffer.exec npu transpose(%t) into %b5 {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32> in !buffer.buf<5, npu, 256>
  %tr = buffer.exec npu transpose(%t) into %b5 {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32> in !buffer.buf<5, npu, 256>
  // CHECK-NEXT: %red = buffer.exec npu reduce(%tr) into %b5 {kind = max, axes = [1, 2], keepdims = true, fx_node = "amax"} : (tensor<4x2x3xf32>) -> tensor<4x1x1xf32> in !buffer.buf<5, npu, 256>
  %red = buffer.exec npu reduce(%tr) into %b5 {kind = max, axes = [1, 2], keepdims = true, fx_node = "amax"} : (tensor<4x2x3xf32>) -> tensor<4x1x1xf32> in !buffer.buf<5, npu, 256>
  // CHECK-NEXT: %cat = buffer.exec npu concat(%red, %red) into %b5 {axis = 0} : (tensor<4x1x1xf32>, tensor<4x1x1xf32>) -> tensor<8x1x1xf32> in !buffer.buf<5, npu, 256>
  %cat = buffer.exec npu concat(%red, %red) into %b5 {axis = 0} : (tensor<4x1x1xf32>, tensor<4x1x1xf32>) -> tensor<8x1x1xf32> in !buffer.buf<5, npu, 256>
  func.return
}

// A state (a KV cache row update): the entry value lives in the state's buffer and the update
// writes into that same buffer, reading the value it replaces (the in-place update).
// CHECK-LABEL: func.func @state_update
func.func @state_update(%pos: tensor<1xi64>, %row: tensor<1x4xf32>) -> tensor<8x4xf32> {
  // CHECK-NEXT: %b0 = buffer.alloc : !buffer.buf<0, cpu, 128>
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 128>
  // CHECK-NEXT: %p = buffer.input 0 : tensor<1xi64>
  // CHECK-NEXT: %r = buffer.input 1 : tensor<1x4xf32>
  %p = buffer.input 0 : tensor<1xi64>
  %r = buffer.input 1 : tensor<1x4xf32>
  // CHECK-NEXT: %cache = buffer.state "cache" in %b0 : tensor<8x4xf32> in !buffer.buf<0, cpu, 128>
  %cache = buffer.state "cache" in %b0 : tensor<8x4xf32> in !buffer.buf<0, cpu, 128>
  // CHECK-NEXT: %new = buffer.exec cpu aten(%cache, %p, %r) into %b0 {op = "aten.index_put", attrs = {present = array<i64: 1>}} : (tensor<8x4xf32>, tensor<1xi64>, tensor<1x4xf32>) -> tensor<8x4xf32> in !buffer.buf<0, cpu, 128>
  %new = buffer.exec cpu aten(%cache, %p, %r) into %b0 {op = "aten.index_put", attrs = {present = array<i64: 1>}} : (tensor<8x4xf32>, tensor<1xi64>, tensor<1x4xf32>) -> tensor<8x4xf32> in !buffer.buf<0, cpu, 128>
  // CHECK-NEXT: func.return %new : tensor<8x4xf32>
  func.return %new : tensor<8x4xf32>
}

// An arena per device and buffers as views of it at byte offsets (the memory plan's placement);
// a buffer of its own (no arena) next to them.
// CHECK-LABEL: func.func @arena
func.func @arena() -> tensor<4x4xf32> {
  // CHECK-NEXT: %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
  // CHECK-NEXT: %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128> in !buffer.arena<0, npu, 192>
  // CHECK-NEXT: %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64> in !buffer.arena<0, npu, 192>
  // CHECK-NEXT: %b2 = buffer.alloc : !buffer.buf<2, cpu, 64>
  %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
  %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128> in !buffer.arena<0, npu, 192>
  %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64> in !buffer.arena<0, npu, 192>
  %b2 = buffer.alloc : !buffer.buf<2, cpu, 64>
  %w = buffer.weight "w" : tensor<4x4xf32>
  // CHECK: buffer.exec npu unary(%w) into %b1 {kind = exp} : (tensor<4x4xf32>) -> tensor<4x4xf32> in !buffer.buf<1, npu, 64>
  %y = buffer.exec npu unary(%w) into %b1 {kind = exp} : (tensor<4x4xf32>) -> tensor<4x4xf32> in !buffer.buf<1, npu, 64>
  func.return %y : tensor<4x4xf32>
}
