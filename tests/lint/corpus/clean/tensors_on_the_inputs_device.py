"""Tensors made where the inputs are (device=, .to(x.device), *_like), buffers built at construction, sizes that
are plain integers, and a deliberate move of an input to the CPU."""

import math

import torch
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, max_len=128):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.register_buffer("bias", self._causal(max_len), persistent=False)

    def _causal(self, n):
        return torch.ones(n, n, dtype=torch.bool).triu(1) | torch.zeros(n, n, dtype=torch.bool)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(causal, float("-inf"))
        window = torch.ones(n, n, dtype=torch.bool).tril(-8)
        window = window.to(x.device)
        scores = scores.masked_fill(window, float("-inf")) + self.bias[:n, :n]
        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)


class Frequencies(nn.Module):
    def __init__(self, theta):
        super().__init__()
        self.theta = theta

    def forward(self, positions, dim):
        freqs = 1.0 / (self.theta ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        grid = positions.cpu() * torch.tensor([1, 2, 2])
        return grid, freqs.to(positions.device) * positions.float().unsqueeze(-1)


def default_attention(q, k, v, causal=False):
    q = q * (q.shape[-1] ** -0.5)
    sim = torch.einsum("b i h d, b j h d -> b h i j", q, k)
    if causal:
        i, j = sim.shape[-2:]
        causal_mask = torch.ones((i, j), dtype=torch.bool, device=q.device).triu(j - i + 1)
        sim = torch.where(causal_mask, -torch.finfo(q.dtype).max, sim)
    attn = sim.softmax(dim=-1)
    return torch.einsum("b h i j, b j h d -> b i h d", attn, v)


def collate(token_ids, lengths):
    # a function that does not attend: data preparation on the CPU, where the inputs are too
    mask = torch.zeros(len(lengths), max(lengths), dtype=torch.bool)
    return torch.cat([token_ids, mask.long()], dim=1)
