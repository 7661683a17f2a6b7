"""Heads moved forward in place (``transpose_``) for the eager path, then handed to flash-attn as they are: the
kernel reads (batch, seq, heads, d_head) and gets (batch, heads, seq, d_head). An in-place transpose moves the
axes as its out-of-place twin does."""

import torch
import torch.nn as nn
from flash_attn import flash_attn_func


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(b, t, self.num_heads, self.head_dim)
        k = k.view(b, t, self.num_heads, self.head_dim)
        v = v.view(b, t, self.num_heads, self.head_dim)
        q.transpose_(1, 2)
        k.transpose_(1, 2)
        v.transpose_(1, 2)
        return flash_attn_func(q, k, v, causal=True)  # expect: SC172
