"""Heads moved forward in place for the eager path and back with an out-of-place transpose before flash-attn (in the
style of exllama's attention): the kernel gets (batch, seq, heads, d_head), as it reads them."""

import math

import torch
import torch.nn as nn
from flash_attn import flash_attn_func


class Attention(nn.Module):
    def __init__(self, dim: int, num_heads: int, use_flash: bool = True):
        super().__init__()
        self.num_heads, self.head_dim, self.use_flash = num_heads, dim // num_heads, use_flash
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
        if self.use_flash:
            out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), causal=True)
        else:
            scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
            out = torch.matmul(probs, v).transpose(1, 2)
        return out.reshape(b, t, -1)
