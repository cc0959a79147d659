// RUN: forge-opt %s -p fuse-attention | filecheck %s
// RUN: forge-opt %s -p fuse-attention | forge-opt -p fuse-attention | filecheck %s

// Shapes: batch 1, 2 heads, L = S = 4, head dim 8 (1/sqrt(8) = 0.35355339059327373).

// ----- positive cases: the chain becomes one aten.scaled_dot_product_attention -----

// CHECK-LABEL: func.func @div_scale
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.5} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @div_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.div.Scalar %scores {other = 2.0} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// Kᵀ from transpose(2, 3) on rank 4, softmax with dim 3.
// CHECK-LABEL: func.func @mul_scale
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.35355339059327373} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @mul_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = 2, dim1 = 3} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = 3} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A 0-d constant tensor is a scalar scale (aten.div.Tensor by sqrt(head_dim)).
// CHECK-LABEL: func.func @div_tensor_scale
// CHECK-NEXT:    %d = aten.constant dense<4.000000e+00> : tensor<f32>
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.25} :
// CHECK-NEXT:    func.return %sdpa
func.func @div_tensor_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %d = aten.constant dense<4.0> : tensor<f32>
  %kt = aten.transpose.int %k {dim0 = -1, dim1 = -2} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.div.Tensor %scores, %d : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// The scale split as sqrt(s) on Q and sqrt(s) on K (before the transpose): scale = s.
