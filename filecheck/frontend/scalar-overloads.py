# RUN: python %s | filecheck %s
# A Python number passed for a Tensor argument imports as the overload of the same packet that takes
# a Scalar there, and only when every other argument carries over: `div.Tensor_mode(t, 2, rounding_mode=
# "floor")` is `div.Scalar_mode`, never `div.Scalar` (which would drop the rounding mode: issue 28).
import torch

from forge.frontend.fx_importer import import_module


class Divisions(torch.nn.Module):
    def forward(self, t):
        return (
            torch.div(t, 2, rounding_mode="floor"),
            torch.div(t, 3, rounding_mode="trunc"),
            t // -2,
            torch.floor_divide(t, 2.5),
            t / 2,
        )


class Numbers(torch.nn.Module):
    def forward(self, t, c):
        return torch.pow(t, 2), torch.where(c, t, 0.5), t + 1


print(import_module(Divisions(), (torch.randn(4),)).module)
print(import_module(Numbers(), (torch.randn(4), torch.rand(4) > 0.5)).module)

# CHECK-LABEL: func.func @forward(%t: tensor<4xf32>)
# CHECK-NEXT:    %div = aten.div.Scalar_mode %t {other = 2, rounding_mode = "floor"} : (tensor<4xf32>) -> tensor<4xf32>
# CHECK-NEXT:    %div_1 = aten.div.Scalar_mode %t {other = 3, rounding_mode = "trunc"} : (tensor<4xf32>) -> tensor<4xf32>
# CHECK-NEXT:    %div_2 = aten.div.Scalar_mode %t {other = -2, rounding_mode = "floor"} : (tensor<4xf32>) -> tensor<4xf32>
# CHECK-NEXT:    %div_3 = aten.div.Scalar_mode %t {other = 2.5, rounding_mode = "floor"} : (tensor<4xf32>) -> tensor<4xf32>
# CHECK-NEXT:    %div_4 = aten.div.Scalar %t {other = 2} : (tensor<4xf32>) -> tensor<4xf32>

# CHECK-LABEL: func.func @forward(%t: tensor<4xf32>, %c: tensor<4xi1>)
# CHECK-NEXT:    %pow = aten.pow.Tensor_Scalar %t {exponent = 2} : (tensor<4xf32>) -> tensor<4xf32>
# CHECK-NEXT:    %where = aten.where.ScalarOther %c, %t {other = 0.5} : (tensor<4xi1>, tensor<4xf32>) -> tensor<4xf32>
# CHECK-NEXT:    %add = aten.add.Scalar %t {other = 1} : (tensor<4xf32>) -> tensor<4xf32>
