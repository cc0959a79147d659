// RUN: forge-opt %s --split-input-file --verify-diagnostics -p lower-npuir-to-buffer

// A state updated in place must not be read after its update: the old value would be gone.
func.func @read_after_update(%pos: tensor<1xi64>, %row: tensor<1x4xf32>, %cache: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) attributes {forge.state = ["cache"]} {
  %pos_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<1xi64>
  %row_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<1x4xf32>
  %cache_1 = npuir.input cpu {index = 2, vreg = 2} : tensor<8x4xf32>
  // expected-error @+1 {{lower-npuir-to-buffer: state 'cache' is read after its update; it cannot be updated in place}}
  %new = npuir.aten cpu %cache_1, %pos_1, %row_1 {op = "aten.index_put", attrs = {present = array<i64: 1>}, vreg = 3} : (tensor<8x4xf32>, tensor<1xi64>, tensor<1x4xf32>) -> tensor<8x4xf32>
  %old = npuir.unary cpu %cache_1 {kind = exp, vreg = 4} : (tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %old, %new : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// The new value must be computed from the entry value as its first operand (an in-place update).
func.func @not_in_place(%row: tensor<8x4xf32>, %cache: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) attributes {forge.state = ["cache"]} {
  %row_1 = npuir.input cpu {index = 0, vreg = 0} : tensor<8x4xf32>
  %cache_1 = npuir.input cpu {index = 1, vreg = 1} : tensor<8x4xf32>
  // expected-error @+1 {{lower-npuir-to-buffer: state 'cache': its new value must be computed from its entry value as the first operand (an in-place update), e.g. index_put(state, ...)}}
  %new = npuir.binary cpu %row_1, %cache_1 {kind = add, vreg = 2} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  func.return %row_1, %new : tensor<8x4xf32>, tensor<8x4xf32>
}
