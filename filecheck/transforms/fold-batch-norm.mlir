// fold with a WeightStore folds an inference batch norm into the convolution before it: the
// convolution gets a rescaled weight and a (new, or updated) bias, both new store entries named
// `fold.<layer>.weight_<n>` / `fold.<layer>.bias_<n>`, and the batch norm disappears. Without
// weights (no companion file) the weights are opaque and nothing folds.
// RUN: cp %s %t.mlir
// RUN: python -c "import torch; from forge.weights import WeightStore; s = WeightStore(); [s.add(n, torch.rand(*shape) + 0.5) for n, shape in [('c.weight', (4, 2, 3, 3)), ('c.bias', (4,)), ('t.weight', (4, 4, 3, 3)), ('d.weight', (3, 1, 3)), ('bn.weight', (4,)), ('bn.bias', (4,)), ('bn.mean', (4,)), ('bn.var', (4,)), ('bn3.mean', (3,)), ('bn3.var', (3,))]]; s.save('%t.safetensors')"
// RUN: forge-opt %t.mlir -p fold | filecheck %s --check-prefix=STORE
// RUN: forge-opt %t.mlir -p fold,fuse-ops | filecheck %s --check-prefix=FUSED
// RUN: forge-opt %s -p fold | filecheck %s --check-prefix=NOSTORE

