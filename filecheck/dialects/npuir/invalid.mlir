// RUN: forge-opt %s --split-input-file --verify-diagnostics

// One case per npuir verifier error, as an expected-error annotation (--verify-diagnostics checks its
// message and line); each message names the op and the mismatch.

func.func @case0(%x: tensor<4xf32>) {
  // expected-error @+1 {{npuir.softmax: vreg -1 is negative}}
  %0 = npuir.softmax npu %x {axis = 0, vreg = -1} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case1() {
  // expected-error @+1 {{npuir.input: input index -2 is negative}}
  %0 = npuir.input cpu {index = -2, vreg = 0} : tensor<4xf32>
  func.return
}

// -----

func.func @case2() {
  // expected-error @+1 {{npuir.weight: weight name is empty}}
  %0 = npuir.weight npu {name = "", vreg = 0} : tensor<4xf32>
  func.return
}

// -----

func.func @case3() {
  // expected-error @+1 {{npuir.constant: value type tensor<2xf32> does not match result type tensor<3xf32>}}
  %0 = npuir.constant cpu {value = dense<1.0> : tensor<2xf32>, vreg = 0} : tensor<3xf32>
  func.return
}

// -----

func.func @case4(%a: tensor<2x64xf32>, %b: tensor<32x4xf32>) {
  // expected-error @+1 {{npuir.matmul: contraction dims differ: lhs K=64, rhs K=32}}
  %0 = npuir.matmul npu %a, %b {vreg = 0} : (tensor<2x64xf32>, tensor<32x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @case5(%a: tensor<2x64xf32>, %b: tensor<64xf32>) {
  // expected-error @+1 {{npuir.matmul: rhs rank 1, expected >= 2}}
  %0 = npuir.matmul npu %a, %b {vreg = 0} : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2xf32>
  func.return
}

// -----

func.func @case6(%a: tensor<2x8xf32>, %b: tensor<8x4xf16>) {
  // expected-error @+1 {{npuir.matmul: element types differ: lhs f32, rhs f16}}
  %0 = npuir.matmul npu %a, %b {vreg = 0} : (tensor<2x8xf32>, tensor<8x4xf16>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @case7(%a: tensor<3x2x8xf32>, %b: tensor<2x8x4xf32>) {
  // expected-error @+1 {{npuir.matmul: shapes [3] and [2] are not broadcast-compatible}}
  %0 = npuir.matmul npu %a, %b {vreg = 0} : (tensor<3x2x8xf32>, tensor<2x8x4xf32>) -> tensor<3x2x4xf32>
  func.return
}

// -----

func.func @case8(%a: tensor<8x2xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+1 {{npuir.matmul: result type tensor<4x2xf32> does not match expected tensor<2x4xf32>}}
  %0 = npuir.matmul npu %a, %b {transpose_a = true, transpose_b = true, vreg = 0} : (tensor<8x2xf32>, tensor<4x8xf32>) -> tensor<4x2xf32>
  func.return
}

// -----

func.func @case9(%x: tensor<4x768xf32>, %w: tensor<3072x512xf32>) {
  // expected-error @+1 {{npuir.linear: contraction dims differ: x K=768, w K=512}}
  %0 = npuir.linear npu %x, %w {vreg = 0} : (tensor<4x768xf32>, tensor<3072x512xf32>) -> tensor<4x3072xf32>
  func.return
}

// -----

func.func @case10(%x: tensor<4x8xf32>, %w: tensor<2x16x8xf32>) {
  // expected-error @+1 {{npuir.linear: w rank 3, expected 2}}
  %0 = npuir.linear npu %x, %w {vreg = 0} : (tensor<4x8xf32>, tensor<2x16x8xf32>) -> tensor<4x16xf32>
  func.return
}

// -----

func.func @case11(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{npuir.linear: bias shape [8] is not [16]}}
  %0 = npuir.linear npu %x, %w, %b {vreg = 0} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  func.return
}

// -----

func.func @case12(%x: tensor<4x8xf32>, %g: tensor<16x8xf32>, %u: tensor<32x8xf32>) {
  // expected-error @+1 {{npuir.gated_mlp: w_gate shape [16, 8] differs from w_up shape [32, 8]}}
  %0 = npuir.gated_mlp npu %x, %g, %u {vreg = 0} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<4x16xf32>
  func.return
}

// -----

func.func @case13(%q: tensor<1x8x16x64xf32>, %kv: tensor<1x3x16x64xf32>) {
  // expected-error @+1 {{npuir.sdpa: query heads 8 not divisible by kv heads 3}}
  %0 = npuir.sdpa npu %q, %kv, %kv {vreg = 0} : (tensor<1x8x16x64xf32>, tensor<1x3x16x64xf32>, tensor<1x3x16x64xf32>) -> tensor<1x8x16x64xf32>
  func.return
}

// -----

func.func @case14(%q: tensor<16x64xf32>) {
  // expected-error @+1 {{npuir.sdpa: query rank 2, expected >= 3}}
  %0 = npuir.sdpa npu %q, %q, %q {vreg = 0} : (tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
  func.return
}

// -----

func.func @case15(%q: tensor<1x2x16x64xf32>, %kv: tensor<2x16x64xf32>) {
  // expected-error @+1 {{npuir.sdpa: ranks differ: query 4, key 3, value 3}}
  %0 = npuir.sdpa npu %q, %kv, %kv {vreg = 0} : (tensor<1x2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<1x2x16x64xf32>
  func.return
}

// -----

func.func @case16(%q: tensor<1x2x16x64xf32>, %kv: tensor<2x2x16x64xf32>) {
  // expected-error @+1 {{npuir.sdpa: batch dims differ: query [1], key [2], value [2]}}
  %0 = npuir.sdpa npu %q, %kv, %kv {vreg = 0} : (tensor<1x2x16x64xf32>, tensor<2x2x16x64xf32>, tensor<2x2x16x64xf32>) -> tensor<1x2x16x64xf32>
  func.return
}

// -----

func.func @case17(%q: tensor<4x16x64xf32>, %k: tensor<2x16x64xf32>, %v: tensor<4x16x64xf32>) {
  // expected-error @+1 {{npuir.sdpa: key heads 2 differ from value heads 4}}
  %0 = npuir.sdpa npu %q, %k, %v {vreg = 0} : (tensor<4x16x64xf32>, tensor<2x16x64xf32>, tensor<4x16x64xf32>) -> tensor<4x16x64xf32>
  func.return
}

// -----

func.func @case18(%q: tensor<2x16x64xf32>, %k: tensor<2x16x32xf32>) {
  // expected-error @+1 {{npuir.sdpa: query head dim 64 differs from key head dim 32}}
  %0 = npuir.sdpa npu %q, %k, %q {vreg = 0} : (tensor<2x16x64xf32>, tensor<2x16x32xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  func.return
}

// -----

func.func @case19(%q: tensor<2x16x64xf32>, %v: tensor<2x8x64xf32>) {
  // expected-error @+1 {{npuir.sdpa: key length 16 differs from value length 8}}
  %0 = npuir.sdpa npu %q, %q, %v {vreg = 0} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x8x64xf32>) -> tensor<2x16x64xf32>
  func.return
}

// -----

func.func @case20(%q: tensor<2x16x64xf32>, %m: tensor<16x16xi1>) {
  // expected-error @+1 {{npuir.sdpa: is_causal and an explicit mask are exclusive}}
  %0 = npuir.sdpa npu %q, %q, %q, %m {is_causal = true, vreg = 0} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<16x16xi1>) -> tensor<2x16x64xf32>
  func.return
}

// -----

func.func @case21(%q: tensor<2x16x64xf32>, %m: tensor<16x16xi64>) {
  // expected-error @+1 {{npuir.sdpa: mask element type i64 is neither i1 nor f32}}
  %0 = npuir.sdpa npu %q, %q, %q, %m {vreg = 0} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<16x16xi64>) -> tensor<2x16x64xf32>
  func.return
}

// -----

func.func @case22(%q: tensor<2x16x64xf32>, %m: tensor<3x16x16xf32>) {
  // expected-error @+1 {{npuir.sdpa: mask shape [3, 16, 16] does not broadcast to scores [2, 16, 16]}}
  %0 = npuir.sdpa npu %q, %q, %q, %m {vreg = 0} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<3x16x16xf32>) -> tensor<2x16x64xf32>
  func.return
}

// -----

func.func @case23(%q: tensor<2x16x64xf32>) {
  // expected-error @+1 {{npuir.sdpa: scale inf is not finite}}
  %0 = npuir.sdpa npu %q, %q, %q {scale = 0x7FF0000000000000 : f64, vreg = 0} : (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  func.return
}

// -----

func.func @case24(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{npuir.softmax: axis 2 out of range for rank 2}}
  %0 = npuir.softmax npu %x {axis = 2, vreg = 0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @case25(%x: tensor<4x8xi64>) {
  // expected-error @+1 {{npuir.softmax: expects a float tensor, got i64}}
  %0 = npuir.softmax npu %x {axis = 1, vreg = 0} : (tensor<4x8xi64>) -> tensor<4x8xi64>
  func.return
}

// -----

func.func @case26(%x: tensor<4x8xi64>) {
  // expected-error @+1 {{npuir.cumsum: result type tensor<4x8xi32> does not match expected tensor<4x8xi64>}}
  %0 = npuir.cumsum cpu %x {axis = 1, vreg = 0} : (tensor<4x8xi64>) -> tensor<4x8xi32>
  func.return
}

// -----

func.func @case27(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{npuir.layer_norm: expects at most 2 affine operands (weight, bias), got 3}}
  %0 = npuir.layer_norm npu %x, %g, %g, %g {axis = 1, eps = 1.0e-05, vreg = 0} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @case28(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{npuir.layer_norm: bias shape [4] does not match normalized shape [8]}}
  %0 = npuir.layer_norm npu %x, %g, %b {axis = 1, eps = 1.0e-05, vreg = 0} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @case29(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{npuir.layer_norm: eps -1.0 is not a non-negative number}}
  %0 = npuir.layer_norm npu %x {axis = 1, eps = -1.0, vreg = 0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @case30(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{npuir.rms_norm: expects at most 1 affine operands (weight), got 2}}
  %0 = npuir.rms_norm npu %x, %g, %g {axis = 1, eps = 1.0e-06, vreg = 0} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @case31(%x: tensor<4x8xi32>) {
  // expected-error @+1 {{npuir.rms_norm: expects a float tensor, got i32}}
  %0 = npuir.rms_norm npu %x {axis = 1, eps = 1.0e-06, vreg = 0} : (tensor<4x8xi32>) -> tensor<4x8xi32>
  func.return
}

// -----

func.func @case32(%x: tensor<4xi64>) {
  // expected-error @+1 {{npuir.unary: exp does not apply to element type i64}}
  %0 = npuir.unary npu %x {kind = exp, vreg = 0} : (tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

func.func @case33(%x: tensor<4xf32>) {
  // expected-error @+1 {{npuir.unary: not does not apply to element type f32}}
  %0 = npuir.unary npu %x {kind = not, vreg = 0} : (tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case34(%a: tensor<4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{npuir.binary: shapes [4, 3] and [4] are not broadcast-compatible}}
  %0 = npuir.binary npu %a, %b {kind = add, vreg = 0} : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @case35(%a: tensor<4xf32>, %b: tensor<4xi64>) {
  // expected-error @+1 {{npuir.binary: element types differ: lhs f32, rhs i64}}
  %0 = npuir.binary npu %a, %b {kind = mul, vreg = 0} : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case36(%a: tensor<4xf32>) {
  // expected-error @+1 {{npuir.binary: and does not apply to element type f32}}
  %0 = npuir.binary npu %a, %a {kind = and, vreg = 0} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case37(%a: tensor<4xi1>) {
  // expected-error @+1 {{npuir.binary: add does not apply to element type i1}}
  %0 = npuir.binary npu %a, %a {kind = add, vreg = 0} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  func.return
}

// -----

func.func @case38(%a: tensor<4xf32>) {
  // expected-error @+1 {{npuir.compare: result type tensor<4xf32> does not match expected tensor<4xi1>}}
  %0 = npuir.compare npu %a, %a {kind = lt, vreg = 0} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case39(%a: tensor<4xf32>) {
  // expected-error @+1 {{npuir.select: condition element type f32 is not i1}}
  %0 = npuir.select npu %a, %a, %a {vreg = 0} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case40(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{npuir.reduce: axes [2, 0] are not sorted unique axes of rank 3}}
  %0 = npuir.reduce npu %x {kind = sum, axes = [2, 0], vreg = 0} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  func.return
}

// -----

func.func @case41(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{npuir.reduce: result type tensor<2x3xf32> does not match expected tensor<2x3x1xf32>}}
  %0 = npuir.reduce npu %x {kind = max, axes = [2], keepdims = true, vreg = 0} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return
}

// -----

func.func @case42(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{npuir.reshape: element counts differ: input [2, 3] has 6, result [7] has 7}}
  %0 = npuir.reshape npu %x {vreg = 0} : (tensor<2x3xf32>) -> tensor<7xf32>
  func.return
}

// -----

func.func @case43(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{npuir.reshape: element types differ: input f32, result f16}}
  %0 = npuir.reshape npu %x {vreg = 0} : (tensor<2x3xf32>) -> tensor<6xf16>
  func.return
}

// -----

func.func @case44(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{npuir.transpose: perm [0, 2] is not a permutation of rank 3}}
  %0 = npuir.transpose npu %x {perm = [0, 2], vreg = 0} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}

// -----

func.func @case45(%x: tensor<2x3x4xf32>) {
  // expected-error @+1 {{npuir.transpose: result type tensor<2x3x4xf32> does not match expected tensor<4x3x2xf32>}}
  %0 = npuir.transpose npu %x {perm = [2, 1, 0], vreg = 0} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}

// -----

func.func @case46(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{npuir.broadcast: cannot broadcast [3, 4] to [2, 5, 4]}}
  %0 = npuir.broadcast npu %x {vreg = 0} : (tensor<3x4xf32>) -> tensor<2x5x4xf32>
  func.return
}

// -----

func.func @case47(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{npuir.slice: starts/ends/steps have 1/2/2 entries for rank 2}}
  %0 = npuir.slice npu %x {starts = [0], ends = [4, 8], steps = [1, 1], vreg = 0} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return
}

// -----

func.func @case48(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{npuir.slice: axis 1: slice 2:9:1 is invalid for dim 8}}
  %0 = npuir.slice npu %x {starts = [0, 2], ends = [4, 9], steps = [1, 1], vreg = 0} : (tensor<4x8xf32>) -> tensor<4x7xf32>
  func.return
}

// -----

func.func @case49(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{npuir.slice: result type tensor<4x3xf32> does not match expected tensor<4x4xf32>}}
  %0 = npuir.slice npu %x {starts = [0, 0], ends = [4, 8], steps = [1, 2], vreg = 0} : (tensor<4x8xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @case50() {
  // expected-error @+1 {{npuir.concat: expects at least one input}}
  %0 = "npuir.concat"() <{axis = 0 : i64, device = #npuir<device npu>, vreg = 0 : i64}> : () -> tensor<4xf32>
  func.return
}

// -----

func.func @case51(%a: tensor<3x2xf32>, %b: tensor<4x2xf32>) {
  // expected-error @+1 {{npuir.concat: input 1 shape [4, 2] does not match input 0 shape [3, 2] outside axis 1}}
  %0 = npuir.concat npu %a, %b {axis = 1, vreg = 0} : (tensor<3x2xf32>, tensor<4x2xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @case52(%d: tensor<10x4xf32>, %i: tensor<3xf32>) {
  // expected-error @+1 {{npuir.gather: indices element type f32 is not an integer}}
  %0 = npuir.gather npu %d, %i {axis = 0, vreg = 0} : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @case53(%d: tensor<10x4xf32>, %i: tensor<3xi64>) {
  // expected-error @+1 {{npuir.gather: result type tensor<3x4xf32> does not match expected tensor<10x3xf32>}}
  %0 = npuir.gather npu %d, %i {axis = 1, vreg = 0} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  func.return
}

// -----

func.func @case54(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{npuir.convert: shape changes from [2, 3] to [6]}}
  %0 = npuir.convert npu %x {vreg = 0} : (tensor<2x3xf32>) -> tensor<6xf16>
  func.return
}

// -----

func.func @case55(%x: tensor<4xi64>) {
  // expected-error @+1 {{npuir.aten: the aten fallback runs only on cpu, not npu}}
  %0 = npuir.aten npu %x {op = "aten.cumsum", attrs = {dim = 0 : i64}, vreg = 0} : (tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

func.func @case56(%x: tensor<4xi64>) {
  // expected-error @+1 {{npuir.aten: unknown aten op 'aten.nope'}}
  %0 = npuir.aten cpu %x {op = "aten.nope", vreg = 0} : (tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

func.func @case57(%x: tensor<4xi64>) {
  // expected-error @+1 {{npuir.aten: result type tensor<4xf32> does not match aten.cumsum result 0 type tensor<4xi64>}}
  %0 = npuir.aten cpu %x {op = "aten.cumsum", attrs = {dim = 0 : i64}, vreg = 0} : (tensor<4xi64>) -> tensor<4xf32>
  func.return
}

// -----

func.func @case58(%x: tensor<4xi64>) {
  // expected-error @+1 {{npuir.aten: result_index 1 out of range: aten.cumsum has 1 results}}
  %0 = npuir.aten cpu %x {op = "aten.cumsum", attrs = {dim = 0 : i64}, result_index = 1, vreg = 0} : (tensor<4xi64>) -> tensor<4xi64>
  func.return
}

// -----

func.func @conv_channels(%x: tensor<1x5x7x6xf32>, %w: tensor<6x2x3x3xf32>) {
  // expected-error @+1 {{npuir.conv: x has 5 channels but w [6, 2, 3, 3] with groups 2 expects 4}}
  %0 = npuir.conv npu %x, %w {stride = [1, 1], pads_begin = [0, 0], pads_end = [0, 0], dilation = [1, 1], groups = 2, vreg = 0} : (tensor<1x5x7x6xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x4xf32>
  func.return
}

// -----

func.func @conv_stride_rank(%x: tensor<1x4x7xf32>, %w: tensor<6x4x3xf32>) {
  // expected-error @+1 {{npuir.conv: stride has 2 entries for 1 spatial dims}}
  %0 = npuir.conv npu %x, %w {stride = [1, 1], pads_begin = [0], pads_end = [0], dilation = [1], vreg = 0} : (tensor<1x4x7xf32>, tensor<6x4x3xf32>) -> tensor<1x6x5xf32>
  func.return
}

// -----

func.func @conv_output_padding(%x: tensor<1x4x7xf32>, %w: tensor<6x4x3xf32>) {
  // expected-error @+1 {{npuir.conv: output_padding needs transposed}}
  %0 = npuir.conv npu %x, %w {stride = [2], pads_begin = [0], pads_end = [0], dilation = [1], output_padding = [1], vreg = 0} : (tensor<1x4x7xf32>, tensor<6x4x3xf32>) -> tensor<1x6x3xf32>
  func.return
}

// -----

func.func @conv_transposed_result(%x: tensor<1x4x5xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+1 {{npuir.conv: result type tensor<1x3x10xf32> does not match expected tensor<1x3x9xf32>}}
  %0 = npuir.conv npu %x, %w {stride = [2], pads_begin = [1], pads_end = [1], dilation = [1], transposed = true, vreg = 0} : (tensor<1x4x5xf32>, tensor<4x3x3xf32>) -> tensor<1x3x10xf32>
  func.return
}

// -----

func.func @conv_bias(%x: tensor<1x4x7xf32>, %w: tensor<6x4x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{npuir.conv: bias shape [4] is not [6]}}
  %0 = npuir.conv npu %x, %w, %b {stride = [1], pads_begin = [0], pads_end = [0], dilation = [1], vreg = 0} : (tensor<1x4x7xf32>, tensor<6x4x3xf32>, tensor<4xf32>) -> tensor<1x6x5xf32>
  func.return
}

// -----

func.func @pad_rank(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{npuir.pad: pads_begin/pads_end have 1/1 entries for rank 2}}
  %0 = npuir.pad npu %x {pads_begin = [1], pads_end = [1], vreg = 0} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  func.return
}

// -----

func.func @pad_crop(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{npuir.pad: pads [0, -2]/[0, -2] crop [2, 3] below zero}}
  %0 = npuir.pad npu %x {pads_begin = [0, -2], pads_end = [0, -2], vreg = 0} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  func.return
}

// -----

func.func @pool_kind(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{npuir.pool: kind 'min' is not one of max, avg}}
  %0 = npuir.pool npu %x {kind = "min", kernel = [2, 2], strides = [2, 2], pads_begin = [0, 0], pads_end = [0, 0], vreg = 0} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @pool_pads(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{npuir.pool: dim 0: pads 2/2 exceed half the kernel extent 3}}
  %0 = npuir.pool npu %x {kind = "max", kernel = [3, 3], strides = [1, 1], pads_begin = [2, 0], pads_end = [2, 0], vreg = 0} : (tensor<1x2x4x4xf32>) -> tensor<1x2x6x2xf32>
  func.return
}

// -----

func.func @pool_avg_dilated(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{npuir.pool: avg pooling takes no dilations, got [2, 2]}}
  %0 = npuir.pool npu %x {kind = "avg", kernel = [2, 2], strides = [1, 1], pads_begin = [0, 0], pads_end = [0, 0], dilations = [2, 2], vreg = 0} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  func.return
}

// -----

func.func @pool_result(%x: tensor<1x2x4x4xf32>) {
  // expected-error @+1 {{npuir.pool: result type tensor<1x2x3x3xf32> does not match expected tensor<1x2x2x2xf32>}}
  %0 = npuir.pool npu %x {kind = "max", kernel = [2, 2], strides = [2, 2], pads_begin = [0, 0], pads_end = [0, 0], vreg = 0} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  func.return
}

// -----

func.func @resize_rank(%x: tensor<1x3x4xf32>) {
  // expected-error @+1 {{npuir.resize: bilinear resizes a rank-4 [N, C, *spatial] tensor, got rank 3}}
  %0 = npuir.resize npu %x {mode = "bilinear", vreg = 0} : (tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  func.return
}

// -----

func.func @resize_corners(%x: tensor<1x3x4xf32>) {
  // expected-error @+1 {{npuir.resize: align_corners applies to linear modes only}}
  %0 = npuir.resize npu %x {mode = "nearest", align_corners = true, vreg = 0} : (tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  func.return
}

// -----

func.func @resize_channels(%x: tensor<1x3x4xf32>) {
  // expected-error @+1 {{npuir.resize: result type tensor<1x2x8xf32> does not match expected tensor<1x3x8xf32>}}
  %0 = npuir.resize npu %x {mode = "nearest", vreg = 0} : (tensor<1x3x4xf32>) -> tensor<1x2x8xf32>
  func.return
}
