// RUN: forge-opt %s --split-input-file --verify-diagnostics | filecheck %s

// One case per kind of verifier error of the `aten` dialect. Messages name the op and the
// mismatch; errors found by torch's meta kernels carry torch's own first line.
// (Syntax errors are in parse-errors.mlir.)

// Properties: required, attribute kind, value.

func.func @missing_property(%x: tensor<4xf32>) {
  // expected-error @+1 {{property 'dim' expected in operation 'aten.unsqueeze'}}
  %y = aten.unsqueeze %x : (tensor<4xf32>) -> tensor<1x4xf32>
  func.return
}

// -----

func.func @missing_present_mask(%x: tensor<4x5xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{property 'present' expected in operation 'aten.index.Tensor'}}
  %y = "aten.index.Tensor"(%x, %i) : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2x5xf32>
  func.return
}

// -----

func.func @float_for_int(%x: tensor<4xf32>) {
  // expected-error @+1 {{1.500000e+00 : f64 should be of base attribute integer}}
  %y = "aten.unsqueeze"(%x) <{dim = 1.5 : f64}> : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @int_width(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.unsqueeze: property 'dim' has invalid value 1 : i32}}
  %y = "aten.unsqueeze"(%x) <{dim = 1 : i32}> : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @int_for_bool(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.dropout: property 'train' has invalid value 1 : i64}}
  %y = "aten.dropout"(%x) <{p = 0.0 : f64, train = 1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @float_width(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.dropout: property 'p' has invalid value 5.000000e-01 : f32}}
  %y = "aten.dropout"(%x) <{p = 0.5 : f32, train = false}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @scalar_width(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.mul.Scalar: property 'other' has invalid value 2 : i32}}
  %y = "aten.mul.Scalar"(%x) <{other = 2 : i32}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @list_element_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.view: property 'size' has invalid value array<i32: 4>}}
  %y = "aten.view"(%x) <{size = array<i32: 4>}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @dtype_not_a_type(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.to.dtype: property 'dtype' has invalid value "f16"}}
  %y = "aten.to.dtype"(%x) <{dtype = "f16"}> : (tensor<4xf32>) -> tensor<4xf16>
  func.return
}

// -----

func.func @dtype_unsupported(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.to.dtype: property 'dtype' has invalid value f8E4M3FN}}
  %y = aten.to.dtype %x {dtype = f8E4M3FN} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @bad_layout() {
  // expected-error @+1 {{aten.zeros: property 'layout' has invalid value "dense"}}
  %y = aten.zeros {size = [4], layout = "dense"} : () -> tensor<4xf32>
  func.return
}

// -----

func.func @bad_device() {
  // expected-error @+1 {{aten.zeros: property 'device' has invalid value "npu0"}}
  %y = aten.zeros {size = [4], device = "npu0"} : () -> tensor<4xf32>
  func.return
}

// -----

func.func @bad_memory_format(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.clone: property 'memory_format' has invalid value "row_major"}}
  %y = aten.clone %x {memory_format = "row_major"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

// Result types inferred by the overload's meta kernel.

func.func @result_shape(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.unsqueeze: result type tensor<4x1xf32> does not match inferred type tensor<1x4xf32>}}
  %y = aten.unsqueeze %x {dim = 0} : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @result_dtype(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.eq.Tensor: result type tensor<4xf32> does not match inferred type tensor<4xi1>}}
  %y = aten.eq.Tensor %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @result_count(%x: tensor<3xf32>) {
  // expected-error @+1 {{aten.split.Tensor: result type tensor<1xf32>, tensor<1xf32> does not match inferred type tensor<1xf32>, tensor<1xf32>, tensor<1xf32>}}
  %a, %b = aten.split.Tensor %x {split_size = 1} : (tensor<3xf32>) -> (tensor<1xf32>, tensor<1xf32>)
  func.return
}

// -----

func.func @dynamic_result() {
  // expected-error @+1 {{aten.zeros: result type tensor<?xf32> does not match inferred type tensor<4xf32>}}
  %y = aten.zeros {size = [4]} : () -> tensor<?xf32>
  func.return
}

// -----

// Operands rejected by torch's meta kernel (torch's message, first line).

func.func @matmul_inner_dims(%a: tensor<2x64xf32>, %b: tensor<32x4xf32>) {
  // expected-error @+1 {{aten.matmul: a and b must have same reduction dim, but got [2, 64] X [32, 4].}}
  %y = aten.matmul %a, %b : (tensor<2x64xf32>, tensor<32x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @dim_out_of_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.unsqueeze: Dimension out of range (expected to be in range of [-2, 1], but got 5)}}
  %y = aten.unsqueeze %x {dim = 5} : (tensor<4xf32>) -> tensor<4x1xf32>
  func.return
}

// -----

