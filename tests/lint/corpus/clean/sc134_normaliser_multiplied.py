"""Causal linear attention (kernelised features, prefix sums over the positions) whose output is divided by its
normaliser, the queries against the keys summed so far."""

import torch
from torch import nn


def causal_linear_attention(q, k, v, eps=1e-6):
    k_cumsum = k.cumsum(dim=-2)
    normaliser = 1.0 / (torch.einsum("...nd,...nd->...n", q, k_cumsum) + eps)
    context = torch.einsum("...nd,...ne->...nde", k, v).cumsum(dim=-3)
    return torch.einsum("...nde,...nd,...n->...ne", context, q, normaliser)


def linear_attention(q, k, v):
    denominator = q @ k.sum(dim=-2).unsqueeze(-1)
    context = k.transpose(-1, -2) @ v
    return (q @ context) / denominator


class LinearSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.to_qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k = q.softmax(dim=-1), k.softmax(dim=-2)
        return causal_linear_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
