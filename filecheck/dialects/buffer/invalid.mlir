// RUN: forge-opt %s --split-input-file --verify-diagnostics

// One case per buffer verifier error, as an expected-error annotation (--verify-diagnostics checks its
// message and line); each message names the op and the mismatch.

func.func @case0() {
  // expected-error @+1 {{buffer.input: input index -1 is negative}}
  %0 = buffer.input -1 : tensor<4xf32>
  func.return
}

// -----

func.func @case1() {
  // expected-error @+1 {{buffer.weight: weight name is empty}}
  %0 = buffer.weight "" : tensor<4xf32>
  func.return
}

// -----

func.func @case2() {
  // expected-error @+1 {{buffer.constant: value type tensor<2xf32> does not match result type tensor<3xf32>}}
  %0 = "buffer.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

func.func @case3() {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 8>
  %x = buffer.input 0 : tensor<4xf32>
  // expected-error @+1 {{buffer.transfer: buffer 0 holds 8 bytes but tensor<4xf32> needs 16}}
  %0 = buffer.transfer %x into %b0 : tensor<4xf32> in !buffer.buf<0, npu, 8>
  func.return
}

// -----

func.func @case4() {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 16>
  %x = buffer.input 0 : tensor<4xf32>
  // expected-error @+1 {{buffer.transfer: source is already on cpu (a graph input); destination buffer 0 is on cpu too}}
  %0 = buffer.transfer %x into %b0 : tensor<4xf32> in !buffer.buf<0, cpu, 16>
  func.return
}

// -----

func.func @case5() {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 16>
  %x = buffer.input 0 : tensor<4xf32>
  %0 = buffer.transfer %x into %b0 : tensor<4xf32> in !buffer.buf<0, npu, 16>
  // expected-error @+1 {{buffer.transfer: source is already on npu (buffer 0); destination buffer 1 is on npu too}}
  %1 = buffer.transfer %0 into %b1 : tensor<4xf32> in !buffer.buf<1, npu, 16>
  func.return
}

// -----

func.func @case6(%x: tensor<4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  // expected-error @+1 {{buffer.exec: unknown npuir kind 'fft'}}
  %0 = buffer.exec npu fft(%x) into %b0 : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  func.return
}

// -----

func.func @case7() {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  // expected-error @+1 {{buffer.exec: 'weight' is a source, not an executable kind; use buffer.weight}}
  %0 = buffer.exec npu weight() into %b0 : () -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  func.return
}

// -----

func.func @case8(%x: tensor<4x8xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 64>
  // expected-error @+1 {{buffer.exec linear: expects 2 to 3 inputs, got 1}}
  %0 = buffer.exec npu linear(%x) into %b0 : (tensor<4x8xf32>) -> tensor<4x8xf32> in !buffer.buf<0, npu, 64>
  func.return
}

// -----

func.func @case9(%x: tensor<4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  // expected-error @+1 {{buffer.exec softmax: unknown parameter 'dim' for softmax}}
  %0 = "buffer.exec"(%x, %b0) <{device = #npuir<device npu>, kind = "softmax", params = {axis = 0 : i64, dim = 0 : i64}}> : (tensor<4xf32>, !buffer.buf<0, npu, 16>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case10(%x: tensor<4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  // expected-error @+1 {{buffer.exec softmax: invalid value "last" for parameter 'axis'}}
  %0 = "buffer.exec"(%x, %b0) <{device = #npuir<device npu>, kind = "softmax", params = {axis = "last"}}> : (tensor<4xf32>, !buffer.buf<0, npu, 16>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case11(%x: tensor<4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  // expected-error @+1 {{buffer.exec transpose: missing parameter 'perm'}}
  %0 = buffer.exec npu transpose(%x) into %b0 : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  func.return
}

// -----

func.func @case12(%a: tensor<2x64xf32>, %b: tensor<32x4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 32>
  // expected-error @+1 {{buffer.exec matmul: contraction dims differ: lhs K=64, rhs K=32}}
  %0 = buffer.exec npu matmul(%a, %b) into %b0 : (tensor<2x64xf32>, tensor<32x4xf32>) -> tensor<2x4xf32> in !buffer.buf<0, npu, 32>
  func.return
}

// -----

func.func @case13(%x: tensor<4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 16>
  // expected-error @+1 {{buffer.exec softmax: runs on npu but writes buffer 0 on cpu}}
  %0 = buffer.exec npu softmax(%x) into %b0 {axis = 0} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, cpu, 16>
  func.return
}

// -----

func.func @case14(%x: tensor<4x8xf32>, %w: tensor<128x8xf32>) {
  %b3 = buffer.alloc : !buffer.buf<3, npu, 1024>
  // expected-error @+1 {{buffer.exec linear: buffer 3 holds 1024 bytes but tensor<4x128xf32> needs 2048}}
  %0 = buffer.exec npu linear(%x, %w) into %b3 : (tensor<4x8xf32>, tensor<128x8xf32>) -> tensor<4x128xf32> in !buffer.buf<3, npu, 1024>
  func.return
}

// -----

func.func @case15(%x: tensor<?x4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 1024>
  // expected-error @+1 {{buffer.exec softmax: tensor_bytes: tensor<?x4xf32> has a dynamic shape}}
  %0 = buffer.exec npu softmax(%x) into %b0 {axis = 1} : (tensor<?x4xf32>) -> tensor<?x4xf32> in !buffer.buf<0, npu, 1024>
  func.return
}

// -----

func.func @case16(%x: tensor<4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 16>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 16>
  %0 = buffer.exec cpu unary(%x) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, cpu, 16>
  // expected-error @+1 {{buffer.exec softmax: input 0 is on cpu (buffer 0) but the op runs on npu; insert a buffer.transfer}}
  %1 = buffer.exec npu softmax(%0) into %b1 {axis = 0} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<1, npu, 16>
  func.return
}

// -----

func.func @case17() {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 64>
  %w = buffer.weight "wte" : tensor<10x4xf32>
  %ids = buffer.input 0 : tensor<4xi64>
  // expected-error @+1 {{buffer.exec gather: input 1 is on cpu (a graph input) but the op runs on npu; insert a buffer.transfer}}
  %0 = buffer.exec npu gather(%w, %ids) into %b0 {axis = 0} : (tensor<10x4xf32>, tensor<4xi64>) -> tensor<4x4xf32> in !buffer.buf<0, npu, 64>
  func.return
}

// -----

func.func @case18(%x: tensor<4xi64>) {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 32>
  %w = buffer.weight "ids" : tensor<4xi64>
  // expected-error @+1 {{buffer.exec aten: runs only on cpu, not npu}}
  %0 = buffer.exec npu aten(%w) into %b0 {op = "aten.cumsum", attrs = {dim = 0 : i64}} : (tensor<4xi64>) -> tensor<4xi64> in !buffer.buf<0, npu, 32>
  func.return
}

// -----

func.func @state_too_small() {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 64>
  // expected-error @+1 {{buffer.state "cache": buffer 0 holds 64 bytes but tensor<8x4xf32> needs 128}}
  %0 = buffer.state "cache" in %b0 : tensor<8x4xf32> in !buffer.buf<0, cpu, 64>
  func.return
}

// -----

func.func @state_unnamed() {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 128>
  // expected-error @+1 {{buffer.state: state name is empty}}
  %0 = buffer.state "" in %b0 : tensor<8x4xf32> in !buffer.buf<0, cpu, 128>
  func.return
}

// -----

func.func @arena_misaligned() {
  %a = buffer.arena : !buffer.arena<0, npu, 256>
  // expected-error @+1 {{buffer.alloc: buffer 0 at offset 32 of arena 0: the offset is not a multiple of 64}}
  %b0 = buffer.alloc %a[32] : !buffer.buf<0, npu, 64> in !buffer.arena<0, npu, 256>
  func.return
}

// -----

func.func @arena_overflow() {
  %a = buffer.arena : !buffer.arena<0, npu, 256>
  // expected-error @+1 {{buffer.alloc: buffer 0 at offset 192 of arena 0: its 128 bytes end at 320, past the arena's 256}}
  %b0 = buffer.alloc %a[192] : !buffer.buf<0, npu, 128> in !buffer.arena<0, npu, 256>
  func.return
}

// -----

func.func @arena_other_device() {
  %a = buffer.arena : !buffer.arena<0, npu, 256>
  // expected-error @+1 {{buffer.alloc: buffer 0 at offset 0 of arena 0: the buffer is on cpu, the arena on npu}}
  %b0 = buffer.alloc %a[0] : !buffer.buf<0, cpu, 64> in !buffer.arena<0, npu, 256>
  func.return
}

// -----

func.func @offset_without_arena() {
  // expected-error @+1 {{buffer.alloc: buffer 0 has an offset but no arena}}
  %b0 = "buffer.alloc"() <{offset = #builtin.int<64>}> : () -> !buffer.buf<0, npu, 64>
  func.return
}