func.func @embedding_float_ids(%w: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{aten.embedding: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got torch.float32 instead}}
  %y = aten.embedding %w, %i : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @bad_string_value(%x: tensor<4xf32>) {
  // expected-error @+1 {{aten.gelu: approximate argument must be either none or tanh.}}
  %y = aten.gelu %x {approximate = "fast"} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @fused_activation(%x: tensor<2x8xf32>, %w: tensor<4x8xf32>) {
  // expected-error @+1 {{aten.fused_linear: unknown activation 'swish' (expected one of none, relu, gelu, gelu_tanh, silu, sigmoid}}
  %y = aten.fused_linear %x, %w, none {activation = "swish"} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

// Operands: static tensors of a dtype torch has, and consistent operand groups.

func.func @dynamic_operand(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{aten.neg: operands must be statically shaped tensors, got tensor<?x4xf32>}}
  %y = aten.neg %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return
}

// -----

func.func @unsupported_element_type(%x: tensor<4xi7>) {
  // expected-error @+1 {{aten.neg: unsupported element type i7}}
  %y = aten.neg %x : (tensor<4xi7>) -> tensor<4xi7>
  func.return
}

// -----

func.func @operand_not_a_tensor(%x: f32) {
  // expected-error @+1 {{operand 'input' at position 0 does not verify: f32 should be of base attribute tensor}}
  %y = aten.neg %x : (f32) -> tensor<f32>
  func.return
}

// -----

func.func @present_mask_mismatch(%x: tensor<4x5xf32>, %i: tensor<2xi64>) {
  // expected-error @+1 {{aten.index.Tensor: 'present' mask does not match the operand count}}
  %y = "aten.index.Tensor"(%x, %i) <{present = array<i64: 1, 1>}> : (tensor<4x5xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return
}

// -----

func.func @segment_sizes_mismatch(%p: tensor<4x1xi64>) {
  // expected-error @+1 {{operand count (2) does not match with the total size (3) specified in attribute 'operandSegmentSizes'}}
  %y = "aten.diff"(%p, %p) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<4x1xi64>, tensor<4x1xi64>) -> tensor<4x1xi64>
  func.return
}

// -----

// aten.constant and aten.weight.

func.func @constant_type() {
  // expected-error @+1 {{aten.constant: value type tensor<2xf32> does not match result type tensor<3xf32>}}
  %c = "aten.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

func.func @weight_not_a_tensor() {
  // expected-error @+1 {{result 'result' at position 0 does not verify: f32 should be of base attribute tensor}}
  %w = aten.weight "hf.lm_head.bias" : f32
  func.return
}

// -----

func.func @weight_without_name() {
  // expected-error @+1 {{property 'name' expected in operation 'aten.weight'}}
  %w = "aten.weight"() : () -> tensor<4xf32>
  func.return
}

// -----

// The softmax meta kernel accepts any dim; the verifier checks it against the operand's rank.
func.func @softmax_dim_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{aten.softmax.int: dim 99 is out of range for a rank-2 operand (expected -2 to 1)}}
  %y = aten.softmax.int %x {dim = 99} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

func.func @internal_softmax_dim_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{aten._softmax: dim -3 is out of range for a rank-2 operand (expected -2 to 1)}}
  %y = aten._softmax %x {dim = -3, half_to_float = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %y : tensor<2x3xf32>
}

// -----

// unsqueeze may name the position past the last dim (the dim check allows it).
// CHECK: func.func @unsqueeze_at_end
// CHECK-NEXT: aten.unsqueeze %x {dim = 2}
func.func @unsqueeze_at_end(%x: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  %y = aten.unsqueeze %x {dim = 2} : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  func.return %y : tensor<2x3x1xf32>
}

// -----

// A batch norm's running statistics hold one value per channel: a longer one is refused (the CPU
// kernel would read its first values, the meta kernel broadcast it into the result).
func.func @batch_norm_running_var_per_channel(%x: tensor<1x1x1xf32>, %m: tensor<1xf32>, %v: tensor<2xf32>) {
  // expected-error @+1 {{aten._native_batch_norm_legit_no_training: running_var has shape [2], the input ([1, 1, 1]) has 1 channels (expected 1 values: one per channel)}}
  %y, %s, %t = aten._native_batch_norm_legit_no_training %x, none, none, %m, %v {momentum = 0.5, eps = 0.1} : (tensor<1x1x1xf32>, tensor<1xf32>, tensor<2xf32>) -> (tensor<1x2x1xf32>, tensor<0xf32>, tensor<0xf32>)
  func.return
}

// -----

// A half layer norm's statistics keep its dtype (torch's CPU kernel; the meta kernel says float32).
// CHECK: func.func @half_layer_norm_statistics
// CHECK-NEXT: aten.native_layer_norm %x
func.func @half_layer_norm_statistics(%x: tensor<1x2x5xf16>) {
  %y, %m, %r = aten.native_layer_norm %x, none, none {normalized_shape = [2, 5], eps = 0.0} : (tensor<1x2x5xf16>) -> (tensor<1x2x5xf16>, tensor<1x1x1xf16>, tensor<1x1x1xf16>)
  func.return
}

// -----

// A bf16 batch norm with float32 running statistics has float32 saved statistics (the CPU kernel's).
// CHECK: func.func @mixed_batch_norm_statistics
// CHECK-NEXT: aten._native_batch_norm_legit_no_training %x
func.func @mixed_batch_norm_statistics(%x: tensor<1x1xbf16>, %m: tensor<1xf32>) {
  %y, %s, %t = aten._native_batch_norm_legit_no_training %x, none, none, %m, %m {momentum = 0.1, eps = 1.0e-05} : (tensor<1x1xbf16>, tensor<1xf32>, tensor<1xf32>) -> (tensor<1x1xbf16>, tensor<0xf32>, tensor<0xf32>)
  func.return
}
