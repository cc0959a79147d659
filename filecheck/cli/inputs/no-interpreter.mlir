// Input of filecheck/cli/verify-semantics.mlir: an op the reference interpreter has no
// semantics for (Forge interprets aten, npuir and buffer; not arith on tensors).
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
