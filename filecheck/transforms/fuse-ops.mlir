// RUN: forge-opt %s -p fuse-ops | filecheck %s
// RUN: forge-opt %s -p fuse-ops | forge-opt -p fuse-ops | filecheck %s

// fuse-ops: linear layers with bias and activation, written-out GELUs, SwiGLU and RMSNorm.

// linear + relu: one fused_linear; the linear's name carries over.
// CHECK-LABEL: func.func @linear_relu
// CHECK-NEXT:    %w = aten.weight "fc.weight" : tensor<16x8xf32>
// CHECK-NEXT:    %b = aten.weight "fc.bias" : tensor<16xf32>
// CHECK-NEXT:    %linear = aten.fused_linear %x, %w, %b {activation = "relu"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %linear : tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @linear_relu(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = aten.weight "fc.weight" : tensor<16x8xf32>
  %b = aten.weight "fc.bias" : tensor<16xf32>
  %linear = aten.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %relu = aten.relu %linear : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %relu : tensor<4x16xf32>
}

// GPT-2's Conv1D MLP: addmm(bias, view(x), W[in,out]) + view back + the written-out tanh
// polynomial -> one 3-D fused_linear with gelu_tanh; the [in,out] weight goes through aten.t
// (layout folds it into a transposed WeightStore entry).
// CHECK-LABEL: func.func @gpt2_mlp
// CHECK-NEXT:    %w = aten.weight "c_fc.weight" : tensor<8x16xf32>
// CHECK-NEXT:    %b = aten.weight "c_fc.bias" : tensor<16xf32>
// CHECK-NEXT:    %w_t = aten.t %w : (tensor<8x16xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %addmm = aten.fused_linear %x, %w_t, %b {activation = "gelu_tanh"} : (tensor<1x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<1x4x16xf32>
// CHECK-NEXT:    func.return %addmm : tensor<1x4x16xf32>
// CHECK-NEXT:  }
func.func @gpt2_mlp(%x: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
  %w = aten.weight "c_fc.weight" : tensor<8x16xf32>
  %b = aten.weight "c_fc.bias" : tensor<16xf32>
  %view = aten.view %x {size = [-1, 8]} : (tensor<1x4x8xf32>) -> tensor<4x8xf32>
  %addmm = aten.addmm %b, %view, %w : (tensor<16xf32>, tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %h = aten.view %addmm {size = [1, 4, 16]} : (tensor<4x16xf32>) -> tensor<1x4x16xf32>
  %half = aten.mul.Scalar %h {other = 0.5} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %pow = aten.pow.Tensor_Scalar %h {exponent = 3.0} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %cubic = aten.mul.Scalar %pow {other = 0.044715} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %inner = aten.add.Tensor %h, %cubic : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %scaled = aten.mul.Scalar %inner {other = 0.7978845608028654} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %tanh = aten.tanh %scaled : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %one_plus = aten.add.Scalar %tanh {other = 1.0} : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %gelu = aten.mul.Tensor %half, %one_plus : (tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  func.return %gelu : tensor<1x4x16xf32>
}

// mm with a transposed weight + bias add + sigmoid: the transpose is looked through.
// CHECK-LABEL: func.func @mm_add_sigmoid
// CHECK-NEXT:    %w = aten.weight "fc.weight" : tensor<16x8xf32>
// CHECK-NEXT:    %b = aten.weight "fc.bias" : tensor<16xf32>
// CHECK-NEXT:    %mm = aten.fused_linear %x, %w, %b {activation = "sigmoid"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %mm : tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @mm_add_sigmoid(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = aten.weight "fc.weight" : tensor<16x8xf32>
  %b = aten.weight "fc.bias" : tensor<16xf32>
  %wt = aten.t %w : (tensor<16x8xf32>) -> tensor<8x16xf32>
  %mm = aten.mm %x, %wt : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %add = aten.add.Tensor %mm, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %sigmoid = aten.sigmoid %add : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %sigmoid : tensor<4x16xf32>
}

// N-d matmul by a [in,out] weight, bias added on the left, silu.
// CHECK-LABEL: func.func @matmul_bias_silu
// CHECK-NEXT:    %w = aten.weight "fc.weight" : tensor<8x16xf32>
// CHECK-NEXT:    %b = aten.weight "fc.bias" : tensor<16xf32>
// CHECK-NEXT:    %w_t = aten.t %w : (tensor<8x16xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %matmul = aten.fused_linear %x, %w_t, %b {activation = "silu"} : (tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:    func.return %matmul : tensor<2x4x16xf32>
// CHECK-NEXT:  }
func.func @matmul_bias_silu(%x: tensor<2x4x8xf32>) -> tensor<2x4x16xf32> {
  %w = aten.weight "fc.weight" : tensor<8x16xf32>
  %b = aten.weight "fc.bias" : tensor<16xf32>
  %matmul = aten.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %add = aten.add.Tensor %b, %matmul : (tensor<16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  %silu = aten.silu %add : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
  func.return %silu : tensor<2x4x16xf32>
}

// BERT: gelu (erf) as an op and as BERT's written-out x*0.5*(1+erf(x/sqrt(2))).
// CHECK-LABEL: func.func @bert_gelu
// CHECK-NEXT:    %w = aten.weight "fc.weight" : tensor<16x8xf32>
// CHECK-NEXT:    %b = aten.weight "fc.bias" : tensor<16xf32>
// CHECK-NEXT:    %linear = aten.fused_linear %x, %w, %b {activation = "gelu"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %linear_1 = aten.fused_linear %x, %w, %b {activation = "gelu"} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %linear, %linear_1 : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @bert_gelu(%x: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %w = aten.weight "fc.weight" : tensor<16x8xf32>
  %b = aten.weight "fc.bias" : tensor<16xf32>
  %linear = aten.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %gelu = aten.gelu %linear : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %linear_1 = aten.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %half = aten.mul.Scalar %linear_1 {other = 0.5} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %div = aten.div.Scalar %linear_1 {other = 1.4142135623730951} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %erf = aten.erf %div : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one_plus = aten.add.Scalar %erf {other = 1.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %gelu_1 = aten.mul.Tensor %half, %one_plus : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %gelu, %gelu_1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// No linear to fuse into: the polynomial (factors swapped, integer exponent, a shorter
// sqrt(2/pi) literal within tolerance) becomes aten.gelu with approximate = "tanh".
// CHECK-LABEL: func.func @gelu_tanh_poly_alone
// CHECK-NEXT:    %gelu = aten.gelu %x {approximate = "tanh"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %gelu : tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @gelu_tanh_poly_alone(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %half = aten.mul.Scalar %x {other = 0.5} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %pow = aten.pow.Tensor_Scalar %x {exponent = 3} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %cubic = aten.mul.Scalar %pow {other = 0.044715} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %inner = aten.add.Tensor %x, %cubic : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %scaled = aten.mul.Scalar %inner {other = 0.7978845608} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %tanh = aten.tanh %scaled : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one_plus = aten.add.Scalar %tanh {other = 1.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %gelu = aten.mul.Tensor %one_plus, %half : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %gelu : tensor<4x16xf32>
}

// Llama's SwiGLU: silu(x Wg^T) * (x Wu^T) -> gated_mlp; the down projection is a plain fused_linear.
// CHECK-LABEL: func.func @swiglu
// CHECK-NEXT:    %wg = aten.weight "mlp.gate_proj.weight" : tensor<32x8xf32>
// CHECK-NEXT:    %wu = aten.weight "mlp.up_proj.weight" : tensor<32x8xf32>
// CHECK-NEXT:    %wd = aten.weight "mlp.down_proj.weight" : tensor<8x32xf32>
// CHECK-NEXT:    %mul = aten.gated_mlp %x, %wg, %wu {activation = "silu"} : (tensor<1x4x8xf32>, tensor<32x8xf32>, tensor<32x8xf32>) -> tensor<1x4x32xf32>
// CHECK-NEXT:    %down = aten.fused_linear %mul, %wd, none {activation = "none"} : (tensor<1x4x32xf32>, tensor<8x32xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    func.return %down : tensor<1x4x8xf32>
// CHECK-NEXT:  }
func.func @swiglu(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %wg = aten.weight "mlp.gate_proj.weight" : tensor<32x8xf32>
  %wu = aten.weight "mlp.up_proj.weight" : tensor<32x8xf32>
  %wd = aten.weight "mlp.down_proj.weight" : tensor<8x32xf32>
  %gate = aten.linear %x, %wg, none : (tensor<1x4x8xf32>, tensor<32x8xf32>) -> tensor<1x4x32xf32>
  %silu = aten.silu %gate : (tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %up = aten.linear %x, %wu, none : (tensor<1x4x8xf32>, tensor<32x8xf32>) -> tensor<1x4x32xf32>
  %mul = aten.mul.Tensor %silu, %up : (tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %down = aten.linear %mul, %wd, none : (tensor<1x4x32xf32>, tensor<8x32xf32>) -> tensor<1x4x8xf32>
  func.return %down : tensor<1x4x8xf32>
}

// Llama's RMSNorm with its no-op f32 casts and a metadata assert; x (%to) is also used by the
// residual add, which is fine: only the intermediates must be internal.
// CHECK-LABEL: func.func @llama_rmsnorm
// CHECK-NEXT:    %w = aten.weight "input_layernorm.weight" : tensor<8xf32>
// CHECK-NEXT:    %to = aten.to.dtype %x {dtype = f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    %mul = aten.rms_norm %to, %w {normalized_shape = [8], eps = 1.0e-06} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    %res = aten.add.Tensor %to, %mul : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
// CHECK-NEXT:    func.return %res : tensor<1x4x8xf32>
// CHECK-NEXT:  }
func.func @llama_rmsnorm(%x: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %w = aten.weight "input_layernorm.weight" : tensor<8xf32>
  %to = aten.to.dtype %x {dtype = f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %pow = aten.pow.Tensor_Scalar %to {exponent = 2} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mean = aten.mean.dim %pow {dim = [-1], keepdim = true} : (tensor<1x4x8xf32>) -> tensor<1x4x1xf32>
  %add = aten.add.Scalar %mean {other = 1.0e-06} : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %rsqrt = aten.rsqrt %add : (tensor<1x4x1xf32>) -> tensor<1x4x1xf32>
  %mul = aten.mul.Tensor %to, %rsqrt : (tensor<1x4x8xf32>, tensor<1x4x1xf32>) -> tensor<1x4x8xf32>
  aten._assert_tensor_metadata %mul {dtype = f32} : (tensor<1x4x8xf32>) -> ()
  %to_1 = aten.to.dtype %mul {dtype = f32} : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %mul_1 = aten.mul.Tensor %w, %to_1 : (tensor<8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %res = aten.add.Tensor %to, %mul_1 : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return %res : tensor<1x4x8xf32>
}

// x*x, eps as a constant tensor, 1/sqrt, mean over dim 1 of a rank-2 tensor, no weight.
// CHECK-LABEL: func.func @rmsnorm_variants
// CHECK-NEXT:    %norm = aten.rms_norm %x, none {normalized_shape = [8], eps = 9.999999747378752e-06} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %norm : tensor<4x8xf32>
// CHECK-NEXT:  }
func.func @rmsnorm_variants(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %eps = aten.constant dense<1.0e-05> : tensor<f32>
  %sq = aten.mul.Tensor %x, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %mean = aten.mean.dim %sq {dim = [1], keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %add = aten.add.Tensor %mean, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %sqrt = aten.sqrt %add : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %inv = aten.reciprocal %sqrt : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %norm = aten.mul.Tensor %inv, %x : (tensor<4x1xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %norm : tensor<4x8xf32>
}

// ----- negative cases: must not fuse -----

// NEGATIVE: the linear's output is also returned, so relu must not be fused into it.
// CHECK-LABEL: func.func @linear_other_user
// CHECK-NEXT:    %w = aten.weight "fc.weight" : tensor<16x8xf32>
// CHECK-NEXT:    %linear = aten.fused_linear %x, %w, none {activation = "none"} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %relu = aten.relu %linear : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %relu, %linear : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @linear_other_user(%x: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %w = aten.weight "fc.weight" : tensor<16x8xf32>
  %linear = aten.linear %x, %w, none : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  %relu = aten.relu %linear : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %relu, %linear : tensor<4x16xf32>, tensor<4x16xf32>
}

// NEGATIVE: cubic coefficient 0.04 instead of 0.044715: not a GELU.
// CHECK-LABEL: func.func @gelu_wrong_constant
// CHECK-NEXT:    %half = aten.mul.Scalar %x {other = 0.5} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %pow = aten.pow.Tensor_Scalar %x {exponent = 3.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %cubic = aten.mul.Scalar %pow {other = 0.04} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %inner = aten.add.Tensor %x, %cubic : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %scaled = aten.mul.Scalar %inner {other = 0.7978845608028654} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %tanh = aten.tanh %scaled : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %one_plus = aten.add.Scalar %tanh {other = 1.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %gelu = aten.mul.Tensor %half, %one_plus : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %gelu : tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @gelu_wrong_constant(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %half = aten.mul.Scalar %x {other = 0.5} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %pow = aten.pow.Tensor_Scalar %x {exponent = 3.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %cubic = aten.mul.Scalar %pow {other = 0.04} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %inner = aten.add.Tensor %x, %cubic : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %scaled = aten.mul.Scalar %inner {other = 0.7978845608028654} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %tanh = aten.tanh %scaled : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one_plus = aten.add.Scalar %tanh {other = 1.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %gelu = aten.mul.Tensor %half, %one_plus : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %gelu : tensor<4x16xf32>
}

// NEGATIVE: tanh(...) is also returned: the polynomial's intermediates are not internal.
// CHECK-LABEL: func.func @gelu_intermediate_escapes
// CHECK-NEXT:    %half = aten.mul.Scalar %x {other = 0.5} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %pow = aten.pow.Tensor_Scalar %x {exponent = 3.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %cubic = aten.mul.Scalar %pow {other = 0.044715} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %inner = aten.add.Tensor %x, %cubic : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %scaled = aten.mul.Scalar %inner {other = 0.7978845608028654} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %tanh = aten.tanh %scaled : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %one_plus = aten.add.Scalar %tanh {other = 1.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %gelu = aten.mul.Tensor %half, %one_plus : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %gelu, %tanh : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @gelu_intermediate_escapes(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %half = aten.mul.Scalar %x {other = 0.5} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %pow = aten.pow.Tensor_Scalar %x {exponent = 3.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %cubic = aten.mul.Scalar %pow {other = 0.044715} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %inner = aten.add.Tensor %x, %cubic : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %scaled = aten.mul.Scalar %inner {other = 0.7978845608028654} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %tanh = aten.tanh %scaled : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %one_plus = aten.add.Scalar %tanh {other = 1.0} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %gelu = aten.mul.Tensor %half, %one_plus : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %gelu, %tanh : tensor<4x16xf32>, tensor<4x16xf32>
}

// NEGATIVE: the mean runs over axis 0, not the last one.
// CHECK-LABEL: func.func @rmsnorm_wrong_axis
// CHECK-NEXT:    %w = aten.weight "norm.weight" : tensor<8xf32>
// CHECK-NEXT:    %pow = aten.pow.Tensor_Scalar %x {exponent = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %mean = aten.mean.dim %pow {dim = [0], keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:    %add = aten.add.Scalar %mean {other = 1.0e-06} : (tensor<1x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:    %rsqrt = aten.rsqrt %add : (tensor<1x8xf32>) -> tensor<1x8xf32>
// CHECK-NEXT:    %mul = aten.mul.Tensor %x, %rsqrt : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %mul_1 = aten.mul.Tensor %w, %mul : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %mul_1 : tensor<4x8xf32>
// CHECK-NEXT:  }
func.func @rmsnorm_wrong_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = aten.weight "norm.weight" : tensor<8xf32>
  %pow = aten.pow.Tensor_Scalar %x {exponent = 2} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %mean = aten.mean.dim %pow {dim = [0], keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
  %add = aten.add.Scalar %mean {other = 1.0e-06} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %rsqrt = aten.rsqrt %add : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %mul = aten.mul.Tensor %x, %rsqrt : (tensor<4x8xf32>, tensor<1x8xf32>) -> tensor<4x8xf32>
  %mul_1 = aten.mul.Tensor %w, %mul : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %mul_1 : tensor<4x8xf32>
}

// NEGATIVE: gated_mlp has no bias: the biased gate stays a fused_linear (silu fused).
// CHECK-LABEL: func.func @swiglu_with_bias
// CHECK-NEXT:    %wg = aten.weight "mlp.gate_proj.weight" : tensor<32x8xf32>
// CHECK-NEXT:    %bg = aten.weight "mlp.gate_proj.bias" : tensor<32xf32>
// CHECK-NEXT:    %wu = aten.weight "mlp.up_proj.weight" : tensor<32x8xf32>
// CHECK-NEXT:    %gate = aten.fused_linear %x, %wg, %bg {activation = "silu"} : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    %up = aten.fused_linear %x, %wu, none {activation = "none"} : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    %mul = aten.mul.Tensor %gate, %up : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
// CHECK-NEXT:    func.return %mul : tensor<4x32xf32>
// CHECK-NEXT:  }
func.func @swiglu_with_bias(%x: tensor<4x8xf32>) -> tensor<4x32xf32> {
  %wg = aten.weight "mlp.gate_proj.weight" : tensor<32x8xf32>
  %bg = aten.weight "mlp.gate_proj.bias" : tensor<32xf32>
  %wu = aten.weight "mlp.up_proj.weight" : tensor<32x8xf32>
  %gate = aten.linear %x, %wg, %bg : (tensor<4x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %silu = aten.silu %gate : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %up = aten.linear %x, %wu, none : (tensor<4x8xf32>, tensor<32x8xf32>) -> tensor<4x32xf32>
  %mul = aten.mul.Tensor %silu, %up : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  func.return %mul : tensor<4x32xf32>
}

// NEGATIVE: addmm with alpha = 2 is not a linear layer; mm of two activations is left to layout,
// and a [4,16] addend is not a bias.
// CHECK-LABEL: func.func @addmm_scaled
// CHECK-NEXT:    %addmm = aten.addmm %b, %x, %w {alpha = 2} : (tensor<16xf32>, tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %mm = aten.mm %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %add = aten.add.Tensor %mm, %m : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %addmm, %add : tensor<4x16xf32>, tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @addmm_scaled(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %m: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %addmm = aten.addmm %b, %x, %w {alpha = 2} : (tensor<16xf32>, tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %mm = aten.mm %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %add = aten.add.Tensor %mm, %m : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %addmm, %add : tensor<4x16xf32>, tensor<4x16xf32>
}

// BERT's post-norm residual: layer_norm(a + b) becomes one add_layer_norm ("SkipLayerNorm").
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK-NEXT:    %w = aten.weight "ln.weight" : tensor<8xf32>
// CHECK-NEXT:    %b = aten.weight "ln.bias" : tensor<8xf32>
// CHECK-NEXT:    %ln = aten.add_layer_norm %x, %r, %w, %b {normalized_shape = [8], eps = 1.0e-12} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %ln : tensor<4x8xf32>
func.func @residual_layer_norm(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = aten.weight "ln.weight" : tensor<8xf32>
  %b = aten.weight "ln.bias" : tensor<8xf32>
  %sum = aten.add.Tensor %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ln = aten.layer_norm %sum, %w, %b {normalized_shape = [8], eps = 1.0e-12} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %ln : tensor<4x8xf32>
}

// NEGATIVE: a sum that is also the residual stream, a broadcasting add and a scaled add stay.
// CHECK-LABEL: func.func @residual_layer_norm_negative
// CHECK-NEXT:    %sum = aten.add.Tensor %x, %r
// CHECK-NEXT:    %ln = aten.layer_norm %sum
// CHECK-NEXT:    %bcast = aten.add.Tensor %x, %row
// CHECK-NEXT:    %ln_1 = aten.layer_norm %bcast
// CHECK-NEXT:    %scaled = aten.add.Tensor %x, %r {alpha = 2}
// CHECK-NEXT:    %ln_2 = aten.layer_norm %scaled
// CHECK-NEXT:    func.return %ln, %sum, %ln_1, %ln_2
func.func @residual_layer_norm_negative(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>, %row: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %sum = aten.add.Tensor %x, %r : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ln = aten.layer_norm %sum, none, none {normalized_shape = [8]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %bcast = aten.add.Tensor %x, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %ln_1 = aten.layer_norm %bcast, none, none {normalized_shape = [8]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %scaled = aten.add.Tensor %x, %r {alpha = 2} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %ln_2 = aten.layer_norm %scaled, none, none {normalized_shape = [8]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %ln, %sum, %ln_1, %ln_2 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// An integer linear's sigmoid is float: fusing it would type the fused_linear as the linear (an
// integer), so the activation stays apart when it changes the dtype.
// CHECK-LABEL: func.func @int_linear_sigmoid
// CHECK-NEXT:    %linear = aten.fused_linear %x, %w, none {activation = "none"} : (tensor<4x8xi64>, tensor<16x8xi64>) -> tensor<4x16xi64>
// CHECK-NEXT:    %sigmoid = aten.sigmoid %linear : (tensor<4x16xi64>) -> tensor<4x16xf32>
func.func @int_linear_sigmoid(%x: tensor<4x8xi64>, %w: tensor<16x8xi64>) -> tensor<4x16xf32> {
  %linear = aten.linear %x, %w, none : (tensor<4x8xi64>, tensor<16x8xi64>) -> tensor<4x16xi64>
  %sigmoid = aten.sigmoid %linear : (tensor<4x16xi64>) -> tensor<4x16xf32>
  func.return %sigmoid : tensor<4x16xf32>
}
