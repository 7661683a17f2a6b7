"""A merge without a transpose that runs only for a single target step (fairseq's ONNX path): with seq_q = 1
the view moves no data, and the general path transposes first."""

import math

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.onnx_trace = False

    def forward(self, query):
        tgt_len, bsz, embed_dim = query.size()
        q = self.q_proj(query).contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = self.k_proj(query).contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = self.v_proj(query).contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(self.head_dim), dim=-1)
        attn = torch.bmm(weights, v)
        assert list(attn.size()) == [bsz * self.num_heads, tgt_len, self.head_dim]
        if self.onnx_trace and attn.size(1) == 1:
            attn = attn.contiguous().view(tgt_len, bsz, self.embed_dim)
        else:
            attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, self.embed_dim)
        return attn
