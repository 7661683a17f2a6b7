"""Names that look like torch's or like the model width, read by what they are in this file: a softmax class of
the file's own (its dim defaults to the last axis), and a shape unpacked with the heads before its last axis, which
is then one head's size whatever it is called."""

import argparse

import numpy as np
import torch
import torch.nn.functional as F
from einops import einsum, rearrange
from torch import nn


class Softmax(nn.Module):
    def forward(self, x, dim=-1):
        shifted = x - x.max(dim=dim, keepdim=True).values
        return shifted.exp() / shifted.exp().sum(dim=dim, keepdim=True)


class FoldedHeadsAttention(nn.Module):
    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.d_model = heads, d_model
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.softmax = Softmax()

    def forward(self, x, bias):
        b, n, _ = x.shape
        d_head = self.d_model // self.heads
        q, k, v = self.qkv(x).view(b, n, self.heads, d_head, 3).transpose(1, 2).reshape(
            b * self.heads, n, d_head, 3).unbind(-1)
        weights = self.softmax(q @ k.transpose(-2, -1) / np.sqrt(d_head) + bias)
        return (weights @ v).view(b, self.heads, n, d_head).transpose(1, 2).reshape(b, n, self.d_model)


class PerHeadHidden(nn.Module):
    """``hidden_size`` is one head's size here: the projections give n_heads * hidden_size features."""

    def __init__(self, input_size, hidden_size, n_heads):
        super().__init__()
        self.n_heads, self.hidden = n_heads, hidden_size
        self.q = nn.Linear(input_size, self.n_heads * self.hidden)
        self.k = nn.Linear(input_size, self.n_heads * self.hidden)
        self.v = nn.Linear(input_size, self.n_heads * self.hidden)
        self.out = nn.Linear(self.n_heads * self.hidden, input_size)

    def forward(self, x):
        b = x.size(0)
        q, k, v = (f(x).view(b, -1, self.n_heads, self.hidden).transpose(1, 2) for f in (self.q, self.k, self.v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / np.sqrt(self.hidden)
        out = torch.softmax(scores, dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(b, -1, self.n_heads * self.hidden))


def grouped_decode_step(query, key, value, groups):
    """One decoding step of grouped-query attention: query [batch, heads, dim], key and value
    [batch, kv_heads, seq, dim]."""
    batch, heads, dim = query.shape
    scale = dim ** 0.5
    query = rearrange(query, "b (h g) d -> b g h d", g=groups)
    scores = einsum(query, key, "b g h d, b h s d -> b g h s")
    out = einsum(F.softmax(scores / scale, dim=-1), value, "b g h s, b h s d -> b g h d")
    return rearrange(out, "b g h d -> b (h g) d")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--dim", type=int, default=64, help="one head's size")
    args = parser.parse_args()
    batch, heads, dim = 2, 4, args.dim
    query = torch.randn(batch, heads, dim)
    key = torch.randn(batch, 2, 16, dim)
    print(grouped_decode_step(query, key, key, groups=2).shape)
