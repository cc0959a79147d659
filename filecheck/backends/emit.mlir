// RUN: python -m forge.cli.emit %s --random-weights 0 --no-timings --instructions | filecheck %s
// RUN: python -m forge.cli.emit %s --random-weights 0 --run 0 | filecheck %s --check-prefix=EXEC

// A GPT-2 style block: the embedding lookup on the cpu, norm + MLP + residual + a comparison
// on the npu (one segment, one compiled graph), results transferred back.
// Weights become constants of the segment; the embedding table stays on the host.
// %pos reuses buffer 1, which still holds the segment's input %x: that output is staged.

func.func @forward(%ids: tensor<1x4xi64>) -> (tensor<1x4x8xf32>, tensor<1x4x8xi1>) {
  %b0 = buffer.alloc : !buffer.buf<0, cpu, 128>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 128>
  %b2 = buffer.alloc : !buffer.buf<2, npu, 512>
  %b3 = buffer.alloc : !buffer.buf<3, npu, 128>
  %b4 = buffer.alloc : !buffer.buf<4, cpu, 128>
  %b5 = buffer.alloc : !buffer.buf<5, cpu, 32>
  %input = buffer.input 0 : tensor<1x4xi64>
  %wte = buffer.weight "wte" : tensor<16x8xf32>
  %ln_w = buffer.weight "ln.weight" : tensor<8xf32>
  %ln_b = buffer.weight "ln.bias" : tensor<8xf32>
  %w_fc = buffer.weight "fc.weight" : tensor<32x8xf32>
  %w_proj = buffer.weight "proj.weight" : tensor<8x32xf32>
  %zero = buffer.constant dense<0.0> : tensor<f32>
  %emb = buffer.exec cpu gather(%wte, %input) into %b0 {axis = 0} : (tensor<16x8xf32>, tensor<1x4xi64>) -> tensor<1x4x8xf32> in !buffer.buf<0, cpu, 128>
  %x = buffer.transfer %emb into %b1 : tensor<1x4x8xf32> in !buffer.buf<1, npu, 128>
  %ln = buffer.exec npu layer_norm(%x, %ln_w, %ln_b) into %b3 {axis = 2, eps = 1.0e-05} : (tensor<1x4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32> in !buffer.buf<3, npu, 128>
  %h = buffer.exec npu linear(%ln, %w_fc) into %b2 {activation = gelu_tanh} : (tensor<1x4x8xf32>, tensor<32x8xf32>) -> tensor<1x4x32xf32> in !buffer.buf<2, npu, 512>
  %y = buffer.exec npu linear(%h, %w_proj) into %b3 : (tensor<1x4x32xf32>, tensor<8x32xf32>) -> tensor<1x4x8xf32> in !buffer.buf<3, npu, 128>
  %r = buffer.exec npu binary(%y, %x) into %b2 {kind = add} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32> in !buffer.buf<2, npu, 512>
  %pos = buffer.exec npu compare(%r, %zero) into %b1 {kind = gt} : (tensor<1x4x8xf32>, tensor<f32>) -> tensor<1x4x8xi1> in !buffer.buf<1, npu, 128>
  %out = buffer.transfer %r into %b4 : tensor<1x4x8xf32> in !buffer.buf<4, cpu, 128>
  %mask = buffer.transfer %pos into %b5 : tensor<1x4x8xi1> in !buffer.buf<5, cpu, 32>
  func.return %out, %mask : tensor<1x4x8xf32>, tensor<1x4x8xi1>
}

// CHECK:      program @forward on openvino/CPU: 1 segment(s), 1 cpu op(s), 3 transfer(s), 6 buffers (1056 bytes)
// CHECK-NEXT:   cpu gather(%wte, %ids) -> %emb (buffer 0, float32[1, 4, 8])
// CHECK-NEXT:   transfer %emb -> %x (buffer 1, float32[1, 4, 8])
// CHECK-NEXT:   segment 0: 5 ops (linear 2, binary 1, compare 1, layer_norm 1); in %x; out %r, %pos (staged); 5 constants (2116 bytes)
// CHECK-NEXT:   transfer %r -> %out (buffer 4, float32[1, 4, 8])
// CHECK-NEXT:   transfer %pos -> %mask (buffer 5, bool[1, 4, 8])
// CHECK-NEXT:    0  cpu gather(%wte, %ids) -> %emb (buffer 0, float32[1, 4, 8])
// CHECK-NEXT:    1  transfer %emb -> %x (buffer 1, float32[1, 4, 8])
// CHECK-NEXT:    2  segment 0(%x) -> %r, %pos
// CHECK-NEXT:    3  transfer %r -> %out (buffer 4, float32[1, 4, 8])
// CHECK-NEXT:    4  transfer %pos -> %mask (buffer 5, bool[1, 4, 8])

// EXEC:      program @forward on openvino/CPU: {{.*}}; emit {{[0-9.]+}} ms (runtime {{[0-9.]+}}, analyze {{[0-9.]+}}, build {{[0-9.]+}}, device compile {{[0-9.]+}} ms)
// EXEC:        segment 0: 5 ops {{.*}}; build {{[0-9.]+}} ms, compile {{[0-9.]+}} ms
// EXEC:      output %out: float32[1, 4, 8] [{{.*}}]
// EXEC-NEXT: output %mask: bool[1, 4, 8] [{{(True|False)}}, {{(True|False)}}, {{(True|False)}}, {{(True|False)}}]
