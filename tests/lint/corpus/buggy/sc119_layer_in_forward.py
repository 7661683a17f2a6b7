"""An output projection built inside forward: fresh random weights on every call."""

import math

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, dim * 3, bias=False)

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, N, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(C // self.heads), dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return nn.Linear(C, C)(out)  # expect: SC119
