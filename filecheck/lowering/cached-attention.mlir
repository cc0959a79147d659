// RUN: forge-opt %s -p cached-attention | filecheck %s --check-prefix=NPUIR
// RUN: forge-opt %s -p cached-attention,schedule-device-affinity,lower-npuir-to-buffer,check-buffer-allocation | filecheck %s --check-prefix=BUFFER

// A decode step of a grouped-query attention layer: the new key/value rows are written into the cache
// states on the host (aten.index_put) and the npu attends over the written caches through repeat_kv's
// reshape-broadcast-reshape. cached-attention makes the attention read the caches as they were on entry
// plus the new rows (npuir.cached_sdpa, GQA without the repeat); the writes keep only their state results.
// NPUIR:      builtin.module attributes {npuir.cached_attention = {rewritten = 1 : i64}}
// NPUIR-LABEL: func.func @decode
// NPUIR:        %k2 = npuir.aten cpu %k_1, %pos_1, %kr {op = "aten.index_put"
// NPUIR-NEXT:   %v2 = npuir.aten cpu %v_1, %pos_1, %vr {op = "aten.index_put"
// NPUIR-NEXT:   %0 = npuir.reshape npu %kr {vreg = 18} : (tensor<2x1x8xf32>) -> tensor<1x2x1x8xf32>
// NPUIR-NEXT:   %1 = npuir.reshape npu %vr {vreg = 19} : (tensor<2x1x8xf32>) -> tensor<1x2x1x8xf32>
// NPUIR-NEXT:   %att = npuir.cached_sdpa npu %q_1, %k_1, %v_1, %pos_1, %0, %1, %mask_1 {scale = 2.500000e-01, vreg = 20} : (tensor<1x4x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>, tensor<1x2x1x8xf32>, tensor<1x1x1x6xf32>) -> tensor<1x4x1x8xf32>
// NPUIR-NEXT:   %out = npuir.unary npu %att {kind = neg, vreg = 17}
// NPUIR-NEXT:   func.return %out, %k2, %v2
// NPUIR-NOT:    npuir.broadcast
// Written at different positions: not one cache step, left alone.
// NPUIR-LABEL: func.func @two_positions
// NPUIR:        npuir.sdpa npu
// NPUIR-NOT:    npuir.cached_sdpa
// A tensor that is no state may hold an inf in the rows it overwrites, which cached_sdpa would let through
// (its probability 0 times inf): left alone.
// NPUIR-LABEL: func.func @not_a_state
// NPUIR:        npuir.sdpa npu
// NPUIR-NOT:    npuir.cached_sdpa
// An accumulating write (cache[pos] += rows) is no row write: left alone.
// NPUIR-LABEL: func.func @accumulating
// NPUIR:        npuir.sdpa npu
// NPUIR-NOT:    npuir.cached_sdpa

// In buffers: the npu reads both states' buffers in place (no transfer of a cache), the schedule puts the
// in-place writes after the attention that reads the entry values, and only the new rows cross to the host.
// BUFFER-LABEL: func.func @decode
// BUFFER:      %k = buffer.state "key_cache_0" in %b10 : tensor<1x2x6x8xf32> in !buffer.buf<10, cpu, 384>
// BUFFER-NEXT: %v = buffer.state "value_cache_0" in %b11 : tensor<1x2x6x8xf32> in !buffer.buf<11, cpu, 384>
// BUFFER-NOT:  buffer.transfer %k
// BUFFER-NOT:  buffer.transfer %v
// BUFFER:      %att = buffer.exec npu cached_sdpa(%q_npu, %k, %v, %pos_npu, %0, %1, %mask_npu)
// BUFFER-NEXT: %out = buffer.exec npu unary(%att)
// BUFFER-NEXT: %kr_cpu = buffer.transfer %kr into %b8 : tensor<2x1x8xf32> in !buffer.buf<8, cpu, 64>
// BUFFER-NEXT: %vr_cpu = buffer.transfer %vr into %b9 : tensor<2x1x8xf32> in !buffer.buf<9, cpu, 64>
// BUFFER-NEXT: %k2 = buffer.exec cpu aten(%k, %pos_1, %kr_cpu) into %b10 {op = "aten.index_put"
// BUFFER-NEXT: %v2 = buffer.exec cpu aten(%v, %pos_1, %vr_cpu) into %b11 {op = "aten.index_put"
// BUFFER-NEXT: func.return %out : tensor<1x4x1x8xf32>
func.func @decode(%q: tensor<1x4x1x8xf32>, %rows: tensor<2x1x8xf32>, %pos: tensor<1xi64>, %mask: tensor<1x1x1x6xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> (tensor<1x4x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) attributes {forge.state = ["key_cache_0", "value_cache_0"]} {
  %q_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x4x1x8xf32>
  %rows_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<2x1x8xf32>
  %pos_1 = npuir.input cpu {index = 2, vreg = 2} : tensor<1xi64>
  %mask_1 = npuir.input cpu {index = 3, vreg = 3} : tensor<1x1x1x6xf32>
  %k_1 = npuir.input cpu {index = 4, vreg = 4} : tensor<1x2x6x8xf32>
  %v_1 = npuir.input cpu {index = 5, vreg = 5} : tensor<1x2x6x8xf32>
  %kr = npuir.unary npu %rows_1 {kind = tanh, vreg = 6} : (tensor<2x1x8xf32>) -> tensor<2x1x8xf32>
  %vr = npuir.unary npu %rows_1 {kind = exp, vreg = 7} : (tensor<2x1x8xf32>) -> tensor<2x1x8xf32>
  %k2 = npuir.aten cpu %k_1, %pos_1, %kr {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>}, vreg = 8} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %v2 = npuir.aten cpu %v_1, %pos_1, %vr {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>}, vreg = 9} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %k5 = npuir.reshape npu %k2 {vreg = 10} : (tensor<1x2x6x8xf32>) -> tensor<1x2x1x6x8xf32>
  %k5b = npuir.broadcast npu %k5 {vreg = 11} : (tensor<1x2x1x6x8xf32>) -> tensor<1x2x2x6x8xf32>
  %kk = npuir.reshape npu %k5b {vreg = 12} : (tensor<1x2x2x6x8xf32>) -> tensor<1x4x6x8xf32>
  %v5 = npuir.reshape npu %v2 {vreg = 13} : (tensor<1x2x6x8xf32>) -> tensor<1x2x1x6x8xf32>
  %v5b = npuir.broadcast npu %v5 {vreg = 14} : (tensor<1x2x1x6x8xf32>) -> tensor<1x2x2x6x8xf32>
  %vv = npuir.reshape npu %v5b {vreg = 15} : (tensor<1x2x2x6x8xf32>) -> tensor<1x4x6x8xf32>
  %att = npuir.sdpa npu %q_1, %kk, %vv, %mask_1 {scale = 0.25, vreg = 16} : (tensor<1x4x1x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6x8xf32>, tensor<1x1x1x6xf32>) -> tensor<1x4x1x8xf32>
  %out = npuir.unary npu %att {kind = neg, vreg = 17} : (tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  func.return %out, %k2, %v2 : tensor<1x4x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>
}

