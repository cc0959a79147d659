// RUN: not python -m forge.cli.emit %s --split 2>&1 | filecheck %s --check-prefix=USAGE
// RUN: not python -m forge.cli.emit %s 2>&1 | filecheck %s

// An npuir kind NNFactory cannot express, placed on the npu (the affinity policy would have put
// it on the cpu): the error names the op and says why.

func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %b0 = buffer.alloc : !buffer.buf<0, npu, 24>
  %b1 = buffer.alloc : !buffer.buf<1, npu, 24>
  %b2 = buffer.alloc : !buffer.buf<2, cpu, 24>
  %in = buffer.input 0 : tensor<2x3xf32>
  %xn = buffer.transfer %in into %b0 : tensor<2x3xf32> in !buffer.buf<0, npu, 24>
  %running = buffer.exec npu cumsum(%xn) into %b1 {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32> in !buffer.buf<1, npu, 24>
  %out = buffer.transfer %running into %b2 : tensor<2x3xf32> in !buffer.buf<2, cpu, 24>
  func.return %out : tensor<2x3xf32>
}

// CHECK: error: emit: segment 0: buffer.exec npu cumsum (%running): the openvino runtime cannot run it on the npu (the npu has no 'cumsum' op); the affinity policy should place it on the cpu
// USAGE: error: unrecognized arguments: --split
