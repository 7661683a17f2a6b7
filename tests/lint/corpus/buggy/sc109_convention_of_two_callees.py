"""Two attentions in one layer list read their ``mask`` the opposite ways: one keeps where it is True, the other
fills where it is True. The block hands each the other's mask: the padding mask to the attention that keeps where
True, its negation to the one that fills where True."""

import torch
from torch import nn


def scores(q, k):
    return q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5


class KeepAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        sim = scores(q, k)
        if mask is not None:
            sim = sim.masked_fill(~mask[:, None, :], float("-inf"))  # expect: SC109
        return sim.softmax(dim=-1) @ v


class PaddingAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        sim = scores(q, k)
        if mask is not None:
            sim = sim.masked_fill(mask[:, None, :], float("-inf"))  # expect: SC109
        return sim.softmax(dim=-1) @ v


class Block(nn.Module):
    def __init__(self, dim, depth=2, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.layers = nn.ModuleList([nn.ModuleList([KeepAttention(dim), PaddingAttention(dim)]) for _ in range(depth)])

    def forward(self, x, tokens):
        padding = tokens == self.pad_id
        for keep_attn, padding_attn in self.layers:
            x = keep_attn(x, mask=padding) + x
            x = padding_attn(x, mask=~padding) + x
        return x

