"""Local attention over an image: each query attends the keys in the kernel_size x kernel_size window around it,
gathered with F.unfold. unfold lays its second axis out as (channels, kernel positions), but the split reads it as
(kernel positions, channels), so each "key" mixes channels of different neighbours."""

import torch.nn.functional as F
from einops import rearrange
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim, kernel_size=3):
        super().__init__()
        self.kernel_size = kernel_size
        self.scale = dim ** -0.5
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x, height):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)  # (batch, seq, dim)
        k, v = (rearrange(t, "b (h w) c -> b c h w", h=height) for t in (k, v))
        k = F.unfold(k, self.kernel_size, padding=self.kernel_size // 2)  # (batch, dim * kernel_size**2, seq)
        v = F.unfold(v, self.kernel_size, padding=self.kernel_size // 2)
        k = rearrange(k, "b (j d) i -> b i j d", j=self.kernel_size ** 2)  # expect: SC139
        v = rearrange(v, "b (d j) i -> b i j d", j=self.kernel_size ** 2)
        scores = (q.unsqueeze(2) * k).sum(-1) * self.scale  # (batch, seq, kernel_size**2)
        return (scores.softmax(dim=-1).unsqueeze(-1) * v).sum(2)  # (batch, seq, dim)
