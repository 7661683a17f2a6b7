"""A patched attention that rotates the queries and the keys in two calls of a rotary module that rotates a pair:
each call keeps the half it needs and throws the other into ``_`` on purpose."""

import torch
import torch.nn.functional as F
from torch import nn


class PairRotary(nn.Module):
    def __init__(self, d_head, base=10000.0):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, d_head, 2).float() / d_head))

    def forward(self, q, k, offset):
        t = torch.arange(offset, offset + q.shape[-2], device=q.device, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        cos, sin = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()
        turn = lambda x: torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), -1)  # noqa: E731
        return q * cos + turn(q) * sin, k * cos + turn(k) * sin


class ShiftedAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.rotary = PairRotary(dim // heads)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, past_len=0):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        q, _ = self.rotary(q, q.clone(), past_len)  # queries at their own positions
        _, k = self.rotary(k.clone(), k, 0)  # keys at their places in the window
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, n, d))
