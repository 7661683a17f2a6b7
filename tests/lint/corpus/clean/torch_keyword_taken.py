"""Attention with a key/value cache whose calls into torch name only keywords torch takes, NumPy's names among
them (``axis``, ``keepdims``: torch's argument parser takes both)."""

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
            k = torch.cat((past[0], k), dim=-2)
            v = torch.cat(tensors=(past[1], v), axis=-2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        scores = scores - torch.amax(scores, axis=-1, keepdims=True)
        weights = F.softmax(scores, dim=-1, dtype=torch.float32)
        out = (weights @ v).transpose(1, 2).reshape(b, n, d)
        return self.out(out), (k, v)
