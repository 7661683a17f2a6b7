"""Queries, keys and values split into heads before they are projected, by one nn.Linear(head_dim, head_dim) that
every head shares: each head's query is made from its own head_dim features of the input alone, never from the
whole width as multi-head attention projects it. The scale is the width's, written as a power of (1 / 2)."""

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, embed_size, heads):
        super().__init__()
        self.embed_size, self.heads = embed_size, heads
        self.head_dim = embed_size // heads
        self.values = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.keys = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.queries = nn.Linear(self.head_dim, self.head_dim, bias=False)
        self.fc_out = nn.Linear(heads * self.head_dim, embed_size)

    def forward(self, values, keys, query, mask=None):
        n, value_len, key_len, query_len = query.shape[0], values.shape[1], keys.shape[1], query.shape[1]
        values = values.reshape(n, value_len, self.heads, self.head_dim)
        keys = keys.reshape(n, key_len, self.heads, self.head_dim)
        query = query.reshape(n, query_len, self.heads, self.head_dim)
        values = self.values(values)  # expect: SC182
        keys = self.keys(keys)  # expect: SC182
        queries = self.queries(query)  # expect: SC182
        energy = torch.einsum("nqhd,nkhd->nhqk", [queries, keys])
        if mask is not None:
            energy = energy.masked_fill(mask == 0, float("-1e20"))
        attention = torch.softmax(energy / (self.embed_size ** (1 / 2)), dim=3)  # expect: SC103
        out = torch.einsum("nhql,nlhd->nqhd", [attention, values]).reshape(n, query_len, self.heads * self.head_dim)
        return self.fc_out(out)