// CHECK-LABEL: func.func @split_sqrt_scale
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.125} :
// CHECK-NEXT:    func.return %sdpa
func.func @split_sqrt_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %qs = aten.mul.Scalar %q {other = 0.5} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %ks = aten.div.Scalar %k {other = 4.0} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt = aten.transpose.int %ks {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %qs, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scores {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// sqrt(s) applied to Kᵀ (after the transpose) instead of K.
// CHECK-LABEL: func.func @split_sqrt_scale_on_kt
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.25} :
// CHECK-NEXT:    func.return %sdpa
func.func @split_sqrt_scale_on_kt(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %qs = aten.mul.Scalar %q {other = 0.5} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %kts = aten.mul.Scalar %kt {other = 0.5} : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %qs, %kts : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scores {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// An additive float mask (either operand order) passes through as attn_mask.
// CHECK-LABEL: func.func @additive_mask
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %mask {scale = 0.35355339059327373} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @additive_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %scaled, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A 1-d mask gets a leading unit dim (sdpa's kernels read the mask's dims -2 and -1).
// CHECK-LABEL: func.func @additive_mask_first
// CHECK-NEXT:    %attn_mask = aten.unsqueeze %mask {dim = 0} : (tensor<4xf32>) -> tensor<1x4xf32>
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %attn_mask {scale = 0.35355339059327373} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x4xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @additive_mask_first(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<4xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %mask, %scaled : (tensor<4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// where(keep, scores, -inf) with a constant lower-triangular keep mask: is_causal.
// CHECK-LABEL: func.func @where_causal
// CHECK-NEXT:    %keep = aten.constant
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {is_causal = true, scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @where_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %keep = aten.constant dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.where.ScalarOther %keep, %scaled {other = -inf} : (tensor<4x4xi1>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// where(keep, scores, -inf) with a runtime mask: sdpa's bool mask (True = attend) is `keep`.
// CHECK-LABEL: func.func @where_bool_mask
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %keep {scale = 0.35355339059327373} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @where_bool_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %keep: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.where.ScalarOther %keep, %scaled {other = -inf} : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// where.self with the fill as a 0-d constant tensor, scores in the `other` position: keep = not cond.
// CHECK-LABEL: func.func @where_self_drop
// CHECK-NEXT:    %ninf = aten.full
// CHECK-NEXT:    %attn_mask = aten.logical_not %drop : (tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %attn_mask {scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @where_self_drop(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %drop: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %ninf = aten.full {size = [], fill_value = -inf, dtype = f32} : () -> tensor<f32>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.where.self %drop, %ninf, %scaled : (tensor<1x1x4x4xi1>, tensor<f32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// masked_fill(scores, drop, -inf): True means masked, so attn_mask = logical_not(drop).
// CHECK-LABEL: func.func @masked_fill_mask
// CHECK-NEXT:    %attn_mask = aten.logical_not %drop : (tensor<1x1x1x4xi1>) -> tensor<1x1x1x4xi1>
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %attn_mask {scale = 0.35355339059327373} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @masked_fill_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %drop: tensor<1x1x1x4xi1>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.masked_fill.Scalar %scaled, %drop {value = -inf} : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xi1>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// masked_fill with a constant strictly-upper-triangular mask and HF's finfo.min fill: is_causal.
// CHECK-LABEL: func.func @masked_fill_causal
// CHECK-NEXT:    %future = aten.constant
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {is_causal = true, scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @masked_fill_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %future = aten.constant dense<[[[[false, true, true, true], [false, false, true, true], [false, false, false, true], [false, false, false, false]]]]> : tensor<1x1x4x4xi1>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.masked_fill.Scalar %scaled, %future {value = -3.4028234663852886e+38} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xi1>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// where(keep, scores, finfo.min) with a runtime mask: an equivalent additive float mask
// where(keep, 0, finfo.min) keeps fully-masked rows uniform, as in the decomposed form.
// CHECK-LABEL: func.func @where_finfo_min
// CHECK-NEXT:    %zero = aten.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %attn_mask = aten.where.ScalarOther %keep, %zero {other = -3.4028234663852886e+38} : (tensor<1x1x4x4xi1>, tensor<f32>) -> tensor<1x1x4x4xf32>
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %attn_mask {scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @where_finfo_min(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %keep: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.where.ScalarOther %keep, %scaled {other = -3.4028234663852886e+38} : (tensor<1x1x4x4xi1>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A folded additive causal mask (0 on and below the diagonal, finfo.min above): is_causal.
// CHECK-LABEL: func.func @additive_causal
// CHECK-NEXT:    %mask = aten.constant
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {is_causal = true, scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @additive_causal(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = aten.constant dense<[[[[0.0, -3.4028234663852886e+38, -3.4028234663852886e+38, -3.4028234663852886e+38], [0.0, 0.0, -3.4028234663852886e+38, -3.4028234663852886e+38], [0.0, 0.0, 0.0, -3.4028234663852886e+38], [0.0, 0.0, 0.0, 0.0]]]]> : tensor<1x1x4x4xf32>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %scaled, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A folded all-zero additive mask (BERT without padding) masks nothing: no attn_mask.
// CHECK-LABEL: func.func @additive_zero_mask
// CHECK-NEXT:    %mask = aten.constant
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @additive_zero_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %mask = aten.constant dense<0.0> : tensor<1x1x4x4xf32>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %scaled, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// Eval-mode dropout, a same-dtype cast and export's metadata assertion on the probabilities.
// CHECK-LABEL: func.func @dropout_eval
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @dropout_eval(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1, dtype = f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  aten._assert_tensor_metadata %probs {dtype = f32, device = "cpu", layout = "strided"} : (tensor<1x2x4x4xf32>) -> ()
  %cast = aten.to.dtype %probs {dtype = f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %dropped = aten.dropout %cast {p = 0.1, train = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %dropped, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// aten._softmax (half_to_float = false) is a softmax too.
// CHECK-LABEL: func.func @private_softmax
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @private_softmax(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten._softmax %scaled {dim = -1, half_to_float = false} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// The causal mask built from arange/le (input-free, not folded yet) is evaluated by the pass.
// CHECK-LABEL: func.func @where_causal_from_arange
// CHECK-NEXT:    %positions = aten.arange
// CHECK-NEXT:    %rows = aten.unsqueeze
// CHECK-NEXT:    %cols = aten.unsqueeze
// CHECK-NEXT:    %keep = aten.le.Tensor
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {is_causal = true, scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @where_causal_from_arange(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %positions = aten.arange {end = 4} : () -> tensor<4xi64>
  %rows = aten.unsqueeze %positions {dim = 1} : (tensor<4xi64>) -> tensor<4x1xi64>
  %cols = aten.unsqueeze %positions {dim = 0} : (tensor<4xi64>) -> tensor<1x4xi64>
  %keep = aten.le.Tensor %cols, %rows : (tensor<1x4xi64>, tensor<4x1xi64>) -> tensor<4x4xi1>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.where.ScalarOther %keep, %scaled {other = -inf} : (tensor<4x4xi1>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// masked_fill(scores, logical_not(keep), -inf): the double negation folds away, attn_mask = keep.
// CHECK-LABEL: func.func @masked_fill_not_keep
// CHECK-NEXT:    %drop = aten.logical_not %keep
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %keep {scale = 0.35355339059327373} :
// CHECK-NEXT:    func.return %sdpa
func.func @masked_fill_not_keep(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %keep: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %drop = aten.logical_not %keep : (tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.masked_fill.Scalar %scaled, %drop {value = -inf} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xi1>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// Multi-query attention: one KV head broadcast to every query head by expand.
// CHECK-LABEL: func.func @mqa_expand
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.35355339059327373, enable_gqa = true} : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @mqa_expand(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %ke = aten.expand %k {size = [1, 2, 4, 8]} : (tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %ve = aten.expand %v {size = [1, 2, 4, 8]} : (tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt = aten.transpose.int %ke {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %ve : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// Grouped-query attention: repeat_kv (unsqueeze → expand → reshape) of 1 KV head for 2 query
// heads fuses to the un-repeated K/V with enable_gqa; the repeat is not materialized.
// CHECK-LABEL: func.func @gqa_repeat_kv
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.35355339059327373, enable_gqa = true} : (tensor<1x2x4x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @gqa_repeat_kv(%q: tensor<1x2x4x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %k1 = aten.unsqueeze %k {dim = 2} : (tensor<1x1x4x8xf32>) -> tensor<1x1x1x4x8xf32>
  %k2 = aten.expand %k1 {size = [1, 1, 2, 4, 8]} : (tensor<1x1x1x4x8xf32>) -> tensor<1x1x2x4x8xf32>
  %k3 = aten.reshape %k2 {shape = [1, 2, 4, 8]} : (tensor<1x1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %v1 = aten.unsqueeze %v {dim = 2} : (tensor<1x1x4x8xf32>) -> tensor<1x1x1x4x8xf32>
  %v2 = aten.expand %v1 {size = [1, 1, 2, 4, 8]} : (tensor<1x1x1x4x8xf32>) -> tensor<1x1x2x4x8xf32>
  %v3 = aten.reshape %v2 {shape = [1, 2, 4, 8]} : (tensor<1x1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %kt = aten.transpose.int %k3 {dim0 = 2, dim1 = 3} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v3 : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// Head transposes around Q/K/V (from [B, S, H, D]) and Kᵀ as a permute that swaps only the
// last two dims: the transposes stay, the permute is absorbed.
// CHECK-LABEL: func.func @transposes_around_qkv
// CHECK-NEXT:    %qh = aten.transpose.int %xq {dim0 = 1, dim1 = 2}
// CHECK-NEXT:    %kh = aten.transpose.int %xk {dim0 = 1, dim1 = 2}
// CHECK-NEXT:    %vh = aten.transpose.int %xv {dim0 = 1, dim1 = 2}
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %qh, %kh, %vh, none {scale = 0.35355339059327373} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %merged = aten.transpose.int %sdpa {dim0 = 1, dim1 = 2}
// CHECK-NEXT:    func.return %merged
func.func @transposes_around_qkv(%xq: tensor<1x4x2x8xf32>, %xk: tensor<1x4x2x8xf32>, %xv: tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32> {
  %qh = aten.transpose.int %xq {dim0 = 1, dim1 = 2} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %kh = aten.transpose.int %xk {dim0 = 1, dim1 = 2} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %vh = aten.transpose.int %xv {dim0 = 1, dim1 = 2} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %kt = aten.permute %kh {dims = [0, 1, 3, 2]} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %qh, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %vh : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %merged = aten.transpose.int %out {dim0 = 1, dim1 = 2} : (tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
  func.return %merged : tensor<1x4x2x8xf32>
}

// matmul decomposed into expand → view → bmm → _unsafe_view (both products): fuses at the
// 4-d shape, with the additive mask applied there.
// CHECK-LABEL: func.func @bmm_view_form
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %mask {scale = 0.35355339059327373} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @bmm_view_form(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %qe = aten.expand %q {size = [1, 2, 4, 8]} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %q3 = aten.view %qe {size = [2, 4, 8]} : (tensor<1x2x4x8xf32>) -> tensor<2x4x8xf32>
  %kte = aten.expand %kt {size = [1, 2, 8, 4]} : (tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32>
  %kt3 = aten.view %kte {size = [2, 8, 4]} : (tensor<1x2x8x4xf32>) -> tensor<2x8x4xf32>
  %bmm = aten.bmm %q3, %kt3 : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %scores = aten._unsafe_view %bmm {size = [1, 2, 4, 4]} : (tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %scaled, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %pe = aten.expand %probs {size = [1, 2, 4, 4]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p3 = aten.view %pe {size = [2, 4, 4]} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %ve = aten.expand %v {size = [1, 2, 4, 8]} : (tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %v3 = aten.view %ve {size = [2, 4, 8]} : (tensor<1x2x4x8xf32>) -> tensor<2x4x8xf32>
  %bmm_1 = aten.bmm %p3, %v3 : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = aten._unsafe_view %bmm_1 {size = [1, 2, 4, 8]} : (tensor<2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// Rank-3 bmm on K already transposed (transpose(1, 2) swaps its last two dims).
// CHECK-LABEL: func.func @bmm_3d
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, none {scale = 0.125} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    func.return %sdpa
func.func @bmm_3d(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = 1, dim1 = 2} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %scores = aten.bmm %q, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %scaled = aten.div.Scalar %scores {other = 8} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = 2} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %out = aten.bmm %probs, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  func.return %out : tensor<2x4x8xf32>
}

// BART-style: rank-3 bmm, the scores viewed to rank 4 for the mask and back for the softmax.
// Q/K/V exist only at rank 3, so sdpa runs there and the mask is regrouped like the scores.
// CHECK-LABEL: func.func @bmm_mask_at_rank4
// CHECK-NEXT:    %attn_mask = aten.reshape %mask {shape = [2, 4, 4]} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT:    %sdpa = aten.scaled_dot_product_attention %q, %k, %v, %attn_mask {scale = 0.35355339059327373} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %out = aten.view %sdpa {size = [1, 2, 4, 8]}
// CHECK-NEXT:    func.return %out
func.func @bmm_mask_at_rank4(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %mask: tensor<1x2x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %qs = aten.mul.Scalar %q {other = 0.35355339059327373} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %kt = aten.transpose.int %k {dim0 = 1, dim1 = 2} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
  %scores = aten.bmm %qs, %kt : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %scores4 = aten.view %scores {size = [1, 2, 4, 4]} : (tensor<2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %scores4, %mask : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %masked3 = aten.view %masked {size = [2, 4, 4]} : (tensor<1x2x4x4xf32>) -> tensor<2x4x4xf32>
  %probs = aten.softmax.int %masked3 {dim = -1} : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %attn = aten.bmm %probs, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %out = aten.view %attn {size = [1, 2, 4, 8]} : (tensor<2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// ----- negative cases: nothing changes -----

// The right operand of Q·K is a permute of K that is not Kᵀ (it moves the heads, too).
// CHECK-LABEL: func.func @neg_permuted_k
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int
// CHECK:         func.return
func.func @neg_permuted_k(%q: tensor<1x2x4x8xf32>, %k: tensor<1x8x4x2xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.permute %k {dims = [0, 3, 1, 2]} : (tensor<1x8x4x2xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// transpose(1, 2) on rank 4 is not Kᵀ even when the shapes fit.
// CHECK-LABEL: func.func @neg_transposed_heads
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int
// CHECK:         func.return
func.func @neg_transposed_heads(%q: tensor<1x4x4x4xf32>, %k: tensor<1x4x4x4xf32>, %v: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %kt = aten.transpose.int %k {dim0 = 1, dim1 = 2} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %probs = aten.softmax.int %scores {dim = -1} : (tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  func.return %out : tensor<1x4x4x4xf32>
}

// CHECK-LABEL: func.func @neg_softmax_not_last_dim
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int %{{.*}} {dim = 2}
// CHECK:         func.return
func.func @neg_softmax_not_last_dim(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = 2} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A per-element (here per-head) tensor scale is not an sdpa scale.
// CHECK-LABEL: func.func @neg_tensor_scale
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.mul.Tensor
// CHECK:         func.return
func.func @neg_tensor_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %s = aten.constant dense<[[[[0.5]], [[0.25]]]]> : tensor<1x2x1x1xf32>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Tensor %scores, %s : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A 0-d scale that is not a compile-time constant cannot become the `scale` property.
// CHECK-LABEL: func.func @neg_runtime_scale
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.div.Tensor
// CHECK:         func.return
func.func @neg_runtime_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %t: tensor<f32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.div.Tensor %scores, %t : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A mask that is not broadcastable to the scores (it broadcasts them to a larger shape).
// CHECK-LABEL: func.func @neg_mask_not_broadcastable
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.add.Tensor
// CHECK:         func.return
func.func @neg_mask_not_broadcastable(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<3x1x4x4xf32>) -> tensor<3x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %scores, %mask : (tensor<1x2x4x4xf32>, tensor<3x1x4x4xf32>) -> tensor<3x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<3x2x4x4xf32>) -> tensor<3x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<3x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<3x2x4x8xf32>
  func.return %out : tensor<3x2x4x8xf32>
}

// The probabilities are also a graph output: fusing would have to recompute them.
// CHECK-LABEL: func.func @neg_probs_escape
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int
// CHECK:         func.return
func.func @neg_probs_escape(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out, %probs : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// The raw scores have another user.
// CHECK-LABEL: func.func @neg_scores_reused
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int
// CHECK:         func.return
func.func @neg_scores_reused(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %scores {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  %twice = aten.add.Tensor %scores, %scores : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %out, %twice : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}

// Training-mode dropout on the probabilities.
// CHECK-LABEL: func.func @neg_active_dropout
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.dropout
// CHECK:         func.return
func.func @neg_active_dropout(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scores {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %dropped = aten.dropout %probs {p = 0.1, train = true} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %dropped, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// The additive mask is scaled together with the scores; sdpa adds the mask after scaling.
// CHECK-LABEL: func.func @neg_mask_then_scale
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int
// CHECK:         func.return
func.func @neg_mask_then_scale(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x4x4xf32>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.add.Tensor %scores, %mask : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %scaled = aten.mul.Scalar %masked {other = 0.35355339059327373} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %scaled {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A moderate finite fill (-1e4) is not "masked out" exactly (fully-masked rows would change).
// CHECK-LABEL: func.func @neg_finite_fill
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.masked_fill.Scalar
// CHECK:         func.return
func.func @neg_finite_fill(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %drop: tensor<1x1x4x4xi1>) -> tensor<1x2x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.masked_fill.Scalar %scores, %drop {value = -10000.0} : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xi1>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// A constant mask that hides every key of query 0 with -inf: the decomposed form gives NaN
// there, sdpa would give 0.
// CHECK-LABEL: func.func @neg_nan_rows
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int
// CHECK:         func.return
func.func @neg_nan_rows(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %keep = aten.constant dense<[[false, false, false, false], [true, false, false, false], [true, true, false, false], [true, true, true, false]]> : tensor<4x4xi1>
  %kt = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %q, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %masked = aten.where.ScalarOther %keep, %scores {other = -inf} : (tensor<4x4xi1>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %probs = aten.softmax.int %masked {dim = -1} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %out = aten.matmul %probs, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %out : tensor<1x2x4x8xf32>
}

// The same BART form with a mask broadcast over part of the batch (the heads but not the
// batch): expressing it at rank 3 would need an expand.
// CHECK-LABEL: func.func @neg_mask_partial_batch
// CHECK-NOT:     aten.scaled_dot_product_attention
// CHECK:         aten.softmax.int
// CHECK:         func.return
func.func @neg_mask_partial_batch(%q: tensor<4x4x8xf32>, %k: tensor<4x4x8xf32>, %v: tensor<4x4x8xf32>, %mask: tensor<2x1x4x4xf32>) -> tensor<4x4x8xf32> {
  %kt = aten.transpose.int %k {dim0 = 1, dim1 = 2} : (tensor<4x4x8xf32>) -> tensor<4x8x4xf32>
  %scores = aten.bmm %q, %kt : (tensor<4x4x8xf32>, tensor<4x8x4xf32>) -> tensor<4x4x4xf32>
  %scores4 = aten.view %scores {size = [2, 2, 4, 4]} : (tensor<4x4x4xf32>) -> tensor<2x2x4x4xf32>
  %masked = aten.add.Tensor %scores4, %mask : (tensor<2x2x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x2x4x4xf32>
  %masked3 = aten.view %masked {size = [4, 4, 4]} : (tensor<2x2x4x4xf32>) -> tensor<4x4x4xf32>
  %probs = aten.softmax.int %masked3 {dim = -1} : (tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
  %out = aten.bmm %probs, %v : (tensor<4x4x4xf32>, tensor<4x4x8xf32>) -> tensor<4x4x8xf32>
  func.return %out : tensor<4x4x8xf32>
}
