# RUN: python %s | filecheck %s
# A tiny MLP: parameters become named aten.weight ops, linear + gelu stay high-level,
# FX node names become SSA names.
import torch

from forge.frontend.fx_importer import import_module

torch.manual_seed(0)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(8, 16)
        self.down = torch.nn.Linear(16, 8, bias=False)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


print(import_module(MLP().eval(), (torch.randn(2, 8),)).module)

# CHECK:      func.func @forward(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
# CHECK-NEXT:   %p_up_weight = aten.weight "up.weight" : tensor<16x8xf32>
# CHECK-NEXT:   %p_up_bias = aten.weight "up.bias" : tensor<16xf32>
# CHECK-NEXT:   %p_down_weight = aten.weight "down.weight" : tensor<8x16xf32>
# CHECK-NEXT:   %linear = aten.linear %x, %p_up_weight, %p_up_bias : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x16xf32>
# CHECK-NEXT:   %gelu = aten.gelu %linear : (tensor<2x16xf32>) -> tensor<2x16xf32>
# CHECK-NEXT:   %linear_1 = aten.linear %gelu, %p_down_weight, none : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
# CHECK-NEXT:   func.return %linear_1 : tensor<2x8xf32>
# CHECK-NEXT: }
