// RUN: forge-opt %s -p fuse-ops | filecheck %s
// RUN: forge-opt %s -p 'fuse-ops{dense-experts=false}' | filecheck %s --check-prefix=OFF
// RUN: forge-opt %s -p fuse-ops | forge-opt -p fuse-ops | filecheck %s

// DenseExperts (a fuse-ops family, forge/transforms/dense_experts.py): transformers' batched_mm
// experts gather a copy of an expert's weights per (token, pick) and run a matrix-vector product.
// Computed densely instead: every expert on every input column (a matmul with the 3-D weight),
// then a gather_elements (aten.gather) of each pick's expert along the experts. The first
// projection reads each token row twice (reshape(expand(h))): its columns are the 4 token rows,
// not the 8 copies; the second reads a value per pick: 8 columns.

// CHECK-LABEL: func.func @moe_experts
// CHECK-NOT:     aten.index.Tensor
// CHECK-NOT:     aten.bmm
// CHECK:         %[[COLS:.*]] = aten.transpose.int %{{.*}} {dim0 = 0, dim1 = 1} : (tensor<4x8xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %[[UP:.*]] = aten.matmul %w_up, %[[COLS]] : (tensor<3x6x8xf32>, tensor<8x4xf32>) -> tensor<3x6x4xf32>
// CHECK-NEXT:    %[[T:.*]] = aten.reshape %flat {shape = [4, 2]}
// CHECK-NEXT:    %[[K:.*]] = aten.permute %[[T]] {dims = [1, 0]}
// CHECK-NEXT:    %[[K3:.*]] = aten.reshape %[[K]] {shape = [2, 1, 4]}
// CHECK-NEXT:    %[[IDX:.*]] = aten.expand %[[K3]] {size = [2, 6, 4]}
// CHECK-NEXT:    %[[PICK:.*]] = aten.gather %[[UP]], %[[IDX]] {dim = 0} : (tensor<3x6x4xf32>, tensor<2x6x4xi64>) -> tensor<2x6x4xf32>
// CHECK-NEXT:    %[[TK:.*]] = aten.permute %[[PICK]] {dims = [2, 0, 1]} : (tensor<2x6x4xf32>) -> tensor<4x2x6xf32>
// CHECK-NEXT:    %[[HID:.*]] = aten.reshape %[[TK]] {shape = [8, 6, 1]}
// CHECK-NEXT:    %act = aten.relu %[[HID]]
// CHECK:         %[[DOWN:.*]] = aten.matmul %w_down, %{{.*}} : (tensor<3x5x6xf32>, tensor<6x8xf32>) -> tensor<3x5x8xf32>
// CHECK:         aten.gather %{{.*}}, %{{.*}} {dim = 0} : (tensor<3x5x8x1xf32>, tensor<1x5x8x1xi64>) -> tensor<1x5x8x1xf32>
// CHECK:         %[[OUT:.*]] = aten.permute %{{.*}} {dims = [1, 0, 2]} : (tensor<5x8x1xf32>) -> tensor<8x5x1xf32>
// CHECK-NEXT:    func.return %[[OUT]]

// OFF-LABEL: func.func @moe_experts
// OFF:         %up = aten.index.Tensor %w_up, [%flat]
// OFF:         %hid = aten.bmm %up, %x

// NEGATIVE: 40 experts of one pick per sample: computing every expert would do 40 times the work
// for 2 samples (40 x 2 columns > 16 x 2 samples): the gathered form stays.
// CHECK-LABEL: func.func @moe_many_experts
// CHECK:         %g = aten.index.Tensor %w, [%flat]
// CHECK-NEXT:    %out = aten.bmm %g, %x
func.func @moe_experts(%h: tensor<4x8xf32>, %logits: tensor<4x3xf32>) -> tensor<8x5x1xf32> {
  %w_up = aten.weight "experts.up" : tensor<3x6x8xf32>
  %w_down = aten.weight "experts.down" : tensor<3x5x6xf32>
  %topk, %ids = aten.topk %logits {k = 2} : (tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  %flat = aten.view %ids {size = [-1]} : (tensor<4x2xi64>) -> tensor<8xi64>
  %up = aten.index.Tensor %w_up, [%flat] : (tensor<3x6x8xf32>, tensor<8xi64>) -> tensor<8x6x8xf32>
  %rows = aten.reshape %h {shape = [4, 1, 8]} : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
  %rep = aten.expand %rows {size = [4, 2, 8]} : (tensor<4x1x8xf32>) -> tensor<4x2x8xf32>
  %x = aten.reshape %rep {shape = [8, 8, 1]} : (tensor<4x2x8xf32>) -> tensor<8x8x1xf32>
  %hid = aten.bmm %up, %x : (tensor<8x6x8xf32>, tensor<8x8x1xf32>) -> tensor<8x6x1xf32>
  %act = aten.relu %hid : (tensor<8x6x1xf32>) -> tensor<8x6x1xf32>
  %down = aten.index.Tensor %w_down, [%flat] : (tensor<3x5x6xf32>, tensor<8xi64>) -> tensor<8x5x6xf32>
  %out = aten.bmm %down, %act : (tensor<8x5x6xf32>, tensor<8x6x1xf32>) -> tensor<8x5x1xf32>
  func.return %out : tensor<8x5x1xf32>
}

func.func @moe_many_experts(%x: tensor<2x8x1xf32>, %logits: tensor<2x40xf32>) -> tensor<2x6x1xf32> {
  %w = aten.weight "experts.up" : tensor<40x6x8xf32>
  %topk, %ids = aten.topk %logits {k = 1} : (tensor<2x40xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>)
  %flat = aten.view %ids {size = [-1]} : (tensor<2x1xi64>) -> tensor<2xi64>
  %g = aten.index.Tensor %w, [%flat] : (tensor<40x6x8xf32>, tensor<2xi64>) -> tensor<2x6x8xf32>
  %out = aten.bmm %g, %x : (tensor<2x6x8xf32>, tensor<2x8x1xf32>) -> tensor<2x6x1xf32>
  func.return %out : tensor<2x6x1xf32>
}