// conv2d without bias, then batch norm (affine), then relu: one conv2d with the folded weight and
// a new bias; fuse-ops then takes the relu in.
// STORE-LABEL: func.func @conv_bn_relu
// STORE-NEXT:    %w_folded = aten.weight "fold.c.weight_0" : tensor<4x2x3x3xf32>
// STORE-NEXT:    %w_folded_bias = aten.weight "fold.c.bias_0" : tensor<4xf32>
// STORE-NEXT:    %conv = aten.conv2d %x, %w_folded, %w_folded_bias {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
// STORE-NEXT:    %relu = aten.relu %conv
// STORE-NEXT:    func.return %relu
// FUSED-LABEL: func.func @conv_bn_relu
// FUSED:         %conv = aten.fused_conv %x, %w_folded, %w_folded_bias {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1, activation = "relu"}
// FUSED-NOT:     aten.batch_norm
// FUSED-NEXT:    func.return %conv
// NOSTORE-LABEL: func.func @conv_bn_relu
// NOSTORE:         aten.batch_norm
func.func @conv_bn_relu(%x: tensor<1x2x5x5xf32>) -> tensor<1x4x5x5xf32> {
  %w = aten.weight "c.weight" : tensor<4x2x3x3xf32>
  %g = aten.weight "bn.weight" : tensor<4xf32>
  %b = aten.weight "bn.bias" : tensor<4xf32>
  %m = aten.weight "bn.mean" : tensor<4xf32>
  %v = aten.weight "bn.var" : tensor<4xf32>
  %conv = aten.conv2d %x, %w, none {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  %bn = aten.batch_norm %conv, %g, %b, %m, %v {training = false, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %relu = aten.relu %bn : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  func.return %relu : tensor<1x4x5x5xf32>
}

// A convolution with a bias, a batch norm without affine parameters (a depthwise conv1d): the bias
// is rewritten; the old weights, used only here, are gone.
// STORE-LABEL: func.func @conv_bias_bn_no_affine
// STORE-NEXT:    %w_folded = aten.weight "fold.d.weight_0" : tensor<3x1x3xf32>
// STORE-NEXT:    %w_folded_bias = aten.weight "fold.d.bias_0" : tensor<3xf32>
// STORE-NEXT:    %conv = aten.convolution %x, %w_folded, %w_folded_bias {stride = [1], padding = [0], dilation = [1], transposed = false, output_padding = [0], groups = 3}
// STORE-NEXT:    func.return %conv
func.func @conv_bias_bn_no_affine(%x: tensor<1x3x7xf32>) -> tensor<1x3x5xf32> {
  %w = aten.weight "d.weight" : tensor<3x1x3xf32>
  %cb = aten.constant dense<[0.5, -1.0, 2.0]> : tensor<3xf32>
  %m = aten.weight "bn3.mean" : tensor<3xf32>
  %v = aten.weight "bn3.var" : tensor<3xf32>
  %conv = aten.convolution %x, %w, %cb {stride = [1], padding = [0], dilation = [1], transposed = false, output_padding = [0], groups = 3} : (tensor<1x3x7xf32>, tensor<3x1x3xf32>, tensor<3xf32>) -> tensor<1x3x5xf32>
  %bn = aten.batch_norm %conv, none, none, %m, %v {training = false, momentum = 0.1, eps = 1.0e-03, cudnn_enabled = false} : (tensor<1x3x5xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x5xf32>
  func.return %bn : tensor<1x3x5xf32>
}

// Not folded: the convolution's result is also returned (it needs the unnormalized value), a
// training-mode batch norm (batch statistics), a transposed convolution.
// STORE-LABEL: func.func @must_not_fold
// STORE:         %used_twice = aten.conv2d %x, %w, %cb {padding = [1, 1]}
// STORE-NEXT:    %bn1 = aten.batch_norm %used_twice, %g, %b, %m, %v {training = false
// STORE-NEXT:    %conv = aten.conv2d %x, %w, none {padding = [1, 1]}
// STORE-NEXT:    %bn2 = aten.batch_norm %conv, %g, %b, %m, %v {training = true
// STORE-NEXT:    %tconv = aten.convolution %y, %wt, none
// STORE-NEXT:    %bn3 = aten.batch_norm %tconv, %g, %b, %m, %v {training = false
// STORE-NEXT:    func.return %bn1, %used_twice, %bn2, %bn3
func.func @must_not_fold(%x: tensor<1x2x5x5xf32>, %y: tensor<1x4x5x5xf32>) -> (tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>) {
  %w = aten.weight "c.weight" : tensor<4x2x3x3xf32>
  %cb = aten.weight "c.bias" : tensor<4xf32>
  %wt = aten.weight "t.weight" : tensor<4x4x3x3xf32>
  %g = aten.weight "bn.weight" : tensor<4xf32>
  %b = aten.weight "bn.bias" : tensor<4xf32>
  %m = aten.weight "bn.mean" : tensor<4xf32>
  %v = aten.weight "bn.var" : tensor<4xf32>
  %used_twice = aten.conv2d %x, %w, %cb {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %bn1 = aten.batch_norm %used_twice, %g, %b, %m, %v {training = false, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %conv = aten.conv2d %x, %w, none {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  %bn2 = aten.batch_norm %conv, %g, %b, %m, %v {training = true, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %tconv = aten.convolution %y, %wt, none {stride = [1, 1], padding = [1, 1], dilation = [1, 1], transposed = true, output_padding = [0, 0], groups = 1} : (tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32>
  %bn3 = aten.batch_norm %tconv, %g, %b, %m, %v {training = false, momentum = 0.1, eps = 1.0e-05, cudnn_enabled = false} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  func.return %bn1, %used_twice, %bn2, %bn3 : tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>, tensor<1x4x5x5xf32>
}

// The overload torch's decompositions produce (three results; the saved statistics unused) folds
// the same way.
// STORE-LABEL: func.func @legit_no_training
// STORE-NEXT:    %w_folded = aten.weight "fold.c.weight_1" : tensor<4x2x3x3xf32>
// STORE-NEXT:    %w_folded_bias = aten.weight "fold.c.bias_1" : tensor<4xf32>
// STORE-NEXT:    %conv = aten.conv2d %x, %w_folded, %w_folded_bias {padding = [1, 1]}
// STORE-NEXT:    func.return %conv
func.func @legit_no_training(%x: tensor<1x2x5x5xf32>) -> tensor<1x4x5x5xf32> {
  %w = aten.weight "c.weight" : tensor<4x2x3x3xf32>
  %g = aten.weight "bn.weight" : tensor<4xf32>
  %b = aten.weight "bn.bias" : tensor<4xf32>
  %m = aten.weight "bn.mean" : tensor<4xf32>
  %v = aten.weight "bn.var" : tensor<4xf32>
  %conv = aten.conv2d %x, %w, none {padding = [1, 1]} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x5x5xf32>
  %bn, %mean, %rstd = aten._native_batch_norm_legit_no_training %conv, %g, %b, %m, %v {momentum = 0.1, eps = 1.0e-05} : (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<1x4x5x5xf32>, tensor<4xf32>, tensor<4xf32>)
  func.return %bn : tensor<1x4x5x5xf32>
}
