# RUN: python %s | filecheck %s
# A ResNet basic block (conv-BN-ReLU, conv-BN, residual add, ReLU; eval mode, random running
# statistics) after the default optimization pipeline: both batch norms are folded into their
# convolutions (new store weights and biases, no batch-norm op or arithmetic left), the first
# convolution takes its ReLU in, and what remains is two convolutions, the add and the ReLU.
import torch
from torch import nn

from forge.driver.pass_stages import run_passes
from forge.frontend.fx_importer import import_module
from forge.pipelines import DEFAULT_PIPELINE

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


imported = import_module(Block().eval(), (torch.randn(1, 4, 6, 6),))
run_passes(imported.module, DEFAULT_PIPELINE)  # the import attached its weights
print(imported.module)

# CHECK:      func.func @forward(%x: tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32> {
# CHECK-NEXT:   %p_conv1_weight_folded = aten.weight "fold.conv1.weight_0" : tensor<4x4x3x3xf32>
# CHECK-NEXT:   %p_conv1_weight_folded_bias = aten.weight "fold.conv1.bias_0" : tensor<4xf32>
# CHECK-NEXT:   %conv2d = aten.fused_conv %x, %p_conv1_weight_folded, %p_conv1_weight_folded_bias {stride = [1, 1], padding = [1, 1], dilation = [1, 1], groups = 1, activation = "relu"}
# CHECK-NEXT:   %p_conv2_weight_folded = aten.weight "fold.conv2.weight_0" : tensor<4x4x3x3xf32>
# CHECK-NEXT:   %p_conv2_weight_folded_bias = aten.weight "fold.conv2.bias_0" : tensor<4xf32>
# CHECK-NEXT:   %conv2d_1 = aten.conv2d %conv2d, %p_conv2_weight_folded, %p_conv2_weight_folded_bias {padding = [1, 1]}
# CHECK-NEXT:   %add = aten.add.Tensor %conv2d_1, %x
# CHECK-NEXT:   %relu = aten.relu %add
# CHECK-NEXT:   func.return %relu
# CHECK-NOT:  batch_norm