func.func @two_positions(%q: tensor<1x2x1x8xf32>, %rows: tensor<1x2x1x8xf32>, %pos: tensor<1xi64>, %pos2: tensor<1xi64>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> (tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) attributes {forge.state = ["k", "v"]} {
  %q_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x2x1x8xf32>
  %rows_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<1x2x1x8xf32>
  %pos_1 = npuir.input cpu {index = 2, vreg = 2} : tensor<1xi64>
  %pos2_1 = npuir.input cpu {index = 3, vreg = 3} : tensor<1xi64>
  %k_1 = npuir.input cpu {index = 4, vreg = 4} : tensor<1x2x6x8xf32>
  %v_1 = npuir.input cpu {index = 5, vreg = 5} : tensor<1x2x6x8xf32>
  %k2 = npuir.aten cpu %k_1, %pos_1, %rows_1 {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>}, vreg = 6} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %v2 = npuir.aten cpu %v_1, %pos2_1, %rows_1 {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>}, vreg = 7} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %att = npuir.sdpa npu %q_1, %k2, %v2 {vreg = 8} : (tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x1x8xf32>
  func.return %att, %k2, %v2 : tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>
}

func.func @not_a_state(%q: tensor<1x2x1x8xf32>, %rows: tensor<1x2x1x8xf32>, %pos: tensor<1xi64>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> tensor<1x2x1x8xf32> {
  %q_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x2x1x8xf32>
  %rows_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<1x2x1x8xf32>
  %pos_1 = npuir.input cpu {index = 2, vreg = 2} : tensor<1xi64>
  %k_1 = npuir.input cpu {index = 3, vreg = 3} : tensor<1x2x6x8xf32>
  %v_1 = npuir.input cpu {index = 4, vreg = 4} : tensor<1x2x6x8xf32>
  %k2 = npuir.aten cpu %k_1, %pos_1, %rows_1 {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>}, vreg = 5} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %v2 = npuir.aten cpu %v_1, %pos_1, %rows_1 {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>}, vreg = 6} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %att = npuir.sdpa npu %q_1, %k2, %v2 {vreg = 7} : (tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x1x8xf32>
  func.return %att : tensor<1x2x1x8xf32>
}

func.func @accumulating(%q: tensor<1x2x1x8xf32>, %rows: tensor<1x2x1x8xf32>, %pos: tensor<1xi64>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x8xf32>) -> (tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) attributes {forge.state = ["k", "v"]} {
  %q_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x2x1x8xf32>
  %rows_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<1x2x1x8xf32>
  %pos_1 = npuir.input cpu {index = 2, vreg = 2} : tensor<1xi64>
  %k_1 = npuir.input cpu {index = 3, vreg = 3} : tensor<1x2x6x8xf32>
  %v_1 = npuir.input cpu {index = 4, vreg = 4} : tensor<1x2x6x8xf32>
  %k2 = npuir.aten cpu %k_1, %pos_1, %rows_1 {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>, accumulate = true}, vreg = 5} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %v2 = npuir.aten cpu %v_1, %pos_1, %rows_1 {op = "aten.index_put", attrs = {present = array<i64: 0, 0, 1>}, vreg = 6} : (tensor<1x2x6x8xf32>, tensor<1xi64>, tensor<1x2x1x8xf32>) -> tensor<1x2x6x8xf32>
  %att = npuir.sdpa npu %q_1, %k2, %v2 {vreg = 7} : (tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>) -> tensor<1x2x1x8xf32>
  func.return %att, %k2, %v2 : tensor<1x2x1x8xf32>, tensor<1x2x6x8xf32>, tensor<1x2x6x8xf32>
}
