// forge-gen-checks turns forge-opt output into CHECK lines with named SSA captures (MLIR's
// generate-test-checks.py); the generated lines pass on the output they came from, and a
// different result fails them.
// RUN: forge-opt %s -p fold | forge-gen-checks > %t.checks
// RUN: filecheck %s --check-prefix=GEN < %t.checks
// RUN: forge-opt %s -p fold | filecheck %t.checks
// RUN: forge-opt %s | not filecheck %t.checks
// RUN: forge-opt %s -p fold | forge-gen-checks --prefix FOLDED | filecheck %s --check-prefix=PREFIX

// ([[ and ]] are FileCheck syntax, so this file matches them as regexes.)
// GEN:      // CHECK-LABEL: func.func @f({{$}}
// GEN-NEXT: // CHECK-SAME:  %{{\[\[}}X:{{.*}}{{\]\]}}: tensor<2x2xf32>) -> tensor<2x2xf32> {
// GEN-NEXT: // CHECK-NEXT:  %{{\[\[}}C:{{.*}} = aten.constant dense<{{.*}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00{{.*}}> : tensor<2x2xf32>
// GEN-NEXT: // CHECK-NEXT:  %{{\[\[}}Y:{{.*}} = aten.add.Tensor %{{\[\[}}X{{\]\]}}, %{{\[\[}}C{{\]\]}} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// GEN-NEXT: // CHECK-NEXT:  func.return %{{\[\[}}Y{{\]\]}} : tensor<2x2xf32>
// PREFIX:   // FOLDED-LABEL: func.func @f
func.func @f(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %c = aten.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %n = aten.neg %x : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %nn = aten.neg %n : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %y = aten.add.Tensor %nn, %c : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}
