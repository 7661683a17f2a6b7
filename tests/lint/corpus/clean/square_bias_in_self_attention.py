"""A distance bias built from the key length alone, in a module whose signature takes queries and keys apart but
whose every caller in the file attends the input to itself (``query=x, key=x``): the keys are exactly as long as the
queries, so the square bias fits the scores."""

import torch
from torch import nn


class GaussianSelfAttention(nn.Module):
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
        scores = scores + bias / self.width[:, None, None] ** 4
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, -1)


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = GaussianSelfAttention(dim, heads)

    def forward(self, x):
        h = self.norm(x)
        return x + self.attn(query=h, key=h, value=h)
