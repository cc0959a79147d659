// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s
// RUN: forge-opt %s -p 'lower-aten-to-npuir{cpu-ops=gather pin-final-norm=true}' | filecheck %s --check-prefix=PIN
// RUN: forge-opt %s -p 'lower-aten-to-npuir{policy=cpu-only}' | filecheck %s --check-prefix=CPU
// RUN: forge-opt %s -p lower-aten-to-npuir | forge-opt --print-op-generic | forge-opt | filecheck %s

// Device affinity: npu-first puts everything NNFactory expresses on the npu (the gather reads
// integer indices, which the npu accepts for gathers); pinning moves the embedding and the final
// norm to the cpu; cpu-only moves everything. Graph inputs live on the host. Vregs number the
// results in program order.

// CHECK:      builtin.module attributes {npuir.lowering = {vregs = 23 : i64, fallbacks = 1 : i64, dropped = 1 : i64}}
// CHECK-LABEL: func.func @tiny_lm
// CHECK-NEXT:   %[[IDS:.*]] = npuir.input cpu {index = 0, vreg = 0} : tensor<1x4xi64>
// CHECK-NEXT:   %wte = npuir.weight npu {name = "wte", vreg = 1} : tensor<16x8xf32>
// CHECK:        %emb = npuir.gather npu %wte, %[[IDS]] {axis = 0, vreg = 6}
// CHECK-NEXT:   %h = npuir.linear npu %emb, %w1, %b1 {activation = gelu_tanh, vreg = 7}
// CHECK-NEXT:   %r = npuir.binary npu %h, %emb {kind = add, vreg = 8}
// CHECK-NEXT:   %ln = npuir.layer_norm npu %r, %lnw, %lnb {axis = 2, eps = 1.000000e-05, vreg = 9}
// CHECK-NEXT:   %logits = npuir.linear npu %ln, %wte {vreg = 10} : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
// CHECK-NEXT:   func.return %logits

// PIN-LABEL: func.func @tiny_lm
// PIN:         %emb = npuir.gather cpu %wte
// PIN-NEXT:    %h = npuir.linear npu
// PIN-NEXT:    %r = npuir.binary npu
// PIN-NEXT:    %ln = npuir.layer_norm cpu
// PIN-NEXT:    %logits = npuir.linear npu

// CPU-LABEL: func.func @tiny_lm
// CPU:         %emb = npuir.gather cpu
// CPU-NEXT:    %h = npuir.linear cpu
// CPU-NEXT:    %r = npuir.binary cpu
// CPU-NEXT:    %ln = npuir.layer_norm cpu
// CPU-NEXT:    %logits = npuir.linear cpu
func.func @tiny_lm(%ids: tensor<1x4xi64>) -> tensor<1x4x16xf32> {
  %wte = aten.weight "wte" : tensor<16x8xf32>
  %w1 = aten.weight "fc.weight" : tensor<8x8xf32>
  %b1 = aten.weight "fc.bias" : tensor<8xf32>
  %lnw = aten.weight "ln.weight" : tensor<8xf32>
  %lnb = aten.weight "ln.bias" : tensor<8xf32>
  %emb = aten.embedding %wte, %ids : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32>
  %h = aten.fused_linear %emb, %w1, %b1 {activation = "gelu_tanh"} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %r = aten.add.Tensor %h, %emb : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %ln = aten.layer_norm %r, %lnw, %lnb {normalized_shape = [8]} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %logits = aten.linear %ln, %wte, none : (tensor<1x4x8xf32>, tensor<16x8xf32>) -> tensor<1x4x16xf32>
  func.return %logits : tensor<1x4x16xf32>
}

// Normalization: negative dims and out-of-range slice bounds become non-negative and clamped;
// a same-type view disappears; a scalar becomes a rank-0 constant; torch's type promotion becomes
// an explicit convert; integer ops stay on the host; what npuir cannot express (floor division)
// runs as the aten op itself on the cpu; a dead op is dropped.

