// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s

// x[None]-style indexing with no index tensor at all (torch accepts it on an empty tensor): every
// dim is taken whole, the result is x. The rule assumed at least one index tensor and failed
// with "list index out of range" (found by the fuzz campaign).

// CHECK-LABEL: func.func @no_index_tensor
// CHECK:         %x_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1x0x1xui8>
// CHECK-NEXT:    func.return %x_1 : tensor<1x0x1xui8>
func.func @no_index_tensor(%x: tensor<1x0x1xui8>) -> tensor<1x0x1xui8> {
  %y = aten._unsafe_index.Tensor %x, [none] : (tensor<1x0x1xui8>) -> tensor<1x0x1xui8>
  func.return %y : tensor<1x0x1xui8>
}
