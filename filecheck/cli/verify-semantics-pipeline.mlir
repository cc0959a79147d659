// --verify-semantics on the model compiler's default pipeline and the lowering: a 1-layer
// Llama (inputs/llama-1l.mlir; weights generated from their types) keeps its results through
// all six optimization passes and down to buffer IR, while the passes fuse what they should.
// RUN: forge-opt %S/inputs/llama-1l.mlir --verify-semantics -p 'dce,cse,fold,fuse-attention,fuse-ops,layout,dce,cse' 2>%t.err | filecheck %s
// RUN: filecheck %s --check-prefix=OK < %t.err
// RUN: forge-opt %S/inputs/llama-1l.mlir --verify-semantics -p 'dce,cse,fold,fuse-attention,fuse-ops,layout,dce,cse,lower-aten-to-npuir,schedule-device-affinity,lower-npuir-to-buffer,check-buffer-allocation' 2>&1 >/dev/null | filecheck %s --check-prefix=LOWERED
// A looser tolerance and another seed are options (and still pass).
// RUN: forge-opt %S/inputs/llama-1l.mlir --verify-semantics --verify-semantics-seed=3 --verify-semantics-rtol=1e-3 -p 'fuse-attention,fuse-ops' 2>&1 >/dev/null | filecheck %s --check-prefix=SEED

// CHECK:     func.func @forward(%input_ids: tensor<1x8xi64>) -> tensor<1x8x512xf32>
// CHECK:     aten.rms_norm
// CHECK:     aten.scaled_dot_product_attention
// CHECK:     aten.gated_mlp
// CHECK:     aten.fused_linear
// CHECK-NOT: aten.linear

// OK:      --verify-semantics: the results of @forward did not change in 8 passes (seed 0)
// OK-NOT:  error

// LOWERED: --verify-semantics: the results of @forward did not change in 12 passes (seed 0)

// SEED:    --verify-semantics: the results of @forward did not change in 2 passes (seed 3)
