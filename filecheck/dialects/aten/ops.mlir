// RUN: forge-opt %s | forge-opt | filecheck %s
// RUN: forge-opt %s --print-op-generic | forge-opt | filecheck %s

// Every op of the `aten` dialect in its custom syntax, grouped by family. Both round trips
// (custom -> custom -> custom and custom -> generic -> custom) must print exactly this text.
// tests/dialects/test_aten.py fails when an op of the dialect appears in no ops file.
// `aten.weight` and `aten.constant` are in constants.mlir, syntax corner cases in syntax.mlir.

// Shape and data movement (views, slicing, splitting, joining, copies).
// CHECK-LABEL: func.func @shape(
func.func @shape(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>, %m: tensor<3x4xf32>,
                 %s: tensor<2x1x4xf32>, %img: tensor<1x3x4x4xf32>) {
  // CHECK-NEXT: %view = aten.view %x {size = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %view = aten.view %x {size = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK-NEXT: %reshape = aten.reshape %x {shape = [-1, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %reshape = aten.reshape %x {shape = [-1, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK-NEXT: %unsafe_view = aten._unsafe_view %x {size = [2, 12]} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %unsafe_view = aten._unsafe_view %x {size = [2, 12]} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK-NEXT: %permute = aten.permute %x {dims = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %permute = aten.permute %x {dims = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK-NEXT: %transpose = aten.transpose.int %x {dim0 = 0, dim1 = -1} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %transpose = aten.transpose.int %x {dim0 = 0, dim1 = -1} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  // CHECK-NEXT: %t = aten.t %m : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %t = aten.t %m : (tensor<3x4xf32>) -> tensor<4x3xf32>
  // CHECK-NEXT: %expand = aten.expand %s {size = [2, 3, 4]} : (tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %expand = aten.expand %s {size = [2, 3, 4]} : (tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %expand_implicit = aten.expand %s {size = [-1, 3, -1], implicit = true} : (tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  %expand_implicit = aten.expand %s {size = [-1, 3, -1], implicit = true} : (tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %slice_all = aten.slice.Tensor %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %slice_all = aten.slice.Tensor %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %slice = aten.slice.Tensor %x {dim = 1, start = 0, end = 2} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  %slice = aten.slice.Tensor %x {dim = 1, start = 0, end = 2} : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
  // CHECK-NEXT: %slice_step = aten.slice.Tensor %x {dim = 2, start = 1, end = 9223372036854775807, step = 2} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  %slice_step = aten.slice.Tensor %x {dim = 2, start = 1, end = 9223372036854775807, step = 2} : (tensor<2x3x4xf32>) -> tensor<2x3x2xf32>
  // CHECK-NEXT: %select = aten.select.int %x {dim = 1, index = -1} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %select = aten.select.int %x {dim = 1, index = -1} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %split, %split_1 = aten.split.Tensor %x {split_size = 2, dim = 1} : (tensor<2x3x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x1x4xf32>)
  %split, %split_1 = aten.split.Tensor %x {split_size = 2, dim = 1} : (tensor<2x3x4xf32>) -> (tensor<2x2x4xf32>, tensor<2x1x4xf32>)
  // CHECK-NEXT: %chunk = aten.split.Tensor %x {split_size = 4, dim = 2} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %chunk = aten.split.Tensor %x {split_size = 4, dim = 2} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %part, %part_1 = aten.split_with_sizes %x {split_sizes = [1, 3], dim = 2} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x3xf32>)
  %part, %part_1 = aten.split_with_sizes %x {split_sizes = [1, 3], dim = 2} : (tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<2x3x3xf32>)
  // CHECK-NEXT: %cat = aten.cat [%x, %y] {dim = 1} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  %cat = aten.cat [%x, %y] {dim = 1} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
  // CHECK-NEXT: %cat_one = aten.cat [%x] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %cat_one = aten.cat [%x] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %stack = aten.stack [%x, %y] : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x2x3x4xf32>
  %stack = aten.stack [%x, %y] : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x2x3x4xf32>
  // CHECK-NEXT: %unsqueeze = aten.unsqueeze %x {dim = -1} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  %unsqueeze = aten.unsqueeze %x {dim = -1} : (tensor<2x3x4xf32>) -> tensor<2x3x4x1xf32>
  // CHECK-NEXT: %squeeze = aten.squeeze %s : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  %squeeze = aten.squeeze %s : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %squeeze_dim = aten.squeeze.dim %s {dim = 1} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  %squeeze_dim = aten.squeeze.dim %s {dim = 1} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %squeeze_dims = aten.squeeze.dims %s {dim = [1]} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  %squeeze_dims = aten.squeeze.dims %s {dim = [1]} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %flatten = aten.flatten.using_ints %x {start_dim = 1} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %flatten = aten.flatten.using_ints %x {start_dim = 1} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  // CHECK-NEXT: %repeat = aten.repeat %m {repeats = [2, 1]} : (tensor<3x4xf32>) -> tensor<6x4xf32>
  %repeat = aten.repeat %m {repeats = [2, 1]} : (tensor<3x4xf32>) -> tensor<6x4xf32>
  // CHECK-NEXT: %contiguous = aten.contiguous %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %contiguous = aten.contiguous %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %channels_last = aten.contiguous %img {memory_format = "channels_last"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  %channels_last = aten.contiguous %img {memory_format = "channels_last"} : (tensor<1x3x4x4xf32>) -> tensor<1x3x4x4xf32>
  // CHECK-NEXT: %clone = aten.clone %x {memory_format = "preserve_format"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %clone = aten.clone %x {memory_format = "preserve_format"} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %alias = aten.alias %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %alias = aten.alias %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %detach = aten.detach %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %detach = aten.detach %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %lift = aten.lift_fresh_copy %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %lift = aten.lift_fresh_copy %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Lookups: embeddings, gathers and advanced indexing (`Tensor?[]` with `none`).
// CHECK-LABEL: func.func @lookups(
func.func @lookups(%table: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %x: tensor<3x4xf32>,
                   %idx: tensor<3x2xi64>, %i: tensor<2xi64>) {
  // CHECK-NEXT: %embedding = aten.embedding %table, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %embedding = aten.embedding %table, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %embedding_pad = aten.embedding %table, %ids {padding_idx = 0} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %embedding_pad = aten.embedding %table, %ids {padding_idx = 0} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // CHECK-NEXT: %gather = aten.gather %x, %idx {dim = 1} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  %gather = aten.gather %x, %idx {dim = 1} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  // CHECK-NEXT: %rows = aten.index.Tensor %x, [%i] : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %rows = aten.index.Tensor %x, [%i] : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  // CHECK-NEXT: %cols = aten.index.Tensor %x, [none, %i] : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %cols = aten.index.Tensor %x, [none, %i] : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  // CHECK-NEXT: %points = aten.index.Tensor %x, [%i, %i] : (tensor<3x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
  %points = aten.index.Tensor %x, [%i, %i] : (tensor<3x4xf32>, tensor<2xi64>, tensor<2xi64>) -> tensor<2xf32>
  // CHECK-NEXT: %index_select = aten.index_select %x, %i {dim = 1} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %index_select = aten.index_select %x, %i {dim = 1} : (tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Linear algebra.
// CHECK-LABEL: func.func @linalg(
func.func @linalg(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>,
                  %wt: tensor<32x16xf32>, %q: tensor<2x8x16xf32>, %k: tensor<2x16x8xf32>,
                  %acc: tensor<2x8x8xf32>) {
  // CHECK-NEXT: %addmm = aten.addmm %b, %a, %w : (tensor<32xf32>, tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %addmm = aten.addmm %b, %a, %w : (tensor<32xf32>, tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // CHECK-NEXT: %addmm_scaled = aten.addmm %b, %a, %w {beta = 0.5, alpha = 2} : (tensor<32xf32>, tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %addmm_scaled = aten.addmm %b, %a, %w {beta = 0.5, alpha = 2} : (tensor<32xf32>, tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // CHECK-NEXT: %mm = aten.mm %a, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %mm = aten.mm %a, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // CHECK-NEXT: %bmm = aten.bmm %q, %k : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %bmm = aten.bmm %q, %k : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  // CHECK-NEXT: %baddbmm = aten.baddbmm %acc, %q, %k {beta = 0, alpha = 0.125} : (tensor<2x8x8xf32>, tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %baddbmm = aten.baddbmm %acc, %q, %k {beta = 0, alpha = 0.125} : (tensor<2x8x8xf32>, tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  // CHECK-NEXT: %matmul = aten.matmul %q, %k : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  %matmul = aten.matmul %q, %k : (tensor<2x8x16xf32>, tensor<2x16x8xf32>) -> tensor<2x8x8xf32>
  // CHECK-NEXT: %matmul_bcast = aten.matmul %q, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %matmul_bcast = aten.matmul %q, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: %linear = aten.linear %a, %wt, %b : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %linear = aten.linear %a, %wt, %b : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  // CHECK-NEXT: %linear_nobias = aten.linear %a, %wt, none : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  %linear_nobias = aten.linear %a, %wt, none : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Elementwise arithmetic: Tensor and Scalar overloads, broadcasting, int and float.
// CHECK-LABEL: func.func @arith(
func.func @arith(%x: tensor<2x4xf32>, %y: tensor<2x4xf32>, %r: tensor<4xf32>, %i: tensor<2x4xi64>) {
  // CHECK-NEXT: %add = aten.add.Tensor %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %add = aten.add.Tensor %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %add_alpha = aten.add.Tensor %x, %r {alpha = 2} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %add_alpha = aten.add.Tensor %x, %r {alpha = 2} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %add_s = aten.add.Scalar %x {other = 1.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %add_s = aten.add.Scalar %x {other = 1.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %add_si = aten.add.Scalar %i {other = 1, alpha = -1} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  %add_si = aten.add.Scalar %i {other = 1, alpha = -1} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  // CHECK-NEXT: %sub = aten.sub.Tensor %x, %y {alpha = 0.5} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %sub = aten.sub.Tensor %x, %y {alpha = 0.5} : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %sub_s = aten.sub.Scalar %x {other = 1.0e-06} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sub_s = aten.sub.Scalar %x {other = 1.0e-06} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %rsub = aten.rsub.Scalar %x {other = 1.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %rsub = aten.rsub.Scalar %x {other = 1.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %mul = aten.mul.Tensor %x, %r : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %mul = aten.mul.Tensor %x, %r : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %mul_s = aten.mul.Scalar %x {other = -0.5} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %mul_s = aten.mul.Scalar %x {other = -0.5} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %div = aten.div.Tensor %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %div = aten.div.Tensor %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %div_s = aten.div.Scalar %x {other = 8.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %div_s = aten.div.Scalar %x {other = 8.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %div_int = aten.div.Scalar %i {other = 2} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %div_int = aten.div.Scalar %i {other = 2} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  // CHECK-NEXT: %floordiv = aten.div.Tensor_mode %i, %i {rounding_mode = "floor"} : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi64>
  %floordiv = aten.div.Tensor_mode %i, %i {rounding_mode = "floor"} : (tensor<2x4xi64>, tensor<2x4xi64>) -> tensor<2x4xi64>
  // CHECK-NEXT: %square = aten.pow.Tensor_Scalar %x {exponent = 2} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %square = aten.pow.Tensor_Scalar %x {exponent = 2} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %pow = aten.pow.Tensor_Tensor %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %pow = aten.pow.Tensor_Tensor %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %maximum = aten.maximum %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %maximum = aten.maximum %x, %y : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %minimum = aten.minimum %x, %r : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %minimum = aten.minimum %x, %r : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %clamp = aten.clamp %x {min = -1.0, max = 1.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %clamp = aten.clamp %x {min = -1.0, max = 1.0} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %clamp_min = aten.clamp %i {min = 0} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  %clamp_min = aten.clamp %i {min = 0} : (tensor<2x4xi64>) -> tensor<2x4xi64>
  // CHECK-NEXT: %neg = aten.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %neg = aten.neg %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %abs = aten.abs %i : (tensor<2x4xi64>) -> tensor<2x4xi64>
  %abs = aten.abs %i : (tensor<2x4xi64>) -> tensor<2x4xi64>
  // CHECK-NEXT: %reciprocal = aten.reciprocal %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %reciprocal = aten.reciprocal %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %sqrt = aten.sqrt %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sqrt = aten.sqrt %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %rsqrt = aten.rsqrt %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %rsqrt = aten.rsqrt %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %exp = aten.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %exp = aten.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %log = aten.log %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %log = aten.log %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %sin = aten.sin %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sin = aten.sin %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %cos = aten.cos %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %cos = aten.cos %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %erf = aten.erf %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %erf = aten.erf %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Activations.
// CHECK-LABEL: func.func @activations(
func.func @activations(%x: tensor<2x4xf32>) {
  // CHECK-NEXT: %tanh = aten.tanh %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %tanh = aten.tanh %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %sigmoid = aten.sigmoid %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %sigmoid = aten.sigmoid %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %relu = aten.relu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %relu = aten.relu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %gelu = aten.gelu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %gelu = aten.gelu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %gelu_tanh = aten.gelu %x {approximate = "tanh"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %gelu_tanh = aten.gelu %x {approximate = "tanh"} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: %silu = aten.silu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %silu = aten.silu %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Reductions, cumulative ops and softmax (dtype properties).
// CHECK-LABEL: func.func @reductions(
func.func @reductions(%x: tensor<2x8x32xf32>, %i: tensor<2x8xi64>, %p: tensor<2x1xi64>,
                      %m: tensor<2x8xi1>) {
  // CHECK-NEXT: %mean_dim = aten.mean.dim %x {dim = [-1], keepdim = true} : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %mean_dim = aten.mean.dim %x {dim = [-1], keepdim = true} : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  // CHECK-NEXT: %mean_f64 = aten.mean.dim %x {dim = [1, 2], dtype = f64} : (tensor<2x8x32xf32>) -> tensor<2xf64>
  %mean_f64 = aten.mean.dim %x {dim = [1, 2], dtype = f64} : (tensor<2x8x32xf32>) -> tensor<2xf64>
  // CHECK-NEXT: %mean = aten.mean %x : (tensor<2x8x32xf32>) -> tensor<f32>
  %mean = aten.mean %x : (tensor<2x8x32xf32>) -> tensor<f32>
  // CHECK-NEXT: %sum_dim = aten.sum.dim_IntList %x {dim = [0]} : (tensor<2x8x32xf32>) -> tensor<8x32xf32>
  %sum_dim = aten.sum.dim_IntList %x {dim = [0]} : (tensor<2x8x32xf32>) -> tensor<8x32xf32>
  // CHECK-NEXT: %sum = aten.sum %i {dtype = f32} : (tensor<2x8xi64>) -> tensor<f32>
  %sum = aten.sum %i {dtype = f32} : (tensor<2x8xi64>) -> tensor<f32>
  // CHECK-NEXT: %amax = aten.amax %x {dim = [-1], keepdim = true} : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  %amax = aten.amax %x {dim = [-1], keepdim = true} : (tensor<2x8x32xf32>) -> tensor<2x8x1xf32>
  // CHECK-NEXT: %amax_all = aten.amax %x : (tensor<2x8x32xf32>) -> tensor<f32>
  %amax_all = aten.amax %x : (tensor<2x8x32xf32>) -> tensor<f32>
  // CHECK-NEXT: %cumsum = aten.cumsum %m {dim = -1} : (tensor<2x8xi1>) -> tensor<2x8xi64>
  %cumsum = aten.cumsum %m {dim = -1} : (tensor<2x8xi1>) -> tensor<2x8xi64>
  // CHECK-NEXT: %cumsum_i32 = aten.cumsum %i {dim = 1, dtype = i32} : (tensor<2x8xi64>) -> tensor<2x8xi32>
  %cumsum_i32 = aten.cumsum %i {dim = 1, dtype = i32} : (tensor<2x8xi64>) -> tensor<2x8xi32>
  // CHECK-NEXT: %diff = aten.diff %i, none, none : (tensor<2x8xi64>) -> tensor<2x7xi64>
  %diff = aten.diff %i, none, none : (tensor<2x8xi64>) -> tensor<2x7xi64>
  // CHECK-NEXT: %diff_prepend = aten.diff %i, %p, none {n = 1, dim = -1} : (tensor<2x8xi64>, tensor<2x1xi64>) -> tensor<2x8xi64>
  %diff_prepend = aten.diff %i, %p, none {n = 1, dim = -1} : (tensor<2x8xi64>, tensor<2x1xi64>) -> tensor<2x8xi64>
  // CHECK-NEXT: %diff_append = aten.diff %i, none, %p {dim = 1} : (tensor<2x8xi64>, tensor<2x1xi64>) -> tensor<2x8xi64>
  %diff_append = aten.diff %i, none, %p {dim = 1} : (tensor<2x8xi64>, tensor<2x1xi64>) -> tensor<2x8xi64>
  // CHECK-NEXT: %softmax = aten.softmax.int %x {dim = -1} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %softmax = aten.softmax.int %x {dim = -1} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: %softmax_f64 = aten.softmax.int %x {dim = -1, dtype = f64} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf64>
  %softmax_f64 = aten.softmax.int %x {dim = -1, dtype = f64} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf64>
  // CHECK-NEXT: %_softmax = aten._softmax %x {dim = -1, half_to_float = false} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %_softmax = aten._softmax %x {dim = -1, half_to_float = false} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: %log_softmax = aten.log_softmax.int %x {dim = 1} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %log_softmax = aten.log_softmax.int %x {dim = 1} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Normalization and attention (optional tensors absent and present, several results).
// CHECK-LABEL: func.func @norms(
func.func @norms(%x: tensor<2x8x32xf32>, %w: tensor<32xf32>, %b: tensor<32xf32>,
                 %q: tensor<1x4x8x16xf32>, %kv: tensor<1x2x8x16xf32>, %mask: tensor<1x1x8x8xi1>,
                 %bias: tensor<8x8xf32>) {
  // CHECK-NEXT: %layer_norm = aten.layer_norm %x, %w, %b {normalized_shape = [32]} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %layer_norm = aten.layer_norm %x, %w, %b {normalized_shape = [32]} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: %layer_norm_plain = aten.layer_norm %x, none, none {normalized_shape = [32], eps = 1.0e-12, cudnn_enable = false} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %layer_norm_plain = aten.layer_norm %x, none, none {normalized_shape = [32], eps = 1.0e-12, cudnn_enable = false} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: %ln, %ln_mean, %ln_rstd = aten.native_layer_norm %x, %w, %b {normalized_shape = [32], eps = 1.0e-05} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  %ln, %ln_mean, %ln_rstd = aten.native_layer_norm %x, %w, %b {normalized_shape = [32], eps = 1.0e-05} : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> (tensor<2x8x32xf32>, tensor<2x8x1xf32>, tensor<2x8x1xf32>)
  // CHECK-NEXT: %ln0, %ln0_mean, %ln0_rstd = aten.native_layer_norm %x, none, none {normalized_shape = [8, 32], eps = 0.0} : (tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  %ln0, %ln0_mean, %ln0_rstd = aten.native_layer_norm %x, none, none {normalized_shape = [8, 32], eps = 0.0} : (tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  // CHECK-NEXT: %rms_norm = aten.rms_norm %x, %w {normalized_shape = [32], eps = 1.0e-06} : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %rms_norm = aten.rms_norm %x, %w {normalized_shape = [32], eps = 1.0e-06} : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: %rms_norm_default = aten.rms_norm %x, none {normalized_shape = [32]} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %rms_norm_default = aten.rms_norm %x, none {normalized_shape = [32]} : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  // CHECK-NEXT: %sdpa_causal = aten.scaled_dot_product_attention %q, %q, %q, none {is_causal = true} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %sdpa_causal = aten.scaled_dot_product_attention %q, %q, %q, none {is_causal = true} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  // CHECK-NEXT: %sdpa_mask = aten.scaled_dot_product_attention %q, %q, %q, %mask {scale = 0.25} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x1x8x8xi1>) -> tensor<1x4x8x16xf32>
  %sdpa_mask = aten.scaled_dot_product_attention %q, %q, %q, %mask {scale = 0.25} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x1x8x8xi1>) -> tensor<1x4x8x16xf32>
  // CHECK-NEXT: %sdpa_gqa = aten.scaled_dot_product_attention %q, %kv, %kv, %bias {dropout_p = 0.0, enable_gqa = true} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8x8xf32>) -> tensor<1x4x8x16xf32>
  %sdpa_gqa = aten.scaled_dot_product_attention %q, %kv, %kv, %bias {dropout_p = 0.0, enable_gqa = true} : (tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8x8xf32>) -> tensor<1x4x8x16xf32>
  // CHECK-NEXT: func.return
  func.return
}

// Masks, comparisons and logic (results are i1).
// CHECK-LABEL: func.func @masks(
func.func @masks(%c: tensor<4x4xi1>, %d: tensor<4x4xi1>, %x: tensor<4x4xf32>, %y: tensor<4x4xf32>,
                 %s: tensor<f32>, %i: tensor<4x4xi64>) {
  // CHECK-NEXT: %where = aten.where.self %c, %x, %y : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %where = aten.where.self %c, %x, %y : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %where_so = aten.where.ScalarOther %c, %x {other = -inf} : (tensor<4x4xi1>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %where_so = aten.where.ScalarOther %c, %x {other = -inf} : (tensor<4x4xi1>, tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %where_ss = aten.where.ScalarSelf %c, %y {self = 0.0} : (tensor<4x4xi1>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %where_ss = aten.where.ScalarSelf %c, %y {self = 0.0} : (tensor<4x4xi1>, tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %masked_fill = aten.masked_fill.Scalar %x, %c {value = -3.4028234663852886e+38} : (tensor<4x4xf32>, tensor<4x4xi1>) -> tensor<4x4xf32>
  %masked_fill = aten.masked_fill.Scalar %x, %c {value = -3.4028234663852886e+38} : (tensor<4x4xf32>, tensor<4x4xi1>) -> tensor<4x4xf32>
  // CHECK-NEXT: %masked_fill_t = aten.masked_fill.Tensor %x, %c, %s : (tensor<4x4xf32>, tensor<4x4xi1>, tensor<f32>) -> tensor<4x4xf32>
  %masked_fill_t = aten.masked_fill.Tensor %x, %c, %s : (tensor<4x4xf32>, tensor<4x4xi1>, tensor<f32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %triu = aten.triu %x {diagonal = 1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %triu = aten.triu %x {diagonal = 1} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %tril = aten.tril %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %tril = aten.tril %x : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // CHECK-NEXT: %eq = aten.eq.Tensor %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %eq = aten.eq.Tensor %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  // CHECK-NEXT: %eq_s = aten.eq.Scalar %i {other = 0} : (tensor<4x4xi64>) -> tensor<4x4xi1>
  %eq_s = aten.eq.Scalar %i {other = 0} : (tensor<4x4xi64>) -> tensor<4x4xi1>
  // CHECK-NEXT: %ne = aten.ne.Tensor %i, %i : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi1>
  %ne = aten.ne.Tensor %i, %i : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi1>
  // CHECK-NEXT: %ne_s = aten.ne.Scalar %i {other = 1} : (tensor<4x4xi64>) -> tensor<4x4xi1>
  %ne_s = aten.ne.Scalar %i {other = 1} : (tensor<4x4xi64>) -> tensor<4x4xi1>
  // CHECK-NEXT: %lt = aten.lt.Tensor %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %lt = aten.lt.Tensor %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  // CHECK-NEXT: %lt_s = aten.lt.Scalar %x {other = 0.5} : (tensor<4x4xf32>) -> tensor<4x4xi1>
  %lt_s = aten.lt.Scalar %x {other = 0.5} : (tensor<4x4xf32>) -> tensor<4x4xi1>
  // CHECK-NEXT: %le = aten.le.Tensor %i, %i : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi1>
  %le = aten.le.Tensor %i, %i : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi1>
  // CHECK-NEXT: %le_s = aten.le.Scalar %i {other = -1} : (tensor<4x4xi64>) -> tensor<4x4xi1>
  %le_s = aten.le.Scalar %i {other = -1} : (tensor<4x4xi64>) -> tensor<4x4xi1>
  // CHECK-NEXT: %gt = aten.gt.Tensor %x, %s : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %gt = aten.gt.Tensor %x, %s : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  // CHECK-NEXT: %gt_s = aten.gt.Scalar %x {other = inf} : (tensor<4x4xf32>) -> tensor<4x4xi1>
  %gt_s = aten.gt.Scalar %x {other = inf} : (tensor<4x4xf32>) -> tensor<4x4xi1>
  // CHECK-NEXT: %ge = aten.ge.Tensor %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %ge = aten.ge.Tensor %x, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  // CHECK-NEXT: %ge_s = aten.ge.Scalar %c {other = true} : (tensor<4x4xi1>) -> tensor<4x4xi1>
  %ge_s = aten.ge.Scalar %c {other = true} : (tensor<4x4xi1>) -> tensor<4x4xi1>
  // CHECK-NEXT: %bitwise_and = aten.bitwise_and.Tensor %c, %d : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %bitwise_and = aten.bitwise_and.Tensor %c, %d : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  // CHECK-NEXT: %bitwise_or = aten.bitwise_or.Tensor %i, %i : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi64>
  %bitwise_or = aten.bitwise_or.Tensor %i, %i : (tensor<4x4xi64>, tensor<4x4xi64>) -> tensor<4x4xi64>
  // CHECK-NEXT: %bitwise_not = aten.bitwise_not %c : (tensor<4x4xi1>) -> tensor<4x4xi1>
  %bitwise_not = aten.bitwise_not %c : (tensor<4x4xi1>) -> tensor<4x4xi1>
  // CHECK-NEXT: %and = aten.__and__.Tensor %c, %d : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %and = aten.__and__.Tensor %c, %d : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  // CHECK-NEXT: %or = aten.__or__.Tensor %c, %d : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  %or = aten.__or__.Tensor %c, %d : (tensor<4x4xi1>, tensor<4x4xi1>) -> tensor<4x4xi1>
  // CHECK-NEXT: %logical_not = aten.logical_not %x : (tensor<4x4xf32>) -> tensor<4x4xi1>
  %logical_not = aten.logical_not %x : (tensor<4x4xf32>) -> tensor<4x4xi1>
  // CHECK-NEXT: %logical_and = aten.logical_and %c, %x : (tensor<4x4xi1>, tensor<4x4xf32>) -> tensor<4x4xi1>
  %logical_and = aten.logical_and %c, %x : (tensor<4x4xi1>, tensor<4x4xf32>) -> tensor<4x4xi1>
  // CHECK-NEXT: func.return
  func.return
}

// Conversions, dropout and metadata assertions (zero results; not Pure).
// CHECK-LABEL: func.func @conversions(
func.func @conversions(%x: tensor<2x3xf32>, %h: tensor<2x3xf16>) {
  // CHECK-NEXT: %to_f16 = aten.to.dtype %x {dtype = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  %to_f16 = aten.to.dtype %x {dtype = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
  // CHECK-NEXT: %to_bf16 = aten.to.dtype %x {dtype = bf16, copy = true} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %to_bf16 = aten.to.dtype %x {dtype = bf16, copy = true} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  // CHECK-NEXT: %to_layout = aten.to.dtype_layout %x {dtype = f32, layout = "strided", device = "cpu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %to_layout = aten.to.dtype_layout %x {dtype = f32, layout = "strided", device = "cpu"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %to_device = aten.to.device %x {device = "cpu", dtype = f64} : (tensor<2x3xf32>) -> tensor<2x3xf64>
  %to_device = aten.to.device %x {device = "cpu", dtype = f64} : (tensor<2x3xf32>) -> tensor<2x3xf64>
  // CHECK-NEXT: %to_copy = aten._to_copy %h {dtype = f32} : (tensor<2x3xf16>) -> tensor<2x3xf32>
  %to_copy = aten._to_copy %h {dtype = f32} : (tensor<2x3xf16>) -> tensor<2x3xf32>
  // CHECK-NEXT: %to_copy_u8 = aten._to_copy %x {dtype = ui8, layout = "strided", device = "cpu", pin_memory = false} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  %to_copy_u8 = aten._to_copy %x {dtype = ui8, layout = "strided", device = "cpu", pin_memory = false} : (tensor<2x3xf32>) -> tensor<2x3xui8>
  // CHECK-NEXT: %dropout = aten.dropout %x {p = 0.1, train = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %dropout = aten.dropout %x {p = 0.1, train = false} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: aten._assert_tensor_metadata %x {size = [2, 3], stride = [3, 1], dtype = f32, device = "cpu", layout = "strided"} : (tensor<2x3xf32>) -> ()
  aten._assert_tensor_metadata %x {size = [2, 3], stride = [3, 1], dtype = f32, device = "cpu", layout = "strided"} : (tensor<2x3xf32>) -> ()
  // CHECK-NEXT: aten._assert_tensor_metadata %h : (tensor<2x3xf16>) -> ()
  aten._assert_tensor_metadata %h : (tensor<2x3xf16>) -> ()
  // CHECK-NEXT: func.return
  func.return
}

// Tensor factories (ops without tensor operands, and `*_like` ops).
// CHECK-LABEL: func.func @factories(
func.func @factories(%x: tensor<2x3xf32>) {
  // CHECK-NEXT: %arange = aten.arange {end = 8} : () -> tensor<8xi64>
  %arange = aten.arange {end = 8} : () -> tensor<8xi64>
  // CHECK-NEXT: %arange_cpu = aten.arange {end = 8, dtype = f32, device = "cpu", pin_memory = false} : () -> tensor<8xf32>
  %arange_cpu = aten.arange {end = 8, dtype = f32, device = "cpu", pin_memory = false} : () -> tensor<8xf32>
  // CHECK-NEXT: %arange_float = aten.arange {end = 2.5} : () -> tensor<3xf32>
  %arange_float = aten.arange {end = 2.5} : () -> tensor<3xf32>
  // CHECK-NEXT: %arange_start = aten.arange.start {start = 2, end = 10} : () -> tensor<8xi64>
  %arange_start = aten.arange.start {start = 2, end = 10} : () -> tensor<8xi64>
  // CHECK-NEXT: %arange_step = aten.arange.start_step {start = 0, end = 10, step = 3} : () -> tensor<4xi64>
  %arange_step = aten.arange.start_step {start = 0, end = 10, step = 3} : () -> tensor<4xi64>
  // CHECK-NEXT: %arange_down = aten.arange.start_step {start = 10, end = 0, step = -2} : () -> tensor<5xi64>
  %arange_down = aten.arange.start_step {start = 10, end = 0, step = -2} : () -> tensor<5xi64>
  // CHECK-NEXT: %full = aten.full {size = [2, 2], fill_value = -inf} : () -> tensor<2x2xf32>
  %full = aten.full {size = [2, 2], fill_value = -inf} : () -> tensor<2x2xf32>
  // CHECK-NEXT: %full_bool = aten.full {size = [3], fill_value = true} : () -> tensor<3xi1>
  %full_bool = aten.full {size = [3], fill_value = true} : () -> tensor<3xi1>
  // CHECK-NEXT: %full_i32 = aten.full {size = [2], fill_value = 7, dtype = i32} : () -> tensor<2xi32>
  %full_i32 = aten.full {size = [2], fill_value = 7, dtype = i32} : () -> tensor<2xi32>
  // CHECK-NEXT: %ones = aten.ones {size = [2, 3]} : () -> tensor<2x3xf32>
  %ones = aten.ones {size = [2, 3]} : () -> tensor<2x3xf32>
  // CHECK-NEXT: %zeros = aten.zeros {size = [], dtype = f32, device = "cpu", pin_memory = false} : () -> tensor<f32>
  %zeros = aten.zeros {size = [], dtype = f32, device = "cpu", pin_memory = false} : () -> tensor<f32>
  // CHECK-NEXT: %new_ones = aten.new_ones %x {size = [4]} : (tensor<2x3xf32>) -> tensor<4xf32>
  %new_ones = aten.new_ones %x {size = [4]} : (tensor<2x3xf32>) -> tensor<4xf32>
  // CHECK-NEXT: %new_zeros = aten.new_zeros %x {size = [2, 2], dtype = i64} : (tensor<2x3xf32>) -> tensor<2x2xi64>
  %new_zeros = aten.new_zeros %x {size = [2, 2], dtype = i64} : (tensor<2x3xf32>) -> tensor<2x2xi64>
  // CHECK-NEXT: %full_like = aten.full_like %x {fill_value = 0.5} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %full_like = aten.full_like %x {fill_value = 0.5} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %ones_like = aten.ones_like %x {dtype = i1} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %ones_like = aten.ones_like %x {dtype = i1} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  // CHECK-NEXT: %zeros_like = aten.zeros_like %x {memory_format = "preserve_format"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %zeros_like = aten.zeros_like %x {memory_format = "preserve_format"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK-NEXT: %scalar = aten.scalar_tensor {s = 1.5} : () -> tensor<f32>
  %scalar = aten.scalar_tensor {s = 1.5} : () -> tensor<f32>
  // CHECK-NEXT: %scalar_i64 = aten.scalar_tensor {s = -3, dtype = i64} : () -> tensor<i64>
  %scalar_i64 = aten.scalar_tensor {s = -3, dtype = i64} : () -> tensor<i64>
  // CHECK-NEXT: func.return
  func.return
}

// Forge's fused ops (torch custom ops in the `forge` namespace).
// CHECK-LABEL: func.func @fused(
func.func @fused(%x: tensor<8x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>,
                 %gate: tensor<128x64xf32>, %up: tensor<128x64xf32>, %a: tensor<2x8x16xf32>,
                 %c: tensor<2x8x16xf32>) {
  // CHECK-NEXT: %fc_gelu = aten.fused_linear %x, %w, %b {activation = "gelu_tanh"} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  %fc_gelu = aten.fused_linear %x, %w, %b {activation = "gelu_tanh"} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  // CHECK-NEXT: %fc = aten.fused_linear %x, %w, none {activation = "none"} : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
  %fc = aten.fused_linear %x, %w, none {activation = "none"} : (tensor<8x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
  // CHECK-NEXT: %mlp = aten.gated_mlp %x, %gate, %up {activation = "silu"} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
  %mlp = aten.gated_mlp %x, %gate, %up {activation = "silu"} : (tensor<8x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<8x128xf32>
  // CHECK-NEXT: %scores = aten.matmul_transposed %a, %c {transpose_input = false, transpose_other = true} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  %scores = aten.matmul_transposed %a, %c {transpose_input = false, transpose_other = true} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x8xf32>
  // CHECK-NEXT: %gram = aten.matmul_transposed %a, %c {transpose_input = true, transpose_other = false} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x16x16xf32>
  %gram = aten.matmul_transposed %a, %c {transpose_input = true, transpose_other = false} : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x16x16xf32>
  // CHECK-NEXT: %skip_ln = aten.add_layer_norm %x, %x, none, none {normalized_shape = [64], eps = 1.0e-12} : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %skip_ln = aten.add_layer_norm %x, %x, none, none {normalized_shape = [64], eps = 1.0e-12} : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  // CHECK-NEXT: func.return
  func.return
}
