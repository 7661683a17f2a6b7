"""Cross-attention that reshapes keys and values with the query length."""

import math

import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, memory):
        tgt_len, bsz, embed_dim = query.shape
        src_len = memory.shape[0]
        q = self.q_proj(query).view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = self.k_proj(memory).view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)  # expect: SC113
        v = self.v_proj(memory).view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)  # expect: SC113
        attn = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim), dim=-1)
        out = torch.bmm(attn, v)  # (bsz * heads, tgt_len, head_dim)
        return out.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim), src_len
