# RUN: python %s | filecheck %s
# A rotary-embedding block as Llama writes it: the non-persistent inv_freq buffer becomes a
# weight, rotate_half is slice/neg/cat, and cos/sin are computed from positions in the graph.
import torch

from forge.frontend.fx_importer import import_module


class RoPE(torch.nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        positions = torch.arange(x.shape[-2], dtype=torch.float32)
        freqs = torch.outer(positions, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * emb.cos() + rotated * emb.sin()


print(import_module(RoPE(), (torch.randn(1, 2, 4, 8),)).module)

# CHECK:      %b_inv_freq = aten.weight "inv_freq" : tensor<4xf32>
# CHECK:      aten.arange {end = 4, dtype = f32
# CHECK:      aten.cat [%{{.*}}, %{{.*}}] {dim = -1} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
# CHECK-NEXT: %slice = aten.slice.Tensor %x {dim = 3, start = 4, end = 9223372036854775807}
# CHECK-NEXT: %neg = aten.neg %slice
# CHECK-NEXT: %slice_1 = aten.slice.Tensor %x {dim = 3, start = 0, end = 4}
# CHECK-NEXT: %cat_1 = aten.cat [%neg, %slice_1] {dim = -1}
# CHECK:      aten.cos
# CHECK:      aten.sin
# CHECK:      func.return
