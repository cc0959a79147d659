// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=linear-scan}",check-buffer-allocation | filecheck %s
// RUN: forge-opt %s -p "lower-npuir-to-buffer{planner=linear-scan}" | forge-opt --print-op-generic | forge-opt -p check-buffer-allocation | filecheck %s

// A state (a KV cache): the function's last argument is the state's value on entry and its last
// result the state's value on exit (`forge.state` names them). The state gets a buffer of its
// own after the planned ones (%b5, not in an arena, never given to another value); its entry value is
// `buffer.state` in that buffer and the index_put computing its new value writes into the same
// buffer, in place (no copy per call). The lowered function takes and returns the user's values
// only. The npu reader of the new cache gets a transfer, as any cross-device read.
// CHECK:      builtin.module attributes {buffer.states = {states = 1 : i64, state_bytes = 128 : i64}, buffer.plan = {vregs = 6 : i64, values = 6 : i64, transfers = 3 : i64, buffers = 5 : i64, peak_bytes_naive = 304 : i64, peak_bytes_planned = 448 : i64, peak_bytes_lower_bound = 272 : i64}}
// CHECK-LABEL: func.func @step(%x: tensor<1x4xf32>, %pos: tensor<1xi64>) -> tensor<8x4xf32> {
// CHECK-NEXT:   %arena0 = buffer.arena : !buffer.arena<0, npu, 384>
// CHECK-NEXT:   %arena1 = buffer.arena : !buffer.arena<1, cpu, 64>
// CHECK-NEXT:   %b0 = buffer.alloc %arena0[0] : !buffer.buf<0, npu, 16>
// CHECK-NEXT:   %b1 = buffer.alloc %arena0[64] : !buffer.buf<1, npu, 16>
// CHECK-NEXT:   %b2 = buffer.alloc %arena1[0] : !buffer.buf<2, cpu, 16>
// CHECK-NEXT:   %b3 = buffer.alloc %arena0[128] : !buffer.buf<3, npu, 128>
// CHECK-NEXT:   %b4 = buffer.alloc %arena0[256] : !buffer.buf<4, npu, 128>
// CHECK-NEXT:   %b5 = buffer.alloc : !buffer.buf<5, cpu, 128>
// CHECK-NEXT:   %x_1 = buffer.input 0 : tensor<1x4xf32>
// CHECK-NEXT:   %pos_1 = buffer.input 1 : tensor<1xi64>
// CHECK-NEXT:   %cache = buffer.state "cache" in %b5 : tensor<8x4xf32> in !buffer.buf<5, cpu, 128>
// CHECK-NEXT:   %x_npu = buffer.transfer %x_1 into %b0
// CHECK-NEXT:   %row = buffer.exec npu unary(%x_npu) into %b1 {kind = exp}
// CHECK-NEXT:   %row_cpu = buffer.transfer %row into %b2
// CHECK-NEXT:   %new = buffer.exec cpu aten(%cache, %pos_1, %row_cpu) into %b5 {op = "aten.index_put", attrs = {present = array<i64: 1>}} : (tensor<8x4xf32>, tensor<1xi64>, tensor<1x4xf32>) -> tensor<8x4xf32> in !buffer.buf<5, cpu, 128>
// CHECK-NEXT:   %new_npu = buffer.transfer %new into %b3
// CHECK-NEXT:   %out = buffer.exec npu unary(%new_npu) into %b4 {kind = tanh}
// CHECK-NEXT:   func.return %out : tensor<8x4xf32>
func.func @step(%x: tensor<1x4xf32>, %pos: tensor<1xi64>, %cache: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) attributes {forge.state = ["cache"]} {
  %x_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x4xf32>
  %pos_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<1xi64>
  %cache_1 = npuir.input cpu {index = 2, vreg = 2} : tensor<8x4xf32>
  %row = npuir.unary npu %x_1 {kind = exp, vreg = 3} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %new = npuir.aten cpu %cache_1, %pos_1, %row {op = "aten.index_put", attrs = {present = array<i64: 1>}, vreg = 4} : (tensor<8x4xf32>, tensor<1xi64>, tensor<1x4xf32>) -> tensor<8x4xf32>
  %out = npuir.unary npu %new {kind = tanh, vreg = 5} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %out, %new : tensor<8x4xf32>, tensor<8x4xf32>
}
