// RUN: forge-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// Syntax errors of the `aten` custom syntax: each names the property or count at fault and
// points at it. (Verifier errors are in invalid.mlir.)

// CHECK:      parse-errors.mlir:{{[0-9]+}}:27
// CHECK-NEXT:   %y = aten.unsqueeze %x {dims = 0} : (tensor<4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:                          ^^^^
// CHECK-NEXT:                          unknown property 'dims' (known: dim)
func.func @unknown_property(%x: tensor<4xf32>) {
  %y = aten.unsqueeze %x {dims = 0} : (tensor<4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: duplicate property 'dim'
func.func @duplicate_property(%x: tensor<4xf32>) {
  %y = aten.unsqueeze %x {dim = 0, dim = 1} : (tensor<4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: property 'dim' expects an integer
func.func @float_for_int(%x: tensor<4xf32>) {
  %y = aten.unsqueeze %x {dim = 1.5} : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

// CHECK: property 'dim' expects an integer
func.func @bool_for_int(%x: tensor<4xf32>) {
  %y = aten.unsqueeze %x {dim = true} : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

// CHECK: property 'train' expects true or false
func.func @int_for_bool(%x: tensor<4xf32>) {
  %y = aten.dropout %x {p = 0.0, train = 1} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: property 'p' expects a number
func.func @string_for_float(%x: tensor<4xf32>) {
  %y = aten.dropout %x {p = "0.5", train = false} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: property 'other' expects a number or boolean
func.func @bad_scalar(%x: tensor<4xf32>) {
  %y = aten.mul.Scalar %x {other = two} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: property 'size' expects a list of integers
func.func @float_in_int_list(%x: tensor<4xf32>) {
  %y = aten.view %x {size = [2.0, 2]} : (tensor<4xf32>) -> tensor<2x2xf32>
  func.return
}

// -----

// CHECK: expected a number after '-'
func.func @dangling_minus(%x: tensor<4xf32>) {
  %y = aten.unsqueeze %x {dim = -} : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

// CHECK: string literal expected
func.func @number_for_string(%x: tensor<4xf32>) {
  %y = aten.gelu %x {approximate = 0} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// CHECK: aten.unsqueeze: 1 operands but 2 operand types
func.func @operand_type_count(%x: tensor<4xf32>) {
  %y = aten.unsqueeze %x {dim = 0} : (tensor<4xf32>, tensor<4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

// CHECK: aten.cat: 2 operands but 1 operand types
func.func @list_type_count(%x: tensor<4xf32>) {
  %y = aten.cat [%x, %x] : (tensor<4xf32>) -> tensor<8xf32>
  func.return
}

// -----

// CHECK: Operation has 2 results, but was given 1 to bind.
func.func @result_count(%x: tensor<4xf32>) {
  %y = aten.split.Tensor %x {split_size = 2} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  func.return
}

// -----

// CHECK: '[' expected
func.func @list_without_brackets(%x: tensor<4xf32>) {
  %y = aten.cat %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  func.return
}

// -----

// CHECK: Expected ',' before tensor argument 'bias' of aten.linear (write `none` for an absent optional tensor)
func.func @missing_optional_operand(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  %y = aten.linear %x, %w : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// CHECK: aten.constant expects a dense<...> : tensor<...> value
func.func @constant_not_dense() {
  %c = aten.constant 1.0 : f32
  func.return
}
