"""Queries, keys and values projected from the whole width, then split into heads; a per-head layer with a few
outputs (a gate computed from each head's query) is a per-head layer by design."""

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, embed_size, heads):
        super().__init__()
        self.embed_size, self.heads = embed_size, heads
        self.head_dim = embed_size // heads
        self.values = nn.Linear(embed_size, embed_size, bias=False)
        self.keys = nn.Linear(embed_size, embed_size, bias=False)
        self.queries = nn.Linear(embed_size, embed_size, bias=False)
        self.gate = nn.Linear(self.head_dim, 2)
        self.fc_out = nn.Linear(heads * self.head_dim, embed_size)

    def forward(self, values, keys, query, mask=None):
        n, value_len, key_len, query_len = query.shape[0], values.shape[1], keys.shape[1], query.shape[1]
        values = self.values(values).reshape(n, value_len, self.heads, self.head_dim)
        keys = self.keys(keys).reshape(n, key_len, self.heads, self.head_dim)
        queries = self.queries(query).reshape(n, query_len, self.heads, self.head_dim)
        gate = torch.sigmoid(self.gate(queries)).sum(-1, keepdim=True)  # [n, query_len, heads, 1]
        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
        if mask is not None:
            energy = energy.masked_fill(mask == 0, float("-1e20"))
        attention = torch.softmax(energy / (self.head_dim ** (1 / 2)), dim=3)
        out = torch.einsum("nhql,nlhd->nqhd", [attention, values]) * gate
        return self.fc_out(out.reshape(n, query_len, self.heads * self.head_dim))
