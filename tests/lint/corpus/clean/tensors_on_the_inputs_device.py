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
