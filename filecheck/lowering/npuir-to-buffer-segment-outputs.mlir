// RUN: forge-opt %s -p lower-npuir-to-buffer,check-buffer-allocation | filecheck %s
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=offset-by-breadth}",check-buffer-allocation | filecheck %s

// An NPU segment (one compiled graph) may write its outputs while it still reads its inputs, so an
// output it hands to a later step must not take an input's bytes (the executor would stage it and
// copy it, every call). A returned value is exempt: the executor writes it straight into the
// caller's tensor (direct outputs), never into its planned bytes. Both functions: planned 256 + 384
// + 256 (cpu) bytes against an op-by-op bound of 256 + 256 + 256.
// CHECK: builtin.module attributes {buffer.plan = {vregs = 7 : i64, values = 8 : i64, transfers = 3 : i64, buffers = 7 : i64, peak_bytes_naive = 1024 : i64, peak_bytes_planned = 896 : i64, peak_bytes_lower_bound = 768 : i64}}

// %y is returned: op by op it may take %x0_npu's bytes (dead after step 1), and it does: %b0, the
// lower bound (2 x 128 bytes).
// CHECK-LABEL: func.func @returned
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 256>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[128] : !buffer.buf<1, npu, 128>
// CHECK-NEXT:   %x0 = buffer.input 0 : tensor<4x8xf32>
// CHECK-NEXT:   %x0_npu = buffer.transfer %x0 into %b0
// CHECK-NEXT:   %a = buffer.exec npu unary(%x0_npu) into %b1 {kind = exp}
// CHECK-NEXT:   %y = buffer.exec npu unary(%a) into %b0 {kind = exp}
// CHECK-NEXT:   func.return %y
func.func @returned(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<4x8xf32>
  %a = npuir.unary npu %x0 {kind = exp, vreg = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npuir.unary npu %a {kind = exp, vreg = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %y : tensor<4x8xf32>
}

// The same segment, but a CPU op reads %y after it: %y is no program output, so it keeps out of
// %x0_npu's bytes and the npu arena needs a third slot (384 bytes; op by op 256 would do).
// CHECK-LABEL: func.func @read_later
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 384>
// CHECK-NEXT:   %arena1 = buffer.arena : !buffer.arena<1, cpu, 256>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 128>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[128] : !buffer.buf<1, npu, 128>
// CHECK-NEXT:   %b2 = buffer.alloc %arena0[256] : !buffer.buf<2, npu, 128>
// CHECK-NEXT:   %b3 = buffer.alloc %arena1[0] : !buffer.buf<3, cpu, 128>
// CHECK-NEXT:   %b4 = buffer.alloc %arena1[128] : !buffer.buf<4, cpu, 128>
// CHECK-NEXT:   %x0 = buffer.input 0
// CHECK-NEXT:        %x0_npu = buffer.transfer %x0 into %b0
// CHECK-NEXT:   %a = buffer.exec npu unary(%x0_npu) into %b1 {kind = exp}
// CHECK-NEXT:   %y = buffer.exec npu unary(%a) into %b2 {kind = exp}
func.func @read_later(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %x0 = npuir.input cpu {index = 0, vreg = 0} : tensor<4x8xf32>
  %a = npuir.unary npu %x0 {kind = exp, vreg = 1} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = npuir.unary npu %a {kind = exp, vreg = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = npuir.unary cpu %y {kind = neg, vreg = 3} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %z : tensor<4x8xf32>
}
