"""One head of a multi-head module, built as its own class: it projects the width to ``head_size`` features and
sums the scores over them, but scales them by the input's width ``C``. The class reads no head count (the module
that concatenates the heads does), so only the data flow says the scores are per head."""

import math

import torch
import torch.nn.functional as F
from torch import nn


class Head(nn.Module):
    def __init__(self, n_embd, head_size, block_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))

    def forward(self, x):
        B, T, C = x.shape
        k, q = self.key(x), self.query(x)  # (B, T, head_size)
        wei = q @ k.transpose(-2, -1) * C ** -0.5  # expect: SC103
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        return F.softmax(wei, dim=-1) @ self.value(x)


class HeadScaledByName(nn.Module):
    """The same head with the factor held by a local name: ``1 / math.sqrt(C)`` is a reciprocal, not a width split
    into heads."""

    def __init__(self, n_embd, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        k, q = self.key(x), self.query(x)
        scale_factor = 1 / math.sqrt(C)
        wei = q @ k.transpose(-2, -1) * scale_factor  # expect: SC103
        return F.softmax(wei, dim=-1)


class MultiHeadAttention(nn.Module):
    def __init__(self, n_embd, num_heads, block_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, n_embd // num_heads, block_size) for _ in range(num_heads)])
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))
