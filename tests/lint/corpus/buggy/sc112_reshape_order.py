"""Sequence-first attention whose head merge views [batch, tgt, E] memory as [tgt, batch, E] (seed 002)."""

import math

import torch
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.in_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query):
        tgt_len, bsz, embed_dim = query.shape
        q, k, v = self.in_proj(query).chunk(3, dim=-1)
        q = q.contiguous().view(tgt_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        k = k.contiguous().view(tgt_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        v = v.contiguous().view(tgt_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        attn = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)
        out = (attn @ v).permute(0, 2, 1, 3).reshape(tgt_len, bsz, embed_dim)  # expect: SC112
        return self.out_proj(out)
