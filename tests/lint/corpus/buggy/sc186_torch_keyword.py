"""Attention with a key/value cache whose calls into torch name keywords torch does not take (GPT2 01045d6f:
``torch.cat(..., dims=-2)``): each raises TypeError on the path that reaches it."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CachedAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, past=None):
        b, n, d = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if past is not None:
            k = torch.cat((past[0], k), dims=-2)  # expect: SC186
            v = torch.cat((past[1], v), dim=-2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        weights = F.softmax(scores, axis=-1)  # expect: SC186
        out = (weights @ v).transpose(1, 2).reshape(b, n, d)
        return self.out(out), (k, v)
