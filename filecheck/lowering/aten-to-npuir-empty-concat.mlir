// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s

// A concatenation of parts that are empty in another dimension than the concatenated one: each part
// still adds its size along `dim`, so cat([0x1, 0x1], dim=1) is 0x2 (an empty constant), not the
// first part (0x1: the wrong shape the fuzzer found). A part of size 0 along `dim` adds nothing.

// CHECK-LABEL: func.func @empty_in_another_dim
// CHECK:         %c = npuir.constant cpu {value = dense<> : tensor<0x2xf32>, vreg = 2} : tensor<0x2xf32>
// CHECK-NEXT:    func.return %c : tensor<0x2xf32>
func.func @empty_in_another_dim(%a: tensor<0x1xf32>, %b: tensor<0x1xf32>) -> tensor<0x2xf32> {
  %c = aten.cat [%a, %b] {dim = 1} : (tensor<0x1xf32>, tensor<0x1xf32>) -> tensor<0x2xf32>
  func.return %c : tensor<0x2xf32>
}

// CHECK-LABEL: func.func @empty_along_dim
// CHECK:         %b_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<2x3xf32>
// CHECK-NEXT:    func.return %b_1 : tensor<2x3xf32>
func.func @empty_along_dim(%a: tensor<2x0xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = aten.cat [%a, %b] {dim = 1} : (tensor<2x0xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}
