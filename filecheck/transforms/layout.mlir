// RUN: forge-opt %s -p layout | filecheck %s
// RUN: forge-opt %s -p layout | forge-opt -p layout | filecheck %s

// layout: transposes into matmul flags, permutes composed or cancelled, reshape chains
// collapsed, copies dropped. (Weight transposes folded into the WeightStore need the store,
// which text IR does not carry: tests/transforms/test_layout.py covers them.)

// A transpose of the last two dims feeding matmul becomes the transpose_other flag.
// CHECK-LABEL: func.func @transpose_rhs_matmul
// CHECK-NEXT:    %matmul = aten.matmul_transposed %a, %b {transpose_input = false, transpose_other = true} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT:    func.return %matmul : tensor<2x4x6xf32>
// CHECK-NEXT:  }
func.func @transpose_rhs_matmul(%a: tensor<2x4x8xf32>, %b: tensor<2x6x8xf32>) -> tensor<2x4x6xf32> {
  %bt = aten.transpose.int %b {dim0 = -1, dim1 = -2} : (tensor<2x6x8xf32>) -> tensor<2x8x6xf32>
  %matmul = aten.matmul %a, %bt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  func.return %matmul : tensor<2x4x6xf32>
}

// ... and on the left of a bmm, transpose_input (dims given as 1, 2 of a rank-3 tensor).
// CHECK-LABEL: func.func @transpose_lhs_bmm
// CHECK-NEXT:    %bmm = aten.matmul_transposed %a, %b {transpose_input = true, transpose_other = false} : (tensor<2x8x4xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT:    func.return %bmm : tensor<2x4x6xf32>
// CHECK-NEXT:  }
func.func @transpose_lhs_bmm(%a: tensor<2x8x4xf32>, %b: tensor<2x8x6xf32>) -> tensor<2x4x6xf32> {
  %at = aten.transpose.int %a {dim0 = 1, dim1 = 2} : (tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %bmm = aten.bmm %at, %b : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  func.return %bmm : tensor<2x4x6xf32>
}

// aten.t and a [1, 0] permute on both sides of an mm.
// CHECK-LABEL: func.func @permute_and_t_mm
// CHECK-NEXT:    %mm = aten.matmul_transposed %a, %b {transpose_input = true, transpose_other = true} : (tensor<8x4xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %mm : tensor<4x6xf32>
// CHECK-NEXT:  }
func.func @permute_and_t_mm(%a: tensor<8x4xf32>, %b: tensor<6x8xf32>) -> tensor<4x6xf32> {
  %at = aten.t %a : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %bt = aten.permute %b {dims = [1, 0]} : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %mm = aten.mm %at, %bt : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  func.return %mm : tensor<4x6xf32>
}

// A transpose of an already transposed operand toggles the flag off: a plain matmul.
// CHECK-LABEL: func.func @flag_toggles_back
// CHECK-NEXT:    %mt = aten.matmul %a, %b : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %mt : tensor<4x6xf32>
// CHECK-NEXT:  }
func.func @flag_toggles_back(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> tensor<4x6xf32> {
  %bt = aten.t %b : (tensor<8x6xf32>) -> tensor<6x8xf32>
  %mt = aten.matmul_transposed %a, %bt {transpose_input = false, transpose_other = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
  func.return %mt : tensor<4x6xf32>
}

// Eager attention's K^T: transpose(1, 2) then (-1, -2). The last-two swap becomes the flag and
// the head transpose stays (composing both into one permute would hide the flag).
// CHECK-LABEL: func.func @attention_scores
// CHECK-NEXT:    %qh = aten.transpose.int %q {dim0 = 1, dim1 = 2} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %kh = aten.transpose.int %k {dim0 = 1, dim1 = 2} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
// CHECK-NEXT:    %scores = aten.matmul_transposed %qh, %kh {transpose_input = false, transpose_other = true} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x4xf32>
// CHECK-NEXT:    func.return %scores : tensor<1x2x4x4xf32>
// CHECK-NEXT:  }
func.func @attention_scores(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>) -> tensor<1x2x4x4xf32> {
  %qh = aten.transpose.int %q {dim0 = 1, dim1 = 2} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %kh = aten.transpose.int %k {dim0 = 1, dim1 = 2} : (tensor<1x4x2x8xf32>) -> tensor<1x2x4x8xf32>
  %kt = aten.transpose.int %kh {dim0 = -1, dim1 = -2} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %scores = aten.matmul %qh, %kt : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  func.return %scores : tensor<1x2x4x4xf32>
}

// Inverse permutes cancel.
// CHECK-LABEL: func.func @inverse_permutes
// CHECK-NEXT:    func.return %x : tensor<2x3x4x5xf32>
// CHECK-NEXT:  }
func.func @inverse_permutes(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x4x5xf32> {
  %p = aten.permute %x {dims = [0, 2, 3, 1]} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %q = aten.permute %p {dims = [0, 3, 1, 2]} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  func.return %q : tensor<2x3x4x5xf32>
}

// ... also across single-use elementwise ops, which move below the (cancelled) permute.
// CHECK-LABEL: func.func @inverse_through_unary
// CHECK-NEXT:    %relu = aten.relu %x : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %scaled = aten.mul.Scalar %relu {other = 2.0} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %scaled : tensor<2x3x4xf32>
// CHECK-NEXT:  }
func.func @inverse_through_unary(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %p = aten.permute %x {dims = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %relu = aten.relu %p : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %scaled = aten.mul.Scalar %relu {other = 2.0} : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  %q = aten.permute %scaled {dims = [1, 2, 0]} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  func.return %q : tensor<2x3x4xf32>
}

// A chain of views and reshapes collapses into one, to the final shape (a view: the chain ends in one).
// CHECK-LABEL: func.func @view_chain
// CHECK-NEXT:    %v = aten.view %x {size = [4, 6]} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %v : tensor<4x6xf32>
// CHECK-NEXT:  }
func.func @view_chain(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %v = aten.view %x {size = [24]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %v_1 = aten.view %v {size = [6, 4]} : (tensor<24xf32>) -> tensor<6x4xf32>
  %r = aten.reshape %v_1 {shape = [1, 24]} : (tensor<6x4xf32>) -> tensor<1x24xf32>
  %v_2 = aten.view %r {size = [4, 6]} : (tensor<1x24xf32>) -> tensor<4x6xf32>
  func.return %v_2 : tensor<4x6xf32>
}

// A chain ending in the shape it started from (an unsqueeze in between) disappears.
// CHECK-LABEL: func.func @view_chain_identity
// CHECK-NEXT:    func.return %x : tensor<2x3x4xf32>
// CHECK-NEXT:  }
func.func @view_chain_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %v = aten.view %x {size = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %u = aten.unsqueeze %v {dim = 0} : (tensor<6x4xf32>) -> tensor<1x6x4xf32>
  %v_1 = aten.view %u {size = [2, 3, 4]} : (tensor<1x6x4xf32>) -> tensor<2x3x4xf32>
  func.return %v_1 : tensor<2x3x4xf32>
}

// GPT-2/BERT's merge-heads: the contiguous goes away (value semantics: a view of the transposed
// value means the same as a reshape of it).
// CHECK-LABEL: func.func @merge_heads
// CHECK-NEXT:    %t = aten.transpose.int %x {dim0 = 1, dim1 = 2} : (tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
// CHECK-NEXT:    %view = aten.view %t {size = [1, 4, 16]} : (tensor<1x4x2x8xf32>) -> tensor<1x4x16xf32>
// CHECK-NEXT:    func.return %view : tensor<1x4x16xf32>
// CHECK-NEXT:  }
func.func @merge_heads(%x: tensor<1x2x4x8xf32>) -> tensor<1x4x16xf32> {
  %t = aten.transpose.int %x {dim0 = 1, dim1 = 2} : (tensor<1x2x4x8xf32>) -> tensor<1x4x2x8xf32>
  %c = aten.contiguous %t : (tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32>
  %view = aten.view %c {size = [1, 4, 16]} : (tensor<1x4x2x8xf32>) -> tensor<1x4x16xf32>
  func.return %view : tensor<1x4x16xf32>
}

// clone / alias / detach are identities on values.
// CHECK-LABEL: func.func @copies
// CHECK-NEXT:    %relu = aten.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    func.return %relu : tensor<4x8xf32>
// CHECK-NEXT:  }
func.func @copies(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = aten.clone %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = aten.alias %c : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = aten.detach %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %relu = aten.relu %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %relu : tensor<4x8xf32>
}

// Without a WeightStore attached (text IR) the transposed weight is left as it is.
// CHECK-LABEL: func.func @weight_transpose_without_store
// CHECK-NEXT:    %w = aten.weight "c_fc.weight" : tensor<8x16xf32>
// CHECK-NEXT:    %w_t = aten.t %w : (tensor<8x16xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %fc = aten.fused_linear %x, %w_t, none {activation = "none"} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    func.return %fc : tensor<4x16xf32>
// CHECK-NEXT:  }
func.func @weight_transpose_without_store(%x: tensor<4x8xf32>) -> tensor<4x16xf32> {
  %w = aten.weight "c_fc.weight" : tensor<8x16xf32>
  %w_t = aten.t %w : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %fc = aten.fused_linear %x, %w_t, none {activation = "none"} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
  func.return %fc : tensor<4x16xf32>
}

// ----- negative cases -----

// NEGATIVE: two permutes that are not inverse do not cancel; they compose into one permute.
// CHECK-LABEL: func.func @permutes_not_inverse
// CHECK-NEXT:    %q = aten.permute %x {dims = [1, 2, 0]} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT:    func.return %q : tensor<3x4x2xf32>
// CHECK-NEXT:  }
func.func @permutes_not_inverse(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %p = aten.permute %x {dims = [1, 0, 2]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %q = aten.permute %p {dims = [0, 2, 1]} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  func.return %q : tensor<3x4x2xf32>
}

// NEGATIVE: a transpose of dims 0 and 1 of a rank-3 operand is not a matmul flag.
// CHECK-LABEL: func.func @transpose_not_last_two
// CHECK-NEXT:    %bt = aten.transpose.int %b {dim0 = 0, dim1 = 1} : (tensor<8x2x6xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT:    %matmul = aten.matmul %a, %bt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
// CHECK-NEXT:    func.return %matmul : tensor<2x4x6xf32>
// CHECK-NEXT:  }
func.func @transpose_not_last_two(%a: tensor<2x4x8xf32>, %b: tensor<8x2x6xf32>) -> tensor<2x4x6xf32> {
  %bt = aten.transpose.int %b {dim0 = 0, dim1 = 1} : (tensor<8x2x6xf32>) -> tensor<2x8x6xf32>
  %matmul = aten.matmul %a, %bt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  func.return %matmul : tensor<2x4x6xf32>
}

// The transposed value is also returned: the mm takes the flag, the transpose stays for
// its other user.
// CHECK-LABEL: func.func @transpose_with_other_user
// CHECK-NEXT:    %bt = aten.t %b : (tensor<6x8xf32>) -> tensor<8x6xf32>
// CHECK-NEXT:    %mm = aten.matmul_transposed %a, %b {transpose_input = false, transpose_other = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %mm, %bt : tensor<4x6xf32>, tensor<8x6xf32>
// CHECK-NEXT:  }
func.func @transpose_with_other_user(%a: tensor<4x8xf32>, %b: tensor<6x8xf32>) -> (tensor<4x6xf32>, tensor<8x6xf32>) {
  %bt = aten.t %b : (tensor<6x8xf32>) -> tensor<8x6xf32>
  %mm = aten.mm %a, %bt : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  func.return %mm, %bt : tensor<4x6xf32>, tensor<8x6xf32>
}

// NEGATIVE: a lone reshape (with its -1) and a lone unsqueeze are left alone.
// CHECK-LABEL: func.func @lone_reshapes
// CHECK-NEXT:    %r = aten.reshape %x {shape = [-1, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %u = aten.unsqueeze %x {dim = 0} : (tensor<2x3x4xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    func.return %r, %u : tensor<6x4xf32>, tensor<1x2x3x4xf32>
// CHECK-NEXT:  }
func.func @lone_reshapes(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<1x2x3x4xf32>) {
  %r = aten.reshape %x {shape = [-1, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %u = aten.unsqueeze %x {dim = 0} : (tensor<2x3x4xf32>) -> tensor<1x2x3x4xf32>
  func.return %r, %u : tensor<6x4xf32>, tensor<1x2x3x4xf32>
}

// NEGATIVE: the elementwise op between the permutes has another user, so nothing moves.
// CHECK-LABEL: func.func @unary_with_other_user
// CHECK-NEXT:    %p = aten.t %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %neg = aten.neg %p : (tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK-NEXT:    %q = aten.t %neg : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %q, %neg : tensor<2x3xf32>, tensor<3x2xf32>
// CHECK-NEXT:  }
func.func @unary_with_other_user(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %p = aten.t %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %neg = aten.neg %p : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %q = aten.t %neg : (tensor<3x2xf32>) -> tensor<2x3xf32>
  func.return %q, %neg : tensor<2x3xf32>, tensor<3x2xf32>
}