// CHECK-LABEL: func.func @normalize
// CHECK-NEXT:   %[[X:.*]] = npuir.input cpu {index = 0, vreg = 0} : tensor<2x6xf32>
// CHECK-NEXT:   %[[POS:.*]] = npuir.input cpu {index = 1, vreg = 1} : tensor<2x6xi64>
// CHECK-NEXT:   %t = npuir.transpose npu %[[X]] {perm = [1, 0], vreg = 2} : (tensor<2x6xf32>) -> tensor<6x2xf32>
// CHECK-NEXT:   %s = npuir.slice npu %[[X]] {starts = [0, 2], ends = [2, 6], steps = [1, 1], vreg = 3} : (tensor<2x6xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   %[[HALF:.*]] = npuir.constant npu {value = dense<5.000000e-01> : tensor<f32>, vreg = 4} : tensor<f32>
// CHECK-NEXT:   %m = npuir.binary npu %[[X]], %[[HALF]] {kind = mul, vreg = 5}
// CHECK-NEXT:   %c = npuir.cumsum cpu %[[POS]] {axis = 1, vreg = 6} : (tensor<2x6xi64>) -> tensor<2x6xi64>
// CHECK-NEXT:   %[[ONE:.*]] = npuir.constant cpu {value = dense<1> : tensor<i64>, vreg = 7} : tensor<i64>
// CHECK-NEXT:   %n = npuir.compare cpu %[[POS]], %[[ONE]] {kind = ne, vreg = 8} : (tensor<2x6xi64>, tensor<i64>) -> tensor<2x6xi1>
// CHECK-NEXT:   %d = npuir.aten cpu %[[X]], %[[X]] {op = "aten.div.Tensor_mode", attrs = {rounding_mode = "floor"}, vreg = 9}
// CHECK-NEXT:   %[[F:.*]] = npuir.convert cpu %[[POS]] {vreg = 10} : (tensor<2x6xi64>) -> tensor<2x6xf32>
// CHECK-NEXT:   %p = npuir.binary npu %[[X]], %[[F]] {kind = add, vreg = 11}
// CHECK-NEXT:   func.return %t, %s, %m, %c, %n, %d, %p

// CPU-LABEL: func.func @normalize
// CPU-NOT:     {{npuir\.[a-z_]+ npu}}
// CPU:         func.return
func.func @normalize(%x: tensor<2x6xf32>, %pos: tensor<2x6xi64>) -> (tensor<6x2xf32>, tensor<2x4xf32>, tensor<2x6xf32>, tensor<2x6xi64>, tensor<2x6xi1>, tensor<2x6xf32>, tensor<2x6xf32>) {
  %v = aten.view %x {size = [2, 6]} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  %t = aten.transpose.int %v {dim0 = -1, dim1 = -2} : (tensor<2x6xf32>) -> tensor<6x2xf32>
  %s = aten.slice.Tensor %x {dim = -1, start = -4, end = 100} : (tensor<2x6xf32>) -> tensor<2x4xf32>
  %m = aten.mul.Scalar %x {other = 0.5} : (tensor<2x6xf32>) -> tensor<2x6xf32>
  %c = aten.cumsum %pos {dim = -1} : (tensor<2x6xi64>) -> tensor<2x6xi64>
  %n = aten.ne.Scalar %pos {other = 1} : (tensor<2x6xi64>) -> tensor<2x6xi1>
  %d = aten.div.Tensor_mode %x, %x {rounding_mode = "floor"} : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<2x6xf32>
  %dead = aten.exp %x : (tensor<2x6xf32>) -> tensor<2x6xf32>
  %p = aten.add.Tensor %x, %pos : (tensor<2x6xf32>, tensor<2x6xi64>) -> tensor<2x6xf32>
  func.return %t, %s, %m, %c, %n, %d, %p : tensor<6x2xf32>, tensor<2x4xf32>, tensor<2x6xf32>, tensor<2x6xi64>, tensor<2x6xi1>, tensor<2x6xf32>, tensor<2x6xf32>
}
