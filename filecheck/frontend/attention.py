# RUN: python %s sdpa | filecheck %s --check-prefix=SDPA
# RUN: python %s eager | filecheck %s --check-prefix=EAGER
# A tiny attention block in both implementations: sdpa stays one op with its scale and
# causal flag; the eager form is the decomposed chain that fuse-attention recognises.
import math
import sys

import torch
import torch.nn.functional as F

from forge.frontend.fx_importer import import_module


class Attention(torch.nn.Module):
    def __init__(self, impl):
        super().__init__()
        self.impl = impl

    def forward(self, q, k, v):
        if self.impl == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.25)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        return torch.matmul(torch.softmax(scores, dim=-1), v)


args = tuple(torch.randn(1, 2, 4, 8) for _ in range(3))
print(import_module(Attention(sys.argv[1]), args).module)

# SDPA:      func.func @forward(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>)
# SDPA-NEXT:   %scaled_dot_product_attention = aten.scaled_dot_product_attention %q, %k, %v, none {is_causal = true, scale = 0.25}
# SDPA-NEXT:   func.return %scaled_dot_product_attention

# EAGER:      %transpose = aten.transpose.int %k {dim0 = -2, dim1 = -1} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
# EAGER-NEXT: %matmul = aten.matmul %q, %transpose : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
# EAGER-NEXT: %div = aten.div.Scalar %matmul {other = 2.8284271247461903}
# EAGER-NEXT: %softmax = aten.softmax.int %div {dim = -1}
# EAGER-NEXT: %matmul_1 = aten.matmul %softmax, %v
# EAGER-NEXT: func.return %matmul_1
