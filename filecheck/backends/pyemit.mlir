// RUN: python -m forge.cli.pyemit %s --random-weights 0 -o %t.py | filecheck %s --check-prefix=WROTE
// RUN: filecheck %s --input-file %t.py
// RUN: python %t.py --seed 0 | filecheck %s --check-prefix=EXEC

// The standalone program of a buffer function: one builder function per npu segment, the cpu
// op (cumsum, which NNFactory lacks) as a torch call between them, weights by name from the
// .safetensors file written next to the program.

func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x4xf32> {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 64>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 32>
  %b2 = buffer.alloc : !buffer.buf<2, cpu, 32>
  %b3 = buffer.alloc : !buffer.buf<3, cpu, 32>
  %b4 = buffer.alloc : !buffer.buf<4, cpu, 32>
  %in = buffer.input 0 : tensor<2x8xf32>
  %w = buffer.weight "proj.weight" : tensor<4x8xf32>
  %xn = buffer.transfer %in into %b0 : tensor<2x8xf32> in !buffer.buf<0, npu, 64>
  %h = buffer.exec npu linear(%xn, %w) into %b1 {activation = silu} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32> in !buffer.buf<1, npu, 32>
  %hc = buffer.transfer %h into %b2 : tensor<2x4xf32> in !buffer.buf<2, cpu, 32>
  %c = buffer.exec cpu cumsum(%hc) into %b3 {axis = 1} : (tensor<2x4xf32>) -> tensor<2x4xf32> in !buffer.buf<3, cpu, 32>
  %cn = buffer.transfer %c into %b1 : tensor<2x4xf32> in !buffer.buf<1, npu, 32>
  %s = buffer.exec npu softmax(%cn) into %b0 {axis = 1} : (tensor<2x4xf32>) -> tensor<2x4xf32> in !buffer.buf<0, npu, 64>
  %out = buffer.transfer %s into %b4 : tensor<2x4xf32> in !buffer.buf<4, cpu, 32>
  func.return %out : tensor<2x4xf32>
}

// WROTE: wrote {{.*}}.py and {{.*}}.safetensors

// CHECK:      """Forge program @forward on the openvino runtime: 2 NPU segment(s), 1 CPU op(s), 4 transfer(s).
// CHECK:      from backends.nnfactory.runtime import get_runtime
// CHECK:      INPUTS = [  # name, shape, dtype, bound of random integer inputs
// CHECK-NEXT:     ('x', (2, 8), torch.float32, 2),
// CHECK-NEXT: ]
// CHECK-NEXT: OUTPUTS = ['out']

// CHECK-LABEL: def segment_0(rt, W):
// CHECK:          g = rt.builder()
// CHECK-NEXT:     # input %xn (buffer 0, float32[2, 8])
// CHECK-NEXT:     xn = g.parameter((2, 8), np.float32)
// CHECK-NEXT:     w = g.constant(W['proj.weight'])
// CHECK-NEXT:     # %h = npu linear(%xn, %w) {activation = silu}
// CHECK-NEXT:     h__1 = g.linear(xn, w, None)
// CHECK-NEXT:     h = g.swish(h__1)
// CHECK-NEXT:     g.result(h)
// CHECK-NEXT:     return g.compile()

// CHECK-LABEL: def segment_1(rt, W):
// CHECK:          cn = g.parameter((2, 4), np.float32)
// CHECK-NEXT:     # %s = npu softmax(%cn) {axis = 1}
// CHECK-NEXT:     s = g.softmax(cn, 1)
// CHECK-NEXT:     g.result(s)

// CHECK-LABEL: def run(segments, T, x):
// CHECK:          xn = x  # transfer to npu
// CHECK-NEXT:     (h,) = run_segment(segments[0], [xn], [np.float32], [False])
// CHECK-NEXT:     hc = h  # transfer to cpu
// CHECK-NEXT:     # %c = cpu cumsum(%hc)
// CHECK-NEXT:     c = torch.cumsum(hc, 1).to(torch.float32)
// CHECK-NEXT:     cn = c  # transfer to npu
// CHECK-NEXT:     (s,) = run_segment(segments[1], [cn], [np.float32], [False])
// CHECK-NEXT:     out = s  # transfer to cpu
// CHECK-NEXT:     return [out]

// EXEC:      built and compiled 2 segment(s) in {{[0-9]+}} ms
// EXEC:      output_0 %out: float32[2, 4] mean 0.25
