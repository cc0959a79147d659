// The tutorial's deliberately wrong pattern (docs/examples/wrong_swish_to_silu.py) forgets to
// check that the sigmoid reads the other factor. Its output still verifies; --verify-semantics
// runs the reference interpreter before and after each pass and stops at the pass that changed
// the results, with a reproducer that fails the same way when run again.
// RUN: rm -rf %t && mkdir -p %t
// RUN: not forge-opt --load-pass-plugin %examples/wrong_swish_to_silu.py %s -p 'dce,wrong-swish-to-silu,cse' --verify-semantics --reproducer-dir %t 2>%t/err
// RUN: filecheck %s < %t/err
// RUN: filecheck %s --check-prefix=FILE < %t/forge-opt-reproducer.mlir
// RUN: sed -n 's/^note: reproduce with: //p' %t/err > %t/reproduce.sh
// RUN: not sh %t/reproduce.sh 2>&1 | filecheck %s --check-prefix=AGAIN
// Without --verify-semantics the wrong rewrite goes unnoticed; the right pattern passes the check.
// RUN: forge-opt --load-pass-plugin %examples/wrong_swish_to_silu.py %s -p wrong-swish-to-silu | filecheck %s --check-prefix=UNNOTICED
// RUN: forge-opt --load-pass-plugin %examples/swish_to_silu.py %s -p swish-to-silu --verify-semantics 2>&1 >/dev/null | filecheck %s --check-prefix=RIGHT

// CHECK:      wrong-swish-to-silu.mlir:{{[0-9]+}}:10: error: pass 'wrong-swish-to-silu' (#2 of 3) changed the results of @gated
// CHECK-NEXT:   %glu = aten.mul.Tensor %x, %sig : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT:          ^~~~~~~~~
// CHECK-NEXT: note: first differing output: #0 (tensor<2x8xf32>): max |diff| {{[0-9.e+-]+}} at [{{[0-9]+}}, {{[0-9]+}}] (before {{.*}}, after {{.*}}); {{[0-9]+}} of 16 elements differ
// CHECK-NEXT: note: tolerance: atol=0.0001, rtol=0.0001 (float32)
// CHECK-NEXT: note: the pass rewrote 4 places (in @gated first):
// CHECK-NEXT: note:   {{.*}}wrong-swish-to-silu.mlir:{{[0-9]+}}:10: aten.sigmoid erased
// CHECK-NEXT: note:   {{.*}}wrong-swish-to-silu.mlir:{{[0-9]+}}:10: aten.mul.Tensor -> aten.silu
// CHECK-NEXT: note:   {{.*}}wrong-swish-to-silu.mlir:{{[0-9]+}}:10: aten.sigmoid erased
// CHECK-NEXT: note:   {{.*}}wrong-swish-to-silu.mlir:{{[0-9]+}}:12: aten.mul.Tensor -> aten.silu
// CHECK-NEXT: note: inputs: forge.semantics.random_inputs with seed 0; weights: generated from their types (seed 0)
// CHECK-NEXT: note: reproducer (the IR before this pass) written to {{.*}}forge-opt-reproducer.mlir
// CHECK-NEXT: note: reproduce with: forge-opt {{.*}}forge-opt-reproducer.mlir --load-pass-plugin {{.*}}docs/examples/wrong_swish_to_silu.py --verify-semantics -p wrong-swish-to-silu{{$}}

// FILE:      // forge-opt wrong-results reproducer: the IR given to pass #2 'wrong-swish-to-silu', which changed the results (--verify-semantics):
// FILE-NEXT: //   changed output #0 (tensor<2x8xf32>) of @gated: max |diff|
// FILE-NEXT: // Reproduce with: forge-opt {{.*}} --load-pass-plugin {{.*}}wrong_swish_to_silu.py --verify-semantics -p wrong-swish-to-silu
// FILE-NEXT: // Reduce with: forge-reduce {{.*}}forge-opt-reproducer.mlir --expect-error {{.*}} --no-reproducer' -o {{.*}}forge-opt-reproducer.reduced.mlir
// FILE-NEXT: // The rest of the pipeline was: -p wrong-swish-to-silu,cse
// FILE:      "aten.mul.Tensor"(%x, %sig)

// AGAIN:      forge-opt-reproducer.mlir:{{[0-9]+}}:{{[0-9]+}}: error: pass 'wrong-swish-to-silu' (#1 of 1) changed the results of @gated
// AGAIN:      note: reproduce with:

// UNNOTICED: %glu = aten.silu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>

// RIGHT: --verify-semantics: the results of @mlp, @gated did not change in 1 pass (seed 0)

func.func @mlp(%x: tensor<2x8xf32>) -> tensor<2x16xf32> {
  %w = aten.weight "fc.weight" : tensor<16x8xf32>
  %h = aten.linear %x, %w, none : (tensor<2x8xf32>, tensor<16x8xf32>) -> tensor<2x16xf32>
  %sig = aten.sigmoid %h : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %swish = aten.mul.Tensor %h, %sig : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %swish : tensor<2x16xf32>
}

func.func @gated(%x: tensor<2x8xf32>, %gate: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %sig = aten.sigmoid %gate : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %glu = aten.mul.Tensor %x, %sig : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  func.return %glu : tensor<2x8xf32>
}
