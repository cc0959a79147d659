// RUN: forge-opt %s --split-input-file --verify-diagnostics -p check-buffer-allocation | filecheck %s

// The allocation checker: no two simultaneously live values share a byte (a buffer holds one
// live value at a time, and buffers viewing one arena may overlap only while at most one of
// their values is live), and every read must see the value written last.

// A correct plan passes unchanged.
// CHECK-LABEL: func.func @ok
func.func @ok() -> tensor<4xf32> {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 16>
  %b2 = buffer.alloc : !buffer.buf<2, npu, 16>
  %w = buffer.weight "w" : tensor<4xf32>
  %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  %b = buffer.exec npu unary(%a) into %b1 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<1, npu, 16>
  %c = buffer.exec npu unary(%b) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  %d = buffer.exec npu unary(%c) into %b2 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<2, npu, 16>
  func.return %d : tensor<4xf32>
}

// -----

// Two simultaneously-live values in one buffer: %l overwrites %a, which %r still reads.
func.func @diamond_shared() -> tensor<4xf32> {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 16>
  %b2 = buffer.alloc : !buffer.buf<2, npu, 16>
  %w = buffer.weight "w" : tensor<4xf32>
  %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  // expected-error @+1 {{check-buffer-allocation: buffer.exec npu unary %l writes buffer 0 while %a (written by buffer.exec npu unary %a) is still to be read by buffer.exec npu unary %r}}
  %l = buffer.exec npu unary(%a) into %b0 {kind = tanh} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  %r = buffer.exec npu unary(%a) into %b1 {kind = neg} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<1, npu, 16>
  %j = buffer.exec npu binary(%l, %r) into %b2 {kind = add} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<2, npu, 16>
  func.return %j : tensor<4xf32>
}

// -----

// In place: an op may not write the buffer of a value it reads.
func.func @in_place() -> tensor<4xf32> {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  %w = buffer.weight "w" : tensor<4xf32>
  %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  // expected-error @+1 {{check-buffer-allocation: buffer.exec npu unary %b writes buffer 0 while %a (written by buffer.exec npu unary %a) is still to be read by this op (in place)}}
  %b = buffer.exec npu unary(%a) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  func.return %b : tensor<4xf32>
}

// -----

// A returned value whose buffer is overwritten before the end.
func.func @clobbered_output() -> (tensor<4xf32>, tensor<4xf32>) {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 16>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 16>
  %b2 = buffer.alloc : !buffer.buf<2, npu, 16>
  %w = buffer.weight "w" : tensor<4xf32>
  %a = buffer.exec cpu unary(%w) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, cpu, 16>
  %t = buffer.transfer %a into %b1 : tensor<4xf32> in !buffer.buf<1, npu, 16>
  %n = buffer.exec npu unary(%t) into %b2 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<2, npu, 16>
  // expected-error @+1 {{check-buffer-allocation: buffer.exec cpu unary %c writes buffer 0 while %a (written by buffer.exec cpu unary %a) is still to be read by func.return}}
  %c = buffer.exec cpu unary(%w) into %b0 {kind = neg} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, cpu, 16>
  func.return %a, %c : tensor<4xf32>, tensor<4xf32>
}

// -----

// Two allocations with one id.
func.func @duplicate_id() {
  // expected-error @+1 {{check-buffer-allocation: buffer.alloc: buffer id 0 is allocated twice}}
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  %b1 = buffer.alloc : !buffer.buf<0, npu, 16>
  func.return
}

// -----

// A read scheduled before the write: SSA dominance verification rejects it before any pass
// runs (the checker keeps its own check for IR built in Python).
func.func @read_before_write() -> tensor<4xf32> {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 16>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 16>
  %w = buffer.weight "w" : tensor<4xf32>
  // expected-error @+1 {{operand #0 uses %a (defined by 'buffer.exec') before its definition}}
  %b = buffer.exec npu unary(%a) into %b1 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<1, npu, 16>
  %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  func.return %b : tensor<4xf32>
}

// -----

// Views of one arena that overlap in address: %b1 ([64, 128)) overlaps %b0 ([0, 128)), and is
// written only once %a, the value in %b0, is dead.
// CHECK-LABEL: func.func @arena_ok
func.func @arena_ok() -> tensor<4x4xf32> {
  %arena0 = buffer.arena : !buffer.arena<0, npu, 192>
  %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128> in !buffer.arena<0, npu, 192>
  %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64> in !buffer.arena<0, npu, 192>
  %b2 = buffer.alloc %arena0[128] : !buffer.buf<2, npu, 64> in !buffer.arena<0, npu, 192>
  %w = buffer.weight "w" : tensor<4x8xf32>
  %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4x8xf32>) -> tensor<4x8xf32> in !buffer.buf<0, npu, 128>
  %r = buffer.exec npu reduce(%a) into %b2 {kind = sum, axes = [1]} : (tensor<4x8xf32>) -> tensor<4xf32> in !buffer.buf<2, npu, 64>
  %x = buffer.exec npu broadcast(%r) into %b0 : (tensor<4xf32>) -> tensor<4x4xf32> in !buffer.buf<0, npu, 128>
  %y = buffer.exec npu unary(%x) into %b1 {kind = exp} : (tensor<4x4xf32>) -> tensor<4x4xf32> in !buffer.buf<1, npu, 64>
  func.return %y : tensor<4x4xf32>
}

// -----

// Two buffers of one arena whose bytes overlap hold two live values: %y lands on %a's second half.
func.func @arena_overlap() -> tensor<4x4xf32> {
  %arena0 = buffer.arena : !buffer.arena<0, npu, 256>
  %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128> in !buffer.arena<0, npu, 256>
  %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 64> in !buffer.arena<0, npu, 256>
  %b2 = buffer.alloc %arena0[128] : !buffer.buf<2, npu, 128> in !buffer.arena<0, npu, 256>
  %w = buffer.weight "w" : tensor<4x8xf32>
  %v = buffer.weight "v" : tensor<4x4xf32>
  %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4x8xf32>) -> tensor<4x8xf32> in !buffer.buf<0, npu, 128>
  // expected-error @+1 {{check-buffer-allocation: buffer.exec npu unary %y writes buffer 1 (bytes [64, 128) of its arena overlap [0, 128) of %a in buffer 0) while %a (written by buffer.exec npu unary %a) is still to be read by buffer.exec npu binary %s}}
  %y = buffer.exec npu unary(%v) into %b1 {kind = exp} : (tensor<4x4xf32>) -> tensor<4x4xf32> in !buffer.buf<1, npu, 64>
  %s = buffer.exec npu binary(%a, %a) into %b2 {kind = add} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> in !buffer.buf<2, npu, 128>
  func.return %y : tensor<4x4xf32>
}

// -----

// Views of different arenas never overlap, even at the same offset.
// CHECK-LABEL: func.func @two_arenas
func.func @two_arenas() -> tensor<4xf32> {
  %arena0 = buffer.arena : !buffer.arena<0, npu, 64>
  %arena1 = buffer.arena : !buffer.arena<1, npu, 64>
  %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 16> in !buffer.arena<0, npu, 64>
  %b1 = buffer.alloc %arena1[0] : !buffer.buf<1, npu, 16> in !buffer.arena<1, npu, 64>
  %w = buffer.weight "w" : tensor<4xf32>
  %a = buffer.exec npu unary(%w) into %b0 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<0, npu, 16>
  %b = buffer.exec npu unary(%a) into %b1 {kind = exp} : (tensor<4xf32>) -> tensor<4xf32> in !buffer.buf<1, npu, 16>
  func.return %b : tensor<4xf32>
}
