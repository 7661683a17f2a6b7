"""Sequence-first multi-head attention (seed 002 with its head merge fixed) and cross-attention."""

import math

import torch
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.1):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scale = self.head_dim ** 0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.att_dropout = nn.Dropout(dropout)
        self.fuse_heads = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key, value):
        tgt_len, bsz, embed_dim = query.shape  # [tgt_len, batch, embed_dim]
        src_len, _, _ = key.shape  # [src_len, batch, embed_dim]
        q = self.q_proj(query).contiguous().view(tgt_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        k = self.k_proj(key).contiguous().view(src_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        v = self.v_proj(value).contiguous().view(src_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        attention = q @ k.transpose(-2, -1)  # [b, n_h, tgt_len, src_len]
        attention /= self.scale
        attention = torch.softmax(attention, dim=-1)
        attention = self.att_dropout(input=attention)
        output = attention @ v  # [b, n_h, tgt_len, d_h]
        output = output.permute(2, 0, 1, 3).contiguous().view(tgt_len, bsz, embed_dim)
        return self.fuse_heads(output), attention.sum(dim=1) / self.num_heads


class BatchedCrossAttention(nn.Module):
    """(batch * heads) layout with torch.bmm, as in nn.functional.multi_head_attention_forward."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, memory, key_padding_mask=None):
        tgt_len, bsz, embed_dim = query.shape
        src_len = memory.shape[0]
        q = self.q_proj(query).view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = self.k_proj(memory).view(src_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = self.v_proj(memory).view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        scores = torch.bmm(q / math.sqrt(self.head_dim), k.transpose(1, 2))  # (bsz * heads, tgt_len, src_len)
        if key_padding_mask is not None:
            scores = scores.view(bsz, self.num_heads, tgt_len, src_len)
            scores = scores.masked_fill(key_padding_mask[:, None, None, :], float("-inf"))
            scores = scores.view(bsz * self.num_heads, tgt_len, src_len)
        attn = torch.softmax(scores, dim=-1)
        out = torch.bmm(attn, v)  # (bsz * heads, tgt_len, head_dim)
        return out.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
