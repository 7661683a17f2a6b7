"""Seed 002 rebuilt: mmcv/DETR-style multi-head attention, sequence-first, with a packed in-projection.

Written for this repository to reproduce the structure and the defect of the
source post's module (see README.md): the head merge reads (batch, tgt_len, E)
memory as (tgt_len, batch, E), so batch items are mixed whenever batch > 1 and
tgt_len > 1, while every shape stays right.
"""

import torch
import torch.nn.functional as F
from torch import nn


class MultiheadAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, att_dropout=0.1, out_dropout=0.1, average_attn_weights=True,
                 use_separate_proj_weight=False, device=None, dtype=None):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise ValueError(f"embed_dim={embed_dim} is not divisible by num_heads={num_heads}")
        self.scale = self.head_dim ** 0.5
        self.average_attn_weights = average_attn_weights
        self.use_separate_proj_weight = use_separate_proj_weight
        self.att_dropout = nn.Dropout(att_dropout)
        self.out_dropout = nn.Dropout(out_dropout)
        self.fuse_heads = nn.Linear(embed_dim, embed_dim)
        if not use_separate_proj_weight:  # only the packed weights exist; the separate ones are never made
            self.in_proj_weight = nn.Parameter(torch.empty(3 * embed_dim, embed_dim, device=device, dtype=dtype))
            self.in_proj_bias = nn.Parameter(torch.empty(3 * embed_dim, device=device, dtype=dtype))
        self._reset_parameters()

    def _reset_parameters(self):
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.in_proj_bias)

    def forward(self, query, key, value, identity=None, query_pos=None, key_pos=None,
                use_separate_proj_weight=False):
        tgt_len, bsz, embed_dim = query.shape  # (tgt_len, batch, E)
        src_len = key.shape[0]  # (src_len, batch, E)
        if identity is None:
            identity = query
        if query_pos is not None:
            query = query + query_pos
        if key_pos is not None:
            key = key + key_pos
        w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        query, key, value = F.linear(query, w_q, b_q), F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)
        # (len, batch, E) -> (batch, heads, len, head_dim)
        query = query.contiguous().view(tgt_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        key = key.contiguous().view(src_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        value = value.contiguous().view(src_len, bsz, self.num_heads, self.head_dim).permute(1, 2, 0, 3)
        attention = query @ key.transpose(-2, -1) / self.scale  # (batch, heads, tgt_len, src_len)
        attention = self.att_dropout(torch.softmax(attention, dim=-1))
        output = attention @ value  # (batch, heads, tgt_len, head_dim)
        output = output.permute(0, 2, 1, 3).contiguous().view(tgt_len, bsz, embed_dim)  # defect: batch-major memory
        output = self.out_dropout(self.fuse_heads(output)) + identity
        if self.average_attn_weights:
            attention = attention.sum(dim=1) / self.num_heads  # (batch, tgt_len, src_len)
        return output, attention
