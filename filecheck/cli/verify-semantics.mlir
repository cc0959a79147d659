// --verify-semantics: interpret every function on seeded random inputs before the pipeline and
// after each pass; stop at the first pass whose results differ (pass, output, max |diff| and
// where, tolerance), write a reproducer and print the command that reproduces the failure.
// RUN: rm -rf %t && mkdir -p %t
// RUN: forge-opt %s -p fold,cse --verify-semantics 2>&1 >/dev/null | filecheck %s --check-prefix=OK
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/negate_exp.py %s -p 'cse,negate-exp' --verify-semantics --reproducer-dir %t 2>&1 | filecheck %s
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/negate_exp.py %s -p negate-exp --verify-semantics --verify-semantics-seed=7 --verify-semantics-atol=0.5 --verify-semantics-rtol=0 --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=OPTIONS
// RUN: not forge-opt --load-pass-plugin %S/inputs/plugins/negate_exp.py %s -p exp-to-arith --verify-semantics --reproducer-dir %t 2>&1 | filecheck %s --check-prefix=UNRUNNABLE
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %S/inputs/identities.mlir -p test-arith-identities --verify-semantics 2>&1 | filecheck %s --check-prefix=SCALARS
// RUN: not forge-opt %S/inputs/no-interpreter.mlir -p cse --verify-semantics 2>&1 | filecheck %s --check-prefix=NOIMPL
// Passes are verified before they are interpreted: broken IR is a verifier error, not a mismatch.
// RUN: env FORGE_TEST_PASSES=1 not forge-opt %s -p test-break-ir --verify-semantics 2>&1 | filecheck %s --check-prefix=BROKEN

// OK: --verify-semantics: the results of @f did not change in 2 passes (seed 0){{$}}

// CHECK:      verify-semantics.mlir:{{[0-9]+}}:8: error: pass 'negate-exp' (#2 of 2) changed the results of @f
// CHECK-NEXT:   %e = aten.exp %one : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:        ^~~~~~~~
// CHECK-NEXT: note: first differing output: #0 (tensor<4xf32>): max |diff| {{[0-9.e+-]+}} at [{{[0-3]}}] (before {{.*}}, after {{.*}}); {{[1-4]}} of 4 elements differ
// CHECK-NEXT: note: tolerance: atol=0.0001, rtol=0.0001 (float32)
// CHECK-NEXT: note: the pass rewrote 1 place (in @f first):
// CHECK-NEXT: note:   {{.*}}verify-semantics.mlir:[[# @LINE + 6]]:8: aten.neg inserted
// CHECK-NEXT: note: inputs: forge.semantics.random_inputs with seed 0{{$}}
// CHECK-NEXT: note: reproducer (the IR before this pass) written to {{.*}}forge-opt-reproducer.mlir
// CHECK-NEXT: note: reproduce with: forge-opt {{.*}}forge-opt-reproducer.mlir --load-pass-plugin {{.*}}inputs/plugins/negate_exp.py --verify-semantics -p negate-exp{{$}}
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %one = aten.mul.Scalar %x {other = 1.0} : (tensor<4xf32>) -> tensor<4xf32>
  %e = aten.exp %one : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e : tensor<4xf32>
}

// OPTIONS:      note: tolerance: atol=0.5, rtol=0 (float32)
// OPTIONS:      note: inputs: forge.semantics.random_inputs with seed 7
// OPTIONS:      note: reproduce with: forge-opt {{.*}} --verify-semantics --verify-semantics-seed=7 --verify-semantics-atol=0.5 --verify-semantics-rtol=0.0 -p negate-exp{{$}}

// UNRUNNABLE-NOT: Traceback
// UNRUNNABLE:      verify-semantics.mlir: error: the reference interpreter cannot run the IR after pass 'exp-to-arith' (#1 of 1): @f at 'arith.negf': InterpretationError: Could not find interpretation function for op arith.negf
// UNRUNNABLE-NEXT: note: --verify-semantics checks passes whose output the reference interpreter runs (aten, npuir and buffer IR)
// UNRUNNABLE-NEXT: note: the pass rewrote 2 places:
// UNRUNNABLE-NEXT: note:   {{.*}}verify-semantics.mlir:{{[0-9]+}}:8: aten.exp erased
// UNRUNNABLE-NEXT: note:   {{.*}}verify-semantics.mlir:{{[0-9]+}}:3: arith.negf inserted
// UNRUNNABLE-NEXT: note: inputs: forge.semantics.random_inputs with seed 0
// UNRUNNABLE-NEXT: note: reproducer (the IR before this pass) written to
// UNRUNNABLE-NEXT: note: reproduce with: forge-opt {{.*}} --verify-semantics -p exp-to-arith{{$}}

// SCALARS-NOT: Traceback
// SCALARS: identities.mlir:1:1: error: 'func.func' op --verify-semantics: cannot generate an input for argument #0 of @f: i32 is not a statically shaped tensor

// NOIMPL-NOT: Traceback
// NOIMPL: no-interpreter.mlir:4:8: error: 'arith.addf' op --verify-semantics: cannot interpret the input: @f at 'arith.addf': InterpretationError: Could not find interpretation function for op arith.addf

// BROKEN:      error: 'aten.exp' op terminates block in single-block region but is not a terminator
// BROKEN:      note: the IR does not verify after pass 'test-break-ir' (#1 of 1)
// BROKEN-NOT:  changed the results
