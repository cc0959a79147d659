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

// torch's legacy rule: a 1-D empty part (transformers' KV cache starts from torch.tensor([])) is skipped
// whatever the rank and the dim, so the concatenation is the other part, on the npu path (it fell back to
// the cpu, and split every default use_cache forward into segments).
// CHECK-LABEL: func.func @legacy_empty_part
// CHECK:         %k_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<1x2x3x4xf32>
// CHECK-NEXT:    func.return %k_1 : tensor<1x2x3x4xf32>
func.func @legacy_empty_part(%past: tensor<0xf32>, %k: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %c = aten.cat [%past, %k] {dim = -2} : (tensor<0xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %c : tensor<1x2x3x4xf32>
}

// A skipped part still takes part in the result's dtype (here f32 from i64 parts): left to the cpu.
// CHECK-LABEL: func.func @legacy_empty_part_of_another_dtype
// CHECK:         npuir.aten cpu %past_1, %k_1 {op = "aten.cat"
func.func @legacy_empty_part_of_another_dtype(%past: tensor<0xf32>, %k: tensor<2x3xi64>) -> tensor<2x3xf32> {
  %c = aten.cat [%past, %k] {dim = 0} : (tensor<0xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
  func.return %c : tensor<2x3xf32>
}
