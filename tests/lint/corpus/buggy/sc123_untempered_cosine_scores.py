"""Cosine attention (Swin v2, XCiT): queries and keys normalised to unit length, the temperature forgotten."""

import torch
from torch import nn
from torch.nn import functional as F


class WindowAttention(nn.Module):
    """Swin-v2-style scaled cosine attention without its logit scale."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        attn = attn.softmax(dim=-1)  # expect: SC123
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x), attn


class L2Norm(nn.Module):
    def forward(self, x):
        return F.normalize(x, dim=-1)


class NormedAttention(nn.Module):
    """The unit vectors come from a norm module of this file; the fused call keeps SDPA's default scale."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.q_norm = L2Norm()
        self.k_norm = L2Norm()
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1))
        q, k = self.q_norm(q), self.k_norm(k)
        out = F.scaled_dot_product_attention(q, k, v)  # expect: SC123
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))
