"""The same distance bias in a module the file also calls with other keys (a decoder's memory): there the keys are
longer than the queries and the square bias, built from the key length alone, does not fit the scores."""

import torch
from torch import nn


class GaussianAttention(nn.Module):
    def __init__(self, dim, heads, max_len=512):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.width = nn.Parameter(torch.ones(heads))
        position = torch.arange(max_len)
        self.register_buffer("distance", -((position[:, None] - position[None, :]) ** 2).float() / 2)

    def forward(self, query, key, value):
        b, n, _ = query.shape
        q = self.q(query).view(b, n, self.heads, -1).transpose(1, 2)
        k = self.k(key).view(b, key.shape[1], self.heads, -1).transpose(1, 2)
        v = self.v(value).view(b, value.shape[1], self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) * self.scale
        length = scores.size(-1)
        bias = self.distance[:length, :length]
        scores = scores + bias / self.width[:, None, None] ** 4  # expect: SC140
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, -1)


class DecoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.self_attn = GaussianAttention(dim, heads)
        self.cross_attn = GaussianAttention(dim, heads)

    def forward(self, x, memory):
        x = x + self.self_attn(query=x, key=x, value=x)
        return x + self.cross_attn(query=x, key=memory, value=memory)
