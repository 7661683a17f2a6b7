"""One head of a multi-head module, built as its own class: the scores sum over ``head_size`` features and are
scaled by the size read off the keys, one head's; a single head over the whole width (``Linear(n_embd, n_embd)``)
is scaled by the width, which is its head size; a reprogramming attention scaled by the last size of the queries the
einsum reads (``B, L, H, E = q.shape``), one head's."""

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
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        return F.softmax(wei, dim=-1) @ self.value(x)


class MultiHeadAttention(nn.Module):
    def __init__(self, n_embd, num_heads, block_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, n_embd // num_heads, block_size) for _ in range(num_heads)])
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))


class WholeWidthHead(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.key = nn.Linear(n_embd, n_embd, bias=False)
        self.query = nn.Linear(n_embd, n_embd, bias=False)

    def forward(self, x):
        B, T, C = x.shape
        wei = self.query(x) @ self.key(x).transpose(-2, -1) * C ** -0.5
        return F.softmax(wei, dim=-1) @ x


def reprogramming(target, source, value):
    B, L, H, E = target.shape
    scale = 1.0 / math.sqrt(E)
    scores = torch.einsum("blhe,she->bhls", target, source)
    weights = torch.softmax(scale * scores, dim=-1)
    return torch.einsum("bhls,she->blhe", weights, value)
