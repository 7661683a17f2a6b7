"""Heads split by a view to (B, nh, T, hs) straight from (B, T, C): no transpose."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, self.num_heads, T, self.head_dim)  # expect: SC105
        k = k.reshape(B, self.num_heads, T, self.head_dim)  # expect: SC105
        v = v.view(B, self.num_heads, T, self.head_dim)  # expect: SC105
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)
        y = (w @ v).transpose(1, 2).reshape(B, T, C)
        return self.out(y)
