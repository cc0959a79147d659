"""Forge IR has value semantics: a `view` of a non-contiguous value must still evaluate."""

import torch
from xdsl.parser import Parser

from forge.driver.registry import make_context
from forge.interpreter import interpret

VIEW_OF_TRANSPOSE = """
func.func @forward(%x: tensor<2x3x4xf32>) -> tensor<3x8xf32> {
  %t = aten.transpose.int %x {dim0 = 0, dim1 = 1} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %v = aten.view %t {size = [3, 8]} : (tensor<3x2x4xf32>) -> tensor<3x8xf32>
  func.return %v : tensor<3x8xf32>
}
"""


def test_view_of_a_transposed_value_evaluates_like_reshape():
    module = Parser(make_context(), VIEW_OF_TRANSPOSE).parse_module()
    module.verify()
    x = torch.randn(2, 3, 4)
    (out,) = interpret(module, None, x)
    assert torch.equal(out, x.transpose(0, 1).reshape(3, 8))
