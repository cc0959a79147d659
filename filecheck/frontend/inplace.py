# RUN: python %s | filecheck %s
# In-place ops: on a value only the graph sees (a clone, a conv output) they import as their
# functional overloads, and later uses read the new value; a write through a view goes through
# torch's functionalization (a *_scatter op writes the slice back).
import torch

from forge.frontend.fx_importer import import_module

torch.manual_seed(0)


class Residual(torch.nn.Module):
    """ResNet's `out += identity; out = relu_(out)` on a private value."""

    def forward(self, x):
        out = x.clone()
        out.mul_(2)
        out += x
        return torch.relu_(out)


class SliceWrite(torch.nn.Module):
    def forward(self, x):
        y = x.clone()
        y[:, 1:].add_(1.0)
        return y


print(import_module(Residual(), (torch.randn(2, 3),)).module)
print(import_module(SliceWrite(), (torch.randn(2, 3),)).module)

# CHECK-LABEL: func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
# CHECK-NEXT:    %clone = aten.clone %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    %mul_ = aten.mul.Scalar %clone {other = 2} : (tensor<2x3xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    %add_ = aten.add.Tensor %mul_, %x : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    %relu_ = aten.relu %add_ : (tensor<2x3xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    func.return %relu_ : tensor<2x3xf32>

# CHECK-LABEL: func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
# CHECK-NEXT:    %clone = aten.clone %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    %slice = aten.slice.Tensor %clone {dim = 1, start = 1, end = 9223372036854775807} : (tensor<2x3xf32>) -> tensor<2x2xf32>
# CHECK-NEXT:    %add = aten.add.Scalar %slice {other = 1.0} : (tensor<2x2xf32>) -> tensor<2x2xf32>
# CHECK-NEXT:    %slice_scatter = aten.slice_scatter %clone, %add {dim = 1, start = 1, end = 9223372036854775807} : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x3xf32>
# CHECK-NEXT:    func.return %slice_scatter : tensor<2x3xf32>
