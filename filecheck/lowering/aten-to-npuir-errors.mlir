// RUN: not forge-opt %s -p 'lower-aten-to-npuir{policy=npu-only}' 2>&1 | filecheck %s
// RUN: not forge-opt %s -p 'lower-aten-to-npuir{policy=npu-only cpu-ops=softmax}' 2>&1 | filecheck %s --check-prefix=PINNED
// RUN: not forge-opt %s -p 'lower-aten-to-npuir{policy=gpu-first}' 2>&1 | filecheck %s --check-prefix=POLICY

// An op that no device can run under the policy is an error at its location, naming it.

func.func @f(%x: tensor<2x4xf32>, %pos: tensor<4xi64>) -> (tensor<2x4xf32>, tensor<4xi64>) {
  %y = aten.softmax.int %x {dim = -1} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // PINNED: aten-to-npuir-errors.mlir:[[# @LINE - 1]]:8: error: 'aten.softmax.int' op lower-aten-to-npuir: no device can run aten.softmax.int %y {{.*}}: 'softmax' is pinned to the cpu, which policy npu-only excludes
  %c = aten.cumsum %pos {dim = 0} : (tensor<4xi64>) -> tensor<4xi64>
  // CHECK: aten-to-npuir-errors.mlir:[[# @LINE - 1]]:8: error: 'aten.cumsum' op lower-aten-to-npuir: no device can run aten.cumsum %c {{.*}}: the npu cannot run it (NNFactory has no 'cumsum' op) and policy npu-only excludes the cpu
  func.return %y, %c : tensor<2x4xf32>, tensor<4xi64>
}

// POLICY: invalid options for pass 'lower-aten-to-npuir': unknown affinity policy 'gpu-first' (expected one of npu-first, cpu-only, npu-only)
