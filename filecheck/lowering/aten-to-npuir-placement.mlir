// RUN: forge-opt %s -p lower-aten-to-npuir | filecheck %s
// RUN: forge-opt %s -p lower-aten-to-npuir | forge-opt --print-op-generic | forge-opt | filecheck %s

// Issue 31: ops that used to run on the host through the aten fallback now lower to npuir kinds the
// npu runs (nothing here falls back).

// CHECK: builtin.module attributes {npuir.lowering = {vregs = 105 : i64, fallbacks = 0 : i64, dropped = 0 : i64}}

// Views never leave the npu: unbind is a slice and a reshape per used result, unflatten a
// reshape, expand_as a broadcast (negative dims normalized).
// CHECK-LABEL: func.func @views
// CHECK:        %[[S:.*]] = npuir.slice npu %x_1 {starts = [0, 0, 0], ends = [2, 1, 4], steps = [1, 1, 1], vreg = 2}
// CHECK-NEXT:   %unbind = npuir.reshape npu %[[S]] {vreg = 3} : (tensor<2x1x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:   %unflatten = npuir.reshape npu %x_1 {vreg = 4} : (tensor<2x3x4xf32>) -> tensor<2x3x2x2xf32>
// CHECK-NEXT:   %expand_as = npuir.broadcast npu %y_1 {vreg = 5} : (tensor<1x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:   func.return %unbind, %unflatten, %expand_as
func.func @views(%x: tensor<2x3x4xf32>, %y: tensor<1x4xf32>) -> (tensor<2x4xf32>, tensor<2x3x2x2xf32>, tensor<2x3x4xf32>) {
  %unbind, %unbind_1, %unbind_2 = aten.unbind.int %x {dim = -2} : (tensor<2x3x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
  %unflatten = aten.unflatten.int %x {dim = -1, sizes = [2, 2]} : (tensor<2x3x4xf32>) -> tensor<2x3x2x2xf32>
  %expand_as = aten.expand_as %y, %x : (tensor<1x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %unbind, %unflatten, %expand_as : tensor<2x4xf32>, tensor<2x3x2x2xf32>, tensor<2x3x4xf32>
}


// linalg_vector_norm: ord 2 is sqrt(sum(x * x)), inf a max of |x|, 0 a sum of (x != 0), any other p
// sum(|x| ** p) ** (1 / p); clamp_min / clamp_max are a max / a min with a constant.
// CHECK-LABEL: func.func @norms
// CHECK:        %[[SQ:.*]] = npuir.binary npu %x_1, %x_1 {kind = mul, vreg = 1}
// CHECK-NEXT:   %[[SS:.*]] = npuir.reduce npu %[[SQ]] {kind = sum, axes = [2], keepdims = true, vreg = 2}
// CHECK-NEXT:   %linalg_vector_norm = npuir.unary npu %[[SS]] {kind = sqrt, vreg = 3}
// CHECK-NEXT:   %[[ABS:.*]] = npuir.unary npu %x_1 {kind = abs, vreg = 4}
// CHECK-NEXT:   %linalg_vector_norm_1 = npuir.reduce npu %[[ABS]] {kind = max, axes = [0, 1], vreg = 5} : (tensor<2x3x4xf32>) -> tensor<4xf32>
// CHECK-NEXT:   %[[ZERO:.*]] = npuir.constant npu {value = dense<0.000000e+00> : tensor<f32>, vreg = 6}
// CHECK-NEXT:   %[[NZ:.*]] = npuir.compare npu %x_1, %[[ZERO]] {kind = ne, vreg = 7}
// CHECK-NEXT:   %[[NZF:.*]] = npuir.convert npu %[[NZ]] {vreg = 8} : (tensor<2x3x4xi1>) -> tensor<2x3x4xf32>
// CHECK-NEXT:   %linalg_vector_norm_2 = npuir.reduce npu %[[NZF]] {kind = sum, axes = [0, 1, 2], vreg = 9} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:   %[[ABS3:.*]] = npuir.unary npu %x_1 {kind = abs, vreg = 10}
// CHECK-NEXT:   %[[THREE:.*]] = npuir.constant npu {value = dense<3.000000e+00> : tensor<f32>, vreg = 11}
// CHECK-NEXT:   %[[POW:.*]] = npuir.binary npu %[[ABS3]], %[[THREE]] {kind = pow, vreg = 12}
// CHECK-NEXT:   %[[SUM3:.*]] = npuir.reduce npu %[[POW]] {kind = sum, axes = [0], vreg = 13}
// CHECK-NEXT:   %[[THIRD:.*]] = npuir.constant npu {value = dense<0.333333343> : tensor<f32>, vreg = 14}
// CHECK-NEXT:   %linalg_vector_norm_3 = npuir.binary npu %[[SUM3]], %[[THIRD]] {kind = pow, vreg = 15}
// CHECK-NEXT:   %[[EPS:.*]] = npuir.constant npu {value = dense<1.000000e-12> : tensor<f32>, vreg = 16}
// CHECK-NEXT:   %clamp_min = npuir.binary npu %x_1, %[[EPS]] {kind = max, vreg = 17}
// CHECK-NEXT:   %[[HALF:.*]] = npuir.constant npu {value = dense<5.000000e-01> : tensor<f32>, vreg = 18}
// CHECK-NEXT:   %clamp_max = npuir.binary npu %x_1, %[[HALF]] {kind = min, vreg = 19}
func.func @norms(%x: tensor<2x3x4xf32>) -> (tensor<2x3x1xf32>, tensor<4xf32>, tensor<f32>, tensor<3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %linalg_vector_norm = aten.linalg_vector_norm %x {dim = [-1], keepdim = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %linalg_vector_norm_1 = aten.linalg_vector_norm %x {ord = inf, dim = [0, 1]} : (tensor<2x3x4xf32>) -> tensor<4xf32>
  %linalg_vector_norm_2 = aten.linalg_vector_norm %x {ord = 0} : (tensor<2x3x4xf32>) -> tensor<f32>
  %linalg_vector_norm_3 = aten.linalg_vector_norm %x {ord = 3.0, dim = [0]} : (tensor<2x3x4xf32>) -> tensor<3x4xf32>
  %clamp_min = aten.clamp_min %x {min = 1.0e-12} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %clamp_max = aten.clamp_max %x {max = 0.5} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %linalg_vector_norm, %linalg_vector_norm_1, %linalg_vector_norm_2, %linalg_vector_norm_3, %clamp_min, %clamp_max : tensor<2x3x1xf32>, tensor<4xf32>, tensor<f32>, tensor<3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
}


// Variance: sum((x - mean) ** 2) / (n - correction); var_mean's mean is the keepdims mean itself.
// CHECK-LABEL: func.func @variance
// CHECK:        %[[M:.*]] = npuir.reduce npu %x_1 {kind = mean, axes = [1], keepdims = true, vreg = 1}
// CHECK-NEXT:   %[[D:.*]] = npuir.binary npu %x_1, %[[M]] {kind = sub, vreg = 2}
// CHECK-NEXT:   %[[D2:.*]] = npuir.binary npu %[[D]], %[[D]] {kind = mul, vreg = 3}
// CHECK-NEXT:   %[[S:.*]] = npuir.reduce npu %[[D2]] {kind = sum, axes = [1], vreg = 4}
// CHECK-NEXT:   %[[N:.*]] = npuir.constant npu {value = dense<4.000000e+00> : tensor<f32>, vreg = 5}
// CHECK-NEXT:   %var = npuir.binary npu %[[S]], %[[N]] {kind = div, vreg = 6} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK-NEXT:   %var_mean = npuir.reduce npu %x_1 {kind = mean, axes = [0], keepdims = true, vreg = 7}
// CHECK:        %[[N1:.*]] = npuir.constant npu {value = dense<2.000000e+00> : tensor<f32>, vreg = 11}
// CHECK-NEXT:   %var_mean_1 = npuir.binary npu %{{.*}}, %[[N1]] {kind = div, vreg = 12}
// CHECK-NEXT:   func.return %var, %var_mean_1, %var_mean
func.func @variance(%x: tensor<3x4xf32>) -> (tensor<3xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %var = aten.var.correction %x {dim = [-1], correction = 0} : (tensor<3x4xf32>) -> tensor<3xf32>
  %var_mean, %var_mean_1 = aten.var_mean.correction %x {dim = [0], correction = 1, keepdim = true} : (tensor<3x4xf32>) -> (tensor<1x4xf32>, tensor<1x4xf32>)
  func.return %var, %var_mean, %var_mean_1 : tensor<3xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}


// Writes into a copy: slice_scatter is the slices around the source and a concat, select_scatter
// the same with the source reshaped (at index -1 = 4: the empty part after it is dropped), a strided
// slice_scatter one gather from concat(x, src) at constant positions. The slices the copies
// overwrite are dead and gone.
// CHECK-LABEL: func.func @writes
// CHECK:        %[[L:.*]] = npuir.slice npu %x_1 {starts = [0, 0], ends = [4, 1], steps = [1, 1], vreg = 3}
// CHECK-NEXT:   %[[R:.*]] = npuir.slice npu %x_1 {starts = [0, 3], ends = [4, 5], steps = [1, 1], vreg = 4}
// CHECK-NEXT:   %slice_scatter = npuir.concat npu %[[L]], %y_1, %[[R]] {axis = 1, vreg = 5}
// CHECK-NEXT:   %[[COL:.*]] = npuir.reshape npu %z_1 {vreg = 6} : (tensor<4xf32>) -> tensor<4x1xf32>
// CHECK-NEXT:   %[[HEAD:.*]] = npuir.slice npu %x_1 {starts = [0, 0], ends = [4, 4], steps = [1, 1], vreg = 7}
// CHECK-NEXT:   %select_scatter = npuir.concat npu %[[HEAD]], %[[COL]] {axis = 1, vreg = 8}
// CHECK:        %expand = npuir.broadcast npu %mul {vreg = 13}
// CHECK-NEXT:   %[[T:.*]] = npuir.concat npu %x_1, %expand {axis = 0, vreg = 14} : (tensor<4x5xf32>, tensor<2x5xf32>) -> tensor<6x5xf32>
// CHECK-NEXT:   %[[P:.*]] = npuir.constant npu {value = dense<[4, 1, 5, 3]> : tensor<4xi64>, vreg = 15}
// CHECK-NEXT:   %slice_scatter_1 = npuir.gather npu %[[T]], %[[P]] {axis = 0, vreg = 16}
// CHECK-NEXT:   func.return %slice_scatter, %select_scatter, %slice_scatter_1
func.func @writes(%x: tensor<4x5xf32>, %y: tensor<4x2xf32>, %z: tensor<4xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) {
  %clone = aten.clone %x : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %slice = aten.slice.Tensor %clone {dim = 1, start = 1, end = 3} : (tensor<4x5xf32>) -> tensor<4x2xf32>
  %copy = aten.copy %slice, %y : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %slice_scatter = aten.slice_scatter %clone, %copy {dim = 1, start = 1, end = 3} : (tensor<4x5xf32>, tensor<4x2xf32>) -> tensor<4x5xf32>
  %clone_1 = aten.clone %x : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %select = aten.select.int %clone_1 {dim = 1, index = -1} : (tensor<4x5xf32>) -> tensor<4xf32>
  %copy_1 = aten.copy %select, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %select_scatter = aten.select_scatter %clone_1, %copy_1 {dim = 1, index = -1} : (tensor<4x5xf32>, tensor<4xf32>) -> tensor<4x5xf32>
  %clone_2 = aten.clone %x : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %slice_1 = aten.slice.Tensor %y {start = 0, end = 2} : (tensor<4x2xf32>) -> tensor<2x2xf32>
  %slice_2 = aten.slice.Tensor %slice_1 {dim = 1, start = 0, end = 1} : (tensor<2x2xf32>) -> tensor<2x1xf32>
  %mul = aten.mul.Scalar %slice_2 {other = 2.0} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %slice_3 = aten.slice.Tensor %clone_2 {start = 0, end = 9223372036854775807, step = 2} : (tensor<4x5xf32>) -> tensor<2x5xf32>
  %view = aten.view %mul {size = [2, 1]} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %expand = aten.expand %view {size = [2, 5]} : (tensor<2x1xf32>) -> tensor<2x5xf32>
  %copy_2 = aten.copy %slice_3, %expand : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
  %slice_scatter_1 = aten.slice_scatter %clone_2, %copy_2 {start = 0, end = 9223372036854775807, step = 2} : (tensor<4x5xf32>, tensor<2x5xf32>) -> tensor<4x5xf32>
  func.return %slice_scatter, %select_scatter, %slice_scatter_1 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>
}


// topk: an npuir topk (the indices) and a gather_elements (the values); min.dim's index is the first
// maximum of -x (NaN is the minimum as well), argmax a topk of one over the flattened tensor; log1p
// is a unary kind.
// CHECK-LABEL: func.func @selection
// CHECK:        %topk = npuir.topk npu %x_1 {k = 2, axis = 1, vreg = 1} : (tensor<3x5xf32>) -> tensor<3x2xi64>
// CHECK-NEXT:   %topk_1 = npuir.gather_elements npu %x_1, %topk {axis = 1, vreg = 2} : (tensor<3x5xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
// CHECK-NEXT:   %min = npuir.reduce npu %x_1 {kind = min, axes = [0], vreg = 3}
// CHECK-NEXT:   %[[NEG:.*]] = npuir.unary npu %x_1 {kind = neg, vreg = 4}
// CHECK-NEXT:   %[[FIRST:.*]] = npuir.topk npu %[[NEG]] {k = 1, axis = 0, vreg = 5} : (tensor<3x5xf32>) -> tensor<1x5xi64>
// CHECK-NEXT:   %min_1 = npuir.reshape npu %[[FIRST]] {vreg = 6} : (tensor<1x5xi64>) -> tensor<5xi64>
// CHECK-NEXT:   %[[FLAT:.*]] = npuir.reshape npu %x_1 {vreg = 7} : (tensor<3x5xf32>) -> tensor<15xf32>
// CHECK-NEXT:   %[[ARG:.*]] = npuir.topk npu %[[FLAT]] {k = 1, axis = 0, vreg = 8}
// CHECK-NEXT:   %argmax = npuir.reshape npu %[[ARG]] {vreg = 9} : (tensor<1xi64>) -> tensor<i64>
// CHECK-NEXT:   %log1p = npuir.unary npu %x_1 {kind = log1p, vreg = 10}
// CHECK-NEXT:   func.return %topk_1, %topk, %min, %min_1, %argmax, %log1p
func.func @selection(%x: tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>, tensor<5xf32>, tensor<5xi64>, tensor<i64>, tensor<3x5xf32>) {
  %topk, %topk_1 = aten.topk %x {k = 2} : (tensor<3x5xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %min, %min_1 = aten.min.dim %x {dim = 0} : (tensor<3x5xf32>) -> (tensor<5xf32>, tensor<5xi64>)
  %argmax = aten.argmax %x : (tensor<3x5xf32>) -> tensor<i64>
  %log1p = aten.log1p %x : (tensor<3x5xf32>) -> tensor<3x5xf32>
  func.return %topk, %topk_1, %min, %min_1, %argmax, %log1p : tensor<3x2xf32>, tensor<3x2xi64>, tensor<5xf32>, tensor<5xi64>, tensor<i64>, tensor<3x5xf32>
}


// gather is gather_elements; x[i, :, j] moves the indexed dims first, gathers at i and takes j with
// a gather_elements (the index tensors only move: valid indices are small, so they stay on the
// npu); one index tensor is a gather. The clamp of an input index is integer arithmetic: the host.
// CHECK-LABEL: func.func @indexing
// CHECK:        %gather = npuir.gather_elements npu %x_1, %g_1 {axis = 1, vreg = 4}
// CHECK-NEXT:   %[[I:.*]] = npuir.broadcast npu %i_1 {vreg = 5} : (tensor<2xi64>) -> tensor<2x2xi64>
// CHECK-NEXT:   %[[J:.*]] = npuir.broadcast npu %j_1 {vreg = 6} : (tensor<2x1xi64>) -> tensor<2x2xi64>
// CHECK-NEXT:   %[[XT:.*]] = npuir.transpose npu %x_1 {perm = [0, 2, 1], vreg = 7}
// CHECK-NEXT:   %[[G:.*]] = npuir.gather npu %[[XT]], %[[I]] {axis = 0, vreg = 8} : (tensor<3x4x2xf32>, tensor<2x2xi64>) -> tensor<2x2x4x2xf32>
// CHECK-NEXT:   %[[J4:.*]] = npuir.reshape npu %[[J]] {vreg = 9} : (tensor<2x2xi64>) -> tensor<2x2x1x1xi64>
// CHECK-NEXT:   %[[JB:.*]] = npuir.broadcast npu %[[J4]] {vreg = 10} : (tensor<2x2x1x1xi64>) -> tensor<2x2x1x2xi64>
// CHECK-NEXT:   %[[E:.*]] = npuir.gather_elements npu %[[G]], %[[JB]] {axis = 2, vreg = 11}
// CHECK-NEXT:   %index = npuir.reshape npu %[[E]] {vreg = 12} : (tensor<2x2x1x2xf32>) -> tensor<2x2x2xf32>
// CHECK:        %clamp = npuir.binary cpu
// CHECK-NEXT:   %_unsafe_index = npuir.gather npu %x_1, %clamp {axis = 1, vreg = 17}
func.func @indexing(%x: tensor<3x2x4xf32>, %g: tensor<3x1x4xi64>, %i: tensor<2xi64>, %j: tensor<2x1xi64>) -> (tensor<3x1x4xf32>, tensor<2x2x2xf32>, tensor<3x2x4xf32>) {
  %gather = aten.gather %x, %g {dim = 1} : (tensor<3x2x4xf32>, tensor<3x1x4xi64>) -> tensor<3x1x4xf32>
  %index = aten.index.Tensor %x, [%i, none, %j] : (tensor<3x2x4xf32>, tensor<2xi64>, tensor<2x1xi64>) -> tensor<2x2x2xf32>
  %clamp = aten.clamp %i {min = 0, max = 1} : (tensor<2xi64>) -> tensor<2xi64>
  %_unsafe_index = aten._unsafe_index.Tensor %x, [none, %clamp] : (tensor<3x2x4xf32>, tensor<2xi64>) -> tensor<3x2x4xf32>
  func.return %gather, %index, %_unsafe_index : tensor<3x1x4xf32>, tensor<2x2x2xf32>, tensor<3x2x4xf32>
}


// Mixture-of-experts routing stays on the npu: topk's indices are small integers (they index an
// axis), so reshaping them is npu data movement and the expert weights are gathered there.
// CHECK-LABEL: func.func @moe_routing
// CHECK:        %softmax = npuir.softmax npu %x_1
// CHECK-NEXT:   %topk = npuir.topk npu %softmax {k = 2, axis = 1, vreg = 3}
// CHECK-NEXT:   %topk_1 = npuir.gather_elements npu %softmax, %topk {axis = 1, vreg = 4}
// CHECK-NEXT:   %reshape = npuir.reshape npu %topk {vreg = 5} : (tensor<3x2xi64>) -> tensor<6xi64>
// CHECK-NEXT:   %index = npuir.gather npu %p_w, %reshape {axis = 0, vreg = 6}
// CHECK-NEXT:   %reshape_1 = npuir.reshape npu %topk_1
// CHECK-NEXT:   %mul = npuir.binary npu %index, %reshape_1
func.func @moe_routing(%x: tensor<3x4xf32>) -> tensor<6x6x8xf32> {
  %p_w = aten.weight "w" : tensor<4x6x8xf32>
  %softmax = aten.softmax.int %x {dim = -1} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %topk, %topk_1 = aten.topk %softmax {k = 2} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  %reshape = aten.reshape %topk_1 {shape = [-1]} : (tensor<3x2xi64>) -> tensor<6xi64>
  %index = aten.index.Tensor %p_w, [%reshape] : (tensor<4x6x8xf32>, tensor<6xi64>) -> tensor<6x6x8xf32>
  %reshape_1 = aten.reshape %topk {shape = [-1, 1, 1]} : (tensor<3x2xf32>) -> tensor<6x1x1xf32>
  %mul = aten.mul.Tensor %index, %reshape_1 : (tensor<6x6x8xf32>, tensor<6x1x1xf32>) -> tensor<6x6x8xf32>
  func.return %mul : tensor<6x6x8xf32>
}

// Zero-size values have nothing to compute: an empty slice, and the exp of it, are empty constants
// that the concat drops (phi3's rotary halves were host steps for them); here nothing is left.
// CHECK-LABEL: func.func @empty_parts
// CHECK-NEXT:   %[[X:.*]] = npuir.input cpu {index = 0, vreg = 0} : tensor<2x4xf32>
// CHECK-NEXT:   func.return %[[X]] : tensor<2x4xf32>
func.func @empty_parts(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %slice = aten.slice.Tensor %x {dim = 1, start = 4, end = 9223372036854775807} : (tensor<2x4xf32>) -> tensor<2x0xf32>
  %exp = aten.exp %slice : (tensor<2x0xf32>) -> tensor<2x0xf32>
  %cat = aten.cat [%exp, %x] {dim = -1} : (tensor<2x0xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %cat : tensor<2x4xf32>
}

// max.dim (keepdim) is a reduce and the first maximum's topk of one; argmin along an axis is the first
// maximum of -x, reshaped; clamp.Tensor is a max with the lower bound, then a min with the upper.
// CHECK-LABEL: func.func @selection_more
// CHECK:        %max = npuir.reduce npu %x_1 {kind = max, axes = [1], keepdims = true, vreg = 3} : (tensor<3x5xf32>) -> tensor<3x1xf32>
// CHECK-NEXT:   %max_1 = npuir.topk npu %x_1 {k = 1, axis = 1, vreg = 4} : (tensor<3x5xf32>) -> tensor<3x1xi64>
// CHECK-NEXT:   %[[NEG:.*]] = npuir.unary npu %x_1 {kind = neg, vreg = 5}
// CHECK-NEXT:   %[[FIRST:.*]] = npuir.topk npu %[[NEG]] {k = 1, axis = 1, vreg = 6} : (tensor<3x5xf32>) -> tensor<3x1xi64>
// CHECK-NEXT:   %argmin = npuir.reshape npu %[[FIRST]] {vreg = 7} : (tensor<3x1xi64>) -> tensor<3xi64>
// CHECK-NEXT:   %[[LO:.*]] = npuir.binary npu %x_1, %lo_1 {kind = max, vreg = 8}
// CHECK-NEXT:   %clamp = npuir.binary npu %[[LO]], %hi_1 {kind = min, vreg = 9}
// CHECK-NEXT:   func.return %max, %max_1, %argmin, %clamp
func.func @selection_more(%x: tensor<3x5xf32>, %lo: tensor<5xf32>, %hi: tensor<3x1xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>, tensor<3xi64>, tensor<3x5xf32>) {
  %max, %max_1 = aten.max.dim %x {dim = 1, keepdim = true} : (tensor<3x5xf32>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  %argmin = aten.argmin %x {dim = -1} : (tensor<3x5xf32>) -> tensor<3xi64>
  %clamp = aten.clamp.Tensor %x, %lo, %hi : (tensor<3x5xf32>, tensor<5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  func.return %max, %max_1, %argmin, %clamp : tensor<3x1xf32>, tensor<3x1xi64>, tensor<3xi64>, tensor<3x5xf32>
}
