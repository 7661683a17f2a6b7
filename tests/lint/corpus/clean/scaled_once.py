"""Query scaling done once: before a fused kernel told not to scale again (scale=1.0), or on the queries of a
manual path that leaves the scores alone; a kernel left to its default scale gets unscaled queries."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class FusedSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q = q * self.scale
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0)
        return self.proj(out.transpose(1, 2).reshape(b, n, c))


class DefaultScaleAttention(FusedSelfAttention):
    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(out.transpose(1, 2).reshape(b, n, c))


class ManualSelfAttention(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.d_k = d_model // n_head
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.w_q(x).view(b, t, self.n_head, self.d_k).transpose(1, 2)
        k = self.w_k(x).view(b, t, self.n_head, self.d_k).transpose(1, 2)
        v = self.w_v(x).view(b, t, self.n_head, self.d_k).transpose(1, 2)
        q = q / math.sqrt(self.d_k)
        scores = torch.matmul(q, k.transpose(-2, -1))
        return torch.matmul(scores.softmax(dim=-1), v).transpose(1, 2).reshape(b, t, -1)
