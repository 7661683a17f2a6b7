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


class SliceAttention(nn.Module):
    """Tokens projected from the whole width, split into heads and pooled into a few slice tokens per head; each
    head attends among its own slices through one per-head projection, by design."""

    def __init__(self, dim, heads=4, dim_head=8, slices=6):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads, self.dim_head = heads, dim_head
        self.scale = dim_head ** -0.5
        self.in_project = nn.Linear(dim, inner_dim)
        self.to_slices = nn.Linear(dim_head, slices)
        self.to_q = nn.Linear(dim_head, dim_head, bias=False)
        self.to_k = nn.Linear(dim_head, dim_head, bias=False)
        self.to_v = nn.Linear(dim_head, dim_head, bias=False)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x):
        b, n, _ = x.shape
        tokens = self.in_project(x).reshape(b, n, self.heads, self.dim_head).permute(0, 2, 1, 3)
        weights = self.to_slices(tokens).softmax(dim=-1)  # [b, heads, n, slices]
        slice_tokens = torch.einsum("bhnc,bhng->bhgc", tokens, weights) / (weights.sum(2)[..., None] + 1e-5)
        q, k, v = self.to_q(slice_tokens), self.to_k(slice_tokens), self.to_v(slice_tokens)
        attn = torch.softmax(q @ k.transpose(-1, -2) * self.scale, dim=-1)
        out = torch.einsum("bhgc,bhng->bhnc", attn @ v, weights)
        return self.to_out(out.permute(0, 2, 1, 3).reshape(b, n, self.heads * self.dim_head))
