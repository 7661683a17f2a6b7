"""Cosine attention with its temperature: a learned logit scale per head, or a norm that learns its gain."""

import math

import torch
from torch import nn
from torch.nn import functional as F


class WindowAttention(nn.Module):
    """Swin-v2-style scaled cosine attention: the similarities times exp(logit_scale), clamped at 100."""

    def __init__(self, dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(num_heads)))
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, C // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = torch.clamp(self.logit_scale.reshape(1, self.num_heads, 1, 1), max=math.log(100.0)).exp()
        attn = attn * logit_scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x), attn


class L2Norm(nn.Module):
    def forward(self, x):
        return F.normalize(x, dim=-1)


class NormedAttention(nn.Module):
    """The unit queries carry a learned temperature into the fused call (XCiT style), which adds none."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.temperature = nn.Parameter(torch.full((heads, 1, 1), 10.0))
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.q_norm = L2Norm()
        self.k_norm = L2Norm()
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1))
        q, k = self.q_norm(q) * self.temperature, self.k_norm(k)
        out = F.scaled_dot_product_attention(q, k, v, scale=1.0)
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))


class GainNorm(nn.Module):
    """Unit vectors times a learned gain (ViT-22B's QK norm): the gain learns the temperature."""

    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim) * dim ** 0.5)

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.gamma


class QKNormAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)
        self.q_norm = GainNorm(dim // heads)
        self.k_norm = GainNorm(dim // heads)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1))
        dots = torch.matmul(self.q_norm(q), self.k_norm(k).transpose(-1, -2))
        return torch.matmul(dots.softmax(dim=-1), v).transpose(1, 2).reshape(b, n, d)
